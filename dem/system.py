"""Building a system: `SystemBuilder` collects bodies, bonds, sites and the inputs builders hand
to interactions, and makes the `dem.state.Model` and `dem.state.State`; `build_system` runs the
builders of a validated scene (docs/theory.md §5). The rest state of every bond is the configuration at
t = 0.
"""

import numpy as np
from numba import njit

from .builders import BUILDERS
from .clumps import body_frame
from .cell import KEYS as CELL_KEYS
from .cell import cell_array, minimum_image, reach_problem, section_problem, wall_problem
from .contacts import KEYS as CONTACT_KEYS
from .contacts import contact_skin
from .diagnostics import energy_budget
from .feeding import run_bodies
from .interactions import INTERACTIONS, initial_states, section_keys, setup_interactions
from .interactions.clump_contacts import reach_diameters
from .interactions.contact import check_sub_models
from .interactions.hertz import jkr_skin
from .interactions.walls import WALL_FRICTION_KEYS, WALL_KEYS
from .meshes import load_mesh, place_mesh
from .rotations import (
    matrix_quat,
    principal_axes,
    quat_multiply,
    quat_conjugate_one,
    quat_multiply_one,
    quat_rotate_inverse_one,
)
from .schema import SceneError, defaults
from .state import BOND_LAWS, LAW_PARAMETERS, Bonds, Model, State, color_bonds

#: Every section an interaction (or the contact table) reads, with its keys.
SECTION_KEYS = {**section_keys(), **CELL_KEYS}
for _section, _keys in CONTACT_KEYS.items():
    SECTION_KEYS[_section] = {**SECTION_KEYS.get(_section, {}), **_keys}


