"""Contacts of clumps with clumps and spheres (`CLUMP_PP`; docs/theory.md §3b.11): every member
sphere of a clump (`dem.clumps`) touches the member spheres of other bodies as a particle
touches particles, through the sub-models of the particle–particle pipeline
`dem.interactions.contact` (its pair kernel: the normal law and its dashpot of
`dem.interactions.hertz`, the Mindlin spring of `dem.interactions.friction`, the rolling and
twisting springs of `dem.interactions.rolling`), called on the members. It acts in a scene with
clumps and ``k_pp`` > 0, for every pair of bodies that can touch, in place of ``hertz_pp`` and
``contact_pp``: a sphere is a body of one member (its own centre, radius and spin), so sphere
pairs go through the same kernel and clumps and spheres mix.

The pairs are those of bodies: the neighbour list (`dem.contacts`) lists a clump by the sphere
about its centre of mass that holds every member (``list_diameter``: ``2 max_m (|s_m| + r_m)``,
the same whatever the clump's orientation, so the list stays valid while no centre has moved
more than half the skin, as for spheres). Members of one body are never paired: a clump does not
touch itself. Each body pair ``i < j`` (its owner ``i``) keeps the springs of every member pair in
its history slot, ``SPRINGS`` columns for the members ``(a, b)`` at ``(a · most + b) · SPRINGS``
(``most``: the most members of a body), so that the springs of a member pair travel with their
body pair's key across neighbour rebuilds and restarts; after them come the pair's occupancy bits
(`OCCUPANCY_BITS` a column), the bit of member pair ``q = a · most + b`` set while its columns
hold anything. Under an adhesive normal law (JKR, DMT)
the same kernels act as `ADHESIVE_CLUMP_PP`: each member pair has one column more, whether its
JKR contact is formed (`dem.interactions.contact.FORMED`, after its springs: ``SPRINGS + 1``
columns a member pair), so that a member pair stretched apart holds until it breaks as two
spheres do; the energy its JKR contacts lose forming and breaking is booked to the owner
(``hysteresis``) and the adhesion's energy has its column, as for spheres.

One force evaluation makes three passes:

0. the placement (`clump_pp_place`, the interaction's ``prepare``), body by body: each member
   ``m`` put where its body is (`dem.interactions.clump_walls.member_motion`: at ``x + R s_m``
   moving at ``v + Ω × R s_m``, spinning at ``Ω``) in its own scratch row ``m``, once a step
   rather than once for each pair the body is in;
1. the update, row ``i`` over its pairs ``j > i``: each member pair ``(a, b)``, in member order,
   is the contact pipeline's pair (`dem.interactions.contact.contact_pair`) on their scratch
   rows, with the springs in the member pair's own columns, where the two touch or the pair's
   occupancy bit is set; any other member pair carries no load and books nothing, and costs the
   touching test alone (neither its columns nor the pipeline are read), which is what makes a
   clump pair cheap: of the ``m²`` member pairs of two clumps side by side few touch. The force
   ``f`` of a member pair acts on ``i`` at ``a``'s contact point: the body ``i`` gets ``f`` and
   ``τ_a + R s_a × f``, the body ``j`` gets ``−f`` and ``τ_b + R s_b × (−f)`` (the moments about
   the centres of mass; ``τ`` the pair's moments about the member centres). The row sums its
   pairs' shares and leaves the sum in the force and moment of ``i`` (``row_sums``, as
   `dem.interactions.contact`); the share of ``j`` (the sum over the member pairs) goes to the
   pair's own slot of the pair scratch (`dem.contacts`), written for every listed pair (zero
   where none touches). Where the run writes the contact network (`keep_member_loads`:
   ``[output] contacts``), the slot also holds each member pair's loads (`MEMBER_LOADS` columns
   from `LOADS` on, in member-pair order: zero where the pair carries none), which `dem.network`
   reads.
2. the rows: each body adds the shares of its pairs ``j < i`` (row order) to the update's sum,
   which it reads back from its force and moment before the row pass sets them.

Every sum is in a fixed order (row order, member order), and each place is written by one row
(a member's scratch row by its body's chunk, a partner's image by the chunk of the row that
pairs it), so the result does not depend on the thread count. The kernels take
plain arrays and row indices, no views, so they compile without numba's reference counting
(``_nrt=False``), as the spheres' pipeline does.

The dashpots take the bodies' masses (and the smallest principal moments, for the rolling one),
as `dem.interactions.clump_walls` does: a member pair's damping coefficient is that of two
spheres of their clumps' masses. The contacts are not sub-stepped (the plain map: `dem.system`
refuses ``contact.substeps > 1`` with clumps).

Under MPI (`dem.distributed`) a rank's parameters are those of its bodies and their members
(`dem.interactions.contract.localize_members`); a ghost's members are placed from its position and
orientation, which the halo exchange brings, so the update of every pair with an owned body is the
one process's, bit for bit, and a body pair's springs travel by its key as a sphere pair's do.

In a periodic cell (`dem.cell`) a body pair acts through one image: the minimum image is taken of
the centres' separation, ``d = x_i − x_j − s`` (``s`` a lattice vector, 0 without a periodic
axis), and the partner's members are placed at ``x_j + s + R_j s_b``, so that every member pair
of the pair sees the same image of ``j``, the one the neighbour list paired (it lists bodies by
their centres' nearest image): its members are then copied from their rows, moved by ``s``, into
rows of the chunk's own (``most`` a chunk, after the members'), unless ``s`` is zero and the
image does not move, and the member separations are taken as placed (``p.cell``: no periodic
axis). With every periodic edge more than twice the list's reach (`dem.system` checks
it with the clumps' list diameters) no member of ``j``'s other images is within reach of a member
of ``i``, so reducing each member pair's separation on its own would find the same image for
every pair that touches; taking it once from the centres says so by construction, for every
pair, and costs one reduction per body pair. In a deforming cell the image moves relative to
``j`` at ``w = L s`` (`dem.cell.image_velocity`): the partner's members are placed moving faster
by ``w``, and the pair's force ``F`` on ``i`` books ``−h F·w`` to the budget's ``cell`` column as
the sphere pipeline's pairs do (±0 where the cell does not deform: the same bits).
"""

