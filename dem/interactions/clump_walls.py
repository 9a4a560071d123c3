"""Clumps against walls (`CLUMP_PW`; docs/theory.md §3b.11): every member sphere of a clump
(`dem.clumps`) touches the planes and the triangle meshes (`dem.meshes`) as a particle does,
through the sub-models of the particle–wall pipeline `dem.interactions.wall_contact` (the normal
law and its dashpot of `dem.interactions.hertz`, the tangential spring of
`dem.interactions.friction`, the rolling and twisting springs of `dem.interactions.rolling`),
called on the member.

A clump's row (a `ROW` kernel, one body) first puts its members where the body is: the member
``m`` at ``x + R s_m`` moving at ``v + Ω × R s_m`` and spinning at ``Ω`` (``s_m`` its centre in the
body frame, `dem.state.Model.site_offset`), in scratch rows of its own. Where there are meshes it
then finds each member's mesh contacts (`dem.meshes.sphere_contacts`, the geometry the walls'
pass finds a particle's with) into scratch rows of its own too, on a grid over the triangles
built for the members' radii (the walls' grid is the particles'). Each member then walks the
planes in wall order and its mesh contacts: the normal law of each, then the springs of the mesh
contacts (`dem.interactions.wall_contact.mesh_springs`, the particles' walk). The member's force
``f_m`` and moment ``τ_m`` about its centre (the tangential force's lever and the rolling couple)
go to the body as ``Σ f_m`` and ``Σ (τ_m + R s_m × f_m)``, summed over the members in member
order: the moment about the centre of mass of forces applied at the contact points. The springs
are kept per member and wall (a plane) or per member and mesh contact (up to `MAX_CONTACTS` per
mesh, matched from step to step by their normals as a particle's are), in keyed wall slots of the
member (as a particle keeps its own), and the reactions are booked on the walls in the partial
sums of the body's chunk. Every array a row writes is its own (its body's booked work, its
members' rows), so rows run in parallel and the sums do not depend on the thread count. A body
none of whose members touches a plane, has a mesh contact or keeps a spring skips the walk
(`_near_walls`: it would add zeros); the contact search and the walk are compiled once per
machine (`_find_mesh_contacts`, `_step_members`) and called from the generated loops, which
inline only the placement and the test.

The dashpots take the clump's mass (and its smallest principal moment for the rolling one) as a
sphere takes its own: the damping coefficient of a member's contact is that of a sphere of the
clump's mass, so an off-centre impact of a clump rebounds with a restitution that differs from
the nominal one (the mass at a contact point off the line of the centre of mass is smaller).
A body of zero mass in the run's arrays (a source's clump not in play, `dem.feeding.park`) has
no wall contact.

Under an adhesive normal law (JKR, DMT) the same kernels act as `ADHESIVE_CLUMP_PW`: each
member's normal contact is a particle's under that law (`dem.interactions.hertz.
adhesive_wall_contact`, called on the member), so that a member's JKR contact with a plane forms
at touch, holds stretched until ``ξ_c`` and breaks there, its flag kept per member and plane
(``adhered``, beside the member's springs); the energy the JKR contacts lose forming and
breaking is booked to the body (``hysteresis``) and the adhesion's energy is a column of its own,
so the budget closes as for spheres. The springs act while a member overlaps a wall, their
Coulomb limits on the adhesive law's force plus twice its pull-off (`dem.interactions.friction`).
JKR acts on planes, DMT on planes and meshes (`dem.interactions.hertz.check_formed_on_meshes`).
A body with a member held stretched is walked though no member touches (`_near_walls`).

Under MPI (`dem.distributed`) a rank's parameters are those of its bodies' members
(`dem.interactions.contract.localize_members`) and the members' springs, mesh contacts and JKR
flags travel with their body (``member_state``).
"""

import dataclasses
import functools
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
from numba import njit

