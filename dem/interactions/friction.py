"""Tangential (Coulomb) friction of contacts (docs/theory.md §3b): the spring's law, which
`dem.interactions.contact`'s pipeline applies between particles (per-contact history in the
contact table), and the wall contact's law (`wall_contact`), which `dem.interactions.wall_contact`'s
pipeline applies (history in keyed wall slots of its state). Acts only where the normal contact acts (``k_pp``/``k_pw``
> 0) and a friction coefficient is non-zero, so scenes without friction run exactly as before. A pair of
particles carries friction (and rolling and twisting resistance, `dem.interactions.rolling`) once
its overlap δ exceeds 1e-9 (`dem.interactions.hertz.in_contact`, where contact sub-stepping
counts a contact active): spheres that touch only by round-off, the bonded neighbours of a lattice at rest
or in rigid flight, carry none and cost only that test (their Coulomb limit would be below
``μ K 10⁻¹³·⁵/L``).

Contact frame (pair ``i``, ``j``; the owner ``i < j`` of the pair's history): ``n = (x_i − x_j)/r``
from ``j`` to ``i``, overlap ``ξ_n = R_i + R_j − r``, the contact point on the line of centres at
the middle of the overlap, ``c = x_i + a_i = x_j + a_j`` with lever arms
``a_i = −(R_i − ξ_n/2) n``, ``a_j = (R_j − ξ_n/2) n``; a wall is a particle of infinite radius
(``n`` its normal, ``a = −(R − ξ_n/2) n``, ``ξ_n = R − gap``) that does not spin unless it is a
turning mesh: its point, velocity and spin are those of the walls' state now
(`dem.interactions.walls.WallState`; moving, servo and mesh walls alike), ``v_j`` is the wall's
velocity at the contact point, ``u + ω_w × (c − p_w)``, and the reaction ``−F_t`` of each wall
contact is booked on the wall (`dem.interactions.walls.add_wall_load`), so that walls.csv
logs it and the ``walls`` column books its work.

Tangential spring (Mindlin no-slip stiffness, Cundall–Strack history): the history is the
elastic tangential displacement ``ξ`` of ``i`` relative to ``j`` (a vector in the tangent plane);
the force on ``i`` is ``F_t = −k_t ξ`` at the contact point (``−F_t`` on ``j``), with

    k_t = κ k_n,   k_n = dF_n/dξ_n (the normal law's, `dem.interactions.hertz.normal_stiffness`),
    κ = 2(1 − ν)/(2 − ν)     (Mindlin: k_t/k_n = 4G*/E* for like materials; ν = ``poisson_ratio``)

Each step (the ``update`` before the forces, with the half-step velocities of ``rrp2``):

1. ``ξ`` turns with the contact frame: the smallest rotation taking the normal of a step ago
   (from ``x − h v``) to ``n``, then a turn about ``n`` by the pair's mean spin
   ``h (Ω_i + Ω_j)·n/2`` (rrp2's Cayley map), then projection on the tangent plane — so a pair
   that turns rigidly keeps its ``ξ`` (objectivity);
2. the stiffness follows the normal load (Thornton & Yin 1991): on loading (``k_t`` grows) the
   force is kept (``ξ ← ξ k_t_old/k_t``), on unloading ``ξ`` is kept (the force falls with
   ``k_t``); the elastic energy this releases, ``½ k_old|ξ|² − ½ k_t|ξ'|² ≥ 0``, is booked;
3. ``ξ ← ξ + h v_t``: ``v_t`` the tangential part of the relative velocity at the contact point,
   ``v_i − v_j + Ω_i × ā_i − Ω_j × ā_j``, with the lever arms averaged over the step (so the
   spring's energy change equals the work of the force to second order);
4. Coulomb: if ``k_t |ξ| > μ F_n`` (``F_n`` the elastic normal force), ``ξ`` is scaled back to
   ``|ξ| = μ F_n/k_t`` (slip); the work of the force through the slip,
   ``½ k_t (ξ_before + ξ_after)·(ξ_trial − ξ_after)``, is booked.

Wall contacts keep their springs in keyed slots of this interaction's state, a plane's keyed by
the wall. A mesh contact's keyed by the mesh: its feature changes as the sphere moves (face,
shared edge, next face), so a contact of this step continues the contact of the step before,
with the same mesh, whose normal is nearest to its own and within 60° (`SAME_CONTACT`; each old
contact continued at most once, `mesh_slot`); one that continues none starts relaxed, and an old
contact that none continues has ended (its energy is booked as on opening). Over a flat
triangulated floor the normal is the same on every triangle, so the spring is carried across
the shared edges unchanged: the sphere feels what it feels on the plane. In step 1 a wall
contact's frame turns from the slot's last normal to ``n`` and about ``n`` by the wall's own spin
``h ω_w·n`` (a plane's normal and spin are fixed: it does not turn). The gap a step ago (the
stiffness of step 2, the lever arm a step ago of step 3) is a plane's ``gap − h (v − u)·n``
(``u`` the wall's velocity; as a pair's distance a step ago comes from ``x − h v``) and a mesh
contact's the gap its slot stored when its springs last stepped; a mesh contact that starts
takes ``gap − h (v − u)·n`` too (``u`` at its point on the surface, `mesh_gap_before`), the gap
beyond the radius it had a step ago, not the one it has now. So a flat mesh computes the plane's
numbers to the last bit (but for a rounding tie, where the plane's ``fl(fl(g + d) − d)``,
``d = h v_n``, is an ulp off the gap ``g`` it had: a few steps in 10⁵ of an impact).

While the spring sticks (below its limit) a dashpot ``−γ √(m* k_t) v_t`` damps it, with the
``γ`` of the normal damping (``[contact] restitution``; none for ``e = 1``; as the
Hertz–Mindlin model of EDEM), so that stuck contacts do not ring; the dashpot is scaled down
where spring plus dashpot would exceed ``μ F_n``, and a slipping contact carries exactly
``μ F_n``.

The elastic energy ``½ k_t |ξ|²`` is potential energy (column ``tangential``); the booked work
(steps 2 and 4, and the elastic energy of a contact that opens) is column ``friction``, the
dashpot's work ``h c |v_t|²`` column ``dissipated``; both are part of ``total``. A pair's force
is computed once (`dem.interactions.contact`) and given to its two particles bitwise opposite,
at one point, so ``ΣF = 0`` and ``Σ(x × F + τ) = 0`` to round-off.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from ..contacts import wall_slot
from ..meshes import MAX_CONTACTS
from ..schema import Key, non_negative
from .hertz import RESTITUTION, contact_critical_step, inverse_masses
from .normal import contact_scales
from .walls import wall_velocity_at

#: a spring within this fraction of its limit counts as slipping (no dashpot)
MOBILISED = 1.0 - 1e-9

#: Most wall contacts one particle keeps friction history with (more touching at once: the extra
#: ones act without friction).
MAX_WALL_SLOTS = 4
#: a mesh contact continues the one of the step before whose normal is within 60° of its own
SAME_CONTACT = 0.5


def _poisson_ratio(value):
    return None if 0.0 <= value <= 0.5 else "must be in [0, 0.5]"


FRICTION = Key("float", 0.0, "Coulomb friction coefficient μ of particle–particle and particle–wall contacts: "
               "|F_t| ≤ μ F_n (0: frictionless; a wall may set its own)", "", non_negative)
POISSON_RATIO = Key("float", 0.25, "Poisson's ratio ν of the particles; it sets the Mindlin tangential stiffness "
                    "k_t = 2(1 − ν)/(2 − ν) · k_n (6/7 k_n for 0.25), also used by twisting", "", _poisson_ratio)
#: A tangential sub-model of ``[contact] tangential``: the text of its choice in the key's doc, its
#: set-up, ``fixed(contact)``, the constant ``k_t`` the kernels take from its ``[contact]`` table
#: (``fixed``; 0: Mindlin's ``κ k_n``, `tangential_stiffness`), and ``needs``: the keys it reads,
#: which must then be positive, with what each is (`dem.interactions.hertz.sub_model_error`).
TangentialModel = namedtuple("TangentialModel", "doc fixed needs")
#: the tangential sub-models, by their names in ``[contact] tangential``
TANGENTIAL_MODELS = {
    "mindlin": TangentialModel("k_t = 2(1 − ν)/(2 − ν) k_n on the normal law's contact stiffness",
                               lambda contact: 0.0, {}),
    "linear_history": TangentialModel("a constant k_t = tangential_stiffness",
                                      lambda contact: float(contact["tangential_stiffness"]),
                                      {"tangential_stiffness": "its stiffness k_t > 0"}),
    "none": TangentialModel("no tangential force (then friction must be 0)", lambda contact: 0.0, {}),
}
KEYS = {"contact": {
    "friction": FRICTION, "poisson_ratio": POISSON_RATIO, "restitution": RESTITUTION,
    "tangential": Key("str", "mindlin", "tangential spring (sub-model) of the contacts with friction, with "
                      "Cundall–Strack history and the Coulomb limit μ F_n: "
                      + "; ".join(f"'{name}', {model.doc}" for name, model in TANGENTIAL_MODELS.items()), "",
                      choices=tuple(TANGENTIAL_MODELS)),
    "tangential_stiffness": Key("float", 0.0, "k_t of the 'linear_history' tangential spring (a force per length)",
                                "force/length", non_negative),
}}


@njit(inline="always")
def tangential_stiffness(p, k_n):
    """``k_t`` of the tangential spring: the linear spring's own (``p.fixed``), or Mindlin's
    ``κ k_n``."""
    return p.fixed if p.fixed > 0.0 else p.ratio * k_n


@njit(inline="always")
def tangential_energy(p, k_n, xi):
    """``½ k_t |ξ|²`` of the tangential spring ``xi`` (`tangential_stiffness`)."""
    return (0.5 * p.fixed if p.fixed > 0.0 else 0.5 * p.ratio * k_n) * norm_squared(xi)


def stiffness_ratio(poisson_ratio):
    """Mindlin's no-slip ``k_t/k_n = 2(1 − ν)/(2 − ν)`` for two spheres of one material."""
    return 2.0 * (1.0 - poisson_ratio) / (2.0 - poisson_ratio)