import dataclasses
import functools
from collections import namedtuple

import numpy as np
from numba import njit

from ..cell import box_cell, deforming, image_velocity, minimum_image
from .clump_walls import member_bodies, member_inertia, put_members
from .contact import (
    CONTACT_PP, LOADS, SPRINGS, ContactParams, book_row, contact_pair, lower_shares, pair_energies, upper_entries,
)
from .contract import CHUNK, ROW, Interaction, localize_members
from .friction import TANGENTIAL_MODELS, stiffness_ratio
from .hertz import adhesive, normal_code, normal_damping
from .normal import LAWS, is_adhesive

#: the pipeline's parameters, as `dem.interactions.contact.ContactParams` names them (``law``,
#: ``stiffness``, ``damping``, ``substeps``, ``work``, ``ratio``, ``fixed``, ``friction``, ``rolling``,
#: ``twisting``, ``rolling_damping``), ``member_inertia (M, 2)`` the members' rolling and twisting
#: inverse moments (the pipeline's ``contact_inertia``), the members of each body: ``member_start
#: (n + 1)``, ``member_offset (M, 3)`` (body frame, from the centre of mass), ``member_radius
#: (M,)``; ``most`` members a body at most, ``width`` the history's (``most² · stride``, then the
#: occupancy columns), ``list_diameter (n,)`` the neighbour list's and ``cell`` the cell the placed members' separations
#: are taken in (`dem.cell.box_cell`: none periodic; the partner is placed at its nearest image)
#: (flat: a parallel loop takes no named tuple nested in its arguments); ``network``: whether the
#: update keeps each member pair's loads for the contact network (`keep_member_loads`); ``stride`` a
#: member pair's history columns (``SPRINGS``, one more under an adhesive law: its formed flag)
ClumpContactParams = namedtuple("ClumpContactParams", "law stiffness damping substeps work ratio fixed friction "
                                                      "rolling twisting rolling_damping member_inertia member_start "
                                                      "member_offset member_radius most width list_diameter cell "
                                                      "network stride")
