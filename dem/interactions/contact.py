"""The particle–particle contact pipeline (`CONTACT_PP`): the normal law, its damping, tangential
friction and rolling and twisting resistance of every touching pair in one pass, each pair
computed once. It acts where a particle–particle contact carries friction or rolling resistance
(``k_pp`` > 0 and ``friction``, ``rolling_friction`` or ``twisting_friction`` > 0); without them
`dem.interactions.hertz`'s ``hertz_pp`` acts alone. Under an adhesive normal law (JKR, DMT) the
same kernels act as `ADHESIVE_PP`, whose history has one more column (whether each JKR contact is
formed) and whose log has the adhesion's energy and the JKR contacts' lost energy
(``hysteresis``). The sub-models are those of
`dem.interactions.hertz` (the normal law of ``[contact] normal`` and its damping),
`dem.interactions.friction` (the Mindlin–Coulomb spring) and `dem.interactions.rolling` (EPSD
rolling and twisting springs), composed on one contact geometry: the normal ``n``, the overlap,
the lever arms and the relative velocity at the contact point of a pair ``i < j`` (its owner
``i``, which keeps the springs in its history slot, `dem.contacts`).

One force evaluation makes two passes over the rows, both over fixed chunks of rows (the result
is the same for any number of threads, and on any number of MPI ranks, whose local indices are
in the global order):

1. the update, over each row ``i``'s entries ``j > i`` (its owner slots): for a pair whose
   spheres touch (or whose springs are stored), the springs take the step (`friction`,
   `rolling`), then the pair's force and moments are computed once; the owner adds its share to
   its row's sum (in row order), which it leaves in the particle's force and moment (the row
   kernel reads it back as the first of the row pass, ``row_sums``, so no array holds the sums),
   and writes the share of ``j`` into the pair's own slot of the pair
   scratch (`LOADS` values a slot, apart from the history, `dem.contacts`; zero where the pair
   carries no load). Each slot is written by its
   own row, so chunks never write the same place. The owner books the pair's work (its friction
   and all its damping power).
2. the rows: each particle adds the shares of its pairs ``j < i`` (its lower entries, in row
   order; their slots come from the table, `dem.contacts.owner_slot`, without a search and
   without the pair's geometry) to what the update summed for ``j > i``.

The update reads and writes the history of its own pairs only, in slot order (one stream); the
pair arithmetic is done once. The force on a particle is then ``Σ_{j<i} + Σ_{j>i}``, each sum
in row order: a fixed order, though not the order of one sum over the row (a pair that carries
no load adds an exact zero).

Contact sub-stepping (`dem.integrators.respa`): the elastic normal force is the fast force; the
rows leave its sum and the count of active contacts as ``hertz_pp``'s do (``fast_pairs``,
`dem.interactions.contract`).
"""

import functools
from collections import namedtuple

import numpy as np
from numba import njit

from ..cell import TILTED, deforming, deforms, image_kind, image_velocity
from ..contacts import owner_slot
from .contract import ROW, Interaction, localize_bodies
from .friction import (
    KEYS as FRICTION_KEYS, TANGENTIAL_MODELS, carry, damped, dashpot, friction_critical_step, lever, norm_squared,
    step_spring, stiffness_ratio, tangential_energy, tangential_stiffness, tangential_velocity, vector_mean,
)
from .hertz import (
    DAMPING_MODELS, KEYS_PP as NORMAL_KEYS, adhesive, carries_springs, contact_substeps, in_contact, listing,
    normal_code, normal_critical_step, normal_damping, pair_active, pair_overlap, stiffness_damped, sub_model_error,
)
from .normal import (
    LAWS, adhesive_law, beyond_contact, contact_scales, is_adhesive, normal_law, normal_stiffness, pull_off, separation,
    touch_energy,
)
from .rolling import (
    KEYS as ROLLING_KEYS, advance_rolling_springs, contact_inertia, rolling_critical_step, rolling_moment,
    rolling_stiffnesses,
)