# ---------------------------------------------------------------------------------------------
# Shared numerics of history springs (tangential here, rolling and twisting in `.rolling`)
# ---------------------------------------------------------------------------------------------

@njit(inline="always")
def carry(v, old, n, twist):
    """The tangent vector ``v`` (⊥ the old normal ``old``) turned with the contact frame: the
    smallest rotation taking ``old`` to ``n``, a turn about ``n`` by ``2 atan(twist/2)`` (the
    Cayley map of rrp2's ``R(Δα)`` for ``Δα = twist n``), then projected on the plane ⊥ ``n``."""
    ux = old[1] * n[2] - old[2] * n[1]
    uy = old[2] * n[0] - old[0] * n[2]
    uz = old[0] * n[1] - old[1] * n[0]
    c = old[0] * n[0] + old[1] * n[1] + old[2] * n[2]
    x, y, z = v
    if c > -0.5:  # R v = v + u × v + u × (u × v)/(1 + c); a pair does not turn by 120° in a step
        wx, wy, wz = uy * z - uz * y, uz * x - ux * z, ux * y - uy * x
        s = 1.0 / (1.0 + c)
        x, y, z = (x + wx + s * (uy * wz - uz * wy), y + wy + s * (uz * wx - ux * wz),
                   z + wz + s * (ux * wy - uy * wx))
    if twist != 0.0:
        t2 = twist * twist
        cos, sin = (4.0 - t2) / (4.0 + t2), 4.0 * twist / (4.0 + t2)
        px, py, pz = n[1] * z - n[2] * y, n[2] * x - n[0] * z, n[0] * y - n[1] * x
        x, y, z = cos * x + sin * px, cos * y + sin * py, cos * z + sin * pz
    along = x * n[0] + y * n[1] + z * n[2]
    return x - along * n[0], y - along * n[1], z - along * n[2]