from ..meshes import MAX_CONTACTS, MeshArrays, mesh_arrays, sphere_contacts
from ..rotations import quat_matrix, quat_rotate_one
from .contract import ROW, Interaction, localize_members
from .friction import (
    find_wall_slot, gap_before, holds_wall_springs, release_slot, released, spring_squares,
    stiffness_ratio, wall_contact as tangential, wall_slots,
)
from .hertz import (
    adhesive, adhesive_wall_contact, check_formed_on_meshes, normal_code, normal_damping, wall_contact as normal,
    wall_gap,
)
from .normal import LAWS
from .rolling import WIDTH, spins, wall_contact as rolling, wall_stiffnesses
from .wall_contact import KEYS, mesh_springs, near_planes, wall_critical_steps
from .walls import add_wall_couple, add_wall_load, wall_coefficients

#: the sub-models' parameters, as `dem.interactions.wall_contact.ContactWallParams` names them
#: (``walls (w, 6)``: each wall's normal (planes; 0 for meshes), μ, μ_r, μ_t; ``first``: where the
#: rolling springs begin in a slot; ``meshes``: whether there are mesh walls, ``springs``: whether
#: a mesh has friction or rolling resistance), the members: ``member_start (n + 1)``,
#: ``member_offset (M, 3)`` (body frame, from the centre of mass), ``member_radius (M,)`` (0: a
#: point site, which touches nothing) and ``member_inertia (M, 2)``, the owner's inverse moments
#: for the rolling dashpot; then the fields of the meshes' `dem.meshes.MeshArrays`, their grids
#: built for the members' radii (flat, as the walls' parameters hold them; empty without meshes)
ClumpWallParams = namedtuple("ClumpWallParams", "law stiffness damping wall_normal work ratio fixed rolling_damping "
                             "walls planes first meshes springs member_start member_offset member_radius "
                             "member_inertia " + " ".join(MeshArrays._fields))
#: per body the booked ``dissipated`` (dashpots) and ``friction`` (slip, released springs) work; per
#: member its wall slots ``wall_key (M, s)``, springs ``wall_spring (M, s, width)`` and the normal
#: and gap of each mesh slot's contact when its springs last stepped ``mesh_contact (M, s, 4)``
#: (`dem.interactions.friction`), the most mesh contacts it has had at once ``mesh_most (M,)``
#: (more than `MAX_CONTACTS` stops the run, `dem.observers.csv_log.WallLog`); the scratch rows
#: each force evaluation writes: ``member_position``, ``member_velocity``, ``member_arm`` (M, 3),
#: the member's mesh contacts ``mesh_count (M,)``, ``mesh_wall``, ``mesh_feature``, ``mesh_gap (M,
#: MAX_CONTACTS)``, ``mesh_normal (M, MAX_CONTACTS, 3)`` (as `dem.interactions.walls.WallState`
#: has a particle's) and ``mesh_load (M, s, 9)``, a mesh slot's reactions until they are booked
#: (`dem.interactions.wall_contact.mesh_springs`). The mesh fields have no rows without meshes.
#: Under an adhesive normal law (`ADHESIVE_CLUMP_PW`): per member ``adhered (M, planes)``, whether
#: its JKR contact with each plane is formed (no rows for a law that does not hold contacts
#: stretched), and per body ``hysteresis (n,)``, the energy its members' JKR contacts lost forming
#: and breaking (no rows without adhesion), as `dem.interactions.wall_contact` keeps a particle's.
ClumpWallState = namedtuple("ClumpWallState", "dissipated friction wall_key wall_spring member_position "
                            "member_velocity member_arm mesh_contact mesh_load mesh_count mesh_wall mesh_feature "
                            "mesh_gap mesh_normal mesh_most adhered hysteresis")
#: the wall pipeline's parts (`dem.interactions.wall_contact._walls`) before a member's mesh springs add theirs
_NO_PARTS = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@njit(inline="always")
def member_motion(i, offset, st):
    """``(arm, position, velocity)`` of the member of body ``i`` at ``offset`` (its centre in the
    body frame, from the centre of mass): ``R s``, ``x + R s`` and ``v + Ω × R s``."""
    x, v, omega = st.position[i], st.velocity[i], st.angular_velocity[i]
    arm = quat_rotate_one(st.orientation[i], (offset[0], offset[1], offset[2]))
    return arm, (x[0] + arm[0], x[1] + arm[1], x[2] + arm[2]), \
        (v[0] + (omega[1] * arm[2] - omega[2] * arm[1]), v[1] + (omega[2] * arm[0] - omega[0] * arm[2]),
         v[2] + (omega[0] * arm[1] - omega[1] * arm[0]))


