"""Filling and emptying (docs/guide.md, Filling and emptying): particles inserted during a run by
``[[insert]]`` sources and removed by ``[[outlet]]`` regions.

The particle count changes while the arrays keep their size. A source's particles exist from the
start as *parked* bodies (`dem.builders.insert`): their sizes, masses and inertias are drawn when
the scene is built (seeded, so every run and restart has the same ones, and every interaction is
set up with them), but the run sees them with zero diameter, mass and inverse mass (`park`): no
contact, no weight, no motion, no energy, no momentum. `Feeder`, an observer that acts every
``interval`` of each source and outlet (at fixed steps: the same for any thread count and across
restarts), inserts a source's next parked bodies where they overlap nothing (random places in its
region, drawn from a generator seeded by the source's seed and the step) and parks again the
bodies whose centres entered an outlet. Whatever it changes, the energy the change brings in or
takes out is booked (the ``inserted`` and ``removed`` columns of `dem.interactions.insertion`), so
``total`` still closes, and the momentum too (`InsertionState`). Each body keeps its index, so
the VTK ``id`` of a particle stays with it; snapshots show the bodies in play only. In a periodic
cell places are tested against the nearest images and outlets see the centres moved into the
cell. A source of clumps (`dem.builders.insert`, ``clump``) parks them likewise, and their
members with them (zero list diameter for `dem.interactions.clump_contacts`, zero mass for
`dem.interactions.clump_walls`); in a scene with clumps every source places its bodies member
by member, at random orientations (`place_clumps`), and an outlet takes a clump when its centre
of mass enters it; under MPI the Feeder acts on rank 0's view of the whole system and the ranks take what it
changed (`dem.distributed`).
"""

import logging

import numpy as np

from .cell import ORIGIN, PERIOD, cell_image, wrapped
from .clumps import unit_frame
from .interactions import list_diameters
from .interactions.clump_contacts import clump_contacts, enclosing_diameters, members_of
from .interactions.clump_walls import clump_walls
from .meshes import surface_distance
from .neighbors import N_BUILDS
from .rotations import quat_matrix
from .schema import Key, non_negative, positive

log = logging.getLogger("dem")

#: a region's keys (``[[insert]]``, ``[[outlet]]``): a box, a cylinder or (outlets) the far side of a plane
REGION_KEYS = {
    "shape": Key("str", "box", "the region: box (min, max), cylinder (center, axis, radius, height); for a source "
                 "also a face with an inflow (the velocity): rectangle (min, max, equal along the face's normal "
                 "axis) or disc (center, axis, radius), filled in a layer one largest diameter deep behind it; for "
                 "an outlet also plane (point, normal: the side the normal points to)",
                 choices=("box", "cylinder", "rectangle", "disc", "plane")),
    "min": Key("vec3", None, "a box's lowest corner", "length"),
    "max": Key("vec3", None, "a box's highest corner", "length"),
    "center": Key("vec3", None, "a cylinder's centre (half-way along its axis)", "length"),
    "axis": Key("str", "z", "a cylinder's axis", choices=("x", "y", "z")),
    "radius": Key("float", None, "a cylinder's radius", "length", positive),
    "height": Key("float", None, "a cylinder's length along its axis", "length", positive),
    "point": Key("vec3", None, "a point of an outlet plane", "length"),
    "normal": Key("vec3", None, "an outlet plane's normal: particles whose centre passes the plane along it leave",
                  ""),
    "interval": Key("float", None, "time between the insertions or removals (default: 100 steps)", "time", positive),
    "start": Key("float", 0.0, "time of the first insertion or removal", "time", non_negative),
}


