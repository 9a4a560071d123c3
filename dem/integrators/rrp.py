"""``rrp``: seed 001 eq. (23), the exact variational map of the RRP discrete Lagrangian for
spherical bodies (docs/theory.md §2). As ``rrp2`` but the rotation increment solves the quadratic (15):

    w = Ω + hτ/2J,   Δα = 2h w/(1 + √(1 − h²|w|²))

which has a real root only while ``h²|w|² < 1`` (a turn of less than π/2 per step).
"""

from numba import njit

from .stages import drift, kick, kick_rotation, kick_translation, rotate_exact

FAILURE = ("would turn by π/2 or more in one step (h²|Ω + hτ/2J|² ≥ 1, the limit of the 'rrp' map, "
           "seed 001 eq. 16)")


@njit(inline="always")
def _turn(i, h, st, bodies):
    """Body ``i``'s rotational stages up to the new configuration; whether the increment has a
    solution."""
    kick_rotation(i, 0.5 * h, st, bodies)  # w = Ω_½ = Ω + hτ/2J
    return rotate_exact(i, h, st)  # Δα = 2hw/(1 + √(1 − h²|w|²)), R⁺ = R(Δα) R   (eq. 16)


@njit(cache=True, _nrt=False)
def before_forces(lo, hi, h, st, bodies, aux):
    """Bodies ``lo ≤ i < hi`` up to the new configuration; returns the first body whose
    increment has no solution, or −1."""
    for i in range(lo, hi):
        kick_translation(i, 0.5 * h, st, bodies)  # v_½ = v + hF/2m
        drift(i, h, st)  # x⁺ = x + h v_½
        if not _turn(i, h, st, bodies):
            return i
    return -1


@njit(cache=True, _nrt=False)
def after_forces(lo, hi, h, st, bodies, aux):
    for i in range(lo, hi):
        kick(i, 0.5 * h, st, bodies)  # v⁺ = v_½ + hF⁺/2m, Ω⁺ = w + hτ⁺/2J


@njit(cache=True, _nrt=False)
def turn(lo, hi, h, st, bodies, aux):
    """The rotational stages of ``before_forces`` alone (contact sub-stepping, `dem.integrators.respa`
    moves the centres); returns the first body without an increment, or −1."""
    for i in range(lo, hi):
        if not _turn(i, h, st, bodies):
            return i
    return -1


@njit(cache=True, _nrt=False)
def spin(lo, hi, h, st, bodies, aux):
    """The rotational stage of ``after_forces`` alone."""
    for i in range(lo, hi):
        kick_rotation(i, 0.5 * h, st, bodies)  # Ω⁺ = w + hτ⁺/2J