@njit(inline="always")
def put_members(i, st, p, arms, positions, velocities):
    """Write the arms ``R s_m``, world centres and velocities of body ``i``'s members
    (`member_motion`) into their rows ``m`` of ``arms``, ``positions`` and ``velocities``."""
    for m in range(p.member_start[i], p.member_start[i + 1]):
        arm, x, v = member_motion(i, p.member_offset[m], st)
        for c in range(3):
            arms[m, c] = arm[c]
            positions[m, c] = x[c]
            velocities[m, c] = v[c]


@njit(inline="always")
def place_members(i, st, p, own):
    """Body ``i``'s members placed in their scratch rows (`put_members`)."""
    put_members(i, st, p, own.member_arm, own.member_position, own.member_velocity)


@njit(inline="always")
def _member_normal(m, i, w, plane, gap, n, radius, power, lost, p, own, walls, inverse_mass, advance, adhesive):
    """The normal contact of member ``m`` of body ``i`` with wall ``w`` (a plane's with ``plane``,
    else a mesh contact's), its centre at ``gap`` along the unit normal ``n``: ``(touching, |F|,
    power, U_n, U_a, lost)``, the dashpot's power added to ``power`` (with ``advance``) and the
    energy a JKR contact lost forming or breaking added to ``lost``; with ``advance`` the reaction
    goes to the wall. Under an adhesive law (``adhesive``, a constant of each kernel) it is
    `dem.interactions.hertz.adhesive_wall_contact` on the member, whose JKR contact with a plane
    holds stretched while its flag ``own.adhered[m, w]`` says it is formed (updated with
    ``advance``); else the normal law while the member overlaps the wall."""
    position, velocity, wall_point = own.member_position, own.member_velocity, walls.point
    if adhesive:
        touching, force, power, u, u_a, lost, px, py, pz, k = adhesive_wall_contact(
            m, w, plane, gap, n[0], n[1], n[2], radius, inverse_mass, power, lost, position, velocity, p, own, walls,
            advance)
    else:
        touching, u_a = True, 0.0
        force, power, u, px, py, pz, k = normal(m, w, gap, n[0], n[1], n[2], radius, power, position, velocity,
                                                inverse_mass, p.law, p.stiffness, p.damping if advance else 0.0,
                                                walls)
    if touching and advance:
        add_wall_load(walls, i, w, force * n[0], force * n[1], force * n[2], px - wall_point[w, 0],
                      py - wall_point[w, 1], pz - wall_point[w, 2], k)
    return touching, force, power, u, u_a, lost


