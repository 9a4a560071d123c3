"""Scene files (TOML, docs/theory.md §5): loading, ``--set`` overrides, validation against the schema.

Every key a scene may hold is declared in code, with its type, default, unit and constraint
(`dem.schema.Key`): the framework sections ``[simulation]`` and ``[output]`` here, the sections
the interactions read (their parameter tables, `dem.interactions`), the walls and meshes
(``[[walls]]``, ``[[mesh]]``: `dem.interactions.walls`), and the keys of each builder of
`dem.builders.BUILDERS` (arrays of tables such as ``[[torus]]``). `SCHEMA` is their union. Anything else is an error that names the file and the key; nothing is built or
written before the whole scene has validated.
"""

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import schema
from .builders import BUILDERS
from .feeding import Region
from .cell import deforming, periodic, section_problem
from .integrators import SCHEMES
from .interactions.walls import MESH_KEYS, WALL_KEYS, mesh_problem, wall_problem  # noqa: F401 (re-exported)
from .schema import REQUIRED, Key, SceneError, folder_name, non_negative, positive, printable, show
from .system import SECTION_KEYS

#: Sections in the order the reference lists them; sections of new interactions follow.
_PREFERRED_ORDER = ("simulation", "output", "cell", "contact", "damping", "breakage", "fields", "ortolan_saccon")

FRAMEWORK = {
    "simulation": {
        "integrator": Key("str", "rrp2", "time integrator (docs/theory.md §2)", choices=tuple(SCHEMES)),
        "dt": Key("float", REQUIRED, "time step", "time", positive),
        "t_end": Key("float", REQUIRED, "end time of the run", "time", positive),
        "energy_tolerance": Key("float", 10.0, "stop the run as unstable when |E − E(0)| exceeds this multiple "
                                "of the initial energy scale (0: never)", "", non_negative),
        "device": Key("str", "cpu", "where the steps run: 'cpu' (numba's threads) or 'cuda' (an NVIDIA GPU, pip "
                      "install '.[gpu]'; docs/guide.md, the step on a GPU)", choices=("cpu", "cuda")),
    },
    "output": {
        "dir": Key("str", "", "output folder (default output/<scene file stem>)", check=folder_name),
        "vtk_every": Key("int", 0, "steps between VTK snapshots (0: first and last only)", "steps", non_negative),
        "log_every": Key("int", 10, "steps between rows of energy.csv", "steps", positive),
        "checkpoint_every": Key("int", 0, "steps between checkpoints (0: only when the run ends or is "
                                "interrupted)", "steps", non_negative),
        "contacts": Key("bool", False, "write the particle–particle contact network: at every VTK snapshot "
                        "vtk/contacts_<step>.vtp (contacts.pvd), one line per touching pair (r < R_i + R_j) between "
                        "the centres with its force on the first body, normal force (positive in compression), "
                        "tangential force, overlap, sliding flag and the ids i < j (with clumps one line per touching "
                        "member pair, between the member centres, with the members' moments too); at every log row "
                        "fabric.csv (coordination number, fabric tensor, its anisotropy; with clumps counting member "
                        "pairs). Needs contact.k_pp > 0; the run "
                        "returns from compiled code at every log row (docs/guide.md, contact network)"),
    },
}
#: Every section of a scene file: ``{section: {key: Key}}``.
SCHEMA = dict(sorted({**FRAMEWORK, **SECTION_KEYS}.items(),
                     key=lambda item: (_PREFERRED_ORDER + (item[0],)).index(item[0])))


@dataclass
class Scene:
    """A validated scene: ``sections`` (every section of `SCHEMA`, defaults filled in), walls,
    builders as a list of ``(builder name, index, parameters)``, and mesh tables (their files are
    read when the system is built)."""

    path: Path
    sections: dict
    walls: list
    builders: list = field(default_factory=list)
    meshes: list = field(default_factory=list)
    #: the ``--set`` overrides applied, as ``(keys, text)``
    overrides: tuple = ()

    def origin(self, key):
        """What a message about ``key`` names first: the file, after the ``--set`` argument that
        set ``key``, its table or a value in it (the last such), if any."""
        return origin(self.path, self.overrides, key)

    @property
    def name(self):
        return self.path.stem

    @property
    def simulation(self):
        return self.sections["simulation"]

    @property
    def output(self):
        return self.sections["output"]

    @property
    def n_steps(self):
        return int(round(self.simulation["t_end"] / self.simulation["dt"]))