class SystemBuilder:
    """Accumulates bodies and bonds (in blocks of arrays, so that a builder can add 10⁶ bodies at
    once with `add_bodies`); `finish` makes the `Model` and `State`."""

    def __init__(self):
        self._blocks = []
        self._bond_blocks = []
        self._sites = {}  # body index -> its sites (body frame), for the few bodies that have any
        self._site_radius = {}  # body index -> its sites' radii, for clumps (`add_clumps`)
        self._count = 0
        self.inputs = {}  # interaction name -> {key: value or list}: what builders hand to interactions
        self.invariants = {}

    @property
    def n_bodies(self):
        return self._count

    def add_bodies(self, position, *, mass, inertia, velocity=(0, 0, 0), orientation=(1, 0, 0, 0),
                   angular_velocity=(0, 0, 0), diameter=0.0, com_offset=(0, 0, 0), pinned=False, clamped=False,
                   group=0):
        """Add ``n = len(position)`` bodies; every other argument is broadcast to ``n`` rows
        (``inertia``: scalar or three principal moments per body). Returns their indices."""
        position = np.asarray(position, float).reshape(-1, 3)
        n = len(position)

        def rows(value, shape, dtype=float):
            return np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype), (n,) + shape)).copy()

        pinned = rows(pinned, (), np.bool_)
        clamped = rows(clamped, (), np.bool_)
        inertia = np.asarray(inertia, float)
        inertia = rows(inertia[..., None] if inertia.ndim == 0 or inertia.shape == (n,) else inertia, (3,))
        orientation = rows(orientation, (4,))
        self._blocks.append(dict(
            position=position.copy(), velocity=np.where(pinned[:, None], 0.0, rows(velocity, (3,))),
            orientation=orientation / np.linalg.norm(orientation, axis=1, keepdims=True),
            angular_velocity=np.where(clamped[:, None], 0.0, rows(angular_velocity, (3,))), mass=rows(mass, ()),
            inertia=inertia, diameter=rows(diameter, ()), com_offset=rows(com_offset, (3,)), pinned=pinned,
            clamped=clamped, group=rows(group, (), np.int32),
        ))
        first = self._count
        self._count += n
        return np.arange(first, self._count)

    def add_body(self, position, *, sites=(), **properties):
        """Add one body; ``inertia`` is a scalar (sphere) or three principal moments; ``sites``
        are interaction sites in the body frame. Returns its index."""
        index = int(self.add_bodies(np.asarray(position, float)[None], **properties)[0])
        if len(sites):
            self._sites[index] = np.asarray(sites, float).reshape(-1, 3)
        return index

    def add_cluster(self, site_positions, site_masses, *, velocity=(0, 0, 0), angular_velocity=(0, 0, 0), **kwargs):
        """Add a rigid body made of point-mass sites (spatial positions): mass, centre of mass
        and inertia tensor come from the sites; the body frame is the principal frame, its axes
        ordered and signed to stay as close to the inertial axes as possible. Returns its index."""
        sites = np.asarray(site_positions, float)
        masses = np.broadcast_to(np.asarray(site_masses, float), (len(sites),))
        mass = masses.sum()
        centre = masses @ sites / mass
        arms = sites - centre
        tensor = np.sum(masses[:, None, None] * (np.sum(arms * arms, axis=1)[:, None, None] * np.eye(3)
                                                 - arms[:, :, None] * arms[:, None, :]), axis=0)
        moments, axes = principal_axes(tensor)
        return self.add_body(centre, mass=mass, inertia=moments, orientation=matrix_quat(axes), velocity=velocity,
                             angular_velocity=angular_velocity, sites=arms @ axes, **kwargs)

    def add_clumps(self, template, position, *, density=1.0, orientation=(1, 0, 0, 0), velocity=(0, 0, 0),
                   angular_velocity=(0, 0, 0), frame=None, **kwargs):
        """Add ``n = len(position)`` clumps of ``template`` (a `dem.clumps.Template`) at ``density``:
        rigid bodies of the union of its member spheres (`dem.clumps.body_frame`), whose centres of
        mass go to ``position`` and whose template frames are turned by ``orientation`` (unit
        quaternions, broadcast to ``n``). The body frame is the principal frame; the members are
        the bodies' sites, with their radii. ``frame`` is `dem.clumps.body_frame` of the template
        when the caller has it already. Returns the bodies' indices."""
        mass, moments, _, axes, offsets = body_frame(template, density) if frame is None else frame
        position = np.asarray(position, float).reshape(-1, 3)
        turn = np.broadcast_to(np.asarray(orientation, float), (len(position), 4))
        turn = turn / np.linalg.norm(turn, axis=1, keepdims=True)
        orientation = quat_multiply(np.ascontiguousarray(turn), np.broadcast_to(matrix_quat(axes), turn.shape).copy())
        bodies = self.add_bodies(position, mass=mass, inertia=moments, orientation=orientation, velocity=velocity,
                                 angular_velocity=angular_velocity, **kwargs)
        radii = np.asarray(template.radii, float).copy()
        for body in bodies:
            self._sites[int(body)] = offsets
            self._site_radius[int(body)] = radii
        return bodies

    def add_bonds(self, i, j, *, k_axial=0.0, k_shear=0.0, k_bending=0.0, law="three_spring", **parameters):
        """Bond bodies ``i[b]`` and ``j[b]`` under ``law`` (a name of `dem.state.BOND_LAWS`): the
        three-spring binder with stiffnesses ``k_axial``, ``k_shear``, ``k_bending``, or a law with its own
        per-bond ``parameters`` (`dem.state.LAW_PARAMETERS`, e.g. the parallel bond's ``modulus``,
        ``shear_modulus``, ``radius``, ``tensile_strength``, ``shear_strength``). Values are scalars
        or per bond."""
        i = np.asarray(i, np.int32).reshape(-1)
        j = np.asarray(j, np.int32).reshape(-1)
        n = len(i)
        if n == 0:   # (an empty block would reach `_rest_bonds` as bonds with no colour)
            return
        if law not in BOND_LAWS:
            raise ValueError(f"unknown bond law {law!r} (known: {', '.join(BOND_LAWS)})")
        names = LAW_PARAMETERS.get(law, ())
        if set(parameters) != set(names):
            raise TypeError(f"add_bonds(law={law!r}) takes the parameters {', '.join(names) or 'none'}, got "
                            f"{', '.join(sorted(parameters)) or 'none'}")

        def column(value):
            return np.broadcast_to(np.asarray(value, float), (n,)).copy()

        self._bond_blocks.append((i, j, column(k_axial), column(k_shear), column(k_bending),
                                  np.full(n, BOND_LAWS.index(law), np.int8),
                                  {name: column(parameters[name]) for name in names}))

    def add_bond(self, i, j, **properties):
        self.add_bonds([i], [j], **properties)

    def append_input(self, interaction, key, value):
        """Append ``value`` to the list ``key`` of what ``interaction`` gets from the builders
        (``model.inputs[interaction][key]``), e.g. a Lennard-Jones body pair."""
        self.inputs.setdefault(interaction, {}).setdefault(key, []).append(value)

    def set_input(self, interaction, key, value):
        """Set the parameter ``key`` of ``interaction``'s inputs; every builder that sets it must
        give the same value (raises ValueError otherwise)."""
        given = self.inputs.setdefault(interaction, {})
        if given.setdefault(key, value) != value:
            raise ValueError(f"all {interaction.replace('_', '-')} parameters of a scene must agree: {key} is "
                             f"{given[key]!r} and {value!r}")

    def finish(self, walls=(), meshes=(), **sections):
        """The `Model` and `State` of what was added. ``walls`` are ``[[walls]]`` tables (``point``,
        ``normal``, …, the wall's own ``friction``, ``rolling_friction``, ``twisting_friction``;
        missing keys or None: defaults / the ``[contact]`` values); ``meshes`` dicts with
        ``vertices (nv, 3)`` and ``faces (nf, 3)`` (world frame at t = 0) and optionally
        ``velocity``, ``angular_velocity``, ``start``, ``center``, ``name``, ``friction``,
        ``rolling_friction``, ``twisting_friction`` (`dem.meshes.place_mesh`);
        ``sections`` the scene sections the interactions read (``contact``, ``fields``,
        ``breakage``, …), as dicts of key values (missing keys: defaults)."""
        bodies = {key: _joined([block[key] for block in self._blocks]) for key in self._blocks[0]}
        self._blocks = []
        state = State.new(bodies["position"], bodies["velocity"], bodies["orientation"], bodies["angular_velocity"])
        if "cell" in sections and np.ndim(sections["cell"].get("shear_rate", ())) == 0:  # L_xy alone, as in a scene
            sections["cell"] = {**sections["cell"], "shear_rate": (float(sections["cell"]["shear_rate"]), 0.0, 0.0)}
        cell = {**defaults(CELL_KEYS["cell"]), **sections.get("cell", {})}
        problem = section_problem(cell)
        if problem:
            raise SceneError(f"cell.{problem[0]}: {problem[1]}")
        state.cell = cell_array(cell)
        counts = np.zeros(self._count, np.int64)
        for body, sites in self._sites.items():
            counts[body] = len(sites)
        model = Model(
            mass=bodies["mass"], inertia=bodies["inertia"], diameter=bodies["diameter"],
            com_offset=bodies["com_offset"], pinned=bodies["pinned"], clamped=bodies["clamped"],
            group=bodies["group"], bonds=self._rest_bonds(state),
            site_start=np.concatenate(([0], np.cumsum(counts))).astype(np.int64) if self._sites else None,
            site_offset=np.concatenate([self._sites[b] for b in sorted(self._sites)]) if self._sites
            else np.zeros((0, 3)),
            site_radius=np.concatenate([self._site_radius.get(b, np.zeros(len(self._sites[b])))
                                        for b in sorted(self._sites)]) if self._sites else None,
            inputs={name: dict(values) for name, values in self.inputs.items()}, invariants=dict(self.invariants),
        )
        if len(walls):
            walls = [{**defaults(WALL_KEYS), **w} for w in walls]
            model.wall_point = np.array([w["point"] for w in walls], dtype=float)
            normal = np.array([w["normal"] for w in walls], dtype=float)
            model.wall_normal = normal / np.linalg.norm(normal, axis=1, keepdims=True)
            model.wall_size = np.array([w["size"] for w in walls], dtype=float)
            model.wall_friction = np.array([[np.nan if w.get(key) is None else w[key] for key in WALL_FRICTION_KEYS]
                                            for w in walls], dtype=float)
        if len(walls) or len(meshes):
            model.inputs["walls"] = {"planes": list(walls), "meshes": [place_mesh(**mesh) for mesh in meshes]}
        unknown = set(sections) - set(SECTION_KEYS)
        if unknown:
            raise TypeError(f"finish() got sections no interaction reads: {', '.join(sorted(unknown))}")
        model.sections = {name: {**defaults(keys), **sections.get(name, {})} for name, keys in SECTION_KEYS.items()}
        problem = check_sub_models(model.sections["contact"], model.wall_friction)
        if problem:
            raise SceneError(problem)
        model.skin = max(contact_skin(model.sections["contact"]["skin"], _contact_diameters(model)),
                         jkr_skin(model.sections["contact"], _contact_diameters(model)))
        _check_cell(model, state.cell)
        _check_clumps(model)
        model.interactions = setup_interactions(model)
        state.interactions = initial_states(model)
        for name, params in model.interactions.items():
            extra = INTERACTIONS[name].extra_columns
            if extra:
                model.invariants.update(extra(model, params))
        return model, state

    def _rest_bonds(self, state):
        """Bonds with their rest state at ``state``, sorted by law, then by colour (`color_bonds`);
        built with one temporary array at a time, so that 10⁶ bodies fit."""
        if not self._bond_blocks:
            return Bonds.empty()
        columns = [_joined([block[k] for block in self._bond_blocks]) for k in range(6)]
        parameters = {law: {name: _joined([block[6][name] for block in self._bond_blocks if block[5][0] == code])
                            for name in LAW_PARAMETERS[law]}
                      for code, law in enumerate(BOND_LAWS)
                      if law in LAW_PARAMETERS and any(block[5][0] == code for block in self._bond_blocks)}
        law = columns[5]
        self._bond_blocks = []
        color = color_bonds(columns[0], columns[1], state.position.shape[0])
        order = np.argsort(color if not law.any() else law.astype(np.int64) * 64 + color, kind="stable")
        for name, values in parameters.items():   # each law's parameters in its block's order
            code = BOND_LAWS.index(name)
            within = np.cumsum(law == code) - 1   # index of each bond among its law's, as added
            rows = within[order[law[order] == code]]
            parameters[name] = {key: column[rows] for key, column in values.items()}
        color = color[order]
        for k in range(6):
            columns[k] = columns[k][order]
        del order
        i, j = columns[0], columns[1]
        m = len(i)
        rest_length, rest_dir_i, rest_dir_j, rest_relative = np.empty(m), np.empty((m, 3)), np.empty((m, 3)), np.empty((m, 4))
        _rest_bond_kernel(state.position, state.orientation, i, j, rest_length, rest_dir_i, rest_dir_j, rest_relative,
                          state.cell)
        return Bonds(i, j, columns[2], columns[3], columns[4], rest_length, rest_dir_i, rest_dir_j, rest_relative,
                     columns[5], color, parameters)