@njit(inline="always")
def turned(v, old, n, twist):
    """`carry` for a wall contact: ``v`` itself when the frame did not turn (a flat mesh that
    does not spin: as on a plane, to the last bit)."""
    if twist == 0.0 and old[0] == n[0] and old[1] == n[1] and old[2] == n[2]:
        return v
    return carry(v, old, n, twist)


@njit(inline="always")
def restiffen(squared, k_old, k_new):
    """``(factor, booked)`` for a spring stored at stiffness ``k_old`` whose contact now has
    ``k_new`` (``squared`` its squared extension): on loading the force is kept (the extension
    scaled by ``k_old/k_new``), on unloading the extension is kept (Thornton & Yin); ``booked``
    is the elastic energy released, ``½ k_old |v|² − ½ k_new |factor v|² ≥ 0``."""
    if k_new > k_old:
        factor = k_old / k_new
        return factor, 0.5 * squared * k_old * (1.0 - factor)
    return 1.0, 0.5 * squared * (k_old - k_new)


@njit(inline="always")
def slip(before, trial, k, limit):
    """The spring after a step: ``trial`` (3-vector) scaled back to ``k |v| ≤ limit``; returns
    ``(v, booked)``, ``booked`` the work of the force through the slip,
    ``½ k (before + v)·(trial − v)`` (``before``: the spring at the start of the step)."""
    squared = trial[0] * trial[0] + trial[1] * trial[1] + trial[2] * trial[2]
    if k == 0.0:
        return (0.0, 0.0, 0.0), 0.0
    if k * k * squared <= limit * limit:
        return trial, 0.0
    factor = limit / (k * np.sqrt(squared))
    v = (factor * trial[0], factor * trial[1], factor * trial[2])
    booked = 0.5 * k * ((before[0] + v[0]) * (trial[0] - v[0]) + (before[1] + v[1]) * (trial[1] - v[1])
                        + (before[2] + v[2]) * (trial[2] - v[2]))
    return v, booked


