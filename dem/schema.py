"""The vocabulary of scene files: a `Key` (type, default, unit, constraint, text), value coercion
and table validation, and `SceneError`.

Everything that declares scene keys uses it: the framework sections of `dem.scene`, every
interaction of `dem.interactions` (its parameter table), every builder of `dem.builders`. It
imports nothing of `dem`, so any module may declare keys.
"""

import json
import math
import reprlib
from dataclasses import dataclass
from pathlib import Path

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


class TableError(ValueError):
    """A builder table's value that the builder cannot build: ``key`` names it, and
    `dem.system.build_system` reports the problem at ``name.index.key``."""

    def __init__(self, key, problem):
        super().__init__(problem)
        self.key = key


@dataclass(frozen=True)
class Key:
    """One scene key: ``kind`` is one of ``float int str path bool vec3 bool3 vec3_or_number
    vec3_list float_list`` (``path``: a file name, relative to the scene file's folder unless
    absolute, `dem.scene` resolves it; ``vec3_or_number``: a number ``x`` stands for ``[x, 0, 0]``;
    ``vec3_list``, ``float_list``: a list of such, made a tuple of tuples, a tuple); ``check``
    returns an error text or None; ``choices`` restricts strings."""

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


def toml_text(value):
    """``value`` (as `tomllib` returns it) as TOML text, on one line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_text(str(key))} = {toml_text(item)}" for key, item in value.items()) + "}"
    return value.isoformat()  # dates and times


# ---------------------------------------------------------------------------------------------
# constraints (a check returns the problem, or None)
# ---------------------------------------------------------------------------------------------

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


def too_many(count):
    """The problem with a body count above `MAX_BODIES`, or None."""
    if count > MAX_BODIES:
        return f"asks for {count} bodies, more than the {MAX_BODIES} a builder table may make"
    return None


# ---------------------------------------------------------------------------------------------
# coercion and validation
# ---------------------------------------------------------------------------------------------

def _type_error(kind, value):
    names = {"float": "a number", "int": "an integer", "str": "a string", "path": "a file name (a string)",
             "bool": "true or false",
             "vec3": "a list of 3 numbers", "bool3": "a list of 3 booleans (true or false)",
             "vec3_or_number": "a number or a list of 3 numbers", "vec3_list": "a list of lists of 3 numbers",
             "float_list": "a list of numbers"}
    if kind in ("float", "vec3_or_number") and _is_number(value) or kind in ("vec3", "vec3_or_number") \
            and isinstance(value, list) and len(value) == 3 and all(_is_number(c) for c in value):
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


#: the kinds whose value is the TOML value itself once its type is right (a path is checked further)
PLAIN_TYPES = {"str": str, "path": str, "bool": bool}


def coerce(kind, value):
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
    if kind in PLAIN_TYPES:
        if not isinstance(value, PLAIN_TYPES[kind]):
            raise ValueError(_type_error(kind, value))
        if kind == "path":
            problem = "must not be empty" if not value.strip() else folder_name(value)
            if problem:
                raise ValueError(f"{problem}, got {show(value)}")
        return value
    if kind == "vec3_or_number" and _is_number(value):
        return coerce("float", value), 0.0, 0.0
    if kind in ("vec3", "vec3_or_number"):
        numbers = [_finite_float(c) for c in value] if isinstance(value, list) and len(value) == 3 else [None]
        if None in numbers:
            raise ValueError(_type_error(kind, value))
        return tuple(numbers)
    if kind in ("vec3_list", "float_list"):
        if not isinstance(value, list):
            raise ValueError(_type_error(kind, value))
        item = "vec3" if kind == "vec3_list" else "float"
        items = []
        for k, entry in enumerate(value):
            try:
                items.append(coerce(item, entry))
            except ValueError as error:
                raise ValueError(f"item {k} {error}") from None
        return tuple(items)
    if kind == "bool3":
        if not (isinstance(value, list) and len(value) == 3 and all(isinstance(c, bool) for c in value)):
            raise ValueError(_type_error(kind, value))
        return tuple(value)
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
            value = coerce(key.kind, table[name])
        except ValueError as error:
            fail(path, str(error))
        if key.choices and value not in key.choices:
            fail(path, f"must be one of {', '.join(key.choices)}, got {show(value)}")
        problem = key.check(value) if key.check else None
        if problem:
            fail(path, f"{problem}, got {show(table[name])}")
        out[name] = value
    return out


def defaults(keys):
    """The default values of a key table (REQUIRED keys left out)."""
    return {name: key.default for name, key in keys.items() if key.default is not REQUIRED}
