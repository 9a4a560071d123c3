"""Scene files (TOML, SPEC §5): loading, ``--set`` overrides, validation against a schema.

Every key a scene may hold is declared in `SCHEMA` (sections) or by a builder in
`dem.builders.BUILDERS` (arrays of tables such as ``[[torus]]``), with its type, default, unit
and constraint. Anything else is an error that names the file and the key; nothing is built or
written before the whole scene has validated.
"""

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .integrators import INTEGRATORS

REQUIRED = object()


class SceneError(ValueError):
    """A scene that cannot be run; the message names the file and the key."""


@dataclass(frozen=True)
class Key:
    """One scene key: ``kind`` is one of ``float int str bool vec3``; ``check`` returns an
    error text or None; ``choices`` restricts strings."""

    kind: str
    default: object = REQUIRED
    doc: str = ""
    unit: str = ""
    check: object = None
    choices: tuple = ()


def positive(value):
    return None if value > 0 else "must be positive"


def non_negative(value):
    return None if value >= 0 else "must be zero or positive"


def nonzero_vector(value):
    return None if any(c != 0 for c in value) else "must be a non-zero vector"


def restitution(value):
    return None if 0.0 < value <= 1.0 else "must be in (0, 1]"


def at_least(minimum):
    def check(value):
        return None if value >= minimum else f"must be at least {minimum}"

    return check


SCHEMA = {
    "simulation": {
        "integrator": Key("str", "rrp2", "time integrator (SPEC §2)", choices=tuple(INTEGRATORS)),
        "dt": Key("float", REQUIRED, "time step", "time", positive),
        "t_end": Key("float", REQUIRED, "end time of the run", "time", positive),
    },
    "output": {
        "dir": Key("str", "", "output folder (default output/<scene file stem>)"),
        "vtk_every": Key("int", 0, "steps between VTK snapshots (0: first and last only)", "steps", non_negative),
        "log_every": Key("int", 10, "steps between rows of energy.csv", "steps", positive),
    },
    "contact": {
        "k_pp": Key("float", 0.0, "Hertz particle–particle stiffness K_pp (0: off)", "energy", non_negative),
        "k_pw": Key("float", 0.0, "Hertz particle–wall stiffness K_pw (0: off)", "energy", non_negative),
        "skin": Key("float", 0.0, "Verlet skin of the neighbour list (0: a quarter of the mean diameter)",
                    "length", non_negative),
        "restitution": Key("float", 1.0, "normal coefficient of restitution e of Hertz contacts (1: no damping; "
                           "the damping work is logged as 'dissipated')", "", restitution),
    },
    "breakage": {
        "tension": Key("float", 0.0, "a bond breaks at this axial strain r/r0 − 1 in tension (0: never)", "",
                       non_negative),
        "compression": Key("float", 0.0, "… at this axial strain 1 − r/r0 in compression (0: never)", "",
                           non_negative),
        "shear": Key("float", 0.0, "… at this shear 1 − s at either end (0: never)", "", non_negative),
        "bending": Key("float", 0.0, "… at this relative rotation angle |θ| (0: never)", "rad", non_negative),
    },
    "fields": {
        "gravity": Key("vec3", (0.0, 0.0, 0.0), "uniform gravitational acceleration g", "length/time²"),
    },
    "ortolan_saccon": {
        "alpha": Key("float", 0.3, "strength α of the attractor (seed 000 eq. 3)", "energy", non_negative),
        "attractor_rotation_vector": Key("vec3", (1.7677669529663689, 0.0, 1.7677669529663689),
                                         "attractor Q_m as a rotation vector", ""),
    },
}

WALL_KEYS = {
    "point": Key("vec3", REQUIRED, "a point of the plane", "length"),
    "normal": Key("vec3", REQUIRED, "normal pointing to the particles' side", "", nonzero_vector),
    "size": Key("float", 0.0, "edge of the square drawn in VTK output (0: fit the particles)", "length",
                non_negative),
}


@dataclass
class Scene:
    """A validated scene: sections as dicts with defaults filled in, builders as a list of
    ``(builder name, index, parameters)``."""

    path: Path
    simulation: dict
    output: dict
    contact: dict
    fields: dict
    ortolan_saccon: dict
    breakage: dict
    walls: list
    builders: list = field(default_factory=list)

    @property
    def name(self):
        return self.path.stem

    @property
    def n_steps(self):
        return int(round(self.simulation["t_end"] / self.simulation["dt"]))