def region_problem(p, source):
    """``(key, problem)`` of a region table (of a ``source`` or an outlet) that cannot make a
    region, or None."""
    shape = p["shape"]
    needed = {"box": ("min", "max"), "cylinder": ("center", "radius", "height"), "plane": ("point", "normal"),
              "rectangle": ("min", "max"), "disc": ("center", "radius")}[shape]
    if shape == "plane" and source:
        return "shape", "a source fills a box, a cylinder, or a layer behind a rectangle or a disc"
    if shape in ("rectangle", "disc") and not source:
        return "shape", "an outlet is a box, a cylinder or a plane"
    for key in needed:
        if p[key] is None:
            return key, f"is required for a {shape}"
    if shape == "box" and not all(hi > lo for lo, hi in zip(p["min"], p["max"])):
        return "max", f"must exceed min along every axis (min {list(p['min'])})"
    if shape in ("rectangle", "disc"):
        flat = [a for a in range(3) if p["min"][a] == p["max"][a]] if shape == "rectangle" else ["xyz".index(p["axis"])]
        if shape == "rectangle" and (len(flat) != 1 or any(p["max"][a] < p["min"][a] for a in range(3))):
            return "max", "a rectangle has min = max along exactly one axis (its normal) and max > min along the others"
        if p["velocity"][flat[0]] == 0.0:
            return "velocity", f"a {shape} source needs an inflow: a velocity across it (along {'xyz'[flat[0]]})"
    if shape == "plane" and not np.linalg.norm(p["normal"]) > 0.0:
        return "normal", "must not be zero"
    return None


class Region:
    """A box, a cylinder along an axis or a half-space (the far side of a plane); a source's face
    (a rectangle or a disc) is the box or cylinder one largest diameter deep behind it, against
    the inflow."""

    def __init__(self, p):
        self.shape = {"rectangle": "box", "disc": "cylinder"}.get(p["shape"], p["shape"])
        if p["shape"] == "rectangle":
            self.lo, self.hi = np.asarray(p["min"], float), np.asarray(p["max"], float)
            a = int(np.flatnonzero(self.lo == self.hi)[0])
            if p["velocity"][a] > 0.0:
                self.lo[a] -= largest_size(p)
            else:
                self.hi[a] += largest_size(p)
        elif self.shape == "box":
            self.lo, self.hi = np.asarray(p["min"], float), np.asarray(p["max"], float)
        elif self.shape == "cylinder":
            self.axis = "xyz".index(p["axis"])
            self.center = np.asarray(p["center"], float)
            self.radius = float(p["radius"])
            self.height = float(p["height"]) if p["shape"] == "cylinder" else largest_size(p)
            if p["shape"] == "disc":
                self.center[self.axis] -= 0.5 * self.height * np.sign(p["velocity"][self.axis])
            across = [a for a in range(3) if a != self.axis]
            self.across = across
            self.lo, self.hi = self.center.copy(), self.center.copy()
            self.lo[across] -= self.radius
            self.hi[across] += self.radius
            self.lo[self.axis] -= 0.5 * self.height
            self.hi[self.axis] += 0.5 * self.height
        else:
            self.point = np.asarray(p["point"], float)
            self.normal = np.asarray(p["normal"], float) / np.linalg.norm(p["normal"])

    @property
    def volume(self):
        if self.shape == "box":
            return float(np.prod(self.hi - self.lo))
        return np.pi * self.radius ** 2 * self.height if self.shape == "cylinder" else np.inf

    @property
    def centre(self):
        return 0.5 * (self.lo + self.hi)

    def contains(self, x, margin=0.0):
        """Whether each point of ``x (m, 3)`` lies in the region, at least ``margin (m,)`` inside."""
        margin = np.broadcast_to(np.asarray(margin, float), (len(x),))
        if self.shape == "plane":
            return (x - self.point) @ self.normal > 0.0
        inside = np.all((x >= self.lo + margin[:, None]) & (x <= self.hi - margin[:, None]), axis=1)
        if self.shape == "cylinder":
            d = x[:, self.across] - self.center[self.across]
            inside &= np.hypot(d[:, 0], d[:, 1]) <= self.radius - margin
        return inside

    def sample(self, rng, margin, spans=(False, False, False)):
        """One point, uniform in the region shrunk by ``margin`` (None when nothing is left), but
        along the axes ``spans``: those along which it spans a periodic cell, which has no face
        there."""
        shrink = np.where(spans, 0.0, margin)
        lo, hi = self.lo + shrink, self.hi - shrink
        if np.any(hi < lo):
            return None
        point = rng.uniform(lo, hi)
        if self.shape == "cylinder":
            reach = self.radius - margin
            if reach < 0.0:
                return None
            r, angle = reach * np.sqrt(rng.uniform()), rng.uniform(0.0, 2.0 * np.pi)
            point[self.across] = self.center[self.across] + r * np.array([np.cos(angle), np.sin(angle)])
        return point

    def overlaps(self, other):
        """Whether the bounding boxes of two bounded regions meet (a half-space meets everything
        on its side)."""
        if self.shape == "plane" or other.shape == "plane":
            plane, region = (self, other) if self.shape == "plane" else (other, self)
            if region.shape == "plane":
                return True
            corners = np.array(np.meshgrid(*zip(region.lo, region.hi), indexing="ij")).reshape(3, -1).T
            return bool(plane.contains(corners).any())
        return bool(np.all(self.lo < other.hi) and np.all(other.lo < self.hi))