#: ``law``, ``stiffness``, ``damping`` (γ), ``substeps``, ``work`` (w): the normal law's
#: (`dem.interactions.hertz`); ``ratio`` (k_t/k_n), ``fixed`` (the linear spring's k_t, 0 for
#: Mindlin's), ``friction`` (μ), ``rolling``, ``twisting`` (μ_r, μ_t), ``rolling_damping`` (η_r),
#: ``contact_inertia`` (n, 2): the springs' (`dem.interactions.friction`, `.rolling`)
ContactParams = namedtuple("ContactParams", "law stiffness damping substeps work ratio fixed friction rolling "
                                            "twisting rolling_damping contact_inertia")
#: per particle: the booked ``dissipated`` (damping) and ``friction`` (slip, release) work, the
#: sub-stepping's ``active``, ``fast``, ``mean`` (as `dem.interactions.hertz.HertzState`; no rows
#: without sub-steps), ``upper (n, UPPER)``: the elastic normal force and the active contacts that
#: the update summed over the row's pairs ``j > i`` (no rows without sub-steps; the update leaves
#: the row's force and moment in the particle's own, `contact_pp_update`), ``hysteresis``: the energy its JKR
#: contacts lost forming and breaking (no rows without adhesion), and ``cell_work``: the work its
#: pairs ``j > i`` did against a deforming cell's moving images (`dem.cell`; the budget's ``cell``
#: column; no rows where the cell does not deform)
ContactState = namedtuple("ContactState", "dissipated friction active fast mean upper hysteresis cell_work")
#: the springs of a pair: ξ (3), θ_r (3), θ_t
SPRINGS = 7
#: under an adhesive law (`ADHESIVE_PP`) a column more: whether the pair's JKR contact is formed
FORMED = SPRINGS
#: the pair scratch (`dem.contacts`): the force and moment of a pair on its second body, at the pair's own slot
LOADS = 6
#: the update's sums of a row's pairs j > i that contact sub-stepping reads: the elastic normal force (3) and
#: the active contacts
UPPER = 4


@njit(inline="always")
def upper_entries(contacts, i):
    """Where row ``i``'s partners ``j > i`` begin (its sorted row: ``j < i`` before, ``j > i`` from
    there to the row's end)."""
    return contacts.start[i + 1] - (contacts.owner_start[i + 1] - contacts.owner_start[i])


@njit(inline="always")
def _springs(history, slot, column):
    """``(ξ (3), θ (4))``: the springs kept in ``slot`` from ``column`` on."""
    xi = (history[slot, column], history[slot, column + 1], history[slot, column + 2])
    theta = (history[slot, column + 3], history[slot, column + 4], history[slot, column + 5],
             history[slot, column + 6])
    return xi, theta


@njit(inline="always")
def _store_springs(history, slot, column, xi, theta):
    for c in range(3):
        history[slot, column + c] = xi[c]
    for c in range(4):
        history[slot, column + 3 + c] = theta[c]


@njit(inline="always")
def _release(p, xi, theta, reach, r_old, reduced):
    """The elastic energy of the springs of a contact that opened (at the stiffnesses of a step
    ago, when they last held)."""
    k_n = contact_scales(p.law, 1.0 - r_old / reach, p.stiffness, reach, reduced, p.work)[1]
    released = tangential_energy(p, k_n, xi)
    if p.rolling > 0.0 or p.twisting > 0.0:
        k = rolling_stiffnesses(k_n, reduced, reach - r_old, p.rolling, p.ratio)
        released += 0.5 * k[0] * (theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]) \
            + 0.5 * k[1] * theta[3] * theta[3]
    return released