@njit(inline="always")
def gap_before(gap, i, w, h, velocity, wall_velocity, n):
    """The distance ``gap`` of particle ``i`` from plane ``w`` (`dem.interactions.hertz.wall_gap`; moving at
    ``wall_velocity[w]``) a step ago: ``gap − h (v − u)·n``."""
    speed = ((velocity[i, 0] - wall_velocity[w, 0]) * n[0] + (velocity[i, 1] - wall_velocity[w, 1]) * n[1]
             + (velocity[i, 2] - wall_velocity[w, 2]) * n[2])
    return gap - h * speed


@njit(inline="always")
def holds_wall_springs(keys, i):
    """Whether particle ``i`` keeps a spring in any of its wall slots."""
    for s in range(keys.shape[1]):
        if keys[i, s] >= 0:
            return True
    return False


@njit(inline="always")
def lever(radius, n, overlap):
    """``−(R − ξ_n/2) n``: from a particle's centre to the contact point."""
    arm = -(radius - 0.5 * overlap)
    return arm * n[0], arm * n[1], arm * n[2]


@njit(inline="always")
def tangential_velocity(v, omega_i, arm_i, omega_j, arm_j, n):
    """Tangential part of ``v + Ω_i × a_i − Ω_j × a_j`` (``v`` the relative centre velocity)."""
    x = v[0] + omega_i[1] * arm_i[2] - omega_i[2] * arm_i[1] - omega_j[1] * arm_j[2] + omega_j[2] * arm_j[1]
    y = v[1] + omega_i[2] * arm_i[0] - omega_i[0] * arm_i[2] - omega_j[2] * arm_j[0] + omega_j[0] * arm_j[2]
    z = v[2] + omega_i[0] * arm_i[1] - omega_i[1] * arm_i[0] - omega_j[0] * arm_j[1] + omega_j[1] * arm_j[0]
    along = x * n[0] + y * n[1] + z * n[2]
    return x - along * n[0], y - along * n[1], z - along * n[2]


@njit(inline="always")
def vector_mean(a, b):
    return 0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2])


@njit(inline="always")
def _wall3(springs, i, s):
    return springs[i, s, 0], springs[i, s, 1], springs[i, s, 2]


@njit(inline="always")
def norm_squared(v):
    return v[0] * v[0] + v[1] * v[1] + v[2] * v[2]


@njit(inline="always")
def step_spring(xi, k_old, k_new, v_t, h, limit):
    """Steps 2–4 of the module's docstring for the spring ``xi`` (already turned with the frame):
    ``(xi, booked)``."""
    booked = 0.0
    if xi[0] != 0.0 or xi[1] != 0.0 or xi[2] != 0.0:
        factor, booked = restiffen(norm_squared(xi), k_old, k_new)
        xi = (factor * xi[0], factor * xi[1], factor * xi[2])
    trial = (xi[0] + h * v_t[0], xi[1] + h * v_t[1], xi[2] + h * v_t[2])
    xi, work = slip(xi, trial, k_new, limit)
    return xi, booked + work


# ---------------------------------------------------------------------------------------------
# Particle–particle
# ---------------------------------------------------------------------------------------------

@njit(inline="always")
def dashpot(k, squared, limit, damping, inverse_mass):
    """``c`` of a contact dashpot ``−c v`` on a spring of stiffness ``k`` and squared extension
    ``squared``: ``γ √(k m*)`` (the Hertz damping of `dem.interactions.hertz` with ``k`` for the
    normal stiffness) while ``k |v| < limit``; 0 once the spring slips (or ``γ = 0``)."""
    if damping == 0.0 or inverse_mass == 0.0 or k == 0.0 or k * k * squared >= (MOBILISED * limit) ** 2:
        return 0.0
    return damping * np.sqrt(k / inverse_mass)