def largest_size(p):
    """The largest span a source's size distribution gives (`span_of` its largest diameter)."""
    return span_of(p, {"mono": lambda: p["diameter"], "uniform": lambda: p["diameter_max"],
                       "lognormal": lambda: p["diameter_max"], "file": lambda: float(file_sizes(p["file"]).max())}[
        p["distribution"]]())


def span_of(p, diameter):
    """The span of a source's particles of ``diameter``: the diameter of a sphere, that of the
    sphere about its centre of mass that holds its members for a clump of member diameter
    ``diameter`` (`dem.clumps.unit_frame`)."""
    if p.get("clump") is None:
        return diameter
    return diameter * 2.0 * unit_frame(p["clump"], p["spheres"], p["aspect"])[4]


def file_sizes(path):
    """The column ``diameter`` of a CSV file (raises ValueError: missing, not numbers, not positive)."""
    try:
        with open(path, encoding="utf-8") as file:
            names = [n.strip().lower() for n in file.readline().split(",")]
        table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2, encoding="utf-8")
    except OSError as error:
        raise ValueError(f"{path}: {error.strerror}") from None
    except ValueError as error:
        raise ValueError(f"{path}: not a table of numbers ({str(error).splitlines()[0]})") from None
    if "diameter" not in names:
        raise ValueError(f"{path}: no column diameter (columns: {', '.join(names)})")
    sizes = table[:, names.index("diameter")] if table.size else np.zeros(0)
    if not np.all(np.isfinite(sizes)) or (sizes <= 0.0).any():
        raise ValueError(f"{path}: a diameter that is not a positive number")
    return sizes


def interval_steps(p, dt):
    """A table's ``interval`` in whole steps (at least 1; default 100)."""
    return 100 if p["interval"] is None else max(1, int(round(p["interval"] / dt)))


def run_bodies(model, state):
    """The run's body arrays (`dem.state.Model.body_arrays`), with the sources' bodies that are
    not in play parked (`park`): the run's own copies of the mass and diameter then."""
    bodies = model.body_arrays()
    if "insertion" in model.interactions:
        bodies = bodies._replace(mass=bodies.mass.copy(), diameter=bodies.diameter.copy())
        park(bodies, model, state.interactions["insertion"])
    return bodies


def park(bodies, model, own):
    """Give the parked bodies (``own.alive`` False) zero diameter, mass and inverse mass and
    inertia in the run's arrays ``bodies`` (`dem.state.BodyArrays`, its own copies of the mass
    and diameter), and, where clumps touch particles, zero list diameter
    (`dem.interactions.clump_contacts`: the neighbour list then leaves them out, and with them
    their members; `dem.interactions.clump_walls` leaves out bodies of zero mass)."""
    sources = model.interactions["insertion"].bodies
    parked = sources[~own.alive]
    for target in (bodies.diameter, bodies.mass, bodies.inverse_mass, bodies.inverse_inertia):
        target[parked] = 0.0
    clumps = clump_contacts(model)
    if clumps is not None:   # (the model's array: those in play get theirs back, as after a restart)
        listed = clumps.list_diameter
        listed[sources] = np.where(own.alive, enclosing_diameters(model)[sources], 0.0)


