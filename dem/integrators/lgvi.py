"""``lgvi``: the general-inertia variational map (docs/theory.md §2), principal moments ``J = diag(J1,J2,J3)``;
translation as ``rrp2``. With the body-frame moment ``M = Rᵀτ``:

    Π = Jω + (h/2) M
    4/(4+|β|²) (Jβ + β × Jβ/2) = hΠ     solved for β by Newton (3 unknowns, from β = hJ⁻¹Π)
    R⁺ = R R(β)
    Jω⁺ = R(β)ᵀ Π + (h/2) M⁺

It integrates each anisotropic body's *spatial* angular momentum ``L = R J ω`` (``aux``): the two
momentum lines are ``L_½ = L + (h/2)τ`` and ``L⁺ = L_½ + (h/2)τ⁺`` (``Π = Rᵀ L_½``,
``R(β)ᵀΠ = R⁺ᵀ L_½``), so a free body's ``L`` is conserved to round-off. For ``J1 = J2 = J3``
the equation has the closed form (16) and the map is exactly ``rrp``.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .stages import (
    angular_momentum_kernel, drift, isotropic, kick_angular_momentum, kick_rotation, kick_translation,
    rotate_body_frame, rotate_exact, set_angular_velocity,
)

FAILURE = ("has no 'lgvi' rotation update (Newton did not converge: the body would turn too far in one "
           "step)")

#: ``angular_momentum (n, 3)``: the spatial ``L`` of each anisotropic body.
LgviState = namedtuple("LgviState", "angular_momentum")


def initial_state(state, bodies):
    angular_momentum = np.zeros((len(state.position), 3))
    angular_momentum_kernel(state.arrays(), bodies, angular_momentum)
    return LgviState(angular_momentum)


@njit(inline="always")
def _turn(i, h, st, bodies, L):
    """Body ``i``'s rotational stages up to the new configuration; whether its update has a
    solution."""
    if bodies.inverse_inertia[i, 0] == 0.0:  # clamped
        return True
    if isotropic(bodies, i):  # closed form: rrp (eq. 16/23)
        kick_rotation(i, 0.5 * h, st, bodies)
        return rotate_exact(i, h, st)
    kick_angular_momentum(i, 0.5 * h, st, L)  # L_½ = L + (h/2)τ: Π = Rᵀ L_½ = Jω + (h/2)M
    return rotate_body_frame(i, h, st, bodies, L)  # 4/(4+|β|²)(Jβ + β×Jβ/2) = hΠ; R⁺ = R R(β)


@njit(inline="always")
def _spin(i, h, st, bodies, L):
    """Body ``i``'s closing rotational stage, with the moment of the new configuration."""
    if bodies.inverse_inertia[i, 0] == 0.0:
        return
    if isotropic(bodies, i):
        kick_rotation(i, 0.5 * h, st, bodies)  # Ω⁺ = Ω_½ + hτ⁺/2J
        return
    kick_angular_momentum(i, 0.5 * h, st, L)  # L⁺ = L_½ + (h/2)τ⁺: Jω⁺ = R(β)ᵀΠ + (h/2)M⁺
    set_angular_velocity(i, st, bodies, L)  # Ω⁺ = R⁺ J⁻¹ R⁺ᵀ L⁺


@njit(cache=True, _nrt=False)
def before_forces(lo, hi, h, st, bodies, aux):
    """Bodies ``lo ≤ i < hi`` up to the new configuration; returns the first body whose update
    has no solution, or −1."""
    L = aux.angular_momentum
    for i in range(lo, hi):
        kick_translation(i, 0.5 * h, st, bodies)  # v_½ = v + hF/2m
        drift(i, h, st)  # x⁺ = x + h v_½
        if not _turn(i, h, st, bodies, L):
            return i
    return -1


@njit(cache=True, _nrt=False)
def after_forces(lo, hi, h, st, bodies, aux):
    L = aux.angular_momentum
    for i in range(lo, hi):
        kick_translation(i, 0.5 * h, st, bodies)  # v⁺ = v_½ + hF⁺/2m
        _spin(i, h, st, bodies, L)


@njit(cache=True, _nrt=False)
def turn(lo, hi, h, st, bodies, aux):
    """The rotational stages of ``before_forces`` alone (contact sub-stepping, `dem.integrators.respa`
    moves the centres); returns the first body whose update has no solution, or −1."""
    L = aux.angular_momentum
    for i in range(lo, hi):
        if not _turn(i, h, st, bodies, L):
            return i
    return -1


@njit(cache=True, _nrt=False)
def spin(lo, hi, h, st, bodies, aux):
    """The rotational stage of ``after_forces`` alone."""
    L = aux.angular_momentum
    for i in range(lo, hi):
        _spin(i, h, st, bodies, L)
