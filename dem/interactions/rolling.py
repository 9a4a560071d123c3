"""Rolling and twisting resistance of contacts (docs/theory.md §3b): the springs' law, which
`dem.interactions.contact`'s pipeline applies between particles (per-contact history in the
contact table), and the wall contact's law (`wall_contact`), which `dem.interactions.wall_contact`'s
pipeline applies (keyed wall slots of its state). Acts where the normal contact acts and ``rolling_friction`` or ``twisting_friction`` is
non-zero.

Rolling: the elastic–plastic spring–dashpot model (EPSD, Ai, Chen, Rotter & Ooi 2011, Powder
Technol. 206:269, type C). With the relative spin ``ω = Ω_i − Ω_j`` (a wall's: ``ω_w``, 0 for a plane), its
rolling part ``ω_r = ω − (ω·n) n`` and twisting part ``ω·n``, the histories are the elastic
rolling rotation ``θ_r`` (a vector in the tangent plane) and twisting angle ``θ_t``; the moment
on ``i`` is ``M = −k_r θ_r − k_t,tw θ_t n + M_d`` (``−M`` on ``j``: a couple), with

    k_r = 2.25 μ_r² R*² k_n      (Ai et al.'s rolling stiffness; k_n the normal law's dF/dξ_n, R* = R_i R_j/(R_i + R_j))
    k_tw = ½ k_t a²,  a² = R* ξ_n  (Marshall 2009, as LAMMPS' "twisting marshall"; k_t = κ k_n as for sliding)
    |k_r θ_r| ≤ μ_r R* F_n,  |k_tw θ_t| ≤ μ_t R* F_n   (F_n the elastic normal force)
    M_d = −η_r · 2 √(I_r k_r) ω_r while the rolling spring is below its limit (0 at full
          mobilisation; scaled down where |−k_r θ_r + M_d| would pass μ_r R* F_n),
          I_r = [Σ 1/(J + m R²)]⁻¹ over the moving bodies of the pair; the twisting spring has
          the same kind of dashpot, −η_r · 2 √(I_t k_tw) (ω·n) n with I_t = [Σ 1/J]⁻¹

Each step the springs turn with the contact frame, follow the normal load and take the
increments ``h ω_r``, ``h ω·n`` (then slip at their limits) exactly as the tangential spring of
`dem.interactions.friction` (wall contacts, meshes' included, kept and matched as there; the
couple's reaction is booked on the wall). Elastic energies ``½ k_r |θ_r|²`` and ``½ k_tw θ_t²`` are columns
``rolling`` and ``twisting``; the released and slipped energy goes to ``friction``, the
dashpots' work to ``dissipated``. The moments of a pair are bitwise opposite couples, so the
angular momentum is conserved to round-off.
"""


import numpy as np
from numba import njit

from ..schema import Key, non_negative
from .friction import (
    POISSON_RATIO, damped, dashpot, ended_mesh_slots, release_slot, released, restiffen, slip, spring_squares,
    turned,
)
from .hertz import contact_critical_step, inverse_masses
from .normal import contact_scales

#: history width: θ_r (3), θ_t
WIDTH = 4

KEYS = {"contact": {
    "rolling_friction": Key("float", 0.0, "rolling friction coefficient μ_r: |M_r| ≤ μ_r R* F_n, R* = R_i R_j/(R_i + "
                            "R_j) (R for a wall), elastic–plastic spring–dashpot (EPSD) model (0: off; a wall may "
                            "set its own)", "", non_negative),
    "twisting_friction": Key("float", 0.0, "twisting friction coefficient μ_t: |M_t| ≤ μ_t R* F_n (0: off; a wall "
                             "may set its own)", "", non_negative),
    "rolling_damping": Key("float", 0.3, "EPSD dashpot η_r of the rolling and twisting springs, a fraction of "
                           "their critical damping 2 √(I k), active below their limits (Ai et al. 2011 use 0.3)", "",
                           non_negative),
    "poisson_ratio": POISSON_RATIO,
    "rolling": Key("str", "epsd", "rolling resistance (sub-model): 'epsd', the elastic–plastic spring–dashpot of "
                   "rolling_friction and rolling_damping; 'none' (then rolling_friction must be 0)", "",
                   choices=("epsd", "none")),
    "twisting": Key("str", "epsd", "twisting resistance (sub-model): 'epsd', the spring–dashpot of twisting_friction "
                    "(Marshall's twisting stiffness); 'none' (then twisting_friction must be 0)", "",
                    choices=("epsd", "none")),
}}


@njit(inline="always")
def rolling_stiffnesses(k_n, reduced_radius, overlap, rolling, ratio):
    """``(k_r, k_tw)`` for the normal stiffness ``k_n`` and the overlap ``ξ_n``."""
    return 2.25 * rolling * rolling * reduced_radius * reduced_radius * k_n, \
        0.5 * ratio * k_n * reduced_radius * overlap


