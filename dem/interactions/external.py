"""External (non-internal) potentials on single bodies, energy component ``external``:
the Ortolan–Saccon stress potential (SPEC §3; seed 000 eq. 3) and constant applied forces."""

import numpy as np
from numba import njit

from ..rotations import _quat_matrix


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
def _ortolan_saccon_kernel(orientation, body, alpha, attractor, moment):
    """Add the stress potential's moment on each body listed in ``body`` (same parameters for
    all); returns the energy."""
    energy = 0.0
    for k in range(body.shape[0]):
        i = body[k]
        u, tau = ortolan_saccon(_quat_matrix(orientation[i]), alpha, attractor)
        energy += u
        for c in range(3):
            moment[i, c] += tau[c]
    return energy


@njit(cache=True)
def _applied_force_kernel(position, body, applied, force):
    """Add the constant force ``applied[k]`` on body ``body[k]``; returns ``U = −Σ F·x``."""
    energy = 0.0
    for k in range(body.shape[0]):
        i = body[k]
        for c in range(3):
            force[i, c] += applied[k, c]
            energy -= applied[k, c] * position[i, c]
    return energy
