"""The particle–wall contact pipeline (`CONTACT_PW`): the normal law, its damping, tangential
friction and rolling and twisting resistance of each wall contact in one pass, where friction or
rolling resistance acts at a wall (`dem.interactions.hertz`'s ``hertz_pw`` alone elsewhere). Under
an adhesive normal law (JKR, DMT) the same kernels act as `ADHESIVE_CONTACT_PW` (``adhesive_pw``
alone where no wall has friction or rolling resistance), whose state keeps whether each JKR
contact with a plane is formed and the energy lost forming and breaking them (``hysteresis``), and
whose log has the adhesion's energy and that loss.

Each particle walks its planes and then its mesh contacts (`dem.meshes`) once: a plane's gap (a
mesh contact's gap and normal come from the walls' state), the gap a step ago and the slot of the
contact's springs are found once and handed to the sub-models of `dem.interactions.hertz`
(`wall_contact`: the normal law and its dashpot; `adhesive_wall_contact` under an adhesive law),
`dem.interactions.friction` (`wall_contact`: the tangential spring) and `dem.interactions.rolling`
(`wall_contact`: the rolling and twisting springs), the ones ``hertz_pw`` and ``adhesive_pw`` call
for walls without springs. A particle keeps one set of wall slots (``wall_key``; the tangential
spring ``ξ`` in components 0–2 of ``wall_spring``, the rolling and twisting springs ``θ_r``,
``θ_t`` in 3–6, or in 0–3 where no wall has friction) for the walls where friction or rolling
resistance acts (each wall's own coefficients, `dem.interactions.walls.wall_coefficients`); slots
are claimed where either spring acts. A particle walks its walls only when it is near one
(`_near_walls`: it keeps a wall spring, touches a plane or has a mesh contact; under an adhesive
law always, as a JKR contact acts stretched): elsewhere the walk would add zeros to its force, its
booked work and the walls' sums. The walk is compiled once per machine (`_plain_walls`,
`_adhesive_walls`) and called from the generated loops, which inline only the test; the energy
kernels call one more copy, which reads the springs without stepping them (`_walls_at_rest`). The walk
over a sphere's mesh springs (`mesh_springs`) serves the member spheres of clumps too
(`dem.interactions.clump_walls`).

The sums have a fixed order, part by part: the row kernel returns the normal, the tangential and
the rolling parts of the particle's force and moment as three shares (``shares = 3``,
`dem.interactions.contract`), which the loop adds in turn, each summed over the walls in wall
order; each part's booked work is kept in arrays of its own, and the energy kernel returns each
part's columns in turn (``dissipated`` and ``friction`` three and two times), which the log sums in
that order. The reactions go into the walls' partial sums part by part too: a plane's normal,
tangential and rolling reactions one after the other (each plane has its own sums), a mesh's
normal reactions during the walk and its tangential and then its rolling reactions after it (a
particle may touch a mesh at several points): ``mesh_load`` keeps them per slot until then. A
checkpoint written while the normal law and the two springs acted as separate interactions
(``hertz_pw`` or ``adhesive_pw``, ``friction_pw``, ``rolling_pw``) continues bit for bit
(`separate_wall_states`).
"""

import functools
from collections import namedtuple

import numpy as np
from numba import njit

from ..meshes import MAX_CONTACTS
from .contact import pipeline_critical_step
from .contract import ROW, Interaction, localize_bodies
from .friction import (
    KEYS as FRICTION_KEYS, find_wall_slot, friction_critical_step, gap_before,
    holds_wall_springs, mesh_gap_before, mesh_spring, release_slot, released, spring_squares, stiffness_ratio,
    wall_contact as tangential, wall_slots,
)
from .hertz import (
    KEYS_PW, adhesive, adhesive_pw_energy, adhesive_wall_contact, check_formed_on_meshes, hertz_pw_energy,
    normal_code, normal_critical_step, normal_damping, wall_contact as normal, wall_gap, wall_pipeline_acts,
)
from .normal import LAWS
from .rolling import (
    KEYS as ROLLING_KEYS, WIDTH, contact_inertia, release_ended, rolling_critical_step, spins,
    wall_contact as rolling, wall_stiffnesses,
)
from .walls import add_wall_couple, add_wall_load, wall_coefficients

