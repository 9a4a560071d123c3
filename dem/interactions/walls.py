"""Walls that move: prescribed translation (planes and meshes), prescribed rotation (meshes) and
servo control (planes), the loads the particles put on every wall, and the work those loads do
(docs/theory.md §3b). The walls exert no force of their own: the particle–wall interactions (`hertz_pw`, …;
``walls = True`` in their record) get the walls' state as an argument, read the walls' pose
there (a mesh's contacts with each particle too: ``mesh_*``) and book the reaction of each force
they apply with `add_wall_load`.

Walls are the ``[[walls]]`` planes (scene order, indices ``0 … P−1``), then the ``[[mesh]]``
surfaces (`dem.meshes`, indices ``P …``). Their time-varying state `WallState` is this
interaction's own state (so checkpoints carry it), which the loop also hands to the particle–wall
interactions. Per step (the loop of `dem.engine`):

1. ``advance`` (after the bodies moved, before the forces): step ``k → k+1``, ``t = (k+1) h``.
   A prescribed wall is put where it is at ``t``: ``p(t) = p0 + v τ`` and, for a mesh,
   ``R(t) = exp(ω τ)`` about its centre, with ``τ = max(t − start, 0)`` the time it has moved
   (``start``: the key of that name, default 0), computed from ``t`` (no accumulated round-off).
   Its velocity and angular velocity in the state, which the contacts and the work read, are
   those of the step: ``v`` and ``ω`` times ``min(τ/h, 1)``, zero before ``start`` and a
   fraction on the step it starts in (its displacement over the step divided by ``h``). A servo
   plane moves along its normal ``n_w`` at ``v = a (N* − N)/(h Σk)``, capped at ``max_speed``,
   where ``N = −F·n_w`` is the particles' normal load on it at the last evaluation, ``N*`` the
   target, ``Σk`` the summed normal stiffness ``dF/dgap`` of its contacts (no contact: full
   speed) and ``a`` the ``servo_relaxation``: each step corrects that fraction of the force
   error, as far as the contacts' stiffness predicts.
2. ``update`` (per chunk of rows, before the forces): zero the chunk's partial loads; find the
   rows' mesh contacts (`dem.meshes.mesh_contacts`).
3. the particle–wall row kernels add ``−f`` (and its moment, and the contact stiffness) into the
   partial sums of their row's chunk, ``i // CHUNK``;
4. ``forces`` (GLOBAL, serial): the loads are the chunks' partial sums added in chunk order —
   the same numbers for any number of threads, serial or parallel — and the work of the step is
   booked by the trapezoidal rule, ``W += (h/2)[(F + F⁺)·v + (M + M⁺)·ω]`` (``M`` the load's
   moment about the wall's point). ``W`` is the work the particles did on the walls, minus the
   work the walls did on the particles, so that ``kinetic + potential + walls`` stays constant
   (docs/theory.md §3b); it is logged as the ``walls`` column.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from ..meshes import MAX_CONTACTS, MeshArrays, mesh_arrays, mesh_contacts
from ..rotations import quat_from_rotvec_one
from ..schema import REQUIRED, Key, non_negative, nonzero_vector, positive
from .contract import CHUNK, GLOBAL, Interaction

FIXED, PRESCRIBED, SERVO = 0, 1, 2
#: components of a wall's load: force (3), moment about its point (3), summed contact stiffness
LOAD = 7

#: ``motion (w,)``: `FIXED`, `PRESCRIBED` or `SERVO`; ``point`` ``(w, 3)`` at t = 0 (a mesh's
#: point is its centre), the prescribed ``velocity`` and ``angular_velocity`` ``(w, 3)`` and the
#: time ``start (w,)`` they start at; ``normal (w, 3)``
#: of the planes (meshes: 0); servo ``target`` normal force, ``relaxation``, ``max_speed``
#: (0: ``max_step`` per step) ``(w,)``; then the fields of the meshes' `dem.meshes.MeshArrays`
#: (flat: numba's parallel loops cannot take nested tuples).
WallParams = namedtuple("WallParams", "motion point velocity angular_velocity start normal target relaxation "
                        "max_speed max_step " + " ".join(MeshArrays._fields))
#: Now: ``point (w, 3)``, ``rotation (w, 4)`` (quaternion, meshes), ``velocity`` and
#: ``angular_velocity (w, 3)`` over the current step; ``load (w, 7)`` the particles' load at
#: the current configuration; ``work (w,)`` booked so far; ``step (1,)``. Scratch:
#: ``partial (chunks, w, 7)``; the mesh contacts of each particle ``mesh_count (n,)``,
#: ``mesh_wall``, ``mesh_feature``, ``mesh_gap (n, MAX_CONTACTS)``, ``mesh_normal (n,
#: MAX_CONTACTS, 3)`` and ``mesh_most (n,)`` the most mesh contacts each particle has had at once
#: (more than `MAX_CONTACTS` stops the run, at the next row of walls.csv:
#: `dem.observers.csv_log.WallLog`); no slots, and no rows for the counts, when there is no mesh.
#: A servo wall's ``quantum (w, 2)``: the force and stiffness quanta its load is booked in
#: (`add_wall_load`; 0 for other walls), and ``servo_load (w, 7)``: the whole load its servo
#: reads (one process: ``load``; MPI: the ranks' exact shares summed, `dem.distributed`; 0 for
#: other walls).
WallState = namedtuple("WallState", "point rotation velocity angular_velocity load work step partial mesh_count "
                       "mesh_wall mesh_feature mesh_gap mesh_normal mesh_most quantum servo_load")
#: the fields every MPI rank holds whole (`Interaction.shared_state`); the mesh contacts are the
#: particles' (they travel with them, `dem.distributed`)
SHARED_FIELDS = ("point", "rotation", "velocity", "angular_velocity", "load", "work", "step", "partial", "quantum",
                 "servo_load")
#: a servo wall's force quantum: 2⁻⁴⁰ of its target (to a power of two); its stiffness quantum:
#: 2¹⁰ force quanta per smallest particle diameter (a contact's stiffness is about 10³ × its
#: force over the diameter): sums stay exact up to 2¹³ times the target
QUANTUM_BITS, STIFFNESS_BITS = 40, 10


#: The key that delays a prescribed motion (``[[walls]]`` and ``[[mesh]]``).
START_KEY = {"start": Key("float", 0.0, "time the prescribed motion starts at: before it the wall is at rest where "
                          "it is at t = 0, after it it moves with time t − start", "time", non_negative)}


def _relaxation(value):
    return None if 0.0 < value <= 1.0 else "must be in (0, 1]"


#: The ``[[walls]]`` and ``[[mesh]]`` keys that override a coefficient of ``[contact]`` for one
#: wall (of `dem.interactions.friction` and `dem.interactions.rolling`).
WALL_FRICTION_KEYS = ("friction", "rolling_friction", "twisting_friction")


def _own_coefficients(what):
    """The keys `WALL_FRICTION_KEYS` of a ``[[walls]]`` (``what = "wall"``) or ``[[mesh]]`` table."""
    return {"friction": Key("float", None, f"this {what}'s Coulomb friction coefficient μ (default: [contact] "
                            "friction)", "", non_negative),
            "rolling_friction": Key("float", None, f"this {what}'s rolling friction coefficient μ_r (default: "
                                    "[contact] rolling_friction)", "", non_negative),
            "twisting_friction": Key("float", None, f"this {what}'s twisting friction coefficient μ_t (default: "
                                     "[contact] twisting_friction)", "", non_negative)}


#: The keys of a ``[[walls]]`` table.
WALL_KEYS = {
    "point": Key("vec3", REQUIRED, "a point of the plane (at t = 0)", "length"),
    "normal": Key("vec3", REQUIRED, "normal pointing to the particles' side", "", nonzero_vector),
    "size": Key("float", 0.0, "edge of the square drawn in VTK output (0: fit the particles)", "length",
                non_negative),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "prescribed velocity: the wall's point moves as p(t) = p0 + v "
                    "max(t − start, 0) (its work is logged in the 'walls' column)", "length/time"),
    **START_KEY,
    "servo": Key("bool", False, "move the wall along its normal so that the particles' normal force on it holds "
                 "target_force (or target_stress × area); see guide.md, Moving and servo walls"),
    "target_force": Key("float", None, "servo target: the normal force the particles exert on the wall", "force",
                        non_negative),
    "target_stress": Key("float", None, "servo target as a stress (force = target_stress × area)",
                         "force/length²", non_negative),
    "area": Key("float", 0.0, "area target_stress acts on (0: size²)", "length²", non_negative),
    "max_speed": Key("float", 0.0, "servo speed limit (0: a thousandth of the smallest particle diameter per step)",
                     "length/time", non_negative),
    "servo_relaxation": Key("float", 0.2, "fraction of the servo's force error corrected per step, through the "
                            "stiffness of the wall's contacts", "", _relaxation),
    **_own_coefficients("wall"),
}

#: The keys of a ``[[mesh]]`` table.
MESH_KEYS = {
    "file": Key("str", REQUIRED, "triangle surface (STL, OBJ, PLY, VTU, VTK, … read by meshio; quadrilaterals are "
                "split), relative to the scene file's folder"),
    "scale": Key("float", 1.0, "scale factor applied to the file's coordinates (first)", "", positive),
    "rotate": Key("vec3", (0.0, 0.0, 0.0), "rotation vector (unit axis × angle) applied after scaling, about the "
                  "file's origin", "rad"),
    "rotate_axis": Key("vec3", None, "axis of that rotation, with rotate_angle (instead of rotate)", "",
                       nonzero_vector),
    "rotate_angle": Key("float", None, "angle of the rotation about rotate_axis (right-handed)", "rad"),
    "translate": Key("vec3", (0.0, 0.0, 0.0), "translation applied last", "length"),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "prescribed velocity of the mesh: its centre moves as c(t) = c0 + v "
                    "max(t − start, 0)", "length/time"),
    "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "prescribed rotation rate about its centre: R(t) = exp(ω "
                            "max(t − start, 0))", "1/time"),
    **START_KEY,
    "center": Key("vec3", None, "the mesh's centre (the point it turns about and that walls.csv logs; default: the "
                  "centre of its bounding box, after the transformation)", "length"),
    **_own_coefficients("mesh"),
}


def wall_problem(table, sections):
    """``(key, problem)`` for an inconsistent ``[[walls]]`` table (``sections``: the scene's), or
    None."""
    targets = [key for key in ("target_force", "target_stress") if table[key] is not None]
    if table["servo"]:
        if any(table["velocity"]):
            return "velocity", "a servo wall moves by itself: give velocity or servo = true, not both"
        if table["start"] != 0.0:
            return "start", "delays a prescribed velocity; a servo wall moves by itself from t = 0"
        if not targets:
            return "servo", "a servo wall needs a target: give target_force or target_stress"
        if len(targets) == 2:
            return "target_stress", "give target_force or target_stress, not both"
        if targets == ["target_stress"] and table["area"] == 0.0 and table["size"] == 0.0:
            return "area", "target_stress needs the area it acts on: give area (or size, for size²)"
    elif targets:
        return targets[0], "is a servo target: set servo = true as well"
    return None


def mesh_problem(table, sections):
    """``(key, problem)`` for an inconsistent ``[[mesh]]`` table, or None."""
    if (table["rotate_axis"] is None) != (table["rotate_angle"] is None):
        given = "rotate_axis" if table["rotate_axis"] is not None else "rotate_angle"
        return given, "rotate_axis and rotate_angle go together: give both"
    if table["rotate_axis"] is not None and any(table["rotate"]):
        return "rotate", "give rotate, or rotate_axis and rotate_angle, not both"
    return None


# ---------------------------------------------------------------------------------------------
# what particle–wall interactions call
# ---------------------------------------------------------------------------------------------


def wall_table(model, coefficients):
    """``(w, 3 + k)``: each wall's normal (planes, then meshes with 0) and its own coefficients
    ``WALL_FRICTION_KEYS[column]`` for the ``(column, default)`` pairs of ``coefficients`` (a
    wall without its own takes ``default``). The walls' points and velocities are the walls'
    state's (`WallState`)."""
    meshes = model.inputs.get("walls", {}).get("meshes", [])
    own = np.concatenate([model.wall_friction.reshape(-1, 3)] + [m["coefficients"][None] for m in meshes])
    columns = [np.where(np.isnan(own[:, column]), default, own[:, column]) for column, default in coefficients]
    return np.ascontiguousarray(np.column_stack([np.concatenate((model.wall_normal.reshape(-1, 3),
                                                                 np.zeros((len(meshes), 3)))), *columns]))


def wall_coefficients(model):
    """`wall_table` with each wall's friction μ, rolling μ_r and twisting μ_t (columns 3–5)."""
    contact = model.sections["contact"]
    return wall_table(model, [(0, contact["friction"]), (1, contact["rolling_friction"]),
                              (2, contact["twisting_friction"])])


@njit(inline="always")
def wall_velocity_at(point, velocity, angular_velocity, w, px, py, pz):
    """Velocity of wall ``w``'s material at the point ``p``: ``v + ω × (p − point)`` (``point``,
    ``velocity``, ``angular_velocity``: the walls' state's arrays)."""
    rx, ry, rz = px - point[w, 0], py - point[w, 1], pz - point[w, 2]
    ox, oy, oz = angular_velocity[w, 0], angular_velocity[w, 1], angular_velocity[w, 2]
    return (velocity[w, 0] + (oy * rz - oz * ry), velocity[w, 1] + (oz * rx - ox * rz),
            velocity[w, 2] + (ox * ry - oy * rx))


@njit(inline="always")
def add_wall_load(walls, i, w, fx, fy, fz, rx, ry, rz, stiffness):
    """Book on wall ``w`` the reaction of the force ``f`` it exerts on particle ``i`` at the point
    ``r`` from the wall's point: the load ``−f``, its moment ``r × (−f)`` and the contact's
    normal stiffness ``stiffness`` (``dF/dgap``, for the servo), in the partial sums of ``i``'s
    chunk (``walls``: the walls' state). On a servo wall the force and the stiffness are booked
    in whole quanta (``walls.quantum``): their sums are exact, the same bits in any order, so
    that the servo moves alike on any number of MPI ranks."""
    partial = walls.partial
    quantum = walls.quantum[w, 0]
    if quantum > 0.0:
        fx, fy, fz = np.rint(fx / quantum) * quantum, np.rint(fy / quantum) * quantum, np.rint(fz / quantum) * quantum
        stiffness = np.rint(stiffness / walls.quantum[w, 1]) * walls.quantum[w, 1]
    chunk = i // CHUNK
    partial[chunk, w, 0] -= fx
    partial[chunk, w, 1] -= fy
    partial[chunk, w, 2] -= fz
    partial[chunk, w, 3] -= ry * fz - rz * fy
    partial[chunk, w, 4] -= rz * fx - rx * fz
    partial[chunk, w, 5] -= rx * fy - ry * fx
    partial[chunk, w, 6] += stiffness


@njit(inline="always")
def add_wall_couple(walls, i, w, tx, ty, tz):
    """Book on wall ``w`` the reaction ``−τ`` of the couple ``τ`` it exerts on particle ``i``
    (rolling and twisting resistance), as `add_wall_load`."""
    partial = walls.partial
    chunk = i // CHUNK
    partial[chunk, w, 3] -= tx
    partial[chunk, w, 4] -= ty
    partial[chunk, w, 5] -= tz


# ---------------------------------------------------------------------------------------------
# the loop's hooks
# ---------------------------------------------------------------------------------------------


@njit(inline="always")
def _servo_speed(h, w, p, own):
    """Speed along the normal that brings the normal load towards the target (see the module)."""
    n = p.normal[w]
    load = own.servo_load[w]
    error = p.target[w] + (load[0] * n[0] + load[1] * n[1] + load[2] * n[2])  # N* − N, N = −F·n
    limit = p.max_speed[w] if p.max_speed[w] > 0.0 else p.max_step[w] / h
    if load[6] > 0.0:
        speed = p.relaxation[w] * error / (h * load[6])
        return min(max(speed, -limit), limit)
    return limit if error > 0.0 else (-limit if error < 0.0 else 0.0)


@njit(cache=True)
def walls_advance(h, st, bodies, p, own):
    """Move every wall to the time of the next step (see the module's docstring)."""
    own.step[0] += 1
    t = own.step[0] * h
    for w in range(p.motion.shape[0]):
        if p.motion[w] == PRESCRIBED:
            moved = max(t - p.start[w], 0.0)  # (t itself when start = 0)
            fraction = min(moved / h, 1.0)
            for c in range(3):
                own.point[w, c] = p.point[w, c] + p.velocity[w, c] * moved
                own.velocity[w, c] = p.velocity[w, c] * fraction
                own.angular_velocity[w, c] = p.angular_velocity[w, c] * fraction
            omega = p.angular_velocity[w]
            if omega[0] != 0.0 or omega[1] != 0.0 or omega[2] != 0.0:
                q = quat_from_rotvec_one((omega[0] * moved, omega[1] * moved, omega[2] * moved))
                for c in range(4):
                    own.rotation[w, c] = q[c]
        elif p.motion[w] == SERVO:
            speed = _servo_speed(h, w, p, own)
            for c in range(3):
                own.velocity[w, c] = speed * p.normal[w, c]
                own.point[w, c] += h * own.velocity[w, c]


@njit(cache=True, _nrt=False)
def walls_update(lo, hi, h, st, bodies, contacts, p, own):
    """Zero the partial loads of the chunks of rows ``lo ≤ i < hi`` (the last rows: and of every
    chunk beyond, which an MPI rank's fewer rows leave over); find their mesh contacts."""
    for chunk in range(lo // CHUNK, (hi - 1) // CHUNK + 1):
        own.partial[chunk] = 0.0
    if hi == st.position.shape[0]:
        own.partial[(hi - 1) // CHUNK + 1:] = 0.0
    if p.wall.shape[0] > 0:
        mesh_contacts(lo, hi, st, bodies, p, own)


@njit(cache=True)
def walls_forces(h, st, bodies, p, own):
    """The loads (partial sums in chunk order) and the work of the step (trapezoidal rule). No
    array is allocated (the GPU runs it too, `dem.gpu`)."""
    for w in range(own.load.shape[0]):
        power = 0.0
        for c in range(3):
            force, moment = _chunk_sum(own.partial, w, c), _chunk_sum(own.partial, w, 3 + c)
            power += (own.load[w, c] + force) * own.velocity[w, c]
            power += (own.load[w, 3 + c] + moment) * own.angular_velocity[w, c]
            own.load[w, c] = force
            own.load[w, 3 + c] = moment
        own.load[w, 6] = _chunk_sum(own.partial, w, 6)
        own.work[w] += 0.5 * h * power
        if own.quantum[w, 0] > 0.0:  # a servo's (on an MPI rank: its share, until the ranks' are summed)
            for c in range(LOAD):
                own.servo_load[w, c] = own.load[w, c]


@njit(inline="always")
def _chunk_sum(partial, w, c):
    """Component ``c`` of wall ``w``'s load: the chunks' partial sums in chunk order."""
    total = 0.0
    for chunk in range(partial.shape[0]):
        total += partial[chunk, w, c]
    return total


@njit(cache=True)
def walls_energy(st, bodies, contacts, p, own):
    """``(walls,)``: the work booked so far."""
    return (np.sum(own.work),)


# ---------------------------------------------------------------------------------------------
# set-up
# ---------------------------------------------------------------------------------------------


def _target(table):
    if table["target_force"] is not None:
        return table["target_force"]
    if table["target_stress"] is not None:
        return table["target_stress"] * (table["area"] or table["size"] ** 2)
    return 0.0


def setup(model):
    """`WallParams` of the ``[[walls]]`` and ``[[mesh]]`` the builders handed over
    (``model.inputs["walls"]``: ``planes``, tables; ``meshes``, dicts with ``vertices`` in the
    mesh frame, ``faces``, ``center``, ``velocity``, ``angular_velocity``, ``start``), or None."""
    given = model.inputs.get("walls")
    if not given:
        return None
    planes, meshes = given["planes"], given["meshes"]
    contact = model.diameter[model.diameter > 0]
    smallest = float(contact.min()) if len(contact) else 1.0

    def plane_motion(table):
        return SERVO if table["servo"] else PRESCRIBED if any(table["velocity"]) else FIXED

    def mesh_motion(mesh):
        return PRESCRIBED if np.any(mesh["velocity"]) or np.any(mesh["angular_velocity"]) else FIXED

    n_planes = len(planes)
    return WallParams(
        motion=np.array([plane_motion(t) for t in planes] + [mesh_motion(m) for m in meshes], np.int64),
        point=np.array([t["point"] for t in planes] + [m["center"] for m in meshes], float).reshape(-1, 3),
        velocity=np.array([t["velocity"] for t in planes] + [m["velocity"] for m in meshes], float).reshape(-1, 3),
        angular_velocity=np.array([(0.0, 0.0, 0.0)] * n_planes + [m["angular_velocity"] for m in meshes],
                                  float).reshape(-1, 3),
        start=np.array([t["start"] for t in planes] + [m["start"] for m in meshes], float),
        normal=np.concatenate((model.wall_normal, np.zeros((len(meshes), 3)))),
        target=np.array([_target(t) for t in planes] + [0.0] * len(meshes)),
        relaxation=np.array([t["servo_relaxation"] for t in planes] + [1.0] * len(meshes)),
        max_speed=np.array([t["max_speed"] for t in planes] + [0.0] * len(meshes)),
        max_step=np.full(n_planes + len(meshes), 1e-3 * smallest),
        **mesh_arrays([(m["vertices"], m["faces"]) for m in meshes], np.arange(len(meshes)) + n_planes,
                      0.5 * float(model.diameter.max(initial=0.0)))._asdict(),
    )


def initial_state(model, p):
    n_walls = len(p.motion)
    n = model.n_bodies
    slots = MAX_CONTACTS if len(p.wall) else 0  # (a row per particle all the same: the rows travel under MPI)
    rotation = np.zeros((n_walls, 4))
    rotation[:, 0] = 1.0
    quantum = np.zeros((n_walls, 2))
    for w in np.flatnonzero(p.motion == SERVO):
        force = 2.0 ** (np.floor(np.log2(abs(p.target[w]) if p.target[w] != 0.0 else 1.0)) - QUANTUM_BITS)
        smallest = 1000.0 * p.max_step[w]  # (the smallest contact diameter)
        quantum[w] = force, 2.0 ** (np.floor(np.log2(force / smallest)) + STIFFNESS_BITS)
    moving = ((p.motion == PRESCRIBED) & (p.start <= 0.0))[:, None]  # (from t = 0: the velocity of the first step)
    return WallState(
        point=p.point.copy(), rotation=rotation, velocity=np.where(moving, p.velocity, 0.0),
        angular_velocity=np.where(moving, p.angular_velocity, 0.0), load=np.zeros((n_walls, LOAD)),
        work=np.zeros(n_walls),
        step=np.zeros(1, np.int64), partial=np.zeros(((n + CHUNK - 1) // CHUNK, n_walls, LOAD)),
        mesh_count=np.zeros(n if slots else 0, np.int64), mesh_wall=np.zeros((n, slots), np.int64),
        mesh_feature=np.zeros((n, slots), np.int64), mesh_gap=np.zeros((n, slots)),
        mesh_normal=np.zeros((n, slots, 3)), mesh_most=np.zeros(n if slots else 0, np.int64), quantum=quantum,
        servo_load=np.zeros((n_walls, LOAD)),
    )


def localize(p, part):
    """Under MPI (`dem.distributed`) the walls, planes and meshes, fixed, moving as prescribed or
    servo, are the same on every rank (each rank moves them to the time of the step; their loads
    and work: each rank's share; a servo reads the ranks' exact shares summed, ``servo_load``;
    the mesh contacts: each particle's, which travel with it)."""
    return p


WALLS = Interaction(
    name="walls", doc=__doc__, kind=GLOBAL, columns=("walls",), internal=False, keys={}, setup=setup,
    state=initial_state, forces=walls_forces, energy=walls_energy, update=walls_update, advance=walls_advance,
    localize=localize, shared_bodies=lambda p: np.zeros(0, np.int64), shared_state=SHARED_FIELDS,
    summed_state=("load", "work"),
)