def drop_wall_history(state, leaving, n):
    """Empty the wall springs and adhesion flags the bodies ``leaving`` kept with planes and
    meshes (`dem.interactions.friction`, `.rolling`, `.hertz`): a parked body has none (their
    energy leaves with it, in the ``removed`` column)."""
    for own in state.interactions.values():
        for field, empty in (("wall_key", -1), ("wall_spring", 0.0), ("mesh_contact", 0.0), ("adhered", 0)):
            values = getattr(own, field, None)
            if isinstance(values, np.ndarray) and values.ndim > 1 and values.shape[0] == n:
                values[leaving] = empty


def wake(bodies, model, index):
    """Give the bodies ``index`` their own diameter, mass and inertia in the run's arrays (and
    their list diameter, `park`)."""
    bodies.diameter[index] = model.diameter[index]
    bodies.mass[index] = model.mass[index]
    bodies.inverse_mass[index] = np.where(model.pinned[index], 0.0, 1.0 / model.mass[index])
    bodies.inverse_inertia[index] = np.where(model.clamped[index, None], 0.0, 1.0 / model.inertia[index])
    clumps = clump_contacts(model)
    if clumps is not None:
        clumps.list_diameter[index] = enclosing_diameters(model)[index]


def drop_member_history(model, state, leaving):
    """Empty the wall springs and JKR flags that the members of the clumps ``leaving`` kept
    (`dem.interactions.clump_walls`, per member), as `drop_wall_history` does a particle's."""
    name = clump_walls(model)
    if name is None:
        return
    start = model.interactions[name].member_start
    rows = np.concatenate([np.arange(start[b], start[b + 1]) for b in leaving])
    own = state.interactions[name]
    for values, empty in ((own.wall_key, -1), (own.wall_spring, 0.0), (own.mesh_contact, 0.0), (own.adhered, 0)):
        if len(values):   # (the mesh contacts have no rows without meshes, the flags none but under JKR)
            values[rows] = empty


