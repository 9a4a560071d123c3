"""Damping for quasi-static loading (docs/theory.md §3b), off by default; its work is booked as
``dissipated``.

* ``local`` (Cundall's non-viscous local damping, ``0 ≤ α ≤ 1``): on every body, per component,
  ``F_d = −α |F| sign(v)`` and ``τ_d = −α |τ| sign(Ω)``, with ``F``, ``τ`` the body's total
  force and moment from every other interaction. It takes out a fixed fraction of the work of
  each force component whatever the body's mass or stiffness, and vanishes at rest (so it does
  not bias a static equilibrium).
* ``viscous`` (a global rate ``c``, 1/time): ``F_d = −c m v``, ``τ_d = −c R J Rᵀ Ω``.

Both depend on the velocities, which an explicit scheme does not have at the new configuration:
the loop applies them with the velocities the scheme holds when it evaluates the forces (the
half-step ``v_½``, ``Ω_½`` of ``rrp2``/``rrp``/``lgvi``'s spherical bodies; ``rrp1``'s new
ones; an anisotropic ``lgvi`` body's ``Ω`` of the last step) and books ``h (F_d·v + τ_d·Ω)``
with the same velocities, so the budget with ``dissipated`` closes to O(h). The kernel runs
once per evaluation after every other force (it is the registry's last ``global``).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from ..rotations import quat_rotate_inverse_one, quat_rotate_one
from ..schema import Key, non_negative
from .contract import GLOBAL, Interaction

DampingParams = namedtuple("DampingParams", "local viscous")
#: ``dissipated (n,)``: the damping work booked to each body so far.
DampingState = namedtuple("DampingState", "dissipated")


def _fraction(value):
    return None if 0.0 <= value <= 1.0 else "must be in [0, 1]"


KEYS = {"damping": {
    "local": Key("float", 0.0, "Cundall's local damping α: on each body, per component, F_d = −α |F| sign(v) and "
                 "τ_d = −α |τ| sign(Ω) (0: off; work logged as 'dissipated')", "", _fraction),
    "viscous": Key("float", 0.0, "global viscous damping rate c: F_d = −c m v, τ_d = −c J Ω (0: off; work logged "
                   "as 'dissipated')", "1/time", non_negative),
}}


@njit(inline="always")
def _opposing(load, speed, local):
    """``−α |load| sign(speed)``."""
    if speed > 0.0:
        return -local * abs(load)
    if speed < 0.0:
        return local * abs(load)
    return 0.0


@njit(inline="always")
def damping_body(i, h, st, bodies, p, own):
    """Add the damping force and moment of body ``i`` to its total; book their work."""
    velocity, angular_velocity, orientation, force, moment = st.velocity, st.angular_velocity, st.orientation, \
        st.force, st.moment
    inertia, local, viscous = bodies.inertia, p.local, p.viscous
    spin = quat_rotate_inverse_one(orientation[i], angular_velocity[i])
    momentum = quat_rotate_one(orientation[i], (inertia[i, 0] * spin[0], inertia[i, 1] * spin[1],
                                                inertia[i, 2] * spin[2]))
    power = 0.0
    for c in range(3):
        f = _opposing(force[i, c], velocity[i, c], local) - viscous * bodies.mass[i] * velocity[i, c]
        tau = _opposing(moment[i, c], angular_velocity[i, c], local) - viscous * momentum[c]
        force[i, c] += f
        moment[i, c] += tau
        power += f * velocity[i, c] + tau * angular_velocity[i, c]
    own.dissipated[i] -= h * power


@njit(cache=True)
def damping_forces(h, st, bodies, p, own):
    """Add the damping force and moment of every body to its total; book their work."""
    for i in range(st.velocity.shape[0]):
        damping_body(i, h, st, bodies, p, own)


@njit(cache=True)
def damping_energy(st, bodies, contacts, p, own):
    """``(dissipated,)``: the damping work booked so far."""
    return (np.sum(own.dissipated),)


def setup(model):
    values = model.sections["damping"]
    if values["local"] == 0.0 and values["viscous"] == 0.0:
        return None
    return DampingParams(float(values["local"]), float(values["viscous"]))


def initial_state(model, params):
    return DampingState(np.zeros(model.n_bodies))


DAMPING = Interaction(
    name="damping", doc=__doc__, kind=GLOBAL, columns=("dissipated",), internal=False, keys=KEYS, setup=setup,
    state=initial_state, forces=damping_forces, energy=damping_energy, body=damping_body,
    # under MPI each rank damps its bodies (the kernel reads nothing but the body's own rows)
    localize=lambda p, part: p, shared_bodies=lambda p: np.zeros(0, np.int64),
)