#: a member pair's loads in the pair scratch (`keep_member_loads`): whether it carries a load (1 or 0),
#: the force on the member of ``i`` (3), the moments on the members of ``i`` and of ``j`` about
#: their centres (3 each)
MEMBER_LOADS = 10
#: per body the booked ``dissipated`` (dashpots) and ``friction`` (slip, released springs) work;
#: the scratch members, one row for each member (``M``, `clump_pp_place`), then ``most`` for each
#: chunk of rows (a partner's image, `_partner`): ``position``, ``velocity``, ``spin``, ``arm``
#: (rows, 3), ``diameter``, ``inverse_mass`` (rows), ``inertia`` (rows, 2); per body the
#: energy its member pairs' JKR contacts lost forming and breaking, ``hysteresis`` (no rows
#: without an adhesive law), and ``cell_work``: the work its pairs ``j > i`` did against a deforming
#: cell's moving images (`dem.cell`; the budget's ``cell`` column; no rows where the cell does not deform)
ClumpContactState = namedtuple("ClumpContactState", "dissipated friction position velocity spin arm diameter "
                                                    "inverse_mass inertia hysteresis cell_work")
#: the member pairs' occupancy bits a history column holds (exact in a double)
OCCUPANCY_BITS = 32
#: what `dem.interactions.contact.contact_pair` reads of the bodies, here of the scratch members
MemberState = namedtuple("MemberState", "position velocity angular_velocity cell")
MemberBodies = namedtuple("MemberBodies", "diameter inverse_mass")


@njit(inline="always")
def _image(i, j, position, cell):
    """``(s, w)``: the lattice vector ``s`` from body ``j`` to its image nearest body ``i``, ``x_i −
    x_j`` less its minimum image (`dem.cell.minimum_image`; ±0 along an axis that is not
    periodic), and that image's velocity relative to ``j``, ``w = L s`` (`dem.cell.image_velocity`;
    ±0 in a cell that does not deform)."""
    rx, ry, rz = position[i, 0] - position[j, 0], position[i, 1] - position[j, 1], position[i, 2] - position[j, 2]
    dx, dy, dz = minimum_image(rx, ry, rz, cell)
    return (rx - dx, ry - dy, rz - dz), image_velocity(i, j, dx, dy, dz, position, cell)


@njit(inline="always")
def _place(lo, hi, st, bodies, p, own):
    """Put the members of the bodies ``lo ≤ i < hi`` where their bodies are, each member ``m`` in
    its own row ``m`` of the scratch (`dem.interactions.clump_walls.put_members`: at ``x + R s_m``,
    moving at ``v + Ω × R s_m``, spinning at ``Ω``; its arm ``R s_m``, diameter, body's inverse mass
    and inverse moments)."""
    for body in range(lo, hi):
        put_members(body, st, p, own.arm, own.position, own.velocity)
        for m in range(p.member_start[body], p.member_start[body + 1]):
            for c in range(3):
                own.spin[m, c] = st.angular_velocity[body, c]
            own.diameter[m] = 2.0 * p.member_radius[m]
            own.inverse_mass[m] = bodies.inverse_mass[body]
            own.inertia[m, 0] = p.member_inertia[m, 0]
            own.inertia[m, 1] = p.member_inertia[m, 1]


@njit(cache=True, _nrt=False)
def clump_pp_place(lo, hi, st, bodies, p, own):
    """The ``prepare`` pass over the bodies ``lo ≤ i < hi`` (one chunk's, or all): their members
    placed (`_place`) before any pair reads them; a chunk writes only its bodies' rows."""
    _place(lo, hi, st, bodies, p, own)


@njit(inline="always")
def _partner(i, j, other, st, p, own):
    """``(first, drift)``: the scratch row of the first member of body ``j`` as seen from body ``i``,
    and the velocity ``w`` of that image relative to ``j`` (`_image`): its own placed rows where
    ``j`` is paired as it is (no lattice vector, a cell that does not move it), else copies of them
    moved by the lattice vector and moving faster by ``w`` in the chunk's rows from ``other`` on."""
    shift, drift = _image(i, j, st.position, st.cell)
    start = p.member_start[j]
    if shift[0] == 0.0 and shift[1] == 0.0 and shift[2] == 0.0 \
            and drift[0] == 0.0 and drift[1] == 0.0 and drift[2] == 0.0:
        return start, drift
    for m in range(start, p.member_start[j + 1]):
        s = other + m - start
        for c in range(3):
            own.arm[s, c] = own.arm[m, c]
            own.position[s, c] = own.position[m, c] + shift[c]
            own.velocity[s, c] = own.velocity[m, c] + drift[c]
            own.spin[s, c] = own.spin[m, c]
        own.diameter[s] = own.diameter[m]
        own.inverse_mass[s] = own.inverse_mass[m]
        own.inertia[s, 0] = own.inertia[m, 0]
        own.inertia[s, 1] = own.inertia[m, 1]
    return other, drift