@njit(inline="always")
def contact_pair(i, j, slot, column, h, horizon, st, bodies, p, history, kind=TILTED, plain=False):
    """The pair ``i < j`` (its springs in ``slot`` from ``column`` on: 0 for a particle pair, a
    member pair's own columns for clumps' members, `dem.interactions.clump_contacts`): advances
    the springs and returns ``(loaded, F (3), τ_i (3), τ_j (3), elastic (3), active, booked,
    power, lost, driven)``: whether it carries a load, the force on ``i`` (``−F`` on ``j``), the
    moments on ``i`` and ``j``, the elastic normal force on ``i``, whether it is active
    (`dem.interactions.hertz.pair_active`, with ``horizon``), the work booked to friction, the
    damping power, the energy a JKR contact lost forming or breaking
    (`dem.interactions.hertz.adhesive_law`) and the power the pair takes from a deforming cell's
    moving images (`dem.cell.image_velocity`: its relative velocity is taken against the image's;
    0 in a cell that does not deform). A JKR contact forms when the spheres touch and holds,
    stretched, until ``ξ_n < ξ_c``. ``kind``: the cell's `dem.cell.image_kind`. ``plain``, a
    constant True where the law does not adhere, the cell does not deform and there are no
    sub-steps (`contact_pp_update`), leaves out what only those need (the adhesive law's formed
    contacts, the images' velocity, ±0 in such a cell, and the active pairs): the same bits, in
    less code."""
    position, velocity, omega, diameter = st.position, st.velocity, st.angular_velocity, bodies.diameter
    radius_i, radius_j = 0.5 * diameter[i], 0.5 * diameter[j]
    dx, dy, dz, r2, reach = pair_overlap(i, j, radius_i, position, diameter, st.cell, kind)
    zero = (0.0, 0.0, 0.0)
    active = pair_active(i, j, dx, dy, dz, r2, reach, velocity, horizon) if horizon >= 0.0 and not plain else 0
    xi, theta = _springs(history, slot, column)
    stored = xi[0] != 0.0 or xi[1] != 0.0 or xi[2] != 0.0 or theta[0] != 0.0 or theta[1] != 0.0 \
        or theta[2] != 0.0 or theta[3] != 0.0
    touching = r2 < reach * reach
    reduced = radius_i * radius_j / (radius_i + radius_j)
    lost = 0.0
    holds = not plain and beyond_contact(p.law)
    formed = holds and history[slot, column + FORMED] != 0.0
    if holds:
        if formed and not touching:
            broken, snapped = separation(p.law, p.stiffness, reach, reduced, p.work)
            touching = reach - np.sqrt(r2) > broken
            if not touching:  # it snaps off: its energy at ξ_c is lost
                lost = snapped
        history[slot, column + FORMED] = 1.0 if touching else 0.0
    if not (touching or stored):
        return False, zero, zero, zero, zero, active, 0.0, 0.0, lost, 0.0
    r = np.sqrt(r2)
    n = (dx / r, dy / r, dz / r)
    w = zero if plain else image_velocity(i, j, dx, dy, dz, position, st.cell)
    v = (velocity[i, 0] - velocity[j, 0] - w[0], velocity[i, 1] - velocity[j, 1] - w[1],
         velocity[i, 2] - velocity[j, 2] - w[2])
    booked = power = 0.0
    springs = in_contact(r2, reach)
    r_old, old = r, n
    if stored or springs:
        ox, oy, oz = dx - h * v[0], dy - h * v[1], dz - h * v[2]
        r_old = np.sqrt(ox * ox + oy * oy + oz * oz)
        old = (ox / r_old, oy / r_old, oz / r_old)
        if not springs:  # the contact opened: the springs' elastic energy leaves with them
            _store_springs(history, slot, column, zero, (0.0, 0.0, 0.0, 0.0))
            booked = _release(p, xi, theta, reach, r_old, reduced)
    if not touching:
        return False, zero, zero, zero, zero, active, booked, 0.0, lost, 0.0
    delta = 1.0 - r / reach
    speed = (v[0] * dx + v[1] * dy + v[2] * dz) / r
    inverse_mass = bodies.inverse_mass[i] + bodies.inverse_mass[j]
    if not plain and is_adhesive(p.law):
        f_elastic, k_now = adhesive_law(p.law, delta, p.stiffness, reach, reduced, p.work)[2:]
        if holds and not formed:  # it snaps on: the curve's energy at touch is lost
            lost -= touch_energy(p.law, p.stiffness, reach, reduced, p.work)
        coulomb = f_elastic + 2.0 * pull_off(p.law, reduced, p.work)
    else:
        f_elastic = coulomb = normal_law(p.law, delta, p.stiffness, reach)[1]
        k_now = normal_stiffness(p.law, delta, p.stiffness, reach)
    f_n, power = stiffness_damped(f_elastic, power, 1.0, k_now, inverse_mass, speed, p.damping)
    elastic = f_elastic / r
    f_n /= r
    fx, fy, fz = f_n * dx, f_n * dy, f_n * dz
    ti = (0.0, 0.0, 0.0)
    tj = (0.0, 0.0, 0.0)
    if springs:
        omega_i = (omega[i, 0], omega[i, 1], omega[i, 2])
        omega_j = (omega[j, 0], omega[j, 1], omega[j, 2])
        twist = 0.5 * h * ((omega_i[0] + omega_j[0]) * n[0] + (omega_i[1] + omega_j[1]) * n[1]
                           + (omega_i[2] + omega_j[2]) * n[2])
        k_old = contact_scales(p.law, 1.0 - r_old / reach, p.stiffness, reach, reduced, p.work)[1]
        arm_i = lever(radius_i, n, reach - r)
        arm_j = lever(radius_j, n, reach - r)
        arm_j = (-arm_j[0], -arm_j[1], -arm_j[2])
        if p.friction > 0.0:  # the tangential spring (dem.interactions.friction)
            if stored:
                xi = carry(xi, old, n, twist)
            mean_i = vector_mean(arm_i, lever(radius_i, old, reach - r_old))
            mean_j = vector_mean(lever(radius_j, n, reach - r), lever(radius_j, old, reach - r_old))
            mean_j = (-mean_j[0], -mean_j[1], -mean_j[2])
            limit = p.friction * coulomb
            k_t = tangential_stiffness(p, k_now)
            xi, work = step_spring(xi, tangential_stiffness(p, k_old), k_t,
                                   tangential_velocity(v, omega_i, mean_i, omega_j, mean_j, n), h, limit)
            booked += work
            gx, gy, gz = -k_t * xi[0], -k_t * xi[1], -k_t * xi[2]
            c = dashpot(k_t, norm_squared(xi), limit, p.damping, inverse_mass)
            if c != 0.0:
                (gx, gy, gz), dissipation = damped((gx, gy, gz), c, tangential_velocity(v, omega_i, arm_i, omega_j,
                                                                                        arm_j, n), limit)
                power += dissipation
            fx, fy, fz = fx + gx, fy + gy, fz + gz
            ti = (arm_i[1] * gz - arm_i[2] * gy, arm_i[2] * gx - arm_i[0] * gz, arm_i[0] * gy - arm_i[1] * gx)
            tj = (arm_j[2] * gy - arm_j[1] * gz, arm_j[0] * gz - arm_j[2] * gx, arm_j[1] * gx - arm_j[0] * gy)
        if p.rolling > 0.0 or p.twisting > 0.0:  # the rolling and twisting springs (dem.interactions.rolling)
            spin = (omega_i[0] - omega_j[0], omega_i[1] - omega_j[1], omega_i[2] - omega_j[2])
            if stored:
                turned = carry((theta[0], theta[1], theta[2]), old, n, twist)
                theta = (turned[0], turned[1], turned[2], theta[3])
            k_old_r = rolling_stiffnesses(k_old, reduced, reach - r_old, p.rolling, p.ratio)
            k_r = rolling_stiffnesses(k_now, reduced, reach - r, p.rolling, p.ratio)
            limit = reduced * coulomb
            turned, twisted, work = advance_rolling_springs(theta, k_old_r, k_r, spin, n, h, limit,
                                                            (p.rolling, p.twisting))
            theta = (turned[0], turned[1], turned[2], twisted)
            booked += work
            inertia = p.contact_inertia
            moment, _, dissipation = rolling_moment(theta, k_r, n, p.rolling_damping,
                                                    (inertia[i, 0] + inertia[j, 0], inertia[i, 1] + inertia[j, 1]),
                                                    spin, limit, (p.rolling, p.twisting))
            power += dissipation
            ti = (ti[0] + moment[0], ti[1] + moment[1], ti[2] + moment[2])
            tj = (tj[0] - moment[0], tj[1] - moment[1], tj[2] - moment[2])
        _store_springs(history, slot, column, xi, theta)
    return True, (fx, fy, fz), ti, tj, (elastic * dx, elastic * dy, elastic * dz), active, booked, power, lost, \
        fx * w[0] + fy * w[1] + fz * w[2]