@njit(inline="always")
def _member_planes(m, i, h, p, own, walls, omega, inverse_mass, advance, adhesive):
    """Member ``m`` of body ``i`` against the planes: ``(f (3), τ (3) about the member's centre,
    power, booked, U_n, U_t, U_r, U_tw, U_a, lost)``, the dashpots' power, the booked slip and
    release work, the energies and the energy the JKR contacts lost forming and breaking; with
    ``advance`` the springs take the step and the reactions go to the walls (as
    `dem.interactions.wall_contact`'s planes). The springs act while the member overlaps the
    plane, a stretched JKR contact's normal force beyond (`_member_normal`)."""
    position, velocity = own.member_position, own.member_velocity
    keys, springs, table, wall_point = own.wall_key, own.wall_spring, p.walls, walls.point
    radius = p.member_radius[m]
    inverse = (p.member_inertia[m, 0], p.member_inertia[m, 1])
    v = (velocity[m, 0], velocity[m, 1], velocity[m, 2])
    fx = fy = fz = tx = ty = tz = power = booked = u_n = u_t = u_r = u_tw = u_a = lost = 0.0
    held = holds_wall_springs(keys, m)
    for w in range(p.planes):
        n = (table[w, 0], table[w, 1], table[w, 2])
        gap = wall_gap(m, w, position, wall_point, p.wall_normal)
        touching = gap < radius and radius > 0.0
        if touching or adhesive and radius > 0.0:
            acts, force, power, u, adhesion, lost = _member_normal(m, i, w, True, gap, n, radius, power, lost, p,
                                                                   own, walls, inverse_mass, advance, adhesive)
            if acts:
                fx, fy, fz = fx + force * n[0], fy + force * n[1], fz + force * n[2]
                u_n, u_a = u_n + u, u_a + adhesion
        mu = (table[w, 3], table[w, 4], table[w, 5])
        turning = mu[1] != 0.0 or mu[2] != 0.0
        if mu[0] == 0.0 and not turning or radius <= 0.0 or not touching and not held:
            continue
        gap_old = gap_before(gap, m, w, h, velocity, walls.velocity, n)
        if not touching:
            s = find_wall_slot(keys, m, w, False)
            if advance and s >= 0:  # the contact opened: its springs' elastic energy leaves with them
                theta = twist = 0.0
                if turning:
                    theta, twist = spring_squares(springs, m, s, p.first)
                squared = release_slot(m, s, keys, springs)[0]
                if mu[0] != 0.0 and squared != 0.0:
                    booked += released(p, 0.5 * squared, gap_old, radius)
                if turning and (theta != 0.0 or twist != 0.0):
                    k_old = wall_stiffnesses(gap_old, radius, (mu[1], mu[2]), p)
                    booked += 0.5 * k_old[0] * theta + 0.5 * k_old[1] * twist
            continue
        slot = find_wall_slot(keys, m, w, advance)
        if slot < 0:
            continue
        if mu[0] != 0.0:
            row = tangential(m, w, slot, n, n, gap, gap_old, False, h, v, omega, radius, inverse_mass, mu[0], p,
                             springs, position, wall_point, walls.velocity, walls.angular_velocity, advance)
            if advance:
                add_wall_load(walls, i, w, row[0], row[1], row[2], row[9], row[10], row[11], 0.0)
            fx, fy, fz, tx, ty, tz = fx + row[0], fy + row[1], fz + row[2], tx + row[3], ty + row[4], tz + row[5]
            u_t, booked, power = u_t + row[6], booked + row[7], power + row[8]
        if turning:
            moment, u, u_w, work, dissipation = rolling(m, w, slot, n, n, gap, gap_old, False, h,
                                                        spins(omega, walls.angular_velocity, w), radius, inverse,
                                                        (mu[1], mu[2]), p, springs, p.first, advance)
            if advance:
                add_wall_couple(walls, i, w, moment[0], moment[1], moment[2])
            tx, ty, tz = tx + moment[0], ty + moment[1], tz + moment[2]
            u_r, u_tw, booked, power = u_r + u, u_tw + u_w, booked + work, power + dissipation
    return fx, fy, fz, tx, ty, tz, power, booked, u_n, u_t, u_r, u_tw, u_a, lost