def origin(path, overrides, key):
    """``"--set TEXT: PATH"`` for the last override ``(keys, text)`` in the table of ``key`` (its
    section, or its builder table ``name.index``), else ``"PATH"``."""
    def table(parts):
        return parts[:2] if len(parts) > 1 and parts[1].isdigit() else parts[:1]

    for keys, text in reversed(overrides):
        if table(keys) == table(key.split(".")) or key.split(".") == keys[:len(key.split("."))]:
            return f"--set {printable(text)}: {path}"
    return str(path)


def parse_override(text):
    """``PATH=VALUE`` -> ``(["a", "0", "b"], value)``; VALUE is TOML, or a bare string."""
    shown = printable(text)
    if "=" not in text:
        raise SceneError(f"--set {shown}: expected PATH=VALUE, e.g. --set simulation.dt=5e-4")
    path, _, raw = text.partition("=")
    keys = path.strip().split(".")
    if not all(keys):
        raise SceneError(f"--set {shown}: empty key in {printable(repr(path))}")
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    except RecursionError:
        raise SceneError(f"--set {shown}: the value is nested too deeply") from None
    except ValueError as error:   # e.g. an integer of more than 4300 digits
        raise SceneError(f"--set {shown}: {printable(error)}") from None
    return keys, value


def apply_override(data, keys, value, text):
    node = data
    for depth, key in enumerate(keys):
        last = depth == len(keys) - 1
        if isinstance(node, list):
            if not (key.isascii() and key.isdigit()) or int(key) >= len(node):
                raise SceneError(f"--set {printable(text)}: {printable('.'.join(keys[:depth + 1]))}: no element "
                                 f"{printable(key)} (the list has {len(node)})")
            key = int(key)
        elif not isinstance(node, dict):
            raise SceneError(f"--set {printable(text)}: {printable('.'.join(keys[:depth]))} is not a table or list")
        if last:
            node[key] = value
        else:
            if isinstance(node, dict) and key not in node:
                node[key] = {}
            node = node[key]