@njit(cache=True, _nrt=False)
def contact_pp_update(lo, hi, h, st, bodies, contacts, p, own, history, loads):
    """Pass 1 over the rows ``lo ≤ i < hi``: each pair ``j > i`` of the row once (`contact_pair`);
    its share of ``j`` to the pair's own slot of ``loads`` (zero where the pair carries
    no load, so that ``j``'s row may add every one), the row's sum of its shares to the force and
    moment of ``i`` (which `contact_pp_forces`, the first of the row kernels, reads back before the
    rows set them: no array of row sums), with contact sub-steps its elastic normal force and
    active contacts to ``own.upper[i]``; the work booked to ``i``. A law that does not adhere in a
    cell that does not deform, without sub-steps, takes the pair's ``plain`` copy, which leaves out
    what only the other cases need (the same bits)."""
    if not beyond_contact(p.law) and not is_adhesive(p.law) and not deforms(st.cell) and p.substeps <= 1:
        _update_rows(lo, hi, h, st, bodies, contacts, p, own, history, loads, True)
    else:
        _update_rows(lo, hi, h, st, bodies, contacts, p, own, history, loads, False)


@njit(inline="always")
def _update_rows(lo, hi, h, st, bodies, contacts, p, own, history, loads, plain):
    """`contact_pp_update` with `contact_pair`'s ``plain`` (a constant at each call)."""
    start, index, owner_start, upper = contacts.start, contacts.neighbors, contacts.owner_start, own.upper
    force, moment = st.force, st.moment
    horizon = 2.0 * h if p.substeps > 1 else -1.0
    kind = image_kind(st.cell)
    for i in range(lo, hi):
        fx = fy = fz = tx = ty = tz = ex = ey = ez = booked = power = lost = driven = 0.0
        active = 0
        slot = owner_start[i]
        for k in range(upper_entries(contacts, i), start[i + 1]):  # the entries j > i
            j = index[k]
            loaded, f, ti, tj, e, on, work, dissipation, snapped, taken = contact_pair(i, j, slot, 0, h, horizon,
                                                                                       st, bodies, p, history, kind,
                                                                                       plain)
            active += on
            booked += work
            lost += snapped
            driven += taken
            if loaded:
                power += dissipation
                fx, fy, fz = fx + f[0], fy + f[1], fz + f[2]
                tx, ty, tz = tx + ti[0], ty + ti[1], tz + ti[2]
                ex, ey, ez = ex + e[0], ey + e[1], ez + e[2]
                loads[slot, 0] = -f[0]
                loads[slot, 1] = -f[1]
                loads[slot, 2] = -f[2]
                loads[slot, 3] = tj[0]
                loads[slot, 4] = tj[1]
                loads[slot, 5] = tj[2]
            else:
                for c in range(LOADS):
                    loads[slot, c] = 0.0
            slot += 1
        force[i, 0], force[i, 1], force[i, 2] = fx, fy, fz
        moment[i, 0], moment[i, 1], moment[i, 2] = tx, ty, tz
        if p.substeps > 1:
            upper[i, 0], upper[i, 1], upper[i, 2] = ex, ey, ez
            upper[i, 3] = active
        book_row(i, h, own, booked, power, lost, driven)