@njit(inline="always")
def damped(spring, c, v, limit):
    """``(spring − f c v, f c |v|²)``: the spring's force (or moment) plus the dashpot ``−c v``,
    scaled by the largest ``f ≤ 1`` that keeps the sum within ``limit`` (so a dashpot never
    carries a contact past its slip limit), and the dashpot's power."""
    dx, dy, dz = -c * v[0], -c * v[1], -c * v[2]
    sx, sy, sz = spring[0] + dx, spring[1] + dy, spring[2] + dz
    f = 1.0
    if sx * sx + sy * sy + sz * sz > limit * limit:
        a = dx * dx + dy * dy + dz * dz
        b = spring[0] * dx + spring[1] * dy + spring[2] * dz
        rest = spring[0] * spring[0] + spring[1] * spring[1] + spring[2] * spring[2] - limit * limit
        f = (-b + np.sqrt(max(b * b - a * rest, 0.0))) / a
    return (spring[0] + f * dx, spring[1] + f * dy, spring[2] + f * dz), f * c * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


# ---------------------------------------------------------------------------------------------
# Particle–wall
# ---------------------------------------------------------------------------------------------

@njit(inline="always")
def spring_squares(springs, i, s, first):
    """``(|v|², v_3²)``: the squares of the spring components ``first … first + 2`` of particle
    ``i``'s wall slot ``s`` and of component ``first + 3`` (0 if there is none)."""
    vector = springs[i, s, first] * springs[i, s, first] + springs[i, s, first + 1] * springs[i, s, first + 1] \
        + springs[i, s, first + 2] * springs[i, s, first + 2]
    twist = springs[i, s, first + 3] * springs[i, s, first + 3] if springs.shape[2] > first + 3 else 0.0
    return vector, twist


@njit(inline="always")
def release_slot(i, s, keys, springs):
    """Drop particle ``i``'s wall springs in slot ``s`` (as `dem.contacts.free_wall_slot`, element
    by element: a view of ``springs (n, s, width)`` would cost more than the rest of the row);
    returns `spring_squares` of its first components."""
    squares = spring_squares(springs, i, s, 0)
    keys[i, s] = -1
    for c in range(springs.shape[2]):
        springs[i, s, c] = 0.0
    return squares


@njit(inline="always")
def find_wall_slot(keys, i, w, claim):
    """Particle ``i``'s slot of wall ``w``: with ``claim``, a free one is claimed if it has none
    (`dem.contacts.wall_slot`); −1 if none."""
    if claim:
        return wall_slot(keys, i, w)
    for s in range(keys.shape[1]):
        if keys[i, s] == w:
            return s
    return -1


@njit(inline="always")
def store_contact(previous, i, s, n, gap):
    """Remember the normal ``n`` and ``gap`` of the contact of particle ``i``'s mesh slot ``s``."""
    for c in range(3):
        previous[i, s, c] = n[c]
    previous[i, s, 3] = gap


@njit(cache=True)
def mesh_slot(keys, previous, i, w, n, gap, taken, claim):
    """``(slot, taken)``: the slot of particle ``i`` whose contact with mesh ``w`` continues the
    contact of normal ``n`` (the one of the step before with the normal nearest to ``n``, within
    `SAME_CONTACT`, among the slots not in the bit mask ``taken``); with ``claim``, a free slot
    is claimed for a new contact (its last normal and gap set to ``n``, ``gap``); −1 if none.
    ``taken`` comes back with the slot's bit set."""
    slot, nearest = -1, SAME_CONTACT
    for s in range(keys.shape[1]):
        if keys[i, s] == w and not (taken >> s) & 1:
            along = previous[i, s, 0] * n[0] + previous[i, s, 1] * n[1] + previous[i, s, 2] * n[2]
            if along > nearest:
                slot, nearest = s, along
    if slot < 0 and claim:
        for s in range(keys.shape[1]):
            if keys[i, s] < 0:
                keys[i, s] = w
                store_contact(previous, i, s, n, gap)
                slot = s
                break
    if slot >= 0:
        taken |= 1 << slot
    return slot, taken


