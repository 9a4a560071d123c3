"""``rrp2`` (default): seed 001 eq. (25), the second-order truncation of ``rrp`` in velocity-Verlet
form (docs/theory.md §2). It keeps ``rrp``'s exact momentum conservation; spherical bodies only.

    x⁺ = x + h v + h²F/2m,   Δα = hΩ + h²τ/2J,   R⁺ = R(Δα) R,
    v⁺ = v + h(F + F⁺)/2m,   Ω⁺ = Ω + h(τ + τ⁺)/2J
"""

from numba import njit

from .stages import drift, kick, kick_rotation, rotate_linear


@njit(cache=True, _nrt=False)
def before_forces(lo, hi, h, st, bodies, aux):
    """Bodies ``lo ≤ i < hi`` up to the new configuration; returns −1 (no failure)."""
    for i in range(lo, hi):
        kick(i, 0.5 * h, st, bodies)  # v_½ = v + hF/2m, Ω_½ = Ω + hτ/2J
        drift(i, h, st)  # x⁺ = x + h v_½ = x + h v + h²F/2m
        rotate_linear(i, h, st)  # Δα = h Ω_½ = hΩ + h²τ/2J, R⁺ = R(Δα) R
    return -1


@njit(cache=True, _nrt=False)
def after_forces(lo, hi, h, st, bodies, aux):
    """The closing half kicks with the forces ``F⁺, τ⁺`` of the new configuration."""
    for i in range(lo, hi):
        kick(i, 0.5 * h, st, bodies)  # v⁺ = v_½ + hF⁺/2m, Ω⁺ = Ω_½ + hτ⁺/2J


@njit(cache=True, _nrt=False)
def turn(lo, hi, h, st, bodies, aux):
    """The rotational stages of ``before_forces`` alone (contact sub-stepping, `dem.integrators.respa`
    moves the centres); returns −1."""
    for i in range(lo, hi):
        kick_rotation(i, 0.5 * h, st, bodies)  # Ω_½ = Ω + hτ/2J
        rotate_linear(i, h, st)  # Δα = h Ω_½, R⁺ = R(Δα) R
    return -1


@njit(cache=True, _nrt=False)
def spin(lo, hi, h, st, bodies, aux):
    """The rotational stage of ``after_forces`` alone."""
    for i in range(lo, hi):
        kick_rotation(i, 0.5 * h, st, bodies)  # Ω⁺ = Ω_½ + hτ⁺/2J