@njit(inline="always")
def book_row(i, h, own, booked, power, lost, driven):
    """Book what row ``i``'s pairs did in the step ``h`` to its owner ``i``: the work ``booked``
    to friction, the damping ``power``, the energy ``lost`` by its JKR contacts (an adhesive law)
    and the power ``driven`` taken from a deforming cell's moving images."""
    own.friction[i] += booked
    own.dissipated[i] += h * power
    if own.hysteresis.shape[0] > 0:  # an adhesive law
        own.hysteresis[i] += lost
    if own.cell_work.shape[0] > 0:  # a deforming cell
        own.cell_work[i] -= h * driven


@njit(inline="always")
def lower_shares(i, contacts, loads):
    """``(fx, fy, fz, tx, ty, tz)``: the shares the pairs ``j < i`` of row ``i`` left at their
    slots of ``loads`` (every lower entry's, in row order, `dem.contacts.owner_slot`)."""
    first, last = contacts.start[i] - contacts.owner_start[i], upper_entries(contacts, i) - contacts.owner_start[i]
    fx = fy = fz = tx = ty = tz = 0.0
    for lower in range(first, last):
        slot = owner_slot(contacts, lower)
        fx, fy, fz = fx + loads[slot, 0], fy + loads[slot, 1], fz + loads[slot, 2]
        tx, ty, tz = tx + loads[slot, 3], ty + loads[slot, 4], tz + loads[slot, 5]
    return fx, fy, fz, tx, ty, tz


