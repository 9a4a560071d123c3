"""The Ortolan–Saccon stress potential (docs/theory.md §3; seed 000 eq. 3) on single rigid bodies:
``U(Q) = (‖Q − I‖_F − 1)² − α/‖Q − Q_m‖_F``, energy column ``external``. It acts on the bodies
builders list in ``model.inputs["ortolan_saccon"]["bodies"]`` (``[[rigid_body]] potential =
"ortolan_saccon"``), with the parameters of the ``[ortolan_saccon]`` section."""

from collections import namedtuple

import numpy as np
from numba import njit

from ..rotations import quat_from_rotvec, quat_matrix, quat_matrix_one
from ..schema import Key, SceneError, non_negative
from .contract import GLOBAL, Interaction, listed_bodies, localize_body

OrtolanSacconParams = namedtuple("OrtolanSacconParams", "body alpha attractor")

KEYS = {"ortolan_saccon": {
    "alpha": Key("float", 0.3, "strength α of the attractor (seed 000 eq. 3)", "energy", non_negative),
    "attractor_rotation_vector": Key("vec3", (1.7677669529663689, 0.0, 1.7677669529663689),
                                     "attractor Q_m as a rotation vector", ""),
}}


@njit(cache=True)
def _anti_vee(m):
    """``a`` with ``tr(S(w) m) = a·w``: ``(m23 − m32, m31 − m13, m12 − m21)``."""
    return np.array((m[1, 2] - m[2, 1], m[2, 0] - m[0, 2], m[0, 1] - m[1, 0]))


@njit(cache=True)
def ortolan_saccon(rotation, alpha, attractor):
    """``U(Q) = (‖Q − I‖_F − 1)² − α/‖Q − Q_m‖_F`` for the rotation matrix ``Q`` (body to
    inertial) and the attractor ``Q_m``. Returns ``(U, τ)`` with the spatial moment ``τ`` defined
    by ``δU = −τ·w`` for ``Q → exp(S(w)) Q``; the body-frame moment is ``Qᵀ τ``."""
    to_identity = rotation - np.eye(3)
    to_attractor = rotation - attractor
    d1 = np.sqrt(np.sum(to_identity * to_identity))
    d2 = np.sqrt(np.sum(to_attractor * to_attractor))
    # d‖Q − A‖ = tr(S(w) Q (Q − A)ᵀ)/‖Q − A‖
    gradient = (2.0 * (d1 - 1.0) / d1) * _anti_vee(rotation @ to_identity.T) \
        + (alpha / (d2 * d2 * d2)) * _anti_vee(rotation @ to_attractor.T)
    return (d1 - 1.0) ** 2 - alpha / d2, -gradient


@njit(cache=True)
def ortolan_saccon_forces(h, st, bodies, p, own):
    """Add the stress potential's moment on each listed body."""
    for k in range(p.body.shape[0]):
        i = p.body[k]
        tau = ortolan_saccon(quat_matrix_one(st.orientation[i]), p.alpha, p.attractor)[1]
        for c in range(3):
            st.moment[i, c] += tau[c]


@njit(cache=True)
def ortolan_saccon_energy(st, bodies, contacts, p, own):
    """``(external,)``."""
    energy = 0.0
    for k in range(p.body.shape[0]):
        energy += ortolan_saccon(quat_matrix_one(st.orientation[p.body[k]]), p.alpha, p.attractor)[0]
    return (energy,)


def setup(model):
    given = model.inputs.get("ortolan_saccon")
    if not given or not len(given["bodies"]):
        return None
    values = model.sections["ortolan_saccon"]
    with np.errstate(all="ignore"):
        attractor = quat_matrix(quat_from_rotvec(np.asarray(values["attractor_rotation_vector"])))
    if not np.isfinite(attractor).all():
        raise SceneError(f"ortolan_saccon.attractor_rotation_vector: too large to make a rotation, "
                         f"got {list(values['attractor_rotation_vector'])}")
    return OrtolanSacconParams(np.asarray(given["bodies"], np.int64), float(values["alpha"]), attractor)


ORTOLAN_SACCON = Interaction(
    name="ortolan_saccon", doc=__doc__, kind=GLOBAL, columns=("external",), internal=False, keys=KEYS,
    setup=setup, forces=ortolan_saccon_forces, energy=ortolan_saccon_energy,
    localize=localize_body, shared_bodies=listed_bodies,
)