class Feeder:
    """The observer that inserts and removes particles (module docstring). It runs first among
    the observers, so that logs, snapshots and checkpoints see the state it leaves."""

    sampled = False

    def __init__(self, model, dt):
        params = model.interactions["insertion"]
        self.params = params
        self.sources = model.inputs["insertion"].get("sources", [])
        self.outlets = model.inputs["insertion"].get("outlets", [])
        self.steps = [interval_steps(s, dt) for s in self.sources] + [interval_steps(o, dt) for o in self.outlets]
        self.every = int(np.gcd.reduce(self.steps)) if self.steps else 0
        self.regions = [Region(s) for s in self.sources] + [Region(o) for o in self.outlets]
        self.full = set()  # sources whose region was found full (said once)
        self.mesh_faces = mesh_faces(model)

    def report(self, sim):
        step = sim.state.step
        own = sim.state.interactions["insertion"]
        n_sources = len(self.sources)
        for k, outlet in enumerate(self.outlets):
            if step % self.steps[n_sources + k] == 0 and outlet["start"] <= sim.state.time:
                self._remove(sim, own, k, self.regions[n_sources + k])
        for k, source in enumerate(self.sources):
            if step % self.steps[k] == 0 and source["start"] <= sim.state.time:
                self._insert(sim, own, k, source, self.regions[k])

    def close(self, sim):
        pass

    def _book(self, sim, change, column):
        """Apply ``change()`` (which alters the state), refresh the forces of the new
        configuration and book the energy it took out (``column`` 1) or minus what it brought in
        (0): the change of the budget's total across it; and the momentum it took out or brought
        in."""
        own = sim.state.interactions["insertion"]
        before = sim.energy_budget()
        change()
        refresh(sim)
        after = sim.energy_budget()
        own.booked[column] += before["total"] - after["total"]
        for c, name in enumerate(("Px", "Py", "Pz", "Lx", "Ly", "Lz")):
            own.momentum[column, c] += (after[name] - before[name]) * (1.0 if column == 0 else -1.0)
        sim.forget_sample()  # (the sample after the change, taken before this booking)
        sim.altered = True  # (under MPI the ranks take the changed state from rank 0: `dem.distributed`)

    def _remove(self, sim, own, k, region):
        """Park the sources' bodies in play whose centres are in the outlet's region (bodies
        that no source made stay: an outlet takes only what can come back); in a periodic cell,
        the centres moved into the cell (`dem.cell.wrapped`)."""
        st, p = sim.state, self.params
        playing = p.bodies[own.alive]
        leaving = playing[region.contains(wrapped(st.position[playing], st.cell))]
        if not len(leaving):
            return

        def change():
            own.alive[p.slot[leaving]] = False
            own.removed_count[k] += len(leaving)
            own.removed_mass[k] += float(sim.model.mass[leaving].sum())
            drop_wall_history(st, leaving, sim.model.n_bodies)
            drop_member_history(sim.model, st, leaving)
            park(sim.bodies, sim.model, own)
            st.velocity[leaving] = 0.0
            st.angular_velocity[leaving] = 0.0

        self._book(sim, change, 1)

    def _insert(self, sim, own, k, source, region):
        """Insert the source's bodies due by now that fit (module docstring)."""
        st, p, model = sim.state, self.params, sim.model
        first, end = p.source_start[k], p.source_start[k + 1]
        done = int(own.inserted_count[k])
        due = due_count(source, p.cumulative[first:end], st.time)
        if due <= done:
            return
        rng = np.random.default_rng([source["seed"], k, st.step])
        placed = (place_clumps if model.has_clumps else place)(
            sim, region, p.bodies[first + done:first + due], rng, source["overlap_tolerance"], source["attempts"],
            self.mesh_faces)
        if len(placed) < due - done and k not in self.full:
            self.full.add(k)
            log.warning("insert %d: its region is full at t = %g: %d of the %d particles due are waiting (logged in "
                        "flow.csv as the shortfall)", k, st.time, due - done - len(placed), due - done)
        own.shortfall[k] = due - done - len(placed)
        if not len(placed):
            return
        index = np.array([body for body, *_ in placed])
        position = np.array([x for _, x, *_ in placed])

        def change():
            st.position[index] = position
            if model.has_clumps:   # (random orientations: `place_clumps`)
                st.orientation[index] = np.array([q for *_, q in placed])
            st.velocity[index] = source["velocity"]
            st.angular_velocity[index] = source["angular_velocity"]
            own.alive[p.slot[index]] = True
            own.inserted_count[k] += len(index)
            wake(sim.bodies, model, index)
            fresh = sim.scheme.aux(st, sim.bodies)  # the scheme's own state of the new bodies
            for name, values in zip(sim.aux._fields, fresh):
                getattr(sim.aux, name)[index] = values[index]

        self._book(sim, change, 0)


def refresh(sim):
    """After the state changed between steps: the neighbour list rebuilt (without the parked
    bodies, with the new ones; the histories of the pairs that remain carried over) and the
    forces of the new configuration (no step, nothing booked)."""
    builds = int(sim.contacts.counters[N_BUILDS])
    sim.contacts.rebuild(sim.state.position, list_diameters(sim.model, sim.bodies), sim.state.cell)
    sim.contacts.counters[N_BUILDS] = builds + 1
    sim.forget_sample()
    sim.recompute_forces()


def due_count(source, cumulative, time):
    """How many of a source's bodies are due by ``time``: at a rate, ``⌊rate (t − start)⌋`` (or
    those whose cumulative mass is within ``mass_rate (t − start)``), up to ``stop``; with a
    target, all of them."""
    elapsed = min(time, source["stop"] if source["stop"] is not None else time) - source["start"]
    if source["rate"] is not None:
        return min(int(np.floor(source["rate"] * elapsed + 1e-9)), len(cumulative))
    if source["mass_rate"] is not None:
        return int(np.searchsorted(cumulative, source["mass_rate"] * elapsed * (1.0 + 1e-12), side="right"))
    return len(cumulative)