#: the normal law's ``law``, ``stiffness``, ``damping`` (γ, also the tangential dashpot's),
#: ``wall_normal`` (planes), ``meshes`` (whether there are mesh walls), ``work``; the springs':
#: ``ratio`` (κ), ``fixed`` (a linear spring's k_t, 0: Mindlin's), ``rolling_damping`` (η_r),
#: ``contact_inertia`` (`dem.interactions.rolling.contact_inertia`), ``walls (w, 6)`` each wall's
#: normal (planes; 0 for meshes), μ, μ_r and μ_t, ``planes`` the number of planes, ``springs``
#: whether a mesh has friction or rolling resistance, ``first`` the first component of the rolling
#: and twisting springs in a slot (3 after the tangential spring's; 0 where no wall has friction)
ContactWallParams = namedtuple("ContactWallParams", "law stiffness damping wall_normal meshes work ratio fixed "
                               "rolling_damping contact_inertia walls planes springs first")
#: per particle, the work booked by each part: the normal dashpot's ``dissipated``, the tangential
#: spring's ``tangential_friction`` (released and slipped) and ``tangential_dissipated``
#: (dashpot), the rolling and twisting springs' ``rolling_friction`` and ``rolling_dissipated``;
#: the wall slots ``wall_key (n, s)`` (−1: free), ``wall_spring (n, s, 7)`` (ξ, θ_r, θ_t; ξ alone
#: where no wall resists rolling, θ_r, θ_t alone where none has friction),
#: ``mesh_contact (n, s, 4)`` (`dem.interactions.friction`) and ``mesh_load (n, s, 9)``, a mesh
#: slot's tangential force and its point from the wall's point, and its rolling couple, until
#: they are booked on the wall (``(n, 0, …)`` without springs on meshes); under an adhesive law
#: (`ADHESIVE_CONTACT_PW`) ``adhered (n, planes)``, whether each JKR contact with a plane is
#: formed, and ``hysteresis (n,)``, the energy the JKR contacts lost forming and breaking (no rows
#: for a law that does not hold contacts stretched, and without adhesion)
ContactWallState = namedtuple("ContactWallState", "dissipated tangential_friction tangential_dissipated "
                              "rolling_friction rolling_dissipated wall_key wall_spring mesh_contact mesh_load "
                              "adhered hysteresis")
@njit(inline="always")
def _particle(i, st, bodies, p):
    """Particle ``i``'s radius, inverse mass, inverse moments of inertia for rolling and twisting
    (`contact_inertia`), velocity and spin."""
    velocity, spin = st.velocity, st.angular_velocity
    return (0.5 * bodies.diameter[i], bodies.inverse_mass[i], (p.contact_inertia[i, 0], p.contact_inertia[i, 1]),
            (velocity[i, 0], velocity[i, 1], velocity[i, 2]), (spin[i, 0], spin[i, 1], spin[i, 2]))