def _contact_diameters(model):
    """The diameters of the spheres that touch: the bodies', and the clumps' members (`dem.clumps`)."""
    if not model.has_clumps:
        return model.diameter
    return np.concatenate([model.diameter, 2.0 * model.site_radius])


def _check_cell(model, cell):
    """Refuse what does not work across periodic faces (`dem.cell`), naming the key."""
    if not cell.any():
        return
    # a clump reaches as far as the sphere about its centre of mass that holds its members
    problem = reach_problem(cell, reach_diameters(model), model.skin)
    if problem:
        raise SceneError(f"cell.{problem[0]}: {problem[1]}" + (" (a clump's diameter: that of the sphere about its "
                                                               "centre of mass that holds its members)"
                                                               if model.has_clumps else ""))
    wall = wall_problem(cell, model.wall_normal)
    if wall is not None:
        raise SceneError(f"walls.{wall}.normal: a plane must be parallel to every periodic axis of the cell (its "
                         f"normal without a component along them), got {tuple(float(c) for c in model.wall_normal[wall])}")
    if model.inputs.get("walls", {}).get("meshes"):
        raise SceneError("mesh.0: mesh walls do not act across periodic faces: use planes in a periodic cell, or make "
                         "cell.periodic all false")
    if model.n_sites and not (model.site_radius > 0).all():   # point sites (a clump's members have radii)
        raise SceneError("cell.periodic: interaction sites (Lennard-Jones) do not act across periodic faces: make "
                         "cell.periodic all false")


