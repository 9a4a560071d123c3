"""The Johnson–Kendall–Roberts law: Hertz's (`dem.interactions.normal.hertz`) with the adhesion of
the work of adhesion ``w`` on the contact radius ``a``. A contact forms when the spheres touch and
holds, stretched, down to ``ξ_c < 0`` (`jkr_separation`), where it snaps off; it pulls off at
``1.5 π w R*`` under force control."""

import math

import numpy as np
from numba import njit

from .hertz import critical_stiffness, hertz, hertz_modulus, hertz_stiffness
from .record import NormalLaw


@njit(inline="always")
def jkr_pull_off(reduced, work):
    """``1.5 π w R*``."""
    return 1.5 * np.pi * work * reduced


@njit(inline="always")
def jkr_energy(a, modulus, reduced, work):
    """``U(a)`` of a JKR contact of radius ``a``: ``∫ F dξ`` along the JKR curve from ``a = 0``
    (``ξ = 0``, no force), ``8E*a⁵/(15R*²) − (4/3)E* s a^{7/2}/R* + π w a²``, ``s = √(2πw/E*)``."""
    s = np.sqrt(2.0 * np.pi * work / modulus)
    a2 = a * a
    return (8.0 * modulus * a2 * a2 * a / (15.0 * reduced * reduced) - 4.0 / 3.0 * modulus * s * a2 * a * np.sqrt(a)
            / reduced + np.pi * work * a2)


@njit(cache=True)
def jkr_separation(stiffness, length, reduced, work):
    """``(ξ_c, U_c)``: the overlap ``ξ_c < 0`` at which a JKR contact breaks (under displacement
    control: ``dξ/da = 0`` at ``a_c = (π w R*²/(8E*))^{1/3}``, ``ξ_c = −3 a_c²/R*``) and its energy
    there (`jkr_energy`), which the contact loses when it snaps off."""
    modulus = hertz_modulus(stiffness, length, reduced)
    a_c = np.cbrt(np.pi * work * reduced * reduced / (8.0 * modulus))
    return -3.0 * a_c * a_c / reduced, jkr_energy(a_c, modulus, reduced, work)


@njit(cache=True)
def jkr_touch_energy(stiffness, length, reduced, work):
    """``U_t < 0``: the energy of a JKR contact where it forms, at touch (``ξ = 0``, ``a_t = (2π w
    R*²/E*)^{1/3}``), which the contact loses when it snaps on. It is booked at that value, not at
    the overlap of the step that finds the spheres touching: the two differ by about ``F ξ_n``,
    which the half step's kick with the jumped force gives back on average (booked at the step's
    overlap, every contact that forms would add ``(h/2) |F| v`` to the budget)."""
    modulus = hertz_modulus(stiffness, length, reduced)
    return jkr_energy(np.cbrt(2.0 * np.pi * work * reduced * reduced / modulus), modulus, reduced, work)


@njit(inline="always")
def jkr(delta, stiffness, length, reduced, work):
    """``(U_H, U_a, F, k)`` at the dimensionless overlap ``δ`` (``ξ = L δ ≥ ξ_c``, the stable
    branch): the Hertz energy ``U_H`` (0 for ``ξ ≤ 0``), the adhesion's part ``U_a`` (the law's
    energy is ``U_H + U_a = `jkr_energy`(a)``), the force ``F`` (repulsive positive) and the
    contact stiffness ``k = 2 E* a`` of the contact radius ``a`` (Hertz's ``dF/dξ`` at that radius).

    ``ξ = a²/R* − s √a`` with ``s = √(2π w/E*)``, ``F = 4E*a³/(3R*) − 2E* s a^{3/2}``. The contact
    radius solves ``x⁴ − R* s x − R* ξ = 0`` for ``x = √a`` (Ferrari: the resolvent ``m³ + R*ξ m −
    (R* s)²/8 = 0`` has one real root for ``ξ > ξ_c``, Cardano's, written without cancellation as
    ``m = C/(u² + P/3 + P²/(9u²))``; then ``x = (√(2m) + √(2R* s/√(2m) − 2m))/2``)."""
    xi = length * delta
    u_hertz = 0.0
    if delta > 0.0:
        u_hertz = hertz(delta, stiffness, length)[0]
    modulus = hertz_modulus(stiffness, length, reduced)
    s = np.sqrt(2.0 * np.pi * work / modulus)
    c = 0.125 * reduced * reduced * s * s
    p = reduced * xi
    u = np.cbrt(0.5 * c + np.sqrt(max(0.25 * c * c + p * p * p / 27.0, 0.0)))
    m = c / (u * u + p / 3.0 + p * p / (9.0 * u * u))
    root = np.sqrt(2.0 * m)
    x = 0.5 * (root + np.sqrt(max(2.0 * reduced * s / root - 2.0 * m, 0.0)))
    a = x * x
    force = 4.0 * modulus * a * a * a / (3.0 * reduced) - 2.0 * modulus * s * a * x
    return u_hertz, jkr_energy(a, modulus, reduced, work) - u_hertz, force, 2.0 * modulus * a


LAW = NormalLaw(
    name="jkr", doc="Hertz with the adhesion of work_of_adhesion w of Johnson–Kendall–Roberts: contacts form at "
    "touch and break stretched, pull-off 1.5 π w R* (particles and planes only)", energy_force=hertz,
    stiffness=hertz_stiffness, damping_factor=math.sqrt(5.0 / 6.0), secant_ratio=1.5,
    critical_stiffness=critical_stiffness, adhesion=jkr, pull_off=jkr_pull_off, separation=jkr_separation,
    touch_energy=jkr_touch_energy, needs={"work_of_adhesion": "a work of adhesion w > 0"},
)