@njit(inline="always")
def _planes(i, h, st, bodies, p, own, walls, advance, adhesive, parts):
    """The planes' contacts with particle ``i`` (see `_walls`): ``parts`` with theirs added."""
    position, velocity = st.position, st.velocity
    keys, springs, table, wall_point = own.wall_key, own.wall_spring, p.walls, walls.point
    (nx_, ny_, nz_, power_n, fx_t, fy_t, fz_t, tx_t, ty_t, tz_t, u_t, booked_t, power_t, tx_r, ty_r, tz_r, u_r, u_tw,
     booked_r, power_r, lost) = parts
    radius, inverse_mass, inverse, v, omega = _particle(i, st, bodies, p)
    held = holds_wall_springs(keys, i)
    for w in range(p.planes):
        n = (table[w, 0], table[w, 1], table[w, 2])
        gap = wall_gap(i, w, position, wall_point, p.wall_normal)
        if advance and adhesive:  # (`dem.interactions.hertz._adhesive_wall_row`; `adhesive_pw_energy`)
            if radius > 0.0:
                touching, force, power_n, _, _, lost, px, py, pz, k = adhesive_wall_contact(
                    i, w, True, gap, n[0], n[1], n[2], radius, inverse_mass, power_n, lost, position, velocity, p,
                    own, walls, True)
                if touching:
                    add_wall_load(walls, i, w, force * n[0], force * n[1], force * n[2], px - wall_point[w, 0],
                                  py - wall_point[w, 1], pz - wall_point[w, 2], k)
                    nx_, ny_, nz_ = nx_ + force * n[0], ny_ + force * n[1], nz_ + force * n[2]
        elif advance:  # the normal law (`dem.interactions.hertz._wall_row`; its energy: `hertz_pw_energy`)
            force = u = px = py = pz = k = 0.0
            if gap < radius and radius > 0.0:
                force, power_n, u, px, py, pz, k = normal(i, w, gap, n[0], n[1], n[2], radius, power_n, position,
                                                          velocity, inverse_mass, p.law, p.stiffness, p.damping,
                                                          walls)
                px, py, pz = px - wall_point[w, 0], py - wall_point[w, 1], pz - wall_point[w, 2]
            add_wall_load(walls, i, w, force * n[0], force * n[1], force * n[2], px, py, pz, k)
            nx_, ny_, nz_ = nx_ + force * n[0], ny_ + force * n[1], nz_ + force * n[2]
        mu = (table[w, 3], table[w, 4], table[w, 5])
        turning = mu[1] != 0.0 or mu[2] != 0.0
        if mu[0] == 0.0 and not turning or radius <= 0.0 or gap >= radius and not held:
            continue
        gap_old = gap_before(gap, i, w, h, velocity, walls.velocity, n)
        if gap >= radius:
            s = find_wall_slot(keys, i, w, False)
            if advance and s >= 0:  # the contact opened: its elastic energy leaves with it
                theta = twist = 0.0
                if turning:
                    theta, twist = spring_squares(springs, i, s, p.first)
                squared = release_slot(i, s, keys, springs)[0]
                if mu[0] != 0.0 and squared != 0.0:
                    booked_t += released(p, 0.5 * squared, gap_old, radius)
                if turning and (theta != 0.0 or twist != 0.0):
                    k_old = wall_stiffnesses(gap_old, radius, (mu[1], mu[2]), p)
                    booked_r += 0.5 * k_old[0] * theta + 0.5 * k_old[1] * twist
            continue
        slot = find_wall_slot(keys, i, w, advance)
        if slot < 0:
            continue
        if mu[0] != 0.0:
            row = tangential(i, w, slot, n, n, gap, gap_old, False, h, v, omega, radius, inverse_mass, mu[0], p,
                             springs, position, wall_point, walls.velocity, walls.angular_velocity, advance)
            if advance:
                add_wall_load(walls, i, w, row[0], row[1], row[2], row[9], row[10], row[11], 0.0)
            fx_t, fy_t, fz_t, tx_t, ty_t, tz_t = fx_t + row[0], fy_t + row[1], fz_t + row[2], tx_t + row[3], \
                ty_t + row[4], tz_t + row[5]
            u_t, booked_t, power_t = u_t + row[6], booked_t + row[7], power_t + row[8]
        if turning:
            moment, u, u_w, work, dissipation = rolling(i, w, slot, n, n, gap, gap_old, False, h,
                                                        spins(omega, walls.angular_velocity, w), radius, inverse,
                                                        (mu[1], mu[2]), p, springs, p.first, advance)
            if advance:
                add_wall_couple(walls, i, w, moment[0], moment[1], moment[2])
            tx_r, ty_r, tz_r = tx_r + moment[0], ty_r + moment[1], tz_r + moment[2]
            u_r, u_tw, booked_r, power_r = u_r + u, u_tw + u_w, booked_r + work, power_r + dissipation
    return (nx_, ny_, nz_, power_n, fx_t, fy_t, fz_t, tx_t, ty_t, tz_t, u_t, booked_t, power_t, tx_r, ty_r, tz_r, u_r,
            u_tw, booked_r, power_r, lost)