def _check_clumps(model):
    """Refuse what clumps (`dem.clumps`) do not do yet, rather than let their contacts run another
    map without a word: contact sub-steps. (Walls, planes and meshes:
    `dem.interactions.clump_walls`; particles: `dem.interactions.clump_contacts`; sources and
    outlets: `dem.feeding`.)"""
    if not model.has_clumps:
        return
    contact = model.sections["contact"]
    if contact["k_pp"] > 0.0 and contact["substeps"] > 1:
        raise SceneError("contact.substeps: the contacts of clumps are not sub-stepped (they run the plain map): set "
                         "contact.substeps = 1 (or 0) in a scene with clumps")


def _joined(arrays):
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


@njit(cache=True)
def _rest_bond_kernel(position, orientation, bond_i, bond_j, rest_length, rest_dir_i, rest_dir_j, rest_relative,
                      cell):
    """Rest state of each bond: ``r0``, ``n0`` in each end's body frame, and ``R_j0ᵀ R_i0`` (``d``
    the nearest image's across periodic faces, `dem.cell`)."""
    for b in range(bond_i.shape[0]):
        i = bond_i[b]
        j = bond_j[b]
        d = minimum_image(position[i, 0] - position[j, 0], position[i, 1] - position[j, 1],
                          position[i, 2] - position[j, 2], cell)
        r = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        n = (d[0] / r, d[1] / r, d[2] / r)
        rest_length[b] = r
        a_i = quat_rotate_inverse_one(orientation[i], n)
        a_j = quat_rotate_inverse_one(orientation[j], n)
        relative = quat_multiply_one(quat_conjugate_one(orientation[j]), orientation[i])
        for c in range(3):  # (element by element: an array assignment compiles a shape check)
            rest_dir_i[b, c] = a_i[c]
            rest_dir_j[b, c] = a_j[c]
        for c in range(4):
            rest_relative[b, c] = relative[c]