@njit(inline="always")
def _member_meshes(m, i, h, p, own, walls, omega, inverse_mass, advance, adhesive, row):
    """Member ``m`` of body ``i`` against its mesh contacts (found by `_find_mesh_contacts`):
    ``row`` (`_member_planes`'s) with theirs added, the normal law's (`_member_normal`: a mesh
    contact acts while it overlaps, DMT's adhesion too; JKR does not act on meshes) and then the
    springs' (`dem.interactions.wall_contact.mesh_springs`); with ``advance`` the springs take the
    step and the reactions go to the walls (as `dem.interactions.wall_contact`'s meshes)."""
    position, velocity = own.member_position, own.member_velocity
    fx, fy, fz, tx, ty, tz, power, booked, u_n, u_t, u_r, u_tw, u_a, lost = row
    radius = p.member_radius[m]
    for c in range(min(own.mesh_count[m], MAX_CONTACTS)):
        w = own.mesh_wall[m, c]
        n = (own.mesh_normal[m, c, 0], own.mesh_normal[m, c, 1], own.mesh_normal[m, c, 2])
        acts, force, power, u, adhesion, lost = _member_normal(m, i, w, False, own.mesh_gap[m, c], n, radius, power,
                                                               lost, p, own, walls, inverse_mass, advance, adhesive)
        if acts:
            fx, fy, fz = fx + force * n[0], fy + force * n[1], fz + force * n[2]
            u_n, u_a = u_n + u, u_a + adhesion
    if p.springs:
        parts = mesh_springs(m, i, h, radius, inverse_mass, (p.member_inertia[m, 0], p.member_inertia[m, 1]),
                             (velocity[m, 0], velocity[m, 1], velocity[m, 2]), omega, position, velocity, p, own, own,
                             walls, advance, _NO_PARTS, True)
        fx, fy, fz = fx + parts[4], fy + parts[5], fz + parts[6]
        tx, ty, tz = tx + parts[7] + parts[13], ty + parts[8] + parts[14], tz + parts[9] + parts[15]
        u_t, u_r, u_tw = u_t + parts[10], u_r + parts[16], u_tw + parts[17]
        booked, power = booked + parts[11] + parts[18], power + parts[12] + parts[19]
    return fx, fy, fz, tx, ty, tz, power, booked, u_n, u_t, u_r, u_tw, u_a, lost


@njit(inline="always")
def _clump_row(i, h, st, bodies, p, own, walls, advance, adhesive):
    """Body ``i``'s members, placed in their scratch rows (`place_members`) with their mesh
    contacts found (`_find_mesh_contacts`), against the planes and the meshes (`_member_planes`,
    `_member_meshes`, member by member): ``(F (3), τ (3), power, booked, U_n, U_t, U_r, U_tw, U_a,
    lost)``, the moment about the centre of mass."""
    fx = fy = fz = tx = ty = tz = power = booked = u_n = u_t = u_r = u_tw = u_a = lost = 0.0
    omega = (st.angular_velocity[i, 0], st.angular_velocity[i, 1], st.angular_velocity[i, 2])
    inverse_mass = bodies.inverse_mass[i]
    arm = own.member_arm
    for m in range(p.member_start[i], p.member_start[i + 1]):
        row = _member_planes(m, i, h, p, own, walls, omega, inverse_mass, advance, adhesive)
        if p.meshes:
            row = _member_meshes(m, i, h, p, own, walls, omega, inverse_mass, advance, adhesive, row)
        fx, fy, fz = fx + row[0], fy + row[1], fz + row[2]
        tx += row[3] + (arm[m, 1] * row[2] - arm[m, 2] * row[1])
        ty += row[4] + (arm[m, 2] * row[0] - arm[m, 0] * row[2])
        tz += row[5] + (arm[m, 0] * row[1] - arm[m, 1] * row[0])
        power, booked = power + row[6], booked + row[7]
        u_n, u_t, u_r, u_tw = u_n + row[8], u_t + row[9], u_r + row[10], u_tw + row[11]
        u_a, lost = u_a + row[12], lost + row[13]
    return fx, fy, fz, tx, ty, tz, power, booked, u_n, u_t, u_r, u_tw, u_a, lost


@njit(cache=True, _nrt=False)
def _find_mesh_contacts(i, p, own, walls):
    """Find the mesh contacts of body ``i``'s members (placed) into their scratch rows
    (`dem.meshes.sphere_contacts`, the meshes where the walls' state has them): compiled once
    per machine, out of the loops."""
    for m in range(p.member_start[i], p.member_start[i + 1]):
        sphere_contacts(m, own.member_position[m], p.member_radius[m], p, walls, own)


@njit(inline="always")
def _near_walls(i, p, own, walls):
    """Whether a member of body ``i`` (placed, its mesh contacts found) has a mesh contact, keeps
    a wall spring, touches a plane (`dem.interactions.wall_contact.near_planes`) or holds a JKR
    contact with one stretched (``own.adhered``: no rows for other laws). A body whose members do
    none of these adds nothing to its force, its booked work or the walls' sums."""
    for m in range(p.member_start[i], p.member_start[i + 1]):
        if p.meshes and own.mesh_count[m] > 0:
            return True
        if near_planes(m, own.member_position, p.member_radius[m], own.wall_key, p, walls):
            return True
        if own.adhered.shape[0] > 0:
            for w in range(own.adhered.shape[1]):
                if own.adhered[m, w] != 0:
                    return True
    return False