@njit(inline="always")
def _meshes(i, h, st, bodies, p, own, walls, advance, adhesive, parts):
    """The mesh contacts of particle ``i`` (see `_walls`): ``parts`` with theirs added, the normal
    law's (with ``advance``; its reactions booked at once), then the springs' (`mesh_springs`)."""
    position, velocity, wall_point = st.position, st.velocity, walls.point
    mesh_wall, mesh_gap, mesh_normal = walls.mesh_wall, walls.mesh_gap, walls.mesh_normal
    (nx_, ny_, nz_, power_n, fx_t, fy_t, fz_t, tx_t, ty_t, tz_t, u_t, booked_t, power_t, tx_r, ty_r, tz_r, u_r, u_tw,
     booked_r, power_r, lost) = parts
    radius, inverse_mass, inverse, v, omega = _particle(i, st, bodies, p)
    if advance:
        for c in range(min(walls.mesh_count[i], MAX_CONTACTS)):
            w = mesh_wall[i, c]
            n = (mesh_normal[i, c, 0], mesh_normal[i, c, 1], mesh_normal[i, c, 2])
            touching = True
            if adhesive:  # (DMT: JKR does not act on meshes)
                touching, force, power_n, _, _, lost, px, py, pz, k = adhesive_wall_contact(
                    i, w, False, mesh_gap[i, c], n[0], n[1], n[2], radius, inverse_mass, power_n, lost, position,
                    velocity, p, own, walls, True)
            else:
                force, power_n, u, px, py, pz, k = normal(i, w, mesh_gap[i, c], n[0], n[1], n[2], radius, power_n,
                                                          position, velocity, inverse_mass, p.law, p.stiffness,
                                                          p.damping, walls)
            if touching:
                add_wall_load(walls, i, w, force * n[0], force * n[1], force * n[2], px - wall_point[w, 0],
                              py - wall_point[w, 1], pz - wall_point[w, 2], k)
                nx_, ny_, nz_ = nx_ + force * n[0], ny_ + force * n[1], nz_ + force * n[2]
    parts = (nx_, ny_, nz_, power_n, fx_t, fy_t, fz_t, tx_t, ty_t, tz_t, u_t, booked_t, power_t, tx_r, ty_r, tz_r, u_r,
             u_tw, booked_r, power_r, lost)
    if p.springs:
        parts = mesh_springs(i, i, h, radius, inverse_mass, inverse, v, omega, position, velocity, p, own, walls,
                             walls, advance, parts, False)
    return parts