@njit(inline="always")
def _apart(a, b, own):
    """Whether the scratch members ``a`` and ``b`` do not touch: ``r² ≥ reach²`` exactly as
    `dem.interactions.contact.contact_pair` finds it (the separation taken as placed: its
    `dem.interactions.hertz.pair_overlap` in ``p.cell``, which has no periodic axis, gives the same
    bits; calling it here, with its minimum image, made the update 40 % slower)."""
    dx = own.position[a, 0] - own.position[b, 0]
    dy = own.position[a, 1] - own.position[b, 1]
    dz = own.position[a, 2] - own.position[b, 2]
    reach = 0.5 * own.diameter[a] + 0.5 * own.diameter[b]
    return not dx * dx + dy * dy + dz * dz < reach * reach


@njit(inline="always")
def _held(history, slot, column, stride):
    """Whether a member pair's history columns from ``column`` on hold anything (a spring, a formed
    JKR contact)."""
    for c in range(column, column + stride):
        if history[slot, c] != 0.0:
            return True
    return False


@njit(inline="always")
def _members(st, p, own):
    """The scratch members as `dem.interactions.contact.contact_pair` reads bodies: their state,
    their diameters and inverse masses, and the pipeline's parameters with their inverse
    moments; their separations are taken as placed (``p.cell``: the partner is at its image)."""
    members = MemberState(own.position, own.velocity, own.spin, p.cell)
    return members, MemberBodies(own.diameter, own.inverse_mass), \
        ContactParams(p.law, p.stiffness, p.damping, p.substeps, p.work, p.ratio, p.fixed, p.friction, p.rolling,
                      p.twisting, p.rolling_damping, own.inertia)