@njit(cache=True, _nrt=False)
def _step_members(i, h, st, bodies, p, own, walls):
    """`_clump_row` stepping the springs under a normal law that does not adhere: compiled once per
    machine, out of the loops, which call it only for a body near a wall (`_near_walls`)."""
    return _clump_row(i, h, st, bodies, p, own, walls, True, False)


@njit(cache=True, _nrt=False)
def _step_adhesive_members(i, h, st, bodies, p, own, walls):
    """`_clump_row` stepping the springs and the JKR flags under an adhesive normal law (JKR, DMT),
    as `_step_members`; a law that does not adhere runs `_step_members`, which holds none of the
    adhesive laws' code (as `dem.interactions.wall_contact._plain_walls`)."""
    return _clump_row(i, h, st, bodies, p, own, walls, True, True)


@njit(inline="always")
def _clump_forces(i, h, st, bodies, p, own, walls, adhesive):
    """Body ``i``'s members' wall contacts: steps their springs (and JKR flags), books their work
    and their reactions on the walls; returns the body's force and moment (zero for a body without
    members or away from the walls, or parked: of zero mass, a source's clump not in play,
    `dem.feeding`). ``adhesive`` is a constant of each kernel."""
    if bodies.mass[i] == 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    place_members(i, st, p, own)
    if p.meshes:
        _find_mesh_contacts(i, p, own, walls)
    if not _near_walls(i, p, own, walls):
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    if adhesive:
        row = _step_adhesive_members(i, h, st, bodies, p, own, walls)
        own.hysteresis[i] += row[13]
    else:
        row = _step_members(i, h, st, bodies, p, own, walls)
    own.dissipated[i] += h * row[6]
    own.friction[i] += row[7]
    return row[0], row[1], row[2], row[3], row[4], row[5]


@njit(inline="always")
def clump_pw_forces(i, h, st, bodies, contacts, p, own, walls):
    """`_clump_forces` under a normal law that does not adhere."""
    return _clump_forces(i, h, st, bodies, p, own, walls, False)


@njit(inline="always")
def adhesive_clump_pw_forces(i, h, st, bodies, contacts, p, own, walls):
    """`_clump_forces` under an adhesive normal law (JKR, DMT)."""
    return _clump_forces(i, h, st, bodies, p, own, walls, True)


@njit(inline="always")
def _energies(st, bodies, p, own, walls, adhesive):
    """``(U_n, U_a, U_t, U_r, U_tw)``: the members' normal law's energy (its Hertz part under an
    adhesive law), the adhesion's and the springs' energies at ``st`` (the members placed and
    their mesh contacts found anew, in rows of this kernel's own; the JKR flags read, not
    changed)."""
    count = p.member_radius.shape[0]
    view = ClumpWallState(own.dissipated, own.friction, own.wall_key, own.wall_spring, np.zeros((count, 3)),
                          np.zeros((count, 3)), np.zeros((count, 3)), own.mesh_contact, np.zeros_like(own.mesh_load),
                          np.zeros_like(own.mesh_count), np.zeros_like(own.mesh_wall),
                          np.zeros_like(own.mesh_feature), np.zeros_like(own.mesh_gap), np.zeros_like(own.mesh_normal),
                          np.zeros_like(own.mesh_most), own.adhered, own.hysteresis)
    u_n = u_a = u_t = u_r = u_tw = 0.0
    for i in range(st.position.shape[0]):
        if bodies.mass[i] == 0.0:   # parked (`dem.feeding`)
            continue
        place_members(i, st, p, view)
        if p.meshes:
            _find_mesh_contacts(i, p, view, walls)
        row = _clump_row(i, 0.0, st, bodies, p, view, walls, False, adhesive)
        u_n, u_t, u_r, u_tw, u_a = u_n + row[8], u_t + row[9], u_r + row[10], u_tw + row[11], u_a + row[12]
    return u_n, u_a, u_t, u_r, u_tw