@njit(inline="always")
def mesh_springs(i, b, h, radius, inverse_mass, inverse, v, omega, position, velocity, p, own, found, walls, advance,
                 parts, estimated):
    """The tangential, rolling and twisting springs of the mesh contacts of sphere ``i`` (of
    ``radius``, inverse mass and inverse moments ``inverse`` for its dashpots, moving at ``v``
    and spinning at ``omega``; ``position[i]`` and ``velocity[i]`` its centre's): ``parts`` (as
    `_walls`'s) with theirs added. The sphere is row ``i`` of ``own``'s wall slots (``wall_key``,
    ``wall_spring``, ``mesh_contact``, ``mesh_load``) and of ``found``'s mesh contacts
    (``mesh_count``, ``mesh_wall``, ``mesh_gap``, ``mesh_normal``): for a particle both are rows
    of its own and of the walls' state, for a clump's member rows of the clump interaction's
    state (`dem.interactions.clump_walls`). With ``advance`` contacts that ended are dropped
    first, the springs take the step and their reactions are booked on the walls after the walk,
    the tangential ones and then the rolling couples, in the partial sums of row ``b``'s chunk
    (the particle's; a member's clump's). The springs step from the gap their contact had when
    they last stepped (the slot keeps it), or with ``estimated`` (a constant of each caller) from
    the gap a step ago as a plane's contact estimates it, ``gap − h (v − u)·n``
    (`dem.interactions.friction.mesh_gap_before`): a clump's member takes that on meshes as on
    planes (`dem.interactions.clump_walls`), so that a flat mesh is the plane to it as well (its
    centre turns with its clump, and the estimate is not the gap it had)."""
    keys, springs, previous, table, pending = own.wall_key, own.wall_spring, own.mesh_contact, p.walls, own.mesh_load
    wall_point, wall_velocity, wall_spin = walls.point, walls.velocity, walls.angular_velocity
    mesh_wall, mesh_gap, mesh_normal = found.mesh_wall, found.mesh_gap, found.mesh_normal
    (nx_, ny_, nz_, power_n, fx_t, fy_t, fz_t, tx_t, ty_t, tz_t, u_t, booked_t, power_t, tx_r, ty_r, tz_r, u_r, u_tw,
     booked_r, power_r, lost) = parts
    if advance:  # contacts that ended: their elastic energy leaves with them
        booked_t, booked_r = release_ended(i, p, keys, springs, previous, found, radius, True, p.first, booked_t,
                                           booked_r)
    taken = order = 0
    acting = 0
    for c in range(min(found.mesh_count[i], MAX_CONTACTS)):
        w, n, gap, old, gap_old, slot, taken = mesh_spring(i, c, h, keys, previous, mesh_wall, mesh_gap, mesh_normal,
                                                           table, taken, advance, position, velocity, wall_point,
                                                           wall_velocity, wall_spin)
        if slot < 0:
            continue
        if estimated:
            gap_old = mesh_gap_before(i, w, h, n, gap, position, velocity, wall_point, wall_velocity, wall_spin)
        order |= slot << (3 * acting)
        acting += 1
        if table[w, 3] != 0.0:
            row = tangential(i, w, slot, n, old, gap, gap_old, True, h, v, omega, radius, inverse_mass, table[w, 3],
                             p, springs, position, wall_point, wall_velocity, wall_spin, advance)
            for k in range(3):
                pending[i, slot, k] = row[k]
                pending[i, slot, 3 + k] = row[9 + k]
            fx_t, fy_t, fz_t, tx_t, ty_t, tz_t = fx_t + row[0], fy_t + row[1], fz_t + row[2], tx_t + row[3], \
                ty_t + row[4], tz_t + row[5]
            u_t, booked_t, power_t = u_t + row[6], booked_t + row[7], power_t + row[8]
        if table[w, 4] != 0.0 or table[w, 5] != 0.0:
            moment, u, u_w, work, dissipation = rolling(i, w, slot, n, old, gap, gap_old, True, h,
                                                        spins(omega, wall_spin, w), radius, inverse,
                                                        (table[w, 4], table[w, 5]), p, springs, p.first, advance)
            for k in range(3):
                pending[i, slot, 6 + k] = moment[k]
            tx_r, ty_r, tz_r = tx_r + moment[0], ty_r + moment[1], tz_r + moment[2]
            u_r, u_tw, booked_r, power_r = u_r + u, u_tw + u_w, booked_r + work, power_r + dissipation
    if advance:  # the springs' reactions: the tangential ones, then the rolling couples
        for a in range(acting):
            s = (order >> (3 * a)) & 7
            w = keys[i, s]
            if table[w, 3] != 0.0:
                add_wall_load(walls, b, w, pending[i, s, 0], pending[i, s, 1], pending[i, s, 2], pending[i, s, 3],
                              pending[i, s, 4], pending[i, s, 5], 0.0)
        for a in range(acting):
            s = (order >> (3 * a)) & 7
            w = keys[i, s]
            if table[w, 4] != 0.0 or table[w, 5] != 0.0:
                add_wall_couple(walls, b, w, pending[i, s, 6], pending[i, s, 7], pending[i, s, 8])
    return (nx_, ny_, nz_, power_n, fx_t, fy_t, fz_t, tx_t, ty_t, tz_t, u_t, booked_t, power_t, tx_r, ty_r, tz_r, u_r,
            u_tw, booked_r, power_r, lost)


@njit(inline="always")
def _walls(i, h, st, bodies, p, own, walls, advance, adhesive):
    """Particle ``i``'s contacts with the walls, planes then meshes: ``(F_n (3), power_n, F_t (3),
    τ_t (3), U_t, booked_t, power_t, τ_r (3), U_r, U_tw, booked_r, power_r, lost)``, the normal
    force and its dashpot's power (with ``advance`` only), the tangential springs' force, moment,
    energy, booked work and dashpot power, the rolling and twisting springs' moment, energies,
    booked work and dashpot power, and the energy the JKR contacts lost forming and breaking (with
    ``advance``). With ``advance`` the springs first take the step (contacts that
    opened are dropped) and the reactions are booked on the walls; ``adhesive`` (a constant of
    each kernel, `_wall_forces`): whether the normal law adheres, read only with ``advance``."""
    parts = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    parts = _planes(i, h, st, bodies, p, own, walls, advance, adhesive, parts)
    if p.meshes:
        parts = _meshes(i, h, st, bodies, p, own, walls, advance, adhesive, parts)
    return parts


