"""Explicit variational integrators on SE(3)ⁿ for spherical inertia (SPEC §2; seed 001 §2).

Each map is built from named stages, one equation each:

=========  =========================================================================  =======
``rrp2``   half kick, drift, ``Δα = h Ω_½`` (= ``hΩ + h²τ/2J``), forces, half kick   eq. (25)
``rrp``    half kick, drift, ``Δα = 2h w/(1+√(1−h²|w|²))``, ``w = Ω_½``, forces,    eq. (23)
           half kick
``rrp1``   full kick, drift with the new velocity, ``Δα = h Ω⁺``, forces              eq. (27)
=========  =========================================================================  =======

The kicks ``v ← v + (h/2) F/m``, ``Ω ← Ω + (h/2) τ/J`` before and after the force evaluation
are the velocity-Verlet form of ``v⁺ = v + h(F + F⁺)/2m``, ``Ω⁺ = Ω + h(τ + τ⁺)/2J``; the drift
``x ← x + h v_½`` is ``x⁺ = x + h v + h²F/2m``. Orientations are unit quaternions updated as
``R⁺ = R(Δα) R`` (SPEC §1). Pinned bodies have zero inverse mass and only rotate.

The state always carries the forces, moments and potential energies of its configuration, so
each step costs one force evaluation and a log needs no extra one. `_advance_kernel` runs many
steps in compiled code between two output events.
"""

import numpy as np
from numba import njit

from .interactions import _force_field_kernel
from .rotations import _quat_apply_increment

RRP2, RRP, RRP1 = 0, 1, 2
#: scene name -> (code, needs spherical inertia, order of accuracy)
INTEGRATORS = {"rrp2": (RRP2, True, 2), "rrp": (RRP, True, 2), "rrp1": (RRP1, True, 1)}

OK, RRP_LIMIT, NOT_FINITE = 0, 1, 2


@njit(cache=True)
def _kick(h, st, md):
    """``v ← v + h F/m``, ``Ω ← Ω + h τ/J`` (``h`` is a full or half step)."""
    for i in range(st.position.shape[0]):
        a = h * md.inverse_mass[i]
        b = h / md.inertia[i, 0]
        for c in range(3):
            st.velocity[i, c] += a * st.force[i, c]
            st.angular_velocity[i, c] += b * st.moment[i, c]


@njit(cache=True)
def _drift(h, st):
    """``x ← x + h v``."""
    for i in range(st.position.shape[0]):
        for c in range(3):
            st.position[i, c] += h * st.velocity[i, c]


@njit(cache=True)
def _rotate_linear(h, st):
    """``Δα = h Ω`` (eq. 25 with ``Ω = Ω_½``; eq. 27 with ``Ω = Ω⁺``), ``R ← R(Δα) R``."""
    for i in range(st.position.shape[0]):
        w = st.angular_velocity[i]
        q = _quat_apply_increment(st.orientation[i], (h * w[0], h * w[1], h * w[2]))
        for c in range(4):
            st.orientation[i, c] = q[c]


@njit(cache=True)
def _rotate_exact(h, st):
    """``Δα = 2h w/(1 + √(1 − h²|w|²))`` with ``w = Ω_½ = Ω + hτ/2J`` (eq. 16/23).

    Returns the first body with ``h²|w|² ≥ 1`` (incremental rotation of π/2 or more, where
    the quadratic (15) has no real root), or −1.
    """
    for i in range(st.position.shape[0]):
        w = st.angular_velocity[i]
        c = h * h * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
        if not c < 1.0:
            return i
        scale = 2.0 * h / (1.0 + np.sqrt(1.0 - c))
        q = _quat_apply_increment(st.orientation[i], (scale * w[0], scale * w[1], scale * w[2]))
        for k in range(4):
            st.orientation[i, k] = q[k]
    return -1


@njit(cache=True)
def _first_not_finite(st):
    for i in range(st.position.shape[0]):
        for c in range(3):
            if not (np.isfinite(st.position[i, c]) and np.isfinite(st.velocity[i, c])
                    and np.isfinite(st.angular_velocity[i, c])):
                return i
    return -1


@njit(cache=True)
def _advance_kernel(n_steps, scheme, h, st, md, pair_i, pair_j, reference_position, counters):
    """Advance ``n_steps`` steps of ``scheme``. Returns ``(status, body, steps_done, pair_i,
    pair_j)``; on a non-OK status the state is the one where the problem was found."""
    for k in range(n_steps):
        if scheme == RRP1:
            _kick(h, st, md)
            _drift(h, st)
            _rotate_linear(h, st)
        else:
            _kick(0.5 * h, st, md)
            _drift(h, st)
            if scheme == RRP:
                body = _rotate_exact(h, st)
                if body >= 0:
                    return RRP_LIMIT, body, k, pair_i, pair_j
            else:
                _rotate_linear(h, st)
        pair_i, pair_j = _force_field_kernel(st, md, pair_i, pair_j, reference_position, counters)
        if scheme != RRP1:
            _kick(0.5 * h, st, md)
    body = _first_not_finite(st)
    if body >= 0:
        return NOT_FINITE, body, n_steps, pair_i, pair_j
    return OK, -1, n_steps, pair_i, pair_j