@njit(cache=True)
def clump_pw_energy(st, bodies, contacts, p, own, walls):
    """``(hertz_pw, dissipated, tangential, friction, rolling, twisting)``: the members' normal
    law and springs' energies at ``st`` (`_energies`) and the booked work."""
    u_n, _, u_t, u_r, u_tw = _energies(st, bodies, p, own, walls, False)
    return u_n, np.sum(own.dissipated), u_t, np.sum(own.friction), u_r, u_tw


@njit(cache=True)
def adhesive_clump_pw_energy(st, bodies, contacts, p, own, walls):
    """``(hertz_pw, adhesion, hysteresis, dissipated, tangential, friction, rolling, twisting)``:
    `clump_pw_energy` under an adhesive normal law, with the adhesion's energy and the energy the
    JKR contacts lost forming and breaking."""
    u_n, u_a, u_t, u_r, u_tw = _energies(st, bodies, p, own, walls, True)
    return u_n, u_a, np.sum(own.hysteresis), np.sum(own.dissipated), u_t, np.sum(own.friction), u_r, u_tw


def clump_walls_act(model):
    """Whether clumps touch walls in ``model``: clumps, walls (planes or meshes) and ``k_pw`` > 0."""
    return bool(model.has_clumps and model.sections["contact"]["k_pw"] > 0.0 and "walls" in model.inputs)


def _setup(adhesion):
    def setup(model):
        if not clump_walls_act(model) or adhesive(model.sections["contact"]) != adhesion:
            return None
        return _params(model)

    return setup


def _params(model):
    contact = model.sections["contact"]
    check_formed_on_meshes(contact, bool(model.inputs["walls"]["meshes"]))
    planes = len(model.wall_normal)
    walls = np.ascontiguousarray(wall_coefficients(model))
    radius = np.ascontiguousarray(model.site_radius, dtype=float)
    inertia = member_inertia(model, np.repeat(np.arange(model.n_bodies), np.diff(model.site_start)), radius)
    meshes = model.inputs["walls"]["meshes"]
    grids = mesh_arrays([(mesh["vertices"], mesh["faces"]) for mesh in meshes], np.arange(len(meshes)) + planes,
                        float(radius.max(initial=0.0)))
    return ClumpWallParams(normal_code(contact), float(contact["k_pw"]), normal_damping(contact), model.wall_normal,
                           float(contact["work_of_adhesion"]), stiffness_ratio(contact["poisson_ratio"]),
                           float(contact["tangential_stiffness"]) if contact["tangential"] == "linear_history" else 0.0,
                           float(contact["rolling_damping"]), walls, planes, 3 if (walls[:, 3] > 0).any() else 0,
                           bool(meshes), bool((walls[planes:, 3:] > 0).any()), np.asarray(model.site_start, np.int64),
                           np.ascontiguousarray(model.site_offset), radius, inertia, *grids)


def member_inertia(model, owner, radius):
    """``(M, 2)``: the inverse moments ``(1/(J + m r²), 1/J)`` of members of ``radius`` of the
    bodies ``owner`` for their rolling and twisting dashpots, ``J`` the body's smallest principal
    moment and ``m`` its mass (0 where the body cannot turn)."""
    smallest = model.inertia.min(axis=1)[owner]
    turning = ~model.clamped[owner]
    return np.ascontiguousarray(np.column_stack([
        np.where(turning, 1.0 / (smallest + model.mass[owner] * radius * radius), 0.0),
        np.where(turning, 1.0 / smallest, 0.0)]))