@njit(inline="always")
def near_planes(i, position, radius, keys, p, walls):
    """Whether sphere ``i`` (centre ``position[i]``, ``radius``; ``keys`` its wall slots) keeps a
    wall spring or touches a plane of ``p`` (the pipeline's parameters)."""
    if radius <= 0.0:
        return False
    if holds_wall_springs(keys, i):
        return True
    for w in range(p.planes):
        if wall_gap(i, w, position, walls.point, p.wall_normal) < radius:
            return True
    return False


@njit(inline="always")
def _near_walls(i, st, bodies, p, own, walls):
    """Whether particle ``i`` has anything to do with a wall this step: it has a mesh contact,
    keeps a wall spring or touches a plane (`near_planes`). A particle that has not adds nothing
    to its force, its booked work or the walls' sums (`_walls` would add zeros)."""
    if p.meshes and walls.mesh_count[i] > 0:
        return True
    return near_planes(i, st.position, 0.5 * bodies.diameter[i], own.wall_key, p, walls)


@njit(cache=True, _nrt=False)
def _plain_walls(i, h, st, bodies, p, own, walls):
    """`_walls` stepping the contacts of a normal law that does not adhere: compiled once per
    machine, out of the loops, which call it only for a particle near a wall (`_near_walls`)."""
    return _walls(i, h, st, bodies, p, own, walls, True, False)


@njit(cache=True, _nrt=False)
def _adhesive_walls(i, h, st, bodies, p, own, walls):
    """`_walls` stepping the contacts of an adhesive normal law (JKR, DMT), as `_plain_walls`."""
    return _walls(i, h, st, bodies, p, own, walls, True, True)


@njit(cache=True, _nrt=False)
def _walls_at_rest(i, st, bodies, p, own, walls):
    """`_walls` reading the springs without stepping them, for the energy kernels of both laws
    (``adhesive`` is read only with ``advance``): one copy compiled once per machine, which the two
    would otherwise each inline."""
    return _walls(i, 0.0, st, bodies, p, own, walls, False, False)


@njit(inline="always")
def _wall_forces(i, h, st, bodies, p, own, walls, adhesive):
    """Particle ``i``'s wall contacts: steps their springs, books their work and their reactions
    on the walls; returns the normal, tangential and rolling shares of their force and moment.
    ``adhesive`` is a constant of each kernel: a law that does not adhere runs `_plain_walls`, which
    holds none of the adhesive laws' code (LLVM would otherwise hoist their particle-wise constants,
    two cube roots, out of the loop over the planes and compute them for every particle). A JKR
    contact acts stretched, beyond touch, so an adhesive law walks every particle's walls."""
    if adhesive:
        row = _adhesive_walls(i, h, st, bodies, p, own, walls)
    elif _near_walls(i, st, bodies, p, own, walls):
        row = _plain_walls(i, h, st, bodies, p, own, walls)
    else:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    own.dissipated[i] += h * row[3]
    own.tangential_friction[i] += row[11]
    own.tangential_dissipated[i] += h * row[12]
    own.rolling_friction[i] += row[18]
    own.rolling_dissipated[i] += h * row[19]
    if adhesive:
        own.hysteresis[i] += row[20]
    return (row[0], row[1], row[2], 0.0, 0.0, 0.0, row[4], row[5], row[6], row[7], row[8], row[9], 0.0, 0.0, 0.0,
            row[13], row[14], row[15])


@njit(inline="always")
def contact_pw_forces(i, h, st, bodies, contacts, p, own, walls):
    """`_wall_forces` under a normal law that does not adhere."""
    return _wall_forces(i, h, st, bodies, p, own, walls, False)