#: Body arrays that must be finite, and those that must also be positive.
_FINITE_BODY_ARRAYS = ("position", "velocity", "orientation", "angular_velocity", "diameter", "com_offset")
_POSITIVE_BODY_ARRAYS = ("mass", "inertia")


def _body_problem(block):
    """What is wrong with a block of bodies a builder added (values that overflowed, underflowed
    or lost all precision), or None."""
    for key in _FINITE_BODY_ARRAYS:
        if not np.isfinite(block[key]).all():
            return f"gives a non-finite {key.replace('_', ' ')} (values too large or too small)"
    for key in _POSITIVE_BODY_ARRAYS:
        values = block[key]
        if not (np.isfinite(values).all() and (values > 0).all()):
            return f"gives a {key} that is not a positive finite number (values too large or too small)"
    return None


def _bond_problem(bonds):
    """Index of the first bond whose rest state is degenerate (coincident ends, non-finite), or
    None."""
    good = np.isfinite(bonds.rest_length) & (bonds.rest_length > 0)
    for values in (bonds.rest_dir_i, bonds.rest_dir_j, bonds.rest_relative):
        good &= np.isfinite(values).all(axis=1)
    bad = np.flatnonzero(~good)
    return int(bad[0]) if len(bad) else None


def _coincident(scene, tables, i, j):
    table = next(table for first, end, table in tables if first <= i < end)
    raise SceneError(f"{scene.origin(table)}: {table}: bonds bodies {i} and {j} at zero distance (values too large or too small "
                     f"to tell them apart)")