@njit(cache=True)
def ended_mesh_slots(i, keys, previous, mesh_count, mesh_wall, mesh_normal, planes):
    """Bit mask of particle ``i``'s mesh slots whose contact ended (no contact of this step
    continues it, `mesh_slot`; ``mesh_*``: the walls' state's arrays)."""
    taken = 0
    for c in range(min(mesh_count[i], MAX_CONTACTS)):
        taken = mesh_slot(keys, previous, i, mesh_wall[i, c], (mesh_normal[i, c, 0], mesh_normal[i, c, 1],
                                                                mesh_normal[i, c, 2]), 0.0, taken, False)[1]
    ended = 0
    for s in range(keys.shape[1]):
        if keys[i, s] >= planes and not (taken >> s) & 1:
            ended |= 1 << s
    return ended


@njit(inline="always")
def mesh_gap_before(i, w, h, n, gap, position, velocity, wall_point, wall_velocity, wall_spin):
    """Particle ``i``'s distance from mesh ``w`` a step ago along the normal ``n`` of its contact
    at ``gap`` now, as `gap_before` takes a plane's: ``gap − h (v − u)·n``, ``u`` the
    mesh's velocity at the contact's point on its surface, ``x − gap n`` (the walls' state's
    arrays): for a contact that starts this step, the gap beyond the radius it had a step ago
    (over a flat mesh, the plane's number to the bit)."""
    u = wall_velocity_at(wall_point, wall_velocity, wall_spin, w, position[i, 0] - gap * n[0],
                         position[i, 1] - gap * n[1], position[i, 2] - gap * n[2])
    speed = (velocity[i, 0] - u[0]) * n[0] + (velocity[i, 1] - u[1]) * n[1] + (velocity[i, 2] - u[2]) * n[2]
    return gap - h * speed


@njit(cache=True)
def mesh_spring(i, c, h, keys, previous, mesh_wall, mesh_gap, mesh_normal, table, taken, advance, position, velocity,
                wall_point, wall_velocity, wall_spin):
    """Particle ``i``'s mesh contact ``c`` (``mesh_*``, ``wall_*``: the walls' state's arrays) and
    its springs' slot: ``(w, n, gap, old, gap_old, slot, taken)``, the mesh, the contact's normal
    and gap now and when its springs last stepped, the slot (`mesh_slot`, −1: none; with
    ``advance`` a new contact of a mesh with a non-zero coefficient in ``table[w, 3:]`` claims
    one, whose last normal and gap are ``n`` and the gap a step ago, `mesh_gap_before`, and the
    slot remembers ``n`` and ``gap``)."""
    w = mesh_wall[i, c]
    n = (mesh_normal[i, c, 0], mesh_normal[i, c, 1], mesh_normal[i, c, 2])
    gap = mesh_gap[i, c]
    active = False
    for k in range(3, table.shape[1]):
        active = active or table[w, k] > 0.0
    before = mesh_gap_before(i, w, h, n, gap, position, velocity, wall_point, wall_velocity, wall_spin)
    slot, taken = mesh_slot(keys, previous, i, w, n, before, taken, advance and active)
    old, gap_old = n, gap
    if slot >= 0:
        old, gap_old = (previous[i, slot, 0], previous[i, slot, 1], previous[i, slot, 2]), previous[i, slot, 3]
        if advance:
            store_contact(previous, i, slot, n, gap)
    return w, n, gap, old, gap_old, slot, taken


@njit(inline="always")
def wall_frame(i, w, radius, n, gap, position, wall_point, wall_velocity, wall_spin):
    """The contact of particle ``i`` (centre ``x``) with wall ``w`` at ``gap`` along the unit
    normal ``n``: ``(arm, r, u)``, the lever arm from ``x`` to the contact point ``c = x + arm``
    (the middle of the overlap), ``c`` from the wall's point and the wall's velocity at ``c``
    (`dem.interactions.walls.wall_velocity_at`)."""
    arm = lever(radius, n, radius - gap)
    cx, cy, cz = position[i, 0] + arm[0], position[i, 1] + arm[1], position[i, 2] + arm[2]
    u = wall_velocity_at(wall_point, wall_velocity, wall_spin, w, cx, cy, cz)
    return arm, (cx - wall_point[w, 0], cy - wall_point[w, 1], cz - wall_point[w, 2]), u