@njit(inline="always")
def adhesive_contact_pw_forces(i, h, st, bodies, contacts, p, own, walls):
    """`_wall_forces` under an adhesive normal law (JKR, DMT)."""
    return _wall_forces(i, h, st, bodies, p, own, walls, True)


@njit(cache=True)
def contact_pw_energy(st, bodies, contacts, p, own, walls):
    """``(hertz_pw, dissipated, tangential, friction, dissipated, rolling, twisting, friction,
    dissipated)``: the normal law's energy and booked work (`hertz_pw_energy`), then the
    springs' (`_spring_energies`)."""
    u_n, dissipated = hertz_pw_energy(st, bodies, contacts, p, own, walls)
    return (u_n, dissipated) + _spring_energies(st, bodies, p, own, walls)


@njit(cache=True)
def adhesive_contact_pw_energy(st, bodies, contacts, p, own, walls):
    """``(hertz_pw, adhesion, hysteresis, dissipated, tangential, friction, dissipated, rolling,
    twisting, friction, dissipated)``: the adhesive normal law's energies and booked work
    (`adhesive_pw_energy`), then the springs' as `contact_pw_energy`'s."""
    return adhesive_pw_energy(st, bodies, contacts, p, own, walls) + _spring_energies(st, bodies, p, own, walls)


@njit(inline="always")
def _spring_energies(st, bodies, p, own, walls):
    """``(tangential, friction, dissipated, rolling, twisting, friction, dissipated)``: the
    tangential springs' energy and booked work, then the rolling and twisting springs'."""
    u_t = u_r = u_tw = 0.0
    for i in range(st.position.shape[0]):
        row = _walls_at_rest(i, st, bodies, p, own, walls)
        u_t += row[10]
        u_r += row[16]
        u_tw += row[17]
    return (u_t, np.sum(own.tangential_friction), np.sum(own.tangential_dissipated), u_r, u_tw,
            np.sum(own.rolling_friction), np.sum(own.rolling_dissipated))


def _setup(adhesion):
    def setup(model):
        contact = model.sections["contact"]
        if not wall_pipeline_acts(model) or adhesive(contact) != adhesion:
            return None
        walls = wall_coefficients(model)
        planes = len(model.wall_normal)
        meshes = bool(model.inputs["walls"]["meshes"])
        check_formed_on_meshes(contact, meshes)
        return ContactWallParams(normal_code(contact), float(contact["k_pw"]), normal_damping(contact),
                                 model.wall_normal, meshes, float(contact["work_of_adhesion"]),
                                 stiffness_ratio(contact["poisson_ratio"]),
                                 float(contact["tangential_stiffness"]) if contact["tangential"] == "linear_history"
                                 else 0.0, float(contact["rolling_damping"]), contact_inertia(model), walls, planes,
                                 bool((walls[planes:, 3:] > 0).any()), 3 if (walls[:, 3] > 0).any() else 0)

    return setup


def _state(model, params):
    n = model.n_bodies
    width = params.first + (WIDTH if (params.walls[:, 4:] > 0).any() else 0)
    keys, springs, previous = wall_slots(model, width, (params.walls[:, 3:] > 0).any(axis=1), params.planes)
    law = LAWS[params.law]
    return ContactWallState(np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), keys, springs, previous,
                            np.zeros(previous.shape[:2] + (9,)),
                            np.zeros((n if law.beyond_contact else 0, params.planes), np.uint8),
                            np.zeros(n if law.adhesive else 0))