@njit(inline="always")
def contact_pp_forces(i, h, st, bodies, contacts, p, own, history, loads):
    """Pass 2, particle ``i``: the shares its pairs ``j < i`` left at their slots of ``loads`` (every lower
    entry's, in row order: zero where a pair carries no load), then the update's sum over its
    pairs ``j > i``, which it left in the force and moment of ``i``; with contact sub-stepping
    also the elastic normal force of the pairs ``j < i`` that touch and the active contacts
    (``fast_pairs``)."""
    start, upper, force, moment = contacts.start, own.upper, st.force, st.moment
    fx, fy, fz, tx, ty, tz = lower_shares(i, contacts, loads)
    if p.substeps > 1:
        position, velocity, diameter, index = st.position, st.velocity, bodies.diameter, contacts.neighbors
        radius = 0.5 * diameter[i]
        horizon = 2.0 * h
        ex = ey = ez = 0.0
        active = 0
        kind = image_kind(st.cell)
        for k in range(start[i], upper_entries(contacts, i)):  # the entries j < i
            j = index[k]
            dx, dy, dz, r2, reach = pair_overlap(i, j, radius, position, diameter, st.cell, kind)
            active += pair_active(i, j, dx, dy, dz, r2, reach, velocity, horizon)
            if r2 < reach * reach:
                r = np.sqrt(r2)
                elastic = normal_law(p.law, 1.0 - r / reach, p.stiffness, reach)[1] / r
                ex, ey, ez = ex + elastic * dx, ey + elastic * dy, ez + elastic * dz
        own.active[i] = active
        own.active[i] += int(upper[i, 3])
        own.fast[i, 0] = ex + upper[i, 0]
        own.fast[i, 1] = ey + upper[i, 1]
        own.fast[i, 2] = ez + upper[i, 2]
    return fx + force[i, 0], fy + force[i, 1], fz + force[i, 2], tx + moment[i, 0], ty + moment[i, 1], tz + moment[i, 2]


@njit(inline="always")
def pair_energies(i, j, slot, column, st, bodies, p, history):
    """``(touching, normal, adhesion, springs, tangential, rolling, twisting)`` of the pair
    ``i < j`` (its springs in ``slot`` from ``column`` on, as `contact_pair`'s): whether it
    touches (under the JKR law: is formed), the normal law's Hertz (or Hooke) part and its
    adhesion's, whether its springs hold, and the tangential, rolling and twisting springs'
    elastic energies."""
    position, diameter = st.position, bodies.diameter
    radius = 0.5 * diameter[i]
    dx, dy, dz, r2, reach = pair_overlap(i, j, radius, position, diameter, st.cell)
    normal = adhesion = tangential = rolling = twisting = 0.0
    touching = r2 < reach * reach or (beyond_contact(p.law) and history[slot, column + FORMED] != 0.0)
    springs = touching and in_contact(r2, reach)
    if touching:
        r = np.sqrt(r2)
        delta = 1.0 - r / reach
        reduced = radius * 0.5 * diameter[j] / (radius + 0.5 * diameter[j])
        if is_adhesive(p.law):
            normal, adhesion = adhesive_law(p.law, delta, p.stiffness, reach, reduced, p.work)[:2]
        else:
            normal = normal_law(p.law, delta, p.stiffness, reach)[0]
        if springs:
            k_n = contact_scales(p.law, delta, p.stiffness, reach, reduced, p.work)[1]
            xi, theta = _springs(history, slot, column)
            tangential = tangential_energy(p, k_n, xi)
            k_r, k_tw = rolling_stiffnesses(k_n, reduced, reach - r, p.rolling, p.ratio)
            rolling = 0.5 * k_r * (theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2])
            twisting = 0.5 * k_tw * theta[3] * theta[3]
    return touching, normal, adhesion, springs, tangential, rolling, twisting