def _type_error(kind, value):
    names = {"float": "a number", "int": "an integer", "str": "a string", "bool": "true or false",
             "vec3": "a list of 3 numbers"}
    return f"must be {names[kind]}, got {value!r}"


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _coerce(kind, value):
    """Converted value, or raise ValueError with the problem."""
    if kind == "float":
        if not _is_number(value) or not math.isfinite(value):
            raise ValueError(_type_error(kind, value))
        return float(value)
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(_type_error(kind, value))
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise ValueError(_type_error(kind, value))
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(_type_error(kind, value))
        return value
    if kind == "vec3":
        if not isinstance(value, list) or len(value) != 3 or not all(_is_number(c) and math.isfinite(c) for c in value):
            raise ValueError(_type_error(kind, value))
        return tuple(float(c) for c in value)
    raise AssertionError(kind)


def validate_table(table, keys, where, fail):
    """Check a TOML table against ``keys``; returns the values with defaults filled in.
    ``fail(key_path, problem)`` raises."""
    if not isinstance(table, dict):
        fail(where, "must be a table")
    for name in table:
        if name not in keys:
            fail(f"{where}.{name}", f"unknown key (known: {', '.join(keys)})")
    out = {}
    for name, key in keys.items():
        path = f"{where}.{name}"
        if name not in table:
            if key.default is REQUIRED:
                fail(path, "is required")
            out[name] = key.default
            continue
        try:
            value = _coerce(key.kind, table[name])
        except ValueError as error:
            fail(path, str(error))
        if key.choices and value not in key.choices:
            fail(path, f"must be one of {', '.join(key.choices)}, got {value!r}")
        problem = key.check(value) if key.check else None
        if problem:
            fail(path, f"{problem}, got {table[name]!r}")
        out[name] = value
    return out


def parse_override(text):
    """``PATH=VALUE`` -> ``(["a", "0", "b"], value)``; VALUE is TOML, or a bare string."""
    if "=" not in text:
        raise SceneError(f"--set {text}: expected PATH=VALUE, e.g. --set simulation.dt=5e-4")
    path, _, raw = text.partition("=")
    keys = path.strip().split(".")
    if not all(keys):
        raise SceneError(f"--set {text}: empty key in {path!r}")
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return keys, value


def apply_override(data, keys, value, text):
    node = data
    for depth, key in enumerate(keys):
        last = depth == len(keys) - 1
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                raise SceneError(f"--set {text}: {'.'.join(keys[:depth + 1])}: no element {key} "
                                 f"(the list has {len(node)})")
            key = int(key)
        elif not isinstance(node, dict):
            raise SceneError(f"--set {text}: {'.'.join(keys[:depth])} is not a table or list")
        if last:
            node[key] = value
        else:
            if isinstance(node, dict) and key not in node:
                node[key] = {}
            node = node[key]


def load_scene(path, overrides=()):
    """Read, override and validate a scene file; raise `SceneError` naming file and key."""
    from .builders import BUILDERS

    path = Path(path)
    if not path.is_file():
        raise SceneError(f"{path}: no such scene file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise SceneError(f"{path}: not a UTF-8 text file ({error.reason})") from None
    except tomllib.TOMLDecodeError as error:
        raise SceneError(f"{path}: TOML syntax error: {error}") from None
    for text in overrides:
        keys, value = parse_override(text)
        apply_override(data, keys, value, text)

    def fail(key, problem):
        raise SceneError(f"{path}: {key}: {problem}")

    known = list(SCHEMA) + ["walls"] + list(BUILDERS)
    for name in data:
        if name not in known:
            fail(name, f"unknown section (known: {', '.join(known)})")
    sections = {name: validate_table(data.get(name, {}), keys, name, fail) for name, keys in SCHEMA.items()}
    walls = [validate_table(table, WALL_KEYS, f"walls.{k}", fail) for k, table in enumerate(_array(data, "walls", fail))]
    builders = []
    for name, builder in BUILDERS.items():
        for k, table in enumerate(_array(data, name, fail)):
            params = validate_table(table, builder.keys, f"{name}.{k}", fail)
            if builder.check:
                problem = builder.check(params)
                if problem:
                    fail(f"{name}.{k}.{problem[0]}", problem[1])
            builders.append((name, k, params))
    if not builders:
        fail("(builders)", f"the scene builds nothing: add at least one of {', '.join(f'[[{b}]]' for b in BUILDERS)}")
    simulation = sections["simulation"]
    if simulation["dt"] >= simulation["t_end"]:
        fail("simulation.dt", f"must be smaller than simulation.t_end = {simulation['t_end']:g}, got {simulation['dt']:g}")
    return Scene(path, sections["simulation"], sections["output"], sections["contact"], sections["fields"],
                 sections["ortolan_saccon"], sections["breakage"], walls, builders)


def _array(data, name, fail):
    value = data.get(name, [])
    if isinstance(value, dict):
        fail(name, f"must be an array of tables: write [[{name}]], not [{name}]")
    if not isinstance(value, list):
        fail(name, f"must be an array of tables ([[{name}]]), got {value!r}")
    return value