def separate_wall_states(checkpoint, normal="hertz_pw"):
    """`CONTACT_PW`'s ``former_state``: the `ContactWallState` fields (all but the scratch
    ``mesh_load``) of a checkpoint written while ``hertz_pw`` (``normal``; `ADHESIVE_CONTACT_PW`'s:
    ``adhesive_pw``, whose formed flags and hysteresis are kept too), ``friction_pw`` and
    ``rolling_pw`` acted one after the other (before this pipeline): their booked work, and their
    wall slots side by side where they keep the same walls in the same slots (as they do where
    friction and rolling resistance act at the same walls); ``{}`` (the checkpoint does not match
    the scene) where neither kept slots or their slots differ."""
    def field(name, what):
        return checkpoint.get(f"interaction.{name}.{what}")

    keys, previous = field("friction_pw", "wall_key"), field("friction_pw", "mesh_contact")
    if keys is None:
        keys, previous = field("rolling_pw", "wall_key"), field("rolling_pw", "mesh_contact")
    elif field("rolling_pw", "wall_key") is not None and not (
            np.array_equal(keys, field("rolling_pw", "wall_key"))
            and np.array_equal(previous, field("rolling_pw", "mesh_contact"))):
        return {}
    if keys is None:
        return {}
    n = keys.shape[0]
    zeros = np.zeros(n)
    out = {"dissipated": field(normal, "dissipated"), "tangential_friction": field("friction_pw", "friction"),
           "tangential_dissipated": field("friction_pw", "dissipated"),
           "rolling_friction": field("rolling_pw", "friction"), "rolling_dissipated": field("rolling_pw", "dissipated")}
    out = {key: zeros if value is None else value for key, value in out.items()}
    springs = [field(name, "wall_spring") for name in ("friction_pw", "rolling_pw")]
    out.update(wall_key=keys, mesh_contact=previous,
               wall_spring=np.concatenate([part for part in springs if part is not None], axis=2))
    if normal == "adhesive_pw":
        out.update(adhered=field(normal, "adhered"), hysteresis=field(normal, "hysteresis"))
    return out


def wall_critical_steps(who):
    """The wall pipeline's ``critical_step`` for spheres called ``who`` (``"particle"``; a clump's
    members, `dem.interactions.clump_walls`): its normal law's and springs' oscillators where they
    act."""
    return pipeline_critical_step(
        normal_critical_step(f"normal contact {who}–wall", 0.5, 1.0),
        friction_critical_step(f"tangential friction {who}–wall", 0.5, 1.0),
        rolling_critical_step(f"rolling/twisting resistance {who}–wall", 0.5, 0.5, 1.0,
                              lambda p: (p.walls[:, 4].max(), p.walls[:, 5].max())),
        lambda p: ((p.walls[:, 3] > 0).any(), (p.walls[:, 4:] > 0).any()))


_critical_step = wall_critical_steps("particle")


#: the keys of the three sub-models' sections (the same `Key` objects)
KEYS = {"contact": {**KEYS_PW["contact"], **FRICTION_KEYS["contact"], **ROLLING_KEYS["contact"]}}
CONTACT_PW = Interaction(
    name="contact_pw", kind=ROW, internal=False, walls=True, shares=3, keys=KEYS,
    doc="Particle–wall contact pipeline: the normal law, damping, friction, rolling and twisting of each wall contact "
        "in one pass (where friction or rolling resistance acts at a wall; the normal law is not adhesive).",
    columns=("hertz_pw", "dissipated", "tangential", "friction", "dissipated", "rolling", "twisting", "friction",
             "dissipated"),
    setup=_setup(False), state=_state, forces=contact_pw_forces, energy=contact_pw_energy,
    critical_step=_critical_step, localize=functools.partial(localize_bodies, per_body=("contact_inertia",)),
    scratch_state=("mesh_load",), former_state=separate_wall_states,
)
#: the pipeline under an adhesive normal law (JKR, DMT): the adhesion's energy and the JKR
#: contacts' hysteresis are columns of their own, and the state keeps the formed flags
ADHESIVE_CONTACT_PW = Interaction(
    name="adhesive_contact_pw", kind=ROW, internal=False, walls=True, shares=3, keys=KEYS,
    doc="Particle–wall contact pipeline under an adhesive normal law (JKR: planes only; DMT): as contact_pw, with the "
        "adhesion's energy and the JKR hysteresis booked.",
    columns=("hertz_pw", "adhesion", "hysteresis", "dissipated", "tangential", "friction", "dissipated", "rolling",
             "twisting", "friction", "dissipated"),
    setup=_setup(True), state=_state, forces=adhesive_contact_pw_forces, energy=adhesive_contact_pw_energy,
    critical_step=_critical_step, localize=CONTACT_PW.localize, scratch_state=CONTACT_PW.scratch_state,
    former_state=functools.partial(separate_wall_states, normal="adhesive_pw"),
)