@njit(inline="always")
def _energies(st, bodies, contacts, p, history):
    """``(normal, adhesion, tangential, rolling, twisting)``: the normal law's Hertz (or Hooke)
    part and its adhesion's, the tangential, rolling and twisting springs' elastic energies over
    the pairs in contact (each once, from its owner's row, `pair_energies`)."""
    start, index, owner_start = contacts.start, contacts.neighbors, contacts.owner_start
    normal = adhesion = tangential = rolling = twisting = 0.0
    for i in range(st.position.shape[0]):
        slot = owner_start[i]
        for k in range(upper_entries(contacts, i), start[i + 1]):
            touching, u_n, u_a, springs, u_t, u_r, u_tw = pair_energies(i, index[k], slot, 0, st, bodies, p,
                                                                        history)
            if touching:
                normal += u_n
                if is_adhesive(p.law):
                    adhesion += u_a
                if springs:
                    tangential += u_t
                    rolling += u_r
                    twisting += u_tw
            slot += 1
    return normal, adhesion, tangential, rolling, twisting


@njit(cache=True)
def contact_pp_energy(st, bodies, contacts, p, own, history):
    """``(hertz_pp, tangential, rolling, twisting, friction, dissipated, cell)``: the normal law's,
    the tangential, rolling and twisting springs' elastic energies over the touching pairs, the
    booked slip and damping work and the work done against a deforming cell."""
    normal, _, tangential, rolling, twisting = _energies(st, bodies, contacts, p, history)
    return normal, tangential, rolling, twisting, np.sum(own.friction), np.sum(own.dissipated), np.sum(own.cell_work)


@njit(cache=True)
def adhesive_pp_energy(st, bodies, contacts, p, own, history):
    """``(hertz_pp, adhesion, hysteresis, tangential, rolling, twisting, friction, dissipated,
    cell)``: `contact_pp_energy` with the adhesion's energy and the JKR contacts' lost energy."""
    normal, adhesion, tangential, rolling, twisting = _energies(st, bodies, contacts, p, history)
    return (normal, adhesion, np.sum(own.hysteresis), tangential, rolling, twisting, np.sum(own.friction),
            np.sum(own.dissipated), np.sum(own.cell_work))


def check_sub_models(contact, wall_friction):
    """The one-line error (``"contact.key: problem"``) of a ``[contact]`` table whose sub-models
    and parameters disagree, or None: a sub-model set to ``"none"`` whose parameters are set
    (``wall_friction (w, 3)``: the walls' own friction coefficients, NaN where a wall has none), a
    normal law or tangential spring without a parameter it needs, or with one that only others
    read (`dem.interactions.hertz.sub_model_error`), contact sub-stepping under an adhesive law."""
    walls = np.nan_to_num(np.asarray(wall_friction, float).reshape(-1, 3))
    law = contact["normal"]
    if contact["damping"] == "none" and contact["restitution"] < 1.0:
        others = listing((name for name in DAMPING_MODELS if name != "none"), "or")
        return f"contact.damping: 'none' leaves contact.restitution = {contact['restitution']} unused: set " \
               f"restitution = 1 or choose {others}"
    problem = sub_model_error(contact, "normal", {law.name: law for law in LAWS}, "normal law", "normal laws")
    if problem:
        return problem
    if LAWS[normal_code(contact)].adhesive and contact["substeps"] > 1:
        plain = listing((other.name for other in LAWS if not other.adhesive), "or")
        return f"contact.substeps: contact sub-stepping needs a normal law without history ({plain}), not '{law}'"
    for model, keys, column in (("tangential", ("friction",), 0), ("rolling", ("rolling_friction",), 1),
                                ("twisting", ("twisting_friction",), 2)):
        if contact[model] == "none" and (contact[keys[0]] > 0.0 or (walls[:, column] > 0.0).any()):
            return f"contact.{model}: 'none' leaves contact.{keys[0]} (or a wall's) unused: set it to 0 or choose " \
                   f"a {model} model"
    return sub_model_error(contact, "tangential", TANGENTIAL_MODELS, "tangential spring", "tangential springs")


