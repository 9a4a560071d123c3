"""The contact network of the particles (docs/guide.md, contact network): every touching
particle–particle pair with the force it carries (`contact_network`, drawn as lines in
``contacts.pvd`` by `dem.observers.vtk`), and its statistics: coordination numbers and the
fabric tensor (`fabric`, logged in ``fabric.csv`` by `dem.observers.csv_log.FabricLog`).

A pair ``i < j`` *touches* when ``r < R_i + R_j`` (``r = |x_i − x_j|``): the test, to the bit,
by which the contact kernels load a pair. Pairs are listed in the neighbour list's owner order
(``i`` ascending, then ``j``). The force of a pair is the force on its first body ``i`` (``j``
feels its negative), from the last force evaluation:

* where `dem.interactions.contact`'s ``contact_pp`` acts (friction or rolling resistance; or
  ``adhesive_pp``, under an adhesive normal law), its update pass has left the force on ``j`` in
  its pair scratch, at the pair's slot (`dem.contacts.pair_slot`); it is
  read from there, so that it holds everything the
  pipeline added (the normal law, its damping, the friction spring and its dashpot) exactly as
  the particles received it (a JKR contact stretched apart, ``r ≥ R_i + R_j``, is not listed);
* where `dem.interactions.hertz`'s ``hertz_pp`` acts alone (frictionless), the normal force is
  computed here with the expressions of its rows (`dem.interactions.hertz._pair_row`): the
  elastic law and, with ``restitution < 1``, its damping at the state's velocities. The loop
  evaluated the damping with the velocities of its force evaluation (half a kick earlier, in
  the velocity-Verlet schemes), so with damping the pair forces of a run's snapshot differ from
  those the particles received by O(dt); without damping they are the same.

With clumps (`dem.clumps`; `dem.interactions.clump_contacts`'s ``clump_pp`` acts, every other
particle a clump of one member) a contact is a member pair: the network lists each member pair
that carried a load in the last force evaluation (its spheres touch, ``r < r_a + r_b`` between the
member centres; under the JKR law also a formed contact stretched apart), in owner order (bodies
``i < j``, then the members of ``i``, then those of ``j``, in template order), with the force on
the member of ``i``, the moments on each member about its centre (``moment_i``, ``moment_j``) and
the member centres the line joins, all as the update applied them (kept in the pair scratch by
`dem.interactions.clump_contacts.keep_member_loads`, which a run writing the network calls). The
normal ``n`` and the overlap are those of the two member spheres; ``i`` and ``j`` are the bodies.
The fabric counts contacts, not touching body pairs: two clumps touching at two member pairs
make two contacts, each with its own normal (the usual multi-sphere convention: `fabric`).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .cell import cell_image, image_velocity
from .contacts import pair_slot
from .interactions.clump_contacts import MEMBER_LOADS, NAMES as CLUMP_PIPELINES, clump_contacts
from .interactions.contact import LOADS
from .interactions.hertz import normal_damped, pair_overlap
from .interactions.normal import contact_scales, normal_law
from .rotations import quat_rotate_one

#: the particle pipelines whose update leaves each pair's loads in its pair scratch (`dem.contacts`)
PIPELINES = ("contact_pp", "adhesive_pp")

#: The touching pairs (``m`` of them) of a state: bodies ``i < j`` (m,), ``force`` on ``i`` (m, 3),
#: ``normal`` ``n = (x_i − x_j)/r`` (m, 3), ``normal_force`` ``F·n`` (positive in compression),
#: ``tangential_force`` ``|F − (F·n) n|``, ``overlap`` ``R_i + R_j − r`` and ``sliding`` (1 where the
#: friction force is at its Coulomb limit, `SLIDING`; else 0), each (m,). With clumps (module
#: docstring) a contact is a member pair: ``member_i``, ``member_j`` (m,) the members' indices in
#: their bodies, ``centre_i``, ``centre_j`` (m, 3) their centres (``x_i``, ``n``, ``r`` above are
#: theirs), ``moment_i``, ``moment_j`` (m, 3) the moments on each member about its centre; for
#: spheres the members are 0 and the centres the bodies' positions, the moments None.
Network = namedtuple("Network", "i j force normal normal_force tangential_force overlap sliding member_i member_j "
                                "centre_i centre_j moment_i moment_j")
#: a pair slides when its tangential force is at least this fraction of its Coulomb limit ``μ F_e``
#: (``F_e`` the elastic normal force, the limit the friction spring slips at; the spring is held
#: at the limit to round-off)
SLIDING = 1.0 - 1e-9
#: The network's statistics (`fabric`): ``contacts`` ``N_c`` (touching pairs; with clumps touching
#: member pairs), ``particles`` ``N_p`` (bodies with a diameter; with clumps bodies with members),
#: ``coordination`` ``Z = 2 N_c / N_p``, ``mechanical``
#: ``Z_m = (2 N_c − N_1)/(N_p − N_0 − N_1)`` (Thornton 2000; ``N_0``, ``N_1``: particles with 0
#: and 1 contacts), ``rattlers`` ``N_0 + N_1``, ``tensor`` the fabric tensor ``φ = (1/N_c) Σ n⊗n``
#: (3, 3), ``anisotropy`` ``a = (15/2) √(⅔ φ':φ')`` (``φ'`` its deviatoric part).
Fabric = namedtuple("Fabric", "contacts particles coordination mechanical rattlers tensor anisotropy")


@njit(cache=True)
def _touching(contacts, position, diameter, cell):
    """``(i, j, r, reach)`` of the touching pairs ``i < j`` of the list ``contacts``
    (`dem.contacts.Contacts`; its ``owner_start`` is kept only where an interaction keeps
    histories, so the rows are scanned for their partners ``j > i``), in owner order."""
    start, index = contacts.start, contacts.neighbors
    pairs = start[-1] // 2  # (the list is full: each pair is in both rows)
    first, second = np.empty(pairs, np.int64), np.empty(pairs, np.int64)
    distance, reaches = np.empty(pairs), np.empty(pairs)
    m = 0
    for a in range(position.shape[0]):
        radius = 0.5 * diameter[a]
        for k in range(start[a], start[a + 1]):
            b = index[k]
            if b < a:
                continue
            r2, reach = pair_overlap(a, b, radius, position, diameter, cell)[3:]
            if r2 < reach * reach:
                first[m], second[m], distance[m], reaches[m] = a, b, np.sqrt(r2), reach
                m += 1
    return first[:m].copy(), second[:m].copy(), distance[:m].copy(), reaches[:m].copy()


@njit(cache=True)
def _stored_forces(contacts, first, second, loads):
    """The force on ``first[m]`` of each pair: minus the force on ``second[m]`` that
    ``contact_pp``'s update left in the first three columns of ``loads`` at the pair's slot."""
    force = np.empty((first.shape[0], 3))
    for m in range(first.shape[0]):
        slot = pair_slot(contacts.start, contacts.neighbors, contacts.owner_start, first[m], second[m])
        for c in range(3):
            force[m, c] = -loads[slot, c]
    return force


@njit(cache=True)
def _normal_forces(first, second, position, velocity, diameter, inverse_mass, law, stiffness, damping, cell):
    """The normal force on ``first[m]`` of each touching pair, elastic and damped, by
    `dem.interactions.hertz._pair_row`'s expressions (the same bits as its term in the row of
    ``first[m]``)."""
    force = np.empty((first.shape[0], 3))
    for m in range(first.shape[0]):
        i, j = first[m], second[m]
        dx, dy, dz, r2, reach = pair_overlap(i, j, 0.5 * diameter[i], position, diameter, cell)
        r = np.sqrt(r2)
        delta = 1.0 - r / reach
        f = normal_law(law, delta, stiffness, reach)[1]
        if damping != 0.0:
            wx, wy, wz = image_velocity(i, j, dx, dy, dz, position, cell)
            speed = ((velocity[i, 0] - velocity[j, 0] - wx) * dx + (velocity[i, 1] - velocity[j, 1] - wy) * dy
                     + (velocity[i, 2] - velocity[j, 2] - wz) * dz) / r
            f = normal_damped(f, 0.0, 0.5, law, delta, stiffness, reach, inverse_mass[i] + inverse_mass[j], speed,
                              damping)[0]
        f /= r
        force[m, 0], force[m, 1], force[m, 2] = f * dx, f * dy, f * dz
    return force


@njit(cache=True)
def _coulomb_forces(law, stiffness, work, distance, reach, reduced):
    """The normal force that bounds the friction of each pair at ``distance`` (its elastic normal
    force; under an adhesive law plus twice the pull-off force: `contact_scales`)."""
    elastic = np.empty(distance.shape[0])
    for m in range(distance.shape[0]):
        elastic[m] = contact_scales(law, 1.0 - distance[m] / reach[m], stiffness, reach[m], reduced[m], work)[0]
    return elastic


@njit(inline="always")
def _carries(a, b, slot, position, diameter, loads, cell, members):
    """Whether the pair ``a < b`` (its slot ``slot`` of ``loads``) carried a load: its spheres
    touch or, with ``members`` (clumps), some value of its row is not zero (the pair's load, or
    where the run keeps them a member pair's, `_member_pairs`)."""
    if members:
        for c in range(loads.shape[1]):
            if loads[slot, c] != 0.0:
                return True
        return False
    r2, reach = pair_overlap(a, b, 0.5 * diameter[a], position, diameter, cell)[3:]
    return r2 < reach * reach


@njit(cache=True)
def _held_loads(contacts, position, diameter, loads, held, cell, members):
    """``(keys (m, 2), values (m, width))``: the pairs ``i < j`` of the ``held`` bodies ``j`` that
    carried a load (`_carries`) and their slots' rows of ``loads``."""
    start, index, owner_start = contacts.start, contacts.neighbors, contacts.owner_start
    width = loads.shape[1]
    keys, values = np.empty((owner_start[-1], 2), np.int64), np.empty((owner_start[-1], width))
    m = 0
    for a in range(position.shape[0]):
        slot = owner_start[a]
        for k in range(start[a], start[a + 1]):
            b = index[k]
            if b < a:
                continue
            if held[b] and _carries(a, b, slot, position, diameter, loads, cell, members):
                keys[m, 0], keys[m, 1] = a, b
                for c in range(width):
                    values[m, c] = loads[slot, c]
                m += 1
            slot += 1
    return keys[:m].copy(), values[:m].copy()


@njit(cache=True)
def _put_loads(contacts, keys, values, loads):
    """``values`` (`_held_loads`'s) into their pairs' slots of ``loads``."""
    for m in range(keys.shape[0]):
        slot = pair_slot(contacts.start, contacts.neighbors, contacts.owner_start, keys[m, 0], keys[m, 1])
        for c in range(values.shape[1]):
            loads[slot, c] = values[m, c]


@njit(cache=True)
def _member_pairs(contacts, member_start, most, loads):
    """``(i, j, a, b, values (m, MEMBER_LOADS − 1))``: the member pairs that carried a load (the
    first of their `MEMBER_LOADS` columns set), in owner order, with their force and moments."""
    start, index, owner_start = contacts.start, contacts.neighbors, contacts.owner_start
    size = owner_start[-1] * most * most
    first, second = np.empty(size, np.int64), np.empty(size, np.int64)
    member_a, member_b = np.empty(size, np.int64), np.empty(size, np.int64)
    values = np.empty((size, MEMBER_LOADS - 1))
    m = 0
    for i in range(start.shape[0] - 1):
        slot = owner_start[i]
        for k in range(start[i + 1] - (owner_start[i + 1] - owner_start[i]), start[i + 1]):  # the entries j > i
            j = index[k]
            for a in range(member_start[i + 1] - member_start[i]):
                for b in range(member_start[j + 1] - member_start[j]):
                    c = LOADS + (a * most + b) * MEMBER_LOADS
                    if loads[slot, c] != 0.0:
                        first[m], second[m], member_a[m], member_b[m] = i, j, a, b
                        for e in range(MEMBER_LOADS - 1):
                            values[m, e] = loads[slot, c + 1 + e]
                        m += 1
            slot += 1
    return first[:m].copy(), second[:m].copy(), member_a[:m].copy(), member_b[:m].copy(), values[:m].copy()


@njit(cache=True)
def _member_centres(body, member, position, orientation, member_offset):
    """``x + R s`` of the members ``member`` (global indices) of the bodies ``body``, rotated as
    the contact kernels rotate them (`dem.interactions.clump_walls.member_motion`)."""
    centre = np.empty((body.shape[0], 3))
    for m in range(body.shape[0]):
        s = member_offset[member[m]]
        arm = quat_rotate_one(orientation[body[m]], (s[0], s[1], s[2]))
        for c in range(3):
            centre[m, c] = position[body[m], c] + arm[c]
    return centre


def _clump_pipeline_name(names):
    """The clumps' contact interaction among ``names`` (``clump_pp`` or, under an adhesive law,
    ``adhesive_clump_pp``), or None."""
    return next((name for name in CLUMP_PIPELINES if name in names), None)


def _clump_network(model, state, contacts, p):
    """The `Network` of member pairs under ``clump_pp`` or ``adhesive_clump_pp`` (module docstring)."""
    if not p.network:
        raise ValueError("the contact network of clumps needs the member pairs' loads: call "
                         "dem.interactions.clump_contacts.keep_member_loads(model) before the contact table is made")
    first, second, a, b, values = _member_pairs(contacts.contacts(), p.member_start, p.most,
                                                contacts.pair_scratch(_clump_pipeline_name(model.interactions)))
    global_a, global_b = p.member_start[first] + a, p.member_start[second] + b
    centre_i = _member_centres(first, global_a, state.position, state.orientation, p.member_offset)
    centre_j = _member_centres(second, global_b, state.position, state.orientation, p.member_offset)
    between = state.position[first] - state.position[second]
    d = centre_i - centre_j + (cell_image(between, state.cell) - between)  # (the partner's nearest image)
    distance = np.linalg.norm(d, axis=1)
    normal = d / distance[:, None]
    force = values[:, 0:3].copy()
    normal_force = np.einsum("mc,mc->m", force, normal)
    tangential_force = np.linalg.norm(force - normal_force[:, None] * normal, axis=1)
    radius_i, radius_j = p.member_radius[global_a], p.member_radius[global_b]
    reach = radius_i + radius_j
    sliding = np.zeros(len(first), np.uint8)
    if p.friction > 0.0:
        limit = p.friction * _coulomb_forces(p.law, p.stiffness, p.work, distance, reach,
                                             radius_i * radius_j / reach)
        sliding[tangential_force >= SLIDING * limit] = 1
    return Network(first, second, force, normal, normal_force, tangential_force, reach - distance, sliding, a, b,
                   centre_i, centre_j, values[:, 3:6].copy(), values[:, 6:9].copy())


def pipeline_name(names):
    """The contact pipeline among ``names`` (`dem.interactions.contact`'s ``contact_pp``, or
    ``adhesive_pp`` under an adhesive normal law), or None."""
    return next((name for name in PIPELINES if name in names), None)


def loads_pipeline(names):
    """The interaction among ``names`` whose pair scratch the contact network reads: the contact
    pipeline (`pipeline_name`) or the clumps' (`dem.interactions.clump_contacts`), or None."""
    return pipeline_name(names) or _clump_pipeline_name(names)


def pair_loads(table, position, diameter, held, cell):
    """What the update of the `loads_pipeline` of ``table`` left in its pair scratch for the pairs
    whose second body is ``held`` (a mask), as ``(keys (m, 2), values)``: ``contact_pp``'s for
    the touching pairs (``LOADS`` columns), the clumps' for the pairs of which a member pair
    carried a load (their whole rows, with each member pair's loads where the run keeps them,
    `dem.interactions.clump_contacts.keep_member_loads`). For `dem.distributed`, whose gathered
    snapshot rebuilds the contact table with the keyed histories alone (its ranks hold the
    loads of the pairs of their own bodies, in their owners' rows)."""
    name = loads_pipeline(table.histories)
    return _held_loads(table.contacts(), position, diameter, table.pair_scratch(name), held, cell,
                       name in CLUMP_PIPELINES)


def put_pair_loads(table, keys, values):
    """Put `pair_loads`' ``values`` back at their pairs' slots in ``table``."""
    _put_loads(table.contacts(), keys, values, table.pair_scratch(loads_pipeline(table.histories)))


def separation(state, first, second):
    """``x_first − x_second`` of pairs, the nearest image's across periodic faces (`dem.cell`)."""
    return cell_image(state.position[first] - state.position[second], state.cell)


def touching_pairs(model, state, contacts):
    """``(i, j, r, reach)``: the touching pairs of ``state`` in the neighbour list ``contacts`` (a
    `dem.contacts.ContactTable` current for ``state``: the simulation's), with their distances
    and radii sums."""
    return _touching(contacts.contacts(), state.position, model.diameter, state.cell)


def pair_forces(model, state, contacts):
    """``(i, j, force on i)`` of the body pairs that touch (`contact_network`'s pairs); with
    clumps the body pairs that carried a load, each with the sum of its member pairs' forces,
    minus the load the update left on ``j`` in the pair scratch (`_held_loads`): no member loads
    needed (`homogenised_stress`)."""
    name = _clump_pipeline_name(model.interactions)
    if name is None:
        network = contact_network(model, state, contacts)
        return network.i, network.j, network.force
    keys, values = _held_loads(contacts.contacts(), state.position, model.diameter, contacts.pair_scratch(name),
                               np.ones(model.n_bodies, np.bool_), state.cell, True)
    return keys[:, 0], keys[:, 1], -values[:, :3]


def contact_network(model, state, contacts):
    """The `Network` of ``state`` (module docstring): ``contacts`` is the
    `dem.contacts.ContactTable` of the last force evaluation at ``state`` (the simulation's, or
    what `dem.engine.compute_forces` returned). Empty without particle–particle contacts."""
    clumps = clump_contacts(model)
    if clumps is not None:
        return _clump_network(model, state, contacts, clumps)
    first, second, distance, reach = touching_pairs(model, state, contacts)
    name = pipeline_name(model.interactions)
    pipeline, normal_only = model.interactions.get(name), model.interactions.get("hertz_pp")
    if pipeline is not None:
        force = _stored_forces(contacts.contacts(), first, second, contacts.pair_scratch(name))
    elif normal_only is not None:
        force = _normal_forces(first, second, state.position, state.velocity, model.diameter,
                               model.body_arrays().inverse_mass, normal_only.law, normal_only.stiffness,
                               normal_only.damping, state.cell)
    else:  # no contact law: nothing is loaded
        first, second, distance, reach = first[:0], second[:0], distance[:0], reach[:0]
        force = np.zeros((0, 3))
    normal = separation(state, first, second) / distance[:, None]
    normal_force = np.einsum("mc,mc->m", force, normal)
    tangential_force = np.linalg.norm(force - normal_force[:, None] * normal, axis=1)
    sliding = np.zeros(len(first), np.uint8)
    if pipeline is not None and pipeline.friction > 0.0:
        radius_i, radius_j = 0.5 * model.diameter[first], 0.5 * model.diameter[second]
        limit = pipeline.friction * _coulomb_forces(pipeline.law, pipeline.stiffness, pipeline.work, distance, reach,
                                                    radius_i * radius_j / (radius_i + radius_j))
        sliding[tangential_force >= SLIDING * limit] = 1
    members = np.zeros(len(first), np.int64)
    return Network(first, second, force, normal, normal_force, tangential_force, reach - distance, sliding, members,
                   members, state.position[first], state.position[second], None, None)


def fabric(model, state, contacts):
    """The `Fabric` of the touching pairs of ``state`` (``contacts``: a neighbour list current for
    it, as for `touching_pairs`; with clumps the table of its last force evaluation, as for
    `contact_network`, whose member pairs are the contacts: a body's contacts are its members',
    ``N_p`` counts the bodies with members and each contact's ``n`` is its member pair's).
    ``mechanical`` is NaN when every particle is a rattler, ``tensor`` and ``anisotropy`` when
    nothing touches."""
    clumps = clump_contacts(model)
    if clumps is not None:
        network = _clump_network(model, state, contacts, clumps)
        first, second, normal = network.i, network.j, network.normal
        counted = np.diff(clumps.member_start) > 0
    else:
        first, second, distance, _ = touching_pairs(model, state, contacts)
        normal = separation(state, first, second) / distance[:, None] if len(first) else None
        counted = model.diameter > 0.0
    particles = int(np.count_nonzero(counted))
    touching = len(first)
    count = np.bincount(np.concatenate((first, second)), minlength=model.n_bodies)[counted]
    none, one = int(np.count_nonzero(count == 0)), int(np.count_nonzero(count == 1))
    bearing = particles - none - one
    coordination = 2.0 * touching / particles if particles else 0.0
    mechanical = (2.0 * touching - one) / bearing if bearing else float("nan")
    if touching:
        tensor = np.einsum("mi,mj->ij", normal, normal) / touching
        deviator = tensor - np.trace(tensor) / 3.0 * np.eye(3)
        anisotropy = 7.5 * float(np.sqrt(2.0 / 3.0 * np.sum(deviator * deviator)))
    else:
        tensor, anisotropy = np.full((3, 3), np.nan), float("nan")
    return Fabric(touching, particles, coordination, mechanical, none + one, tensor, anisotropy)
