"""Scene files (TOML, SPEC §5): loading, ``--set`` overrides, validation against a schema.

Every key a scene may hold is declared in `SCHEMA` (sections) or by a builder in
`dem.builders.BUILDERS` (arrays of tables such as ``[[torus]]``), with its type, default, unit
and constraint. Anything else is an error that names the file and the key; nothing is built or
written before the whole scene has validated.
"""

import math
import reprlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .integrators import INTEGRATORS

REQUIRED = object()

#: Most bodies one builder table may make: a scene asking for more is an error, not an attempt
#: to allocate them (at about 1.3 kB a particle, 10⁸ would need 130 GB).
MAX_BODIES = 10**8
#: Most steps a run may take (``t_end / dt``).
MAX_STEPS = 10**12
#: Integers are stored in 64 bits.
INT_RANGE = (-2**63, 2**63 - 1)


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


def printable(text, limit=200):
    """``text`` for a one-line message: non-printable characters (newlines, NUL, …) escaped,
    cut to ``limit`` characters."""
    text = str(text)
    text = text if text.isprintable() else repr(text)[1:-1]
    return text if len(text) <= limit else text[:limit - 1] + "…"


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlong = 40
_SHORT.maxlevel = 3


def show(value):
    """A value as a message quotes it: its repr, shortened (a huge list, a deeply nested one, a
    2000-digit integer), on one line."""
    if isinstance(value, tuple):
        value = list(value)
    try:
        text = _SHORT.repr(value)
    except (ValueError, RecursionError):
        text = f"<a {type(value).__name__}>"
    return printable(text)


def positive(value):
    return None if value > 0 else "must be positive"


def non_negative(value):
    return None if value >= 0 else "must be zero or positive"


def nonzero_vector(value):
    if not any(c != 0 for c in value):
        return "must be a non-zero vector"
    squared = sum(c * c for c in value)   # as the builders normalise it
    if not 0.0 < squared < math.inf:
        return "is too short or too long to normalise (its squared length under- or overflows)"
    return None


def folder_name(value):
    """A folder name the operating system can take (no NUL, no component over 255 bytes)."""
    if "\x00" in value:
        return "must not contain a NUL character"
    try:
        parts = [part.encode("utf-8") for part in Path(value).parts]
    except UnicodeEncodeError:
        return "must be valid UTF-8 text"
    if any(len(part) > 255 for part in parts):
        return "has a folder name longer than 255 bytes"
    return None


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
        "energy_tolerance": Key("float", 0.0, "stop the run when |E − E(0)| exceeds this fraction of the "
                                "initial energy scale (0: never)", "", non_negative),
    },
    "output": {
        "dir": Key("str", "", "output folder (default output/<scene file stem>)", check=folder_name),
        "vtk_every": Key("int", 0, "steps between VTK snapshots (0: first and last only)", "steps", non_negative),
        "log_every": Key("int", 10, "steps between rows of energy.csv", "steps", positive),
        "checkpoint_every": Key("int", 0, "steps between checkpoints (0: only when the run ends or is "
                                "interrupted)", "steps", non_negative),
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
    if kind == "float" and _is_number(value) or kind == "vec3" and isinstance(value, list) and len(value) == 3 \
            and all(_is_number(c) for c in value):
        return f"must be {names[kind].replace('number', 'finite number')}, got {show(value)}"
    return f"must be {names[kind]}, got {show(value)}"


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite_float(value):
    """``float(value)`` for a finite number (an integer too large for a float is not), else None."""
    if not _is_number(value):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _coerce(kind, value):
    """Converted value, or raise ValueError with the problem."""
    if kind == "float":
        number = _finite_float(value)
        if number is None:
            raise ValueError(_type_error(kind, value))
        return number
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(_type_error(kind, value))
        if not INT_RANGE[0] <= value <= INT_RANGE[1]:
            raise ValueError(f"must fit in 64 bits (at most {INT_RANGE[1]}), got {show(value)}")
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
        numbers = [_finite_float(c) for c in value] if isinstance(value, list) and len(value) == 3 else [None]
        if None in numbers:
            raise ValueError(_type_error(kind, value))
        return tuple(numbers)
    raise AssertionError(kind)


def validate_table(table, keys, where, fail):
    """Check a TOML table against ``keys``; returns the values with defaults filled in.
    ``fail(key_path, problem)`` raises."""
    if not isinstance(table, dict):
        fail(where, f"must be a table, got {show(table)}")
    for name in table:
        if name not in keys:
            fail(f"{where}.{printable(name)}", f"unknown key (known: {', '.join(keys)})")
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
            fail(path, f"must be one of {', '.join(key.choices)}, got {show(value)}")
        problem = key.check(value) if key.check else None
        if problem:
            fail(path, f"{problem}, got {show(table[name])}")
        out[name] = value
    return out


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
    from .builders import BUILDERS

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
    for text in overrides:
        keys, value = parse_override(text)
        apply_override(data, keys, value, text)

    def fail(key, problem):
        raise SceneError(f"{path}: {key}: {problem}")

    known = list(SCHEMA) + ["walls"] + list(BUILDERS)
    for name in data:
        if name not in known:
            fail(printable(name), f"unknown section (known: {', '.join(known)})")
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
    if not simulation["t_end"] / simulation["dt"] <= MAX_STEPS:
        fail("simulation.dt", f"gives t_end/dt = {simulation['t_end'] / simulation['dt']:.3g} steps, more than the "
             f"{MAX_STEPS:.0e} a run may take")
    return Scene(path, sections["simulation"], sections["output"], sections["contact"], sections["fields"],
                 sections["ortolan_saccon"], sections["breakage"], walls, builders)


def _array(data, name, fail):
    value = data.get(name, [])
    if isinstance(value, dict):
        fail(name, f"must be an array of tables: write [[{name}]], not [{name}]")
    if not isinstance(value, list):
        fail(name, f"must be an array of tables ([[{name}]]), got {show(value)}")
    return value