def _state(model, params):
    count = len(params.member_radius)
    width = params.first + (WIDTH if (params.walls[:, 4:] > 0).any() else 0)
    keys, springs, previous = wall_slots(SimpleNamespace(n_bodies=count), width,
                                         (params.walls[:, 3:] > 0).any(axis=1), params.planes)
    n = model.n_bodies
    found = count if params.meshes else 0  # (no rows without meshes: `dem.checkpoint.restore` skips such fields)
    law = LAWS[params.law]
    return ClumpWallState(np.zeros(n), np.zeros(n), keys, springs, np.zeros((count, 3)), np.zeros((count, 3)),
                          np.zeros((count, 3)), previous[:found], np.zeros((found,) + previous.shape[1:2] + (9,)),
                          np.zeros(found, np.int64), np.zeros((found, MAX_CONTACTS), np.int64),
                          np.zeros((found, MAX_CONTACTS), np.int64), np.zeros((found, MAX_CONTACTS)),
                          np.zeros((found, MAX_CONTACTS, 3)), np.zeros(found, np.int64),
                          np.zeros((count if law.beyond_contact else 0, params.planes), np.uint8),
                          np.zeros(n if law.adhesive else 0))


def member_bodies(model, state, p):
    """The members as the critical-step estimates read particles: mass, inertia, contact diameter,
    pinned and clamped of their clump, and their velocities; and the owner of each."""
    owner = np.repeat(np.arange(model.n_bodies), np.diff(p.member_start))
    arm = np.einsum("nij,nj->ni", quat_matrix(state.orientation[owner]), p.member_offset)
    members = SimpleNamespace(mass=model.mass[owner], inertia=model.inertia.min(axis=1)[owner][:, None],
                              diameter=2.0 * p.member_radius, pinned=model.pinned[owner], clamped=model.clamped[owner])
    moving = SimpleNamespace(velocity=state.velocity[owner] + np.cross(state.angular_velocity[owner], arm))
    return members, moving, owner


_member_steps = wall_critical_steps("clump member")


def _critical_step(model, state, p):
    """The particle–wall oscillators of `dem.interactions.wall_contact` on each member, with its
    clump's mass; the body named is the member's clump."""
    members, moving, owner = member_bodies(model, state, p)
    return [(dt, what, int(owner[k])) for dt, what, k in _member_steps(members, moving, p)]


CLUMP_PW = Interaction(
    name="clump_pw", kind=ROW, internal=False, walls=True, keys=KEYS,
    doc="Clumps against walls: every member sphere of a clump touches the planes and the meshes through the "
        "particle–wall sub-models (normal law, damping, friction, rolling, twisting); the forces act at the contact "
        "points.",
    columns=("hertz_pw", "dissipated", "tangential", "friction", "rolling", "twisting"),
    setup=_setup(False), state=_state, forces=clump_pw_forces, energy=clump_pw_energy, critical_step=_critical_step,
    localize=functools.partial(localize_members, per_member=("member_offset", "member_radius", "member_inertia")),
    scratch_state=("member_position", "member_velocity", "member_arm", "mesh_load", "mesh_count", "mesh_wall",
                   "mesh_feature", "mesh_gap", "mesh_normal"),
    scratch_rows=lambda p, n: len(p.member_radius),
    member_state=("wall_key", "wall_spring", "mesh_contact", "mesh_most", "adhered"),
)
#: the clumps' wall contacts under an adhesive normal law (JKR: planes only; DMT): as `CLUMP_PW`,
#: each member keeping its JKR flag per plane, with the adhesion's energy and the JKR hysteresis booked
ADHESIVE_CLUMP_PW = dataclasses.replace(
    CLUMP_PW, name="adhesive_clump_pw",
    doc="Clumps against walls under an adhesive normal law (JKR: planes only; DMT): as clump_pw, each member holding "
        "its JKR contact with a plane until it breaks, with the adhesion's energy and the JKR hysteresis booked.",
    columns=("hertz_pw", "adhesion", "hysteresis", "dissipated", "tangential", "friction", "rolling", "twisting"),
    setup=_setup(True), forces=adhesive_clump_pw_forces, energy=adhesive_clump_pw_energy,
)
#: the names of the clumps' wall interactions (one acts at most)
NAMES = (CLUMP_PW.name, ADHESIVE_CLUMP_PW.name)


def clump_walls(model):
    """The name of the clumps' wall interaction acting in ``model`` (`NAMES`: one at most), or None."""
    return next((name for name in NAMES if name in model.interactions), None)