def place(sim, region, bodies, rng, tolerance, attempts, faces):
    """``[(body, position)]``: places for the bodies in turn, each where it overlaps no particle
    in play (nor one placed before it) by more than ``tolerance`` of the two diameters' mean, and
    no plane or mesh (``faces``: `mesh_faces`); stops at the first body that finds no place in
    ``attempts`` tries. The particles in play are found with a k-d tree, those placed here in a
    grid of cells of the largest diameter. In a periodic cell (`dem.cell`, one that does not
    deform) both hold the positions moved into the cell, each is searched around every image of
    the new place one period across the periodic axes, and distances are the nearest image's;
    along a periodic axis that the region spans, places reach up to the faces."""
    from scipy.spatial import cKDTree  # imported here: 0.1 s that a run without sources would pay

    st, model = sim.state, sim.model
    cell = st.cell
    active = np.flatnonzero(sim.bodies.diameter > 0.0)
    held = wrapped(st.position[active], cell)
    tree = cKDTree(held) if len(active) else None
    largest = float(model.diameter.max())
    walls = wall_planes(sim)
    meshes = mesh_frames(sim, faces)
    spans, images = periodic_images(region, cell)
    grid = {}
    placed = []
    new_position, new_diameter = np.empty((len(bodies), 3)), np.empty(len(bodies))

    def overlap(x, d, near, position, diameter):
        """Whether the place ``x`` of a body of diameter ``d`` overlaps any of ``near``."""
        return len(near) and np.any(np.linalg.norm(cell_image(position[near] - x, cell), axis=1)
                                    < 0.5 * (d + diameter[near]) * (1.0 - tolerance))

    for body in bodies:
        d = model.diameter[body]
        for _ in range(attempts):
            x = region.sample(rng, 0.5 * d, spans)
            if x is None:
                return placed
            if walls is not None and np.any(np.einsum("wc,wc->w", x - walls[0], walls[1]) < 0.5 * d):
                continue
            if any(surface_distance(rotation.T @ (x - point), vertex, face, faces) < 0.5 * d
                   for point, rotation, vertex, face, faces in meshes):
                continue
            inside = wrapped(x[None], cell)[0]
            if tree is not None:
                near = np.unique(np.concatenate([tree.query_ball_point(inside + image, 0.5 * (d + largest))
                                                 for image in images]).astype(np.int64))
                if overlap(inside, d, near, held, model.diameter[active]):
                    continue
            cells = {tuple(np.floor((inside + image) / largest).astype(int)) for image in images}
            near = np.array([k for c in cells for a in (-1, 0, 1) for b in (-1, 0, 1) for e in (-1, 0, 1)
                             for k in grid.get((c[0] + a, c[1] + b, c[2] + e), ())], np.int64)
            if overlap(inside, d, np.unique(near), new_position, new_diameter):
                continue
            grid.setdefault(tuple(np.floor(inside / largest).astype(int)), []).append(len(placed))
            new_position[len(placed)], new_diameter[len(placed)] = inside, d
            placed.append((body, inside))
            break
        else:
            return placed
    return placed