@njit(inline="always")
def advance_rolling_springs(spring, k_old, k_new, omega, n, h, limit, mu):
    """One step of the rolling and twisting springs ``spring = (θ_r, θ_t)`` (θ_r already turned
    with the frame): follow the stiffness (``k_old``, ``k_new``: ``(k_r, k_tw)``), add ``h ω_r``
    and ``h ω·n``, slip at ``μ limit`` (``mu = (μ_r, μ_t)``, ``limit = R* F_n``). Returns
    ``(θ_r, θ_t, booked)``."""
    theta = (spring[0], spring[1], spring[2])
    twist = spring[3]
    booked = 0.0
    if theta[0] != 0.0 or theta[1] != 0.0 or theta[2] != 0.0:
        factor, released = restiffen(theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2], k_old[0],
                                     k_new[0])
        theta = (factor * theta[0], factor * theta[1], factor * theta[2])
        booked += released
    if twist != 0.0:
        factor, released = restiffen(twist * twist, k_old[1], k_new[1])
        twist *= factor
        booked += released
    spin = omega[0] * n[0] + omega[1] * n[1] + omega[2] * n[2]
    trial = (theta[0] + h * (omega[0] - spin * n[0]), theta[1] + h * (omega[1] - spin * n[1]),
             theta[2] + h * (omega[2] - spin * n[2]))
    theta, work = slip(theta, trial, k_new[0], mu[0] * limit)
    turned, twisted = slip((twist, 0.0, 0.0), (twist + h * spin, 0.0, 0.0), k_new[1], mu[1] * limit)
    return theta, turned[0], booked + work + twisted


@njit(inline="always")
def rolling_moment(spring, k, n, damping, inverse_inertia, omega, limit, mu):
    """``(M (3), energy, power)``: the couple of the springs ``spring`` with stiffnesses ``k``
    about the normal ``n``, plus the dashpots ``−C_r ω_r``, ``C_r = 2 η_r √(I_r k_r)``, and
    ``−C_t (ω·n) n``, ``C_t = 2 η_r √(I_t k_tw)``, each below its limit ``μ R* F_n``
    (``inverse_inertia = (1/I_r, 1/I_t)``, ``limit = R* F_n``, ``mu = (μ_r, μ_t)``; each scaled
    down where it would carry its moment past the limit, `dem.interactions.friction.damped`);
    ``energy`` the springs' elastic energy, ``power`` the dashpots' dissipation."""
    theta0, theta1, theta2, twist = spring[0], spring[1], spring[2], spring[3]
    rolling = (-k[0] * theta0, -k[0] * theta1, -k[0] * theta2)
    twisting = -k[1] * twist
    squared = theta0 * theta0 + theta1 * theta1 + theta2 * theta2
    energy = 0.5 * k[0] * squared + 0.5 * k[1] * twist * twist
    power = 0.0
    spin = omega[0] * n[0] + omega[1] * n[1] + omega[2] * n[2]
    c = dashpot(k[0], squared, mu[0] * limit, 2.0 * damping, inverse_inertia[0])
    if c != 0.0:
        rolling, power = damped(rolling, c, (omega[0] - spin * n[0], omega[1] - spin * n[1], omega[2] - spin * n[2]),
                                mu[0] * limit)
    c = dashpot(k[1], twist * twist, mu[1] * limit, 2.0 * damping, inverse_inertia[1])
    if c != 0.0:
        turned, dissipation = damped((twisting, 0.0, 0.0), c, (spin, 0.0, 0.0), mu[1] * limit)
        twisting = turned[0]
        power += dissipation
    return ((rolling[0] + twisting * n[0], rolling[1] + twisting * n[1], rolling[2] + twisting * n[2]),
            energy, power)


def contact_inertia(model):
    """``(n, 2)``: ``(1/(J + m R²), 1/J)`` of each body, its inverse moments of inertia for
    rolling about its contact point and for twisting about the normal (0 if it cannot turn)."""
    inverse_inertia = model.body_arrays().inverse_inertia[:, 0]
    radius = 0.5 * model.diameter
    with np.errstate(divide="ignore"):
        rolling = np.where(inverse_inertia == 0.0, 0.0, 1.0 / (model.inertia[:, 0] + model.mass * radius * radius))
    return np.ascontiguousarray(np.column_stack([rolling, inverse_inertia]))


# ---------------------------------------------------------------------------------------------
# Particle–wall
# ---------------------------------------------------------------------------------------------

@njit(inline="always")
def wall_stiffnesses(gap, radius, mu, p):
    """``(k_r, k_tw)`` of a wall contact at ``gap`` (``R* = R``)."""
    return rolling_stiffnesses(contact_scales(p.law, 1.0 - gap / radius, p.stiffness, radius, radius, p.work)[1],
                               radius, radius - gap, mu[0], p.ratio)