def build_system(scene):
    """``(Model, State)`` of a validated `dem.scene.Scene`; a builder that cannot make what the
    scene asks (including values that overflow, or bodies that coincide) raises `SceneError`
    naming the builder table."""
    system = SystemBuilder()
    tables = []   # (first body, end, table) of each builder table
    with np.errstate(all="ignore"):   # non-finite results are reported below, not warned about
        for name, index, params in scene.builders:
            table = f"{name}.{index}"
            first, blocks = system.n_bodies, len(system._blocks)
            try:
                BUILDERS[name].build(system, params)
            except ValueError as error:   # (a `dem.schema.TableError` names the key at fault)
                where = f"{table}.{error.key}" if getattr(error, "key", None) else table
                raise SceneError(f"{scene.origin(where)}: {where}: {error}") from None
            except ArithmeticError as error:   # OverflowError of a float power, …
                raise SceneError(f"{scene.origin(table)}: {table}: values too large or too small to build with "
                                 f"({error.args[-1] if error.args else type(error).__name__})") from None
            for block in system._blocks[blocks:]:
                problem = _body_problem(block)
                if problem:
                    raise SceneError(f"{scene.origin(table)}: {table}: {problem}")
            if any(body >= first and not np.isfinite(sites).all() for body, sites in system._sites.items()):
                raise SceneError(f"{scene.origin(table)}: {table}: gives non-finite interaction sites (values too large or "
                                 f"too small)")
            tables.append((first, system.n_bodies, table))
        if system.n_bodies == 0:
            raise SceneError(f"{scene.path}: {tables[-1][2] if tables else '(builders)'}: the scene makes no body")
        blocks, bond_blocks = list(system._blocks), list(system._bond_blocks)   # `finish` empties them
        try:
            meshes = [load_mesh(scene.path.parent, f"mesh.{k}", table) for k, table in enumerate(scene.meshes)]
            model, state = system.finish(scene.walls, meshes, **{name: scene.sections[name] for name in SECTION_KEYS})
        except ZeroDivisionError:   # raised by the rest-bond kernel: a bond of zero length
            position = np.concatenate([block["position"] for block in blocks])
            for i, j, *_ in bond_blocks:
                d = position[i] - position[j]
                zero = np.flatnonzero(np.sum(d * d, axis=1) == 0)   # |d|² as the kernel sums it
                if len(zero):
                    _coincident(scene, tables, i[zero[0]], j[zero[0]])
            _coincident(scene, tables, bond_blocks[0][0][0], bond_blocks[0][1][0])
        except SceneError as error:   # an interaction's parameters (key named, file not)
            raise SceneError(f"{scene.origin(str(error).partition(':')[0])}: {error}") from None
        bad = _bond_problem(model.bonds)
        if bad is not None:
            _coincident(scene, tables, model.bonds.i[bad], model.bonds.j[bad])
        if not np.isfinite(model.skin):
            raise SceneError(f"{scene.origin('contact.skin')}: contact.skin: the mean particle diameter is not finite")
        _check_initial_state(scene, tables, model, state)
    return model, state


def _check_initial_state(scene, tables, model, state):
    """Refuse a state whose energy budget or momenta overflow, or whose particles coincide,
    naming the builder table that made it (a run would stop at once, or worse, go on)."""
    def table_of(body):
        return next(table for first, end, table in tables if first <= body < end)

    momentum = model.mass[:, None] * state.velocity
    motion = (0.5 * np.sum(momentum * state.velocity, axis=1)
              + 0.5 * np.max(model.inertia, axis=1) * np.sum(state.angular_velocity ** 2, axis=1)
              + np.sum(np.abs(np.cross(state.position, momentum)), axis=1))
    bad = np.flatnonzero(~np.isfinite(motion))
    if len(bad):
        table = table_of(int(bad[0]))
        raise SceneError(f"{scene.origin(table)}: {table}: gives body {bad[0]} a kinetic energy or momentum that "
                         f"overflows (velocity up to {np.abs(state.velocity[bad[0]]).max():.3g}, position up to "
                         f"{np.abs(state.position[bad[0]]).max():.3g}): values too large")
    try:
        # (the run's bodies: the sources' parked ones, at one point, touch nothing; this also
        # compiles the energy kernels before a run's clock starts)
        budget = energy_budget(model, state, bodies=run_bodies(model, state))
    except ZeroDivisionError:  # two particles at one point: no contact direction
        _, first, counts = np.unique(state.position, axis=0, return_index=True, return_counts=True)
        body = int(first[np.argmax(counts)])
        table = table_of(body)
        raise SceneError(f"{scene.origin(table)}: {table}: puts body {body} and another at the same point (values "
                         f"too large or too small to tell them apart)") from None
    bad = [name for name, value in budget.items() if not np.isfinite(value)]
    if bad:
        body = int(np.argmax(np.abs(state.position).max(axis=1)))
        table = table_of(body)
        raise SceneError(f"{scene.origin(table)}: {table}: gives an initial {bad[0]} energy that overflows "
                         f"(position up to {np.abs(state.position[body]).max():.3g}): values too large")