def load_scene(path, overrides=()):
    """Read, override and validate a scene file; raise `SceneError` naming file and key."""
    path = Path(path)
    if not path.is_file():
        raise SceneError(f"{path}: no such scene file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise SceneError(f"{path}: not a UTF-8 text file ({error.reason})") from None
    except tomllib.TOMLDecodeError as error:
        raise SceneError(f"{path}: TOML syntax error: {printable(error)}") from None
    except RecursionError:
        raise SceneError(f"{path}: TOML syntax error: arrays or tables nested too deeply") from None
    except ValueError as error:   # e.g. an integer of more than 4300 digits
        raise SceneError(f"{path}: TOML syntax error: {printable(error)}") from None
    except OSError as error:
        raise SceneError(f"{path}: cannot read the scene file ({error.strerror or error})") from None
    applied = []
    for text in overrides:
        keys, value = parse_override(text)
        apply_override(data, keys, value, text)
        applied.append((keys, text))

    def fail(key, problem):
        raise SceneError(f"{origin(path, applied, key)}: {key}: {problem}")

    known = list(SCHEMA) + ["walls", "mesh"] + list(BUILDERS)
    for name in data:
        if name not in known:
            fail(printable(name), f"unknown section (known: {', '.join(known)})")
    sections = {name: schema.validate_table(data.get(name, {}), keys, name, fail) for name, keys in SCHEMA.items()}
    tables = {}
    for name, keys, problem in (("walls", WALL_KEYS, wall_problem), ("mesh", MESH_KEYS, mesh_problem)):
        tables[name] = [schema.validate_table(table, keys, f"{name}.{k}", fail)
                        for k, table in enumerate(_array(data, name, fail))]
        for k, table in enumerate(tables[name]):
            found = problem(table, sections)
            if found:
                fail(f"{name}.{k}.{found[0]}", found[1])
    builders = []
    for name, builder in BUILDERS.items():
        for k, table in enumerate(_array(data, name, fail)):
            params = schema.validate_table(table, builder.keys, f"{name}.{k}", fail)
            for key in (key for key, spec in builder.keys.items() if spec.kind == "path" and params[key] is not None):
                params[key] = str(path.parent / params[key])   # (an absolute path stays as it is)
            if builder.check:
                problem = builder.check(params)
                if problem:
                    fail(f"{name}.{k}.{problem[0]}", problem[1])
            builders.append((name, k, params))
    _check_cell(sections["cell"], builders, fail)
    _check_feeding(sections["cell"], tables["walls"], builders, fail)
    if not builders:
        fail("(builders)", f"the scene builds nothing: add at least one of {', '.join(f'[[{b}]]' for b in BUILDERS)}")
    if sections["output"]["contacts"] and not sections["contact"]["k_pp"] > 0.0:
        fail("output.contacts", "asks for the contact network, but particle–particle contacts are off: "
             "contact.k_pp is 0")
    simulation = sections["simulation"]
    if simulation["dt"] >= simulation["t_end"]:
        fail("simulation.dt", f"must be smaller than simulation.t_end = {simulation['t_end']:g}, got {simulation['dt']:g}")
    if not simulation["t_end"] / simulation["dt"] <= schema.MAX_STEPS:
        fail("simulation.dt", f"gives t_end/dt = {simulation['t_end'] / simulation['dt']:.3g} steps, more than the "
             f"{schema.MAX_STEPS:.0e} a run may take")
    return Scene(path, sections, tables["walls"], builders, tables["mesh"], tuple(applied))


def _check_cell(cell, builders, fail):
    """The ``[cell]`` section (`dem.cell`): a periodic axis has an edge, a periodic assembly (or
    dense packing of clumps) spans the cell along its periodic axes. (What the built system must
    satisfy, `dem.system` checks.)"""
    problem = section_problem(cell)
    if problem:
        fail(f"cell.{problem[0]}", problem[1])
    for name, k, params in builders:
        if name not in ("assembly", "clump") or not any(params["periodic"]):
            continue
        if name == "assembly":
            low = np.asarray(params["center"]) - 0.5 * np.asarray(params["size"])
            size, key, given = np.asarray(params["size"]), "size", "center ± size/2"
        else:
            low = np.asarray(params["min"])
            size, key, given = np.asarray(params["max"]) - low, "max", "min–max"
        for axis in np.flatnonzero(params["periodic"]):
            where = f"{name}.{k}"
            if not cell["periodic"][axis]:
                fail(f"{where}.periodic", f"is periodic along {'xyz'[axis]}, but the cell is not: set cell.periodic")
            edge = cell["size"][axis]
            if abs(size[axis] - edge) > 1e-9 * edge or abs(low[axis] - cell["origin"][axis]) > 1e-9 * edge:
                fail(f"{where}.{key}", f"along the periodic axis {'xyz'[axis]} the box must span the cell, "
                     f"[{cell['origin'][axis]:g}, {cell['origin'][axis] + edge:g}], got [{low[axis]:g}, "
                     f"{low[axis] + size[axis]:g}] ({given})")


def _check_feeding(cell, walls, builders, fail):
    """``[[insert]]`` and ``[[outlet]]`` (`dem.feeding`): not in a deforming cell, each source in
    front of every plane, no source and outlet that overlap."""
    sources = [(k, Region(p)) for name, k, p in builders if name == "insert"]
    outlets = [(k, Region(p)) for name, k, p in builders if name == "outlet"]
    if (sources or outlets) and periodic(cell) and deforming(cell):
        fail(f"{'insert' if sources else 'outlet'}.0", "sources and outlets act in a periodic cell that does not "
             "deform: drop the cell's strain_rate, shear_rate and stress_control")
    for k, region in sources:
        for w, wall in enumerate(walls):
            normal = np.asarray(wall["normal"], float)
            if (region.centre - np.asarray(wall["point"], float)) @ normal < 0.0:
                fail(f"insert.{k}.shape", f"the source's region lies outside the domain: behind walls.{w}")
        for j, outlet in outlets:
            if region.overlaps(outlet):
                fail(f"outlet.{j}.shape", f"the outlet overlaps the region of insert.{k}: particles would leave as "
                     f"they come in")


def _array(data, name, fail):
    value = data.get(name, [])
    if isinstance(value, dict):
        fail(name, f"must be an array of tables: write [[{name}]], not [{name}]")
    if not isinstance(value, list):
        fail(name, f"must be an array of tables ([[{name}]]), got {show(value)}")
    return value