@njit(inline="always")
def spins(omega, wall_spin, w):
    """``(Ω_i − ω_w, ω_w)`` (6 numbers) of a particle spinning at ``omega`` on wall ``w``."""
    return (omega[0] - wall_spin[w, 0], omega[1] - wall_spin[w, 1], omega[2] - wall_spin[w, 2], wall_spin[w, 0],
            wall_spin[w, 1], wall_spin[w, 2])


@njit(cache=True)
def wall_contact(i, w, slot, n, old, gap, gap_old, turn, h, spin, radius, inverse, mu, p, springs, first, advance):
    """Particle ``i``'s rolling and twisting contact with wall ``w`` (springs in ``slot``,
    components ``first … first + 3``; normal and gap now ``n``, ``gap``, a step ago ``old``,
    ``gap_old``; ``spin`` the particle's spin relative to the wall's ``(Ω_i − ω_w)``): ``(τ (3),
    rolling, twisting, booked, power)`` (the caller books the couple's reaction on the wall,
    `add_wall_couple`). With ``advance`` the springs first take the step (turned with the frame
    when ``turn``, as `dem.interactions.friction`)."""
    k = wall_stiffnesses(gap, radius, mu, p)
    limit = radius * contact_scales(p.law, 1.0 - gap / radius, p.stiffness, radius, radius, p.work)[0]
    spring = (springs[i, slot, first], springs[i, slot, first + 1], springs[i, slot, first + 2],
              springs[i, slot, first + 3])
    booked = 0.0
    if advance:
        theta = (spring[0], spring[1], spring[2])
        if turn:
            theta = turned(theta, old, n, h * (spin[3] * n[0] + spin[4] * n[1] + spin[5] * n[2]))
        theta, twist, booked = advance_rolling_springs((theta[0], theta[1], theta[2], spring[3]),
                                                       wall_stiffnesses(gap_old, radius, mu, p), k,
                                                       (spin[0], spin[1], spin[2]), n, h, limit, mu)
        spring = (theta[0], theta[1], theta[2], twist)
        for c in range(WIDTH):
            springs[i, slot, first + c] = spring[c]
    moment, u, power = rolling_moment(spring, k, n, p.rolling_damping, inverse, (spin[0], spin[1], spin[2]), limit,
                                      mu)
    return (moment, 0.5 * k[0] * (spring[0] * spring[0] + spring[1] * spring[1] + spring[2] * spring[2]),
            0.5 * k[1] * spring[3] * spring[3], booked, power)


@njit(inline="always")
def release_ended(i, p, keys, springs, previous, found, radius, tangential, first, booked_t, booked_r):
    """Drop sphere ``i``'s mesh slots whose contact ended (`ended_mesh_slots`; ``found`` holds the
    sphere's mesh contacts, ``mesh_*``: the walls' state for a particle, `dem.meshes`):
    ``(booked_t, booked_r)`` with the elastic energies added that their tangential
    springs (with ``tangential``: components 0–2, μ in column 3 of ``p.walls``) and their rolling
    and twisting springs (components ``first … first + 3``; μ_r, μ_t in the last two columns)
    release."""
    table = p.walls
    ended = ended_mesh_slots(i, keys, previous, found.mesh_count, found.mesh_wall, found.mesh_normal, p.planes)
    for s in range(keys.shape[1]):
        if (ended >> s) & 1:
            w = keys[i, s]
            mu = (table[w, table.shape[1] - 2], table[w, table.shape[1] - 1])
            theta = twist = 0.0
            if mu[0] != 0.0 or mu[1] != 0.0:
                theta, twist = spring_squares(springs, i, s, first)
            squared = release_slot(i, s, keys, springs)[0]
            if tangential and table[w, 3] != 0.0:
                booked_t += released(p, 0.5 * squared, previous[i, s, 3], radius)
            if mu[0] != 0.0 or mu[1] != 0.0:
                k_old = wall_stiffnesses(previous[i, s, 3], radius, mu, p)
                booked_r += 0.5 * k_old[0] * theta + 0.5 * k_old[1] * twist
    return booked_t, booked_r


# ---------------------------------------------------------------------------------------------
# Set-up
# ---------------------------------------------------------------------------------------------

def rolling_critical_step(what, reach_factor, reduced_factor, pair_factor, coefficients):
    """The rolling and twisting springs' oscillators on the particles' inertia:
    ``ω² = (k_r + k_tw)/J · pair`` with ``R* = reduced_factor · D``."""
    def critical_step(model, state, p):
        rolling, twisting = coefficients(p)
        inverse_inertia = inverse_masses(model)[1]
        reduced = reduced_factor * model.diameter

        def scale(overlap):
            return (2.25 * rolling ** 2 * reduced ** 2 + 0.5 * p.ratio * reduced * overlap * reach_factor
                    * model.diameter * (twisting > 0)) * inverse_inertia * pair_factor

        dt, k = contact_critical_step(model, state, p, reach_factor, scale)
        return [(dt, what, k)]

    return critical_step