@njit(cache=True)
def wall_contact(i, w, slot, n, old, gap, gap_old, turn, h, v, omega, radius, inverse_mass, mu, p, springs,
                 position, wall_point, wall_velocity, wall_spin, advance):
    """Particle ``i``'s tangential contact with wall ``w`` (its spring in ``slot``, components 0–2;
    the unit normal ``n`` and ``gap`` now, ``old`` and ``gap_old`` a step ago): ``(fx, fy, fz,
    τx, τy, τz, energy, booked, power, rx, ry, rz)``, ``r`` the contact point from the wall's point
    (where the caller books the force's reaction, `add_wall_load`). With ``advance`` the spring
    first takes the step (turned with the frame when ``turn``: by the smallest rotation from
    ``old`` to ``n`` and the wall's spin about ``n``)."""
    coulomb, k_n = contact_scales(p.law, 1.0 - gap / radius, p.stiffness, radius, radius, p.work)
    k_t = tangential_stiffness(p, k_n)
    limit = mu * coulomb
    arm, r, u = wall_frame(i, w, radius, n, gap, position, wall_point, wall_velocity, wall_spin)
    relative = (v[0] - u[0], v[1] - u[1], v[2] - u[2])
    xi = _wall3(springs, i, slot)
    booked = 0.0
    if advance:
        if turn:
            xi = turned(xi, old, n, h * (wall_spin[w, 0] * n[0] + wall_spin[w, 1] * n[1] + wall_spin[w, 2] * n[2]))
        k_old = tangential_stiffness(p, contact_scales(p.law, 1.0 - gap_old / radius, p.stiffness, radius, radius,
                                                      p.work)[1])
        mean = vector_mean(arm, lever(radius, old, radius - gap_old))
        xi, booked = step_spring(xi, k_old, k_t, tangential_velocity(relative, omega, mean, (0.0, 0.0, 0.0), mean, n),
                                 h, limit)
        for c in range(3):
            springs[i, slot, c] = xi[c]
    squared = norm_squared(xi)
    gx, gy, gz = -k_t * xi[0], -k_t * xi[1], -k_t * xi[2]
    power = 0.0
    c = dashpot(k_t, squared, limit, p.damping, inverse_mass)
    if c != 0.0:
        (gx, gy, gz), power = damped((gx, gy, gz), c, tangential_velocity(relative, omega, arm, (0.0, 0.0, 0.0), arm,
                                                                          n), limit)
    return (gx, gy, gz, arm[1] * gz - arm[2] * gy, arm[2] * gx - arm[0] * gz, arm[0] * gy - arm[1] * gx,
            0.5 * k_t * squared, booked, power, r[0], r[1], r[2])


@njit(inline="always")
def released(p, half, gap, radius):
    """``½ |ξ|² k_t`` (``half = ½ |ξ|²``) of a wall contact that opened at ``gap`` (its energy
    leaves at the stiffness it had there)."""
    if p.fixed > 0.0:
        return half * p.fixed
    return half * p.ratio * contact_scales(p.law, 1.0 - gap / radius, p.stiffness, radius, radius, p.work)[1]


# ---------------------------------------------------------------------------------------------
# Set-up
# ---------------------------------------------------------------------------------------------

def wall_slots(model, width, active, planes):
    """``(wall_key (n, s), springs (n, s, width), mesh_contact)``: empty keyed wall slots for the
    walls with ``active`` coefficients (planes, then meshes: ``s`` the number of active planes
    plus `MAX_CONTACTS` per active mesh, at most `MAX_WALL_SLOTS`)."""
    meshes = int(np.count_nonzero(active[planes:]))
    slots = min(int(np.count_nonzero(active[:planes])) + MAX_CONTACTS * meshes, MAX_WALL_SLOTS)
    return (np.full((model.n_bodies, slots), -1, np.int32), np.zeros((model.n_bodies, slots, width)),
            np.zeros((model.n_bodies, slots if meshes else 0, 4)))


def friction_critical_step(what, reach_factor, pair_factor):
    """The tangential spring's oscillator: ``k_t = κ k_n`` on the contact point's inverse mass
    ``1/m + R²/J`` (translation and rolling), times the pair factor."""
    def critical_step(model, state, p):
        inverse_mass, inverse_inertia = inverse_masses(model)
        scale = p.ratio * (inverse_mass + (0.5 * model.diameter) ** 2 * inverse_inertia) * pair_factor
        dt, k = contact_critical_step(model, state, p, reach_factor, lambda overlap: scale)
        return [(dt, what, k)]

    return critical_step