def _setup(adhesion):
    def setup(model):
        contact = model.sections["contact"]
        if not carries_springs(contact) or not (model.diameter > 0).any() or adhesive(contact) != adhesion \
                or model.has_clumps:  # `dem.interactions.clump_contacts` acts instead
            return None
        fixed = TANGENTIAL_MODELS[contact["tangential"]].fixed(contact)
        return ContactParams(normal_code(contact), float(contact["k_pp"]), normal_damping(contact),
                             contact_substeps(model), float(contact["work_of_adhesion"]),
                             stiffness_ratio(contact["poisson_ratio"]), fixed, float(contact["friction"]),
                             float(contact["rolling_friction"]), float(contact["twisting_friction"]),
                             float(contact["rolling_damping"]), contact_inertia(model))

    return setup


def _state(model, params):
    n = model.n_bodies
    substepped = params.substeps > 1
    steps = n if substepped else 0  # the sub-steps' active contacts, fast force and its scratch
    return ContactState(np.zeros(n), np.zeros(n), np.zeros(steps, np.int64), np.zeros((steps, 3)),
                        np.zeros((steps, 3)), np.zeros((steps, UPPER)),
                        np.zeros(n if LAWS[params.law].adhesive else 0),
                        np.zeros(n if deforming(model.sections["cell"]) else 0))


def pipeline_critical_step(normal, tangential, rolling, acting):
    """A contact pipeline's ``critical_step``: the oscillators of its ``normal`` law and of its
    ``tangential`` and ``rolling`` springs where they act (``acting(p)``: whether each does)."""
    def critical_step(model, state, p):
        steps = normal(model, state, p)
        friction, turning = acting(p)
        if friction:
            steps += tangential(model, state, p)
        if turning:
            steps += rolling(model, state, p)
        return steps

    return critical_step


_critical_step = pipeline_critical_step(
    normal_critical_step("normal contact particle–particle", 1.0, 2.0),
    friction_critical_step("tangential friction particle–particle", 1.0, 2.0),
    rolling_critical_step("rolling/twisting resistance particle–particle", 1.0, 0.25, 2.0,
                          lambda p: (p.rolling, p.twisting)),
    lambda p: (p.friction > 0.0, p.rolling > 0.0 or p.twisting > 0.0))


CONTACT_PP = Interaction(
    name="contact_pp", kind=ROW,
    doc="Particle–particle contact pipeline: the normal law, damping, friction, rolling and twisting of each touching "
        "pair in one pass (where friction or rolling resistance acts).",
    columns=("hertz_pp", "tangential", "rolling", "twisting", "friction", "dissipated", "cell"), internal=True,
    keys={"contact": {**NORMAL_KEYS["contact"], **FRICTION_KEYS["contact"], **ROLLING_KEYS["contact"]}},
    setup=_setup(False), state=_state, forces=contact_pp_forces, energy=contact_pp_energy, neighbors=True,
    history=SPRINGS, loads=LOADS, update=contact_pp_update, critical_step=_critical_step, fast_pairs=True,
    row_sums=True,
    localize=functools.partial(localize_bodies, per_body=("contact_inertia",)),
    scratch_state=("upper",),
)
#: the pipeline under an adhesive normal law (JKR, DMT): the adhesion's energy and the JKR
#: contacts' hysteresis are columns of their own, the history keeps whether each JKR contact is
#: formed, and the contacts are not sub-stepped
ADHESIVE_PP = Interaction(
    name="adhesive_pp", kind=ROW,
    doc="Particle–particle contact pipeline under an adhesive normal law (JKR or DMT): as contact_pp, with the "
        "adhesion's energy and the JKR hysteresis booked.",
    columns=("hertz_pp", "adhesion", "hysteresis", "tangential", "rolling", "twisting", "friction", "dissipated",
             "cell"),
    internal=True, keys=CONTACT_PP.keys, setup=_setup(True), state=_state, forces=contact_pp_forces,
    energy=adhesive_pp_energy, neighbors=True, history=SPRINGS + 1, loads=LOADS, update=contact_pp_update,
    critical_step=_critical_step, localize=CONTACT_PP.localize, scratch_state=CONTACT_PP.scratch_state,
    row_sums=True,
)
