"""``rrp1``: seed 001 eq. (27), Campello's first-order map (docs/theory.md §2), for comparison:

    v⁺ = v + hF/m,   x⁺ = x + h v⁺,   Ω⁺ = Ω + hτ/J,   Δα = hΩ⁺,   R⁺ = R(Δα) R
"""

from numba import njit

from .stages import drift, kick, rotate_linear


@njit(cache=True, _nrt=False)
def before_forces(lo, hi, h, st, bodies, aux):
    for i in range(lo, hi):
        kick(i, h, st, bodies)  # v⁺ = v + hF/m, Ω⁺ = Ω + hτ/J
        drift(i, h, st)  # x⁺ = x + h v⁺
        rotate_linear(i, h, st)  # Δα = h Ω⁺, R⁺ = R(Δα) R
    return -1


@njit(cache=True, _nrt=False)
def after_forces(lo, hi, h, st, bodies, aux):
    """Nothing: the forces of the new configuration kick in the next step."""