@njit(cache=True, _nrt=False)
def clump_pp_update(lo, hi, h, st, bodies, contacts, p, own, history, loads):
    """Pass 1 over the rows ``lo ≤ i < hi`` (one chunk's, or all in one call), the members placed
    (`clump_pp_place`): each body pair ``j > i`` of the row once, member pair by member pair
    (`dem.interactions.contact.contact_pair`) where the two touch or their columns hold something
    (the pair's `occupancy` bit; the others, which carry no load and book nothing, cost the touching
    test alone); the share of ``j`` to the pair's own slot of ``loads``, the row's sum of its shares
    to the force and moment of ``i``; the work booked to ``i``."""
    start, index, owner_start, member_start = contacts.start, contacts.neighbors, contacts.owner_start, p.member_start
    most = p.most
    other = member_start[-1] + most * (lo // CHUNK)  # the chunk's rows for a partner's image
    occupancy = most * most * p.stride
    placed, placed_bodies, pm = _members(st, p, own)
    arm = own.arm
    for i in range(lo, hi):
        fx = fy = fz = tx = ty = tz = booked = power = lost = driven = 0.0
        first = member_start[i]
        count = member_start[i + 1] - first
        slot = owner_start[i]
        for k in range(upper_entries(contacts, i), start[i + 1]):  # the entries j > i
            j = index[k]
            partner, drift = _partner(i, j, other, st, p, own)
            partners = member_start[j + 1] - member_start[j]
            gx = gy = gz = ax = ay = az = bx = by = bz = 0.0
            if p.network:
                for c in range(LOADS, LOADS + most * most * MEMBER_LOADS):
                    loads[slot, c] = 0.0
            for a in range(count):
                for b in range(partners):
                    sa, sb = first + a, partner + b
                    q = a * most + b
                    word, bit = occupancy + q // OCCUPANCY_BITS, np.int64(1) << (q % OCCUPANCY_BITS)
                    held = (np.int64(history[slot, word]) & bit) != 0
                    if not held and _apart(sa, sb, own):
                        continue
                    column = q * p.stride
                    loaded, f, ti, tj, _, _, work, dissipation, snapped, _ = contact_pair(
                        sa, sb, slot, column, h, -1.0, placed, placed_bodies, pm, history)
                    booked += work
                    lost += snapped
                    if _held(history, slot, column, p.stride) != held:
                        history[slot, word] = np.float64(np.int64(history[slot, word]) ^ bit)
                    if not loaded:
                        continue
                    power += dissipation
                    if p.network:
                        c = LOADS + q * MEMBER_LOADS
                        loads[slot, c] = 1.0
                        for e in range(3):
                            loads[slot, c + 1 + e] = f[e]
                            loads[slot, c + 4 + e] = ti[e]
                            loads[slot, c + 7 + e] = tj[e]
                    gx, gy, gz = gx + f[0], gy + f[1], gz + f[2]
                    ax += ti[0] + (arm[sa, 1] * f[2] - arm[sa, 2] * f[1])
                    ay += ti[1] + (arm[sa, 2] * f[0] - arm[sa, 0] * f[2])
                    az += ti[2] + (arm[sa, 0] * f[1] - arm[sa, 1] * f[0])
                    bx += tj[0] - (arm[sb, 1] * f[2] - arm[sb, 2] * f[1])
                    by += tj[1] - (arm[sb, 2] * f[0] - arm[sb, 0] * f[2])
                    bz += tj[2] - (arm[sb, 0] * f[1] - arm[sb, 1] * f[0])
            fx, fy, fz, tx, ty, tz = fx + gx, fy + gy, fz + gz, tx + ax, ty + ay, tz + az
            driven += gx * drift[0] + gy * drift[1] + gz * drift[2]
            loads[slot, 0], loads[slot, 1], loads[slot, 2] = -gx, -gy, -gz
            loads[slot, 3], loads[slot, 4], loads[slot, 5] = bx, by, bz
            slot += 1
        force, moment = st.force, st.moment
        force[i, 0], force[i, 1], force[i, 2], moment[i, 0], moment[i, 1], moment[i, 2] = fx, fy, fz, tx, ty, tz
        book_row(i, h, own, booked, power, lost, driven)


@njit(inline="always")
def clump_pp_forces(i, h, st, bodies, contacts, p, own, history, loads):
    """Pass 2, body ``i``: the shares its pairs ``j < i`` left at their slots of ``loads`` (row order,
    `dem.contacts.owner_slot`), then the update's sum over its pairs ``j > i``, which it left in
    the force and moment of ``i`` (``row_sums``, as `dem.interactions.contact`'s)."""
    fx, fy, fz, tx, ty, tz = lower_shares(i, contacts, loads)
    force, moment = st.force, st.moment
    return fx + force[i, 0], fy + force[i, 1], fz + force[i, 2], tx + moment[i, 0], ty + moment[i, 1], tz + moment[i, 2]


@njit(inline="always")
def _energies(st, bodies, contacts, p, own, history):
    """``(normal, adhesion, tangential, rolling, twisting)``: the normal law's Hertz (or Hooke)
    part and its adhesion's, the springs' elastic energies over the touching member pairs
    (`dem.interactions.contact.pair_energies`, the members placed anew, a partner's image in the
    first chunk's rows: scratch that no force evaluation reads before writing)."""
    start, index, owner_start, member_start = contacts.start, contacts.neighbors, contacts.owner_start, p.member_start
    most = p.most
    _place(0, st.position.shape[0], st, bodies, p, own)
    placed, placed_bodies, pm = _members(st, p, own)
    normal = adhesion = tangential = rolling = twisting = 0.0
    for i in range(st.position.shape[0]):
        first = member_start[i]
        slot = owner_start[i]
        for k in range(upper_entries(contacts, i), start[i + 1]):
            j = index[k]
            partner = _partner(i, j, member_start[-1], st, p, own)[0]
            for a in range(member_start[i + 1] - first):
                for b in range(member_start[j + 1] - member_start[j]):
                    touching, u_n, u_a, springs, u_t, u_r, u_tw = pair_energies(
                        first + a, partner + b, slot, (a * most + b) * p.stride, placed, placed_bodies, pm, history)
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


@njit(cache=True, _nrt=False)
def clump_pp_energy(st, bodies, contacts, p, own, history):
    """``(hertz_pp, tangential, rolling, twisting, friction, dissipated, cell)``: the normal law's
    and the springs' elastic energies over the touching member pairs (`_energies`), the booked
    work and the work done against a deforming cell."""
    normal, _, tangential, rolling, twisting = _energies(st, bodies, contacts, p, own, history)
    return (normal, tangential, rolling, twisting, np.sum(own.friction), np.sum(own.dissipated),
            np.sum(own.cell_work))


@njit(cache=True, _nrt=False)
def adhesive_clump_pp_energy(st, bodies, contacts, p, own, history):
    """``(hertz_pp, adhesion, hysteresis, tangential, rolling, twisting, friction, dissipated,
    cell)``: `clump_pp_energy` with the adhesion's energy and the JKR contacts' lost energy."""
    normal, adhesion, tangential, rolling, twisting = _energies(st, bodies, contacts, p, own, history)
    return (normal, adhesion, np.sum(own.hysteresis), tangential, rolling, twisting, np.sum(own.friction),
            np.sum(own.dissipated), np.sum(own.cell_work))


def clump_contacts_act(model):
    """Whether clumps touch other bodies in ``model``: clumps and ``k_pp`` > 0."""
    return bool(model.has_clumps and model.sections["contact"]["k_pp"] > 0.0)


def member_sites(model):
    """``(member_start (n + 1), member_offset (M, 3), member_radius (M,))``: each clump's member
    spheres (its sites of positive radius), each other body of positive diameter as one member
    at its centre, and no member for the rest."""
    counts, offsets, radii = [], [], []
    for i in range(model.n_bodies):
        sites = slice(model.site_start[i], model.site_start[i + 1])
        radius = model.site_radius[sites]
        if (radius > 0).any():
            keep = radius > 0
            offsets.append(model.site_offset[sites][keep])
            radii.append(radius[keep])
        elif model.diameter[i] > 0:
            offsets.append(np.zeros((1, 3)))
            radii.append(np.array([0.5 * model.diameter[i]]))
        else:
            offsets.append(np.zeros((0, 3)))
            radii.append(np.zeros(0))
        counts.append(len(radii[-1]))
    start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return start, np.ascontiguousarray(np.concatenate(offsets), float), \
        np.ascontiguousarray(np.concatenate(radii), float)


def members_of(model):
    """`member_sites` of ``model``: its clump contacts' (`clump_contacts`), which were built from
    it, where they act, so that the sources' insertions and removals (`dem.feeding`) do not walk
    every body again at each event."""
    p = clump_contacts(model)
    return member_sites(model) if p is None else (p.member_start, p.member_offset, p.member_radius)


def enclosing_diameters(model, members=None):
    """``(n,)`` the diameter of each body's sphere about its centre of mass that holds its members
    (``members``: `members_of`), ``2 max_m (|s_m| + r_m)``: the neighbour list's diameter, the
    same whatever the body's orientation."""
    start, offset, radius = members_of(model) if members is None else members
    owner = np.repeat(np.arange(model.n_bodies), np.diff(start))
    reach = np.zeros(model.n_bodies)
    np.maximum.at(reach, owner, np.linalg.norm(offset, axis=1) + radius)
    return 2.0 * reach


def reach_diameters(model):
    """``(n,)`` the diameter each body reaches across a periodic face with: its own, or a clump's
    `enclosing_diameters` (the cell's edges must be more than twice the largest plus the skin,
    `dem.cell.reach_problem`)."""
    return np.maximum(model.diameter, enclosing_diameters(model)) if model.has_clumps else model.diameter


def _setup(adhesion):
    def setup(model):
        if not clump_contacts_act(model) or adhesive(model.sections["contact"]) != adhesion:
            return None
        return _params(model, SPRINGS + 1 if adhesion else SPRINGS)

    return setup


def _params(model, stride):
    contact = model.sections["contact"]
    start, offset, radius = member_sites(model)
    owner = np.repeat(np.arange(model.n_bodies), np.diff(start))
    most = int(np.diff(start).max())
    width = most * most * stride + -(-most * most // OCCUPANCY_BITS)  # the member pairs', then the occupancy
    return ClumpContactParams(normal_code(contact), float(contact["k_pp"]), normal_damping(contact), 1,
                              float(contact["work_of_adhesion"]), stiffness_ratio(contact["poisson_ratio"]),
                              TANGENTIAL_MODELS[contact["tangential"]].fixed(contact), float(contact["friction"]),
                              float(contact["rolling_friction"]), float(contact["twisting_friction"]),
                              float(contact["rolling_damping"]), member_inertia(model, owner, radius), start, offset,
                              radius, most, width, enclosing_diameters(model, (start, offset, radius)), box_cell(),
                              False, stride)


def clump_contacts(model):
    """The parameters of the clumps' contact interaction acting in ``model`` (`NAMES`: one at
    most), or None."""
    return next((model.interactions[name] for name in NAMES if name in model.interactions), None)


def keep_member_loads(model):
    """Make the clump contacts of ``model`` keep each member pair's loads in their pair scratch
    (`MEMBER_LOADS` columns a member pair, `dem.network` reads them): for a run that writes the
    contact network, before its contact table is made. The forces do not change."""
    for name in NAMES:
        params = model.interactions.get(name)
        if params is not None:
            model.interactions[name] = params._replace(network=True)


def _scratch_rows(params, n):
    """The scratch members' rows for ``n`` bodies: one for each member, then ``most`` for each
    chunk of rows (a partner's image)."""
    return int(params.member_start[-1]) + params.most * max(1, (n + CHUNK - 1) // CHUNK)


def _state(model, params):
    n = model.n_bodies
    rows = _scratch_rows(params, n)
    vectors = [np.zeros((rows, 3)) for _ in range(4)]
    return ClumpContactState(np.zeros(n), np.zeros(n), *vectors, np.zeros(rows),
                             np.zeros(rows), np.zeros((rows, 2)), np.zeros(n if LAWS[params.law].adhesive else 0),
                             np.zeros(n if deforming(model.sections["cell"]) else 0))


def _critical_step(model, state, p):
    """The particle–particle oscillators of `dem.interactions.contact` on each member, with its
    body's mass; the body named is the member's."""
    members, moving, owner = member_bodies(model, state, p)
    return [(dt, what, int(owner[k])) for dt, what, k in CONTACT_PP.critical_step(members, moving, p)]


_localize = functools.partial(localize_members, per_member=("member_inertia", "member_offset", "member_radius"),
                              per_body=("list_diameter",))


CLUMP_PP = Interaction(
    name="clump_pp", kind=ROW,
    doc="Clumps against clumps and spheres: every member sphere touches the other bodies' members through the "
        "particle–particle contact pipeline (normal law, damping, friction, rolling, twisting); the forces act at the "
        "contact points.",
    columns=("hertz_pp", "tangential", "rolling", "twisting", "friction", "dissipated", "cell"), internal=True,
    keys=CONTACT_PP.keys, setup=_setup(False), state=_state, forces=clump_pp_forces, energy=clump_pp_energy,
    neighbors=True,
    history=SPRINGS, loads=LOADS, update=clump_pp_update, prepare=clump_pp_place, critical_step=_critical_step,
    localize=_localize,
    history_width=lambda p: p.width, loads_width=lambda p: LOADS + (p.most * p.most * MEMBER_LOADS if p.network else 0),
    list_diameter=True,
    scratch_state=("position", "velocity", "spin", "arm", "diameter", "inverse_mass", "inertia"),
    scratch_rows=_scratch_rows, row_sums=True,
)
#: the clumps' contacts under an adhesive normal law (JKR, DMT): as `CLUMP_PP`, each member pair
#: keeping its formed flag, with the adhesion's energy and the JKR hysteresis booked
ADHESIVE_CLUMP_PP = dataclasses.replace(
    CLUMP_PP, name="adhesive_clump_pp",
    doc="Clumps against clumps and spheres under an adhesive normal law (JKR or DMT): as clump_pp, each member pair "
        "holding its JKR contact until it breaks, with the adhesion's energy and the JKR hysteresis booked.",
    columns=("hertz_pp", "adhesion", "hysteresis", "tangential", "rolling", "twisting", "friction", "dissipated",
             "cell"),
    setup=_setup(True), energy=adhesive_clump_pp_energy, history=SPRINGS + 1,
)
#: the names of the clumps' contact interactions (one acts at most)
NAMES = (CLUMP_PP.name, ADHESIVE_CLUMP_PP.name)