def place_clumps(sim, region, bodies, rng, tolerance, attempts, faces):
    """``[(body, position, orientation)]``: `place` in a scene with clumps, member sphere by member
    sphere (`dem.interactions.clump_contacts.members_of`: a sphere is one member at its centre):
    each body at a random place in the region shrunk by its reach (from its centre of mass to its
    farthest point) and a uniform random orientation (a unit quaternion of four normal draws),
    where none of its members overlaps a member of a body in play (nor one placed before it) by
    more than ``tolerance`` of the two diameters' mean, nor a plane or a mesh; stops at the first
    body that finds no place in ``attempts`` tries. The members in play are found with a k-d tree
    of their centres about their bodies' centres moved into the cell, those placed here by a
    direct search (a source places a few at a time); in a periodic cell each is searched around
    every image one period across, and distances are the nearest image's, as in `place`."""
    from scipy.spatial import cKDTree

    st, model = sim.state, sim.model
    cell = st.cell
    start, offset, radius = members_of(model)
    owner = np.repeat(np.arange(model.n_bodies), np.diff(start))
    held = np.flatnonzero(sim.bodies.mass[owner] > 0.0)   # the members of the bodies in play
    arm = np.einsum("nij,nj->ni", quat_matrix(st.orientation[owner[held]]), offset[held])
    members = wrapped(st.position, cell)[owner[held]] + arm
    tree = cKDTree(wrapped(members, cell)) if len(held) else None
    largest = float(radius.max(initial=0.0))
    walls = wall_planes(sim)
    meshes = mesh_frames(sim, faces)
    spans, images = periodic_images(region, cell)
    placed, new_members, new_radii = [], np.zeros((0, 3)), np.zeros(0)

    def overlap(x, r, position, radii):
        """Whether any of the members ``x (m, 3)`` of radii ``r`` overlaps any at ``position``."""
        if not len(radii):
            return False
        apart = np.linalg.norm(cell_image((position[None] - x[:, None]).reshape(-1, 3), cell), axis=1)
        return bool(np.any(apart.reshape(len(x), -1) < (r[:, None] + radii[None]) * (1.0 - tolerance)))

    for body in bodies:
        rows = slice(start[body], start[body + 1])
        own_offset, own_radius = offset[rows], radius[rows]
        reach = float(np.max(np.linalg.norm(own_offset, axis=1) + own_radius))
        for _ in range(attempts):
            x = region.sample(rng, reach, spans)
            if x is None:
                return placed
            q = rng.standard_normal(4)
            q *= (1.0 if q[0] >= 0.0 else -1.0) / np.linalg.norm(q)
            inside = wrapped(x[None], cell)[0]
            at = inside + own_offset @ quat_matrix(q[None])[0].T
            if walls is not None and np.any(np.einsum("mwc,wc->mw", at[:, None] - walls[0][None], walls[1])
                                            < own_radius[:, None]):
                continue
            if any(surface_distance(rotation.T @ (member - point), vertex, face, faces) < r
                   for point, rotation, vertex, face, faces in meshes for member, r in zip(at, own_radius)):
                continue
            if tree is not None:
                near = set()
                for image in images:
                    for found in tree.query_ball_point(wrapped(at, cell) + image, own_radius + largest):
                        near.update(found)
                near = np.array(sorted(near), np.int64)
                if overlap(at, own_radius, members[near], radius[held[near]]):
                    continue
            if overlap(at, own_radius, new_members, new_radii):
                continue
            placed.append((body, inside, q))
            new_members, new_radii = np.concatenate([new_members, at]), np.concatenate([new_radii, own_radius])
            break
        else:
            return placed
    return placed


def periodic_images(region, cell):
    """``(spans (3,), images)``: the periodic axes of ``cell`` that ``region`` spans (it has no
    face there), and the shifts to every image of a place one period across the periodic axes
    (``[0]`` without one)."""
    period, origin = cell[PERIOD], cell[ORIGIN]
    spans = (period > 0.0) & (region.lo <= origin) & (region.hi >= origin + period)
    images = [np.zeros(3)]
    for axis in np.flatnonzero(period > 0.0):
        step = np.zeros(3)
        step[axis] = cell[PERIOD, axis]
        images = [image + k * step for image in images for k in (-1.0, 0.0, 1.0)]
    return spans, images


def mesh_faces(model):
    """The indices of each mesh wall's triangles (those its contact grid lists)."""
    if "walls" not in model.interactions:
        return []
    p = model.interactions["walls"]
    return [np.unique(p.cell_face[p.cell_start[p.grid_offset[m]]:p.cell_start[p.grid_offset[m + 1]]]).astype(np.int64)
            for m in range(len(p.wall))]


def mesh_frames(sim, faces):
    """``[(point, rotation, vertex, face, faces)]`` of each mesh wall now: its centre and rotation
    matrix, the vertices and triangles in its own frame, and the indices of its triangles
    (``faces``: `mesh_faces`)."""
    if not faces:
        return []
    p, own = sim.model.interactions["walls"], sim.state.interactions["walls"]
    return [(own.point[w], quat_matrix(own.rotation[w][None])[0], p.vertex, p.face, faces[m])
            for m, w in enumerate(p.wall)]


def wall_planes(sim):
    """``(points (w, 3), normals (w, 3))`` of the scene's planes now, or None."""
    if "walls" not in sim.model.interactions:
        return None
    normal = sim.model.interactions["walls"].normal
    plane = np.linalg.norm(normal, axis=1) > 0.0
    return sim.state.interactions["walls"].point[plane], normal[plane]
