"""Property-based fuzzing of the scene loader (docs/theory.md §5): random mutations of the scenes in
``scenes/`` (keys deleted, unknown keys added, values of other types or absurd sizes, tables and
arrays of tables swapped, builder tables duplicated, ``--set`` overrides with random or malformed
paths) either load and build, or fail with a `SceneError` that starts with the file (or the
``--set`` text) and names a key of the scene or the schema. Anything else would reach the user as
a traceback. Through `dem.cli.main` a failing scene exits with status 2, one line on stderr and
no output folder.

Most examples stop at `dem.cli.prepare` (validate and build, nothing written). The assembly
scene is shrunk to a few dozen particles first, and `dem.schema.MAX_BODIES` is lowered while
fuzzing, so that a mutation that asks for many bodies fails fast with the cap's message instead
of packing them.
"""

import contextlib
import copy
import io
import math
import os
import re
import tempfile
import tomllib
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dem.scene
import dem.schema
from dem.builders import BUILDERS
from dem.cli import main
from dem.runner import prepare
from dem.scene import MESH_KEYS, SCHEMA, WALL_KEYS, SceneError
from dem.schema import toml_text

ROOT = Path(__file__).resolve().parents[1]
SCENES = sorted(path.stem for path in (ROOT / "scenes").glob("*.toml"))
#: the scenes fuzzed: every file of scenes/, the assembly twice (on a lattice, and randomly packed)
VARIANTS = [name for name in SCENES if name != "assembly_impact"] + ["assembly_impact:lattice",
                                                                     "assembly_impact:random"]
#: the body cap while fuzzing (the real one is far larger): mutations that ask for more bodies
#: must fail with its message, and the rest build in milliseconds
FUZZ_MAX_BODIES = 600

#: examples per test are scaled by DEM_FUZZ_SCALE (0.2 keeps CI quick; DEM_FUZZ_SCALE=5 searches deeper)
SCALE = float(os.environ.get("DEM_FUZZ_SCALE", "0.2"))


def fuzz(examples):
    return settings(deadline=None, derandomize=True, max_examples=max(1, round(examples * SCALE)),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------------------------
# Scenes as dicts, and back to TOML
# ---------------------------------------------------------------------------------------------

RANDOM_ONLY = ("packing_fraction", "n_particles", "distribution", "diameter_sigma", "diameter_min", "diameter_max",
               "seed")


def base_scene(variant):
    """The scene file parsed to a dict (mesh and clump rows files named by their full paths); the
    assembly shrunk to a sphere of diameter 4 (a few dozen particles), the drum's bed to a small box, the
    column and the poured silo, drum and column to 60 spheres, the clump heap and column to 20 clumps
    of each shape, the clump hopper's source to 60 clumps, the rigs' specimens to a loose cylinder 4
    across and 4 high, the periodic cells (the gas, the shear, the tension RVE) to cubes of edge 6."""
    name, _, flavour = variant.partition(":")
    data = tomllib.loads((ROOT / "scenes" / f"{name}.toml").read_text(encoding="utf-8"))
    for table in data.get("mesh", []):
        table["file"] = str(ROOT / "scenes" / table["file"])
    for table in data.get("clump", []):
        if "rows" in table:
            table["rows"] = str(ROOT / "scenes" / table["rows"])
    if name == "rotating_drum":
        data["assembly"][0].update(size=[3.0, 3.0, 3.0], center=[0.0, 0.0, -6.0])
    if name == "column_collapse":
        data["assembly"][0]["n_particles"] = 60
    if name in ("clump_heap", "clump_column"):
        for table in data["clump"]:
            table["count"] = 20
    if name in ("silo_discharge", "drum_filling", "column_collapse_poured"):
        data["insert"][0]["count"] = 60
    if name == "clump_hopper":   # 60 clumps (40 a time unit)
        data["insert"][0]["stop"] = 1.5
    if name in ("granular_gas", "simple_shear", "periodic_tension"):  # a periodic cube of edge 6
        data["cell"]["size"] = [6.0, 6.0, 6.0]
        data["assembly"][0].update(size=[6.0, 6.0, 6.0], center=[3.0, 3.0, 3.0])
    if name in ("uniaxial_compression", "brazilian_disc"):
        data["assembly"][0].update(diameter=4.0, height=4.0, packing_fraction=0.3)
    if name == "assembly_impact":
        table = data["assembly"][0]
        table.update(diameter=4.0, center=[3.0, 0.0, 0.0])
        if flavour == "lattice":
            for key in RANDOM_ONLY:
                table.pop(key, None)
            table["lattice"] = "fcc"
            table["bond_gap_tolerance"] = 1e-6
        else:
            table["packing_fraction"] = 0.3
    return data


def test_base_scenes_are_valid():
    """Every scene file loads as it is, and the fuzzed variants build."""
    for name in SCENES:
        dem.scene.load_scene(ROOT / "scenes" / f"{name}.toml")
    for variant in VARIANTS:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "scene.toml"
            path.write_text(dump(base_scene(variant)), encoding="utf-8")
            scene, model, _, _ = prepare(path)
            assert 0 < model.n_bodies <= FUZZ_MAX_BODIES


def dump(data):
    """TOML text of ``data`` (every table inline: the parse is the same as with headers)."""
    return "".join(f"{toml_text(key)} = {toml_text(value)}\n" for key, value in data.items())


def same(a, b):
    """Equality with NaN equal to NaN (for the writer's round trip)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------------------------

NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True)
#: every key the schema knows, to put in the wrong table
KNOWN_KEYS = sorted({key for keys in [*SCHEMA.values(), WALL_KEYS, MESH_KEYS,
                                     *(b.keys for b in BUILDERS.values())] for key in keys} | set(SCHEMA) | {"walls", "mesh"} | set(BUILDERS))
SPECIAL_FLOATS = [0.0, -0.0, -1.0, 1e-300, 5e-324, 1e300, 1.7976931348623157e308, math.nan, math.inf, -math.inf, 0.5,
                  2.0, 1e-9, 1e9]
SPECIAL_INTS = [0, -1, 1, 2, 3, 7, 2**31, 2**63 - 1, 2**63, -2**63 - 1, 10**30, 10**400]
STRINGS = ["", "rrp", "rrp2", "lgvi", "box", "sphere", "cylinder", "torus", "random", "sc", "hcp", "mono", "uniform",
           "lognormal", "clamped-clamped", "clamped-displacement", "free", "ortolan_saccon", "none", "\x00", "a\nb",
           "/", "..", "output/x", "é"]

scalars = st.one_of(
    st.booleans(),
    st.integers(-10, 10),
    st.integers(-2**70, 2**70),
    st.sampled_from(SPECIAL_INTS),
    st.floats(),
    st.sampled_from(SPECIAL_FLOATS),
    st.text(st.characters(codec="utf-8"), max_size=6),
    st.sampled_from(STRINGS),
)
numbers = st.one_of(st.floats(-10, 10), st.integers(-5, 5), st.sampled_from(SPECIAL_FLOATS + SPECIAL_INTS[:6]))
values = st.one_of(
    scalars,
    st.lists(numbers, max_size=5),                      # vectors of the wrong length, or odd numbers
    st.lists(numbers, min_size=3, max_size=3),
    st.lists(scalars, max_size=3),
    st.builds(list),                                    # fresh objects: mutations change them in place
    st.builds(dict),
    st.dictionaries(NAMES, scalars, max_size=3),        # nested tables
    st.lists(st.dictionaries(NAMES, scalars, max_size=2), min_size=1, max_size=2),
    st.recursive(numbers, lambda inner: st.lists(inner, min_size=1, max_size=2), max_leaves=6),
)


def nodes(data, prefix=()):
    """Paths (tuples of keys and indices) of every value under ``data``."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        path = prefix + (key,)
        yield path
        yield from nodes(value, path)


def resolve(data, path):
    for key in path:
        data = data[key]
    return data


def _is_numeric(value):
    if isinstance(value, list):
        return bool(value) and all(_is_numeric(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def perturbed(draw, value):
    """A nearby or extreme value of the same shape: numbers scaled, negated, zeroed, made
    int/float; a component of a vector changed."""
    if isinstance(value, list) and value:
        value = list(value)
        k = draw(st.integers(0, len(value) - 1))
        value[k] = perturbed(draw, value[k])
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return _perturbed_number(draw, value)
        except OverflowError:
            return math.inf
    return draw(values)


def _perturbed_number(draw, value):
    how = draw(st.sampled_from(["scale", "negate", "zero", "int", "float", "shift", "special"]))
    if how == "scale":
        return value * draw(st.sampled_from([10, 0.1, 1e6, 1e-6, 1e300, 1e-300, 2, 0.5]))
    if how == "negate":
        return -value
    if how == "zero":
        return 0 if isinstance(value, int) else 0.0
    if how == "int":
        return int(value) if math.isfinite(value) else 0
    if how == "float":
        return float(value)
    if how == "shift":
        return value + draw(st.sampled_from([1, -1, 0.5, -0.5]))
    return draw(st.sampled_from(SPECIAL_FLOATS + SPECIAL_INTS))


MUTATIONS = ("delete", "add", "misplace", "replace", "perturb", "perturb", "perturb", "perturb", "swap", "duplicate",
             "transplant")


def mutate(data, draw, kinds=MUTATIONS):
    """Apply one random mutation to ``data`` (in place)."""
    paths = list(nodes(data))
    tables = [()] + [p for p in paths if isinstance(resolve(data, p), dict)]
    arrays = [k for k, v in data.items() if isinstance(v, list) and v and all(isinstance(t, dict) for t in v)]
    kind = draw(st.sampled_from(kinds))
    if kind == "perturb":                    # numbers and vectors only: the scene keeps its shape
        paths = [p for p in paths if _is_numeric(resolve(data, p))] or paths
    if kind in ("delete", "replace", "perturb") and paths:
        path = draw(st.sampled_from(paths))
        parent = resolve(data, path[:-1])
        if kind == "delete":
            del parent[path[-1]]
        elif kind == "replace":
            parent[path[-1]] = draw(values)
        else:
            parent[path[-1]] = perturbed(draw, parent[path[-1]])
    elif kind in ("add", "misplace"):
        table = resolve(data, draw(st.sampled_from(tables)))
        name = draw(NAMES if kind == "add" else st.sampled_from(KNOWN_KEYS))
        table[name] = draw(values)
    elif kind == "swap":                      # [[table]] <-> [table]
        names = [k for k, v in data.items() if isinstance(v, (dict, list))]
        if names:
            name = draw(st.sampled_from(names))
            value = data[name]
            if isinstance(value, dict):
                data[name] = [value]
            else:
                data[name] = value[0] if value and isinstance(value[0], dict) else {}
    elif kind == "duplicate" and arrays:
        name = draw(st.sampled_from(arrays))
        data[name].append(copy.deepcopy(draw(st.sampled_from(data[name]))))
    elif kind == "transplant":               # a builder table or section of another scene
        other = base_scene(draw(st.sampled_from(VARIANTS)))
        name = draw(st.sampled_from(sorted(other)))
        if isinstance(data.get(name), list) and isinstance(other[name], list):
            data[name] = data[name] + other[name]
        else:
            data[name] = other[name]


def override_texts(draw, data):
    """Random ``--set`` strings: existing or random paths (list indices in and out of range,
    paths through scalars) with TOML or bare values, and malformed ones."""
    leaves = [p for p in nodes(data) if _is_numeric(resolve(data, p))]
    paths = [".".join(str(k) for k in p) for p in nodes(data)]
    kind = draw(st.sampled_from(["number", "number", "existing", "deeper", "random", "index", "malformed"]))
    if kind == "number" and leaves:               # a number or vector changed in place
        path = draw(st.sampled_from(leaves))
        return f"{'.'.join(str(k) for k in path)}={toml_text(perturbed(draw, resolve(data, path)))}"
    value = draw(st.one_of(st.sampled_from(["1", "0", "-1", "nan", "inf", "[]", "[1,0,0]", "[1, 2]", "{}", "true",
                                            '"text"', "1e400", "99999999999999999999999", "[[1]]", "x", "=", "",
                                            "[1,", "{a = 1}", "[{a = 1}]", '"\\u0000"']),
                           st.builds(toml_text, values)))
    if kind == "existing" and paths:
        path = draw(st.sampled_from(paths))
    elif kind == "deeper" and paths:             # through a scalar or a list
        path = draw(st.sampled_from(paths)) + "." + draw(st.sampled_from(["0", "x", "3", "99", "-1", "²"]))
    elif kind == "index":
        name = draw(st.sampled_from(sorted(BUILDERS) + ["walls"]))
        path = f"{name}.{draw(st.sampled_from(['0', '1', '5', '-1', 'a', '00', '٣']))}.{draw(st.sampled_from(KNOWN_KEYS))}"
    elif kind == "malformed":
        return draw(st.sampled_from(["simulation.dt", "", "=", "=1", ".=1", "simulation..dt=1", "simulation.=1",
                                     ".simulation.dt=1", " = 1", "a b=1", "simulation.dt==1", "\n=1"]))
    else:
        path = ".".join(draw(st.lists(st.one_of(NAMES, st.sampled_from(KNOWN_KEYS), st.sampled_from(["0", "1"])),
                                      min_size=1, max_size=4)))
    return f"{path}={value}"


# ---------------------------------------------------------------------------------------------
# The property
# ---------------------------------------------------------------------------------------------

SECTIONS = {**SCHEMA, "walls": WALL_KEYS, "mesh": MESH_KEYS,
            **{name: builder.keys for name, builder in BUILDERS.items()}}


def names_a_key(key, data):
    """Whether the dotted ``key`` of an error message is a path of ``data`` (the scene after the
    overrides) or of the schema."""
    if key == "(builders)":
        return True
    parts = key.split(".")
    node = data
    for part in parts:
        shown = {dem.schema.printable(k): k for k in node} if isinstance(node, dict) else {}
        if part in shown:                         # (keys are quoted with newlines &c. escaped)
            node = node[shown[part]]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            break
    else:
        return True
    head, rest = parts[0], parts[1:]
    if head in SCHEMA:
        return not rest or (len(rest) == 1 and rest[0] in SCHEMA[head])
    if head in SECTIONS:
        return (not rest or rest[0].isdigit()) and (len(rest) < 2 or (len(rest) == 2 and rest[1] in SECTIONS[head]))
    return False


def overridden(data, overrides):
    """``data`` with the overrides applied as the loader does (None when one fails)."""
    data = copy.deepcopy(data)
    for text in overrides:
        try:
            dem.scene.apply_override(data, *dem.scene.parse_override(text), text)
        except SceneError:
            return None
    return data


def check_prepare(path, data, overrides=()):
    """`prepare` returns, or raises a `SceneError` naming the file (or the ``--set``) and a key.
    Returns the error, or None."""
    try:
        with mock.patch.object(dem.schema, "MAX_BODIES", FUZZ_MAX_BODIES):
            prepare(path, list(overrides))
    except SceneError as error:
        message = str(error)
        assert "\n" not in message and "Traceback" not in message, message
        if message.startswith("--set "):
            assert any(message.startswith(f"--set {dem.schema.printable(text)}") for text in overrides), message
            return error
        prefix = f"{path}: "
        assert message.startswith(prefix), message
        key = message[len(prefix):].split(": ", 1)[0]
        after = overridden(data, overrides)
        assert after is not None, message
        assert names_a_key(key, after), (key, message)
        return error
    return None


def check_main(path, tmp):
    """Through the command line: exit status 2, one line on stderr, no traceback, no folder."""
    out = Path(tmp) / "out"
    stderr, stdout = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout), \
                mock.patch.object(dem.schema, "MAX_BODIES", FUZZ_MAX_BODIES):
            code = main([str(path), "--out", str(out), "--quiet"])
    finally:
        os.chdir(cwd)
    err = stderr.getvalue()
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"dem: error: {path}: ") and "Traceback" not in err, err
    assert not out.exists() and not (Path(tmp) / "output").exists()


@pytest.mark.parametrize("variant", VARIANTS)
@fuzz(100)
@given(data=st.data())
def test_mutated_scene_loads_or_fails_cleanly(variant, data):
    scene = base_scene(variant)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        mutate(scene, data.draw)
    text = dump(scene)
    assert same(tomllib.loads(text), scene)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{variant.partition(':')[0]}.toml"
        path.write_text(text, encoding="utf-8")
        error = check_prepare(path, scene)
        if error is not None and data.draw(st.integers(0, 7), label="through main") == 0:
            check_main(path, tmp)


@pytest.mark.parametrize("variant", VARIANTS)
@fuzz(80)
@given(data=st.data())
def test_extreme_numbers_build_or_fail_cleanly(variant, data):
    """Only numbers changed (scaled by up to 1e±300, negated, zeroed, made NaN, infinite, huge
    integers): the scene keeps its shape, so most examples reach the builders."""
    scene = base_scene(variant)
    for _ in range(data.draw(st.integers(1, 4), label="perturbations")):
        mutate(scene, data.draw, kinds=("perturb",))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{variant.partition(':')[0]}.toml"
        path.write_text(dump(scene), encoding="utf-8")
        check_prepare(path, scene)


@pytest.mark.parametrize("variant", VARIANTS)
@fuzz(60)
@given(data=st.data())
def test_overrides_load_or_fail_cleanly(variant, data):
    scene = base_scene(variant)
    if data.draw(st.booleans(), label="mutated"):
        mutate(scene, data.draw)
    overrides = [override_texts(data.draw, scene) for _ in range(data.draw(st.integers(1, 3), label="overrides"))]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{variant.partition(':')[0]}.toml"
        path.write_text(dump(scene), encoding="utf-8")
        check_prepare(path, scene, overrides)


@fuzz(100)
@given(data=st.data())
def test_corrupted_toml_fails_cleanly(data):
    """Raw text damage: TOML syntax errors, absurd nesting, huge literals, bytes that are not
    UTF-8."""
    variant = data.draw(st.sampled_from(VARIANTS), label="scene")
    text = dump(base_scene(variant)).encode()
    where = data.draw(st.integers(0, len(text)), label="where")
    insert = data.draw(st.one_of(
        st.binary(max_size=4),
        st.sampled_from([b"[", b"]", b"=", b"\"", b"\n[x]\n", b"\n[[walls]]\n", b"\xff", b"\x00", b"#", b"\n",
                         b"\nk = " + b"[" * 5000 + b"]" * 5000 + b"\n", b"\nk = " + b"9" * 5000 + b"\n",
                         b"\nk = " + b"{a = " * 3000 + b"1" + b"}" * 3000 + b"\n"]),
    ), label="insert")
    cut = data.draw(st.integers(0, 3), label="cut")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scene.toml"
        path.write_bytes(text[:where] + insert + text[where + cut:])
        try:
            scene = tomllib.loads(path.read_text(encoding="utf-8"))   # as the loader reads it
        except (ValueError, RecursionError):   # not UTF-8, TOML syntax, 5000 digits, nesting
            scene = {}
        error = check_prepare(path, scene) if scene else None
        if not scene:
            with pytest.raises(SceneError, match=f"^{re.escape(str(path))}: "):
                prepare(path)
        if error is not None or not scene:
            check_main(path, tmp)


# ---------------------------------------------------------------------------------------------
# What the fuzzer found (each escaped as a traceback, hung, or passed NaN on before the fix)
# ---------------------------------------------------------------------------------------------

DROP = object()
FOUND = [
    # (id, variant, edits {path: value or DROP}, overrides, the key named: None when the scene
    # builds, "--set" for an error about the override itself)
    ("int too large for a float", "pendulum", {}, ["simulation.dt=1" + "0" * 400], "simulation.dt"),
    ("int too large for a float in a vector", "pendulum", {}, ["fields.gravity=[0, 0, -1" + "0" * 400 + "]"],
     "fields.gravity"),
    ("int beyond 64 bits", "torus_impact", {}, ["torus.0.n_particles=1" + "0" * 30], "torus.0.n_particles"),
    ("torus of 1e12 particles", "torus_impact", {}, ["torus.0.n_particles=1000000000000"], "torus.0.n_particles"),
    ("chain of 1e10 bodies", "tetra_chain", {}, ["tetra_chain.0.n_bodies=10000000000"], "tetra_chain.0.n_bodies"),
    ("lattice of 1e11 sites", "assembly_impact:lattice", {}, ["assembly.0.particle_diameter=1e-3"],
     "assembly.0.particle_diameter"),
    ("random packing of 1e11 spheres", "assembly_impact:random", {}, ["assembly.0.diameter=1e4"],
     "assembly.0.packing_fraction"),
    ("wall normal too short to normalise", "torus_impact", {}, ["walls.0.normal=[1e-200, 0, 0]"], "walls.0.normal"),
    ("ring axis too long to normalise", "torus_impact", {}, ["torus.0.axis=[0, 0, 1e200]"], "torus.0.axis"),
    ("infinitely many steps", "pendulum", {}, ["simulation.dt=1e-300", "simulation.t_end=1e300"], "simulation.dt"),
    ("NUL in the output folder", "pendulum", {("output", "dir"): "out\x00put"}, [], "output.dir"),
    ("top's parallel-axis term overflows", "heavy_top", {}, ["top.0.length=1e200"], "top.0.length"),
    ("rotation vector too long", "ortolan_saccon", {}, ["rigid_body.0.rotation_vector=[1e308, 1e308, 0]"],
     "rigid_body.0"),
    ("attractor rotation vector too long", "ortolan_saccon", {},
     ["ortolan_saccon.attractor_rotation_vector=[1e308, 1e308, 0]"], "ortolan_saccon.attractor_rotation_vector"),
    ("RRP vector too long", "pendulum", {}, ["pendulum.0.rrp=[1e300, 1e300, 1e300]"], "pendulum.0"),
    ("unbonded random assembly", "assembly_impact:random", {}, ["assembly.0.bonded=false"], None),
    ("unbonded lattice assembly", "assembly_impact:lattice", {}, ["assembly.0.bonded=false"], None),
    ("bonded spheres at one point", "assembly_impact:random", {}, ["assembly.0.center=[1e20, 1e20, 1e20]"],
     "assembly.0"),
    ("lognormal mean volume overflows", "assembly_impact:random", {}, ["assembly.0.diameter_sigma=100"],
     "assembly.0.diameter_sigma"),
    ("sphere volume overflows", "assembly_impact:random", {}, ["assembly.0.diameter=1e300"], "assembly.0.diameter"),
    ("uniform packing with no sphere", "assembly_impact:random",
     {("assembly", 0, "particle_diameter"): DROP, ("assembly", 0, "diameter_sigma"): DROP,
      ("assembly", 0, "distribution"): "uniform", ("assembly", 0, "packing_fraction"): 1e-6}, [],
     "assembly.0.packing_fraction"),
    ("every pair bonded", "assembly_impact:random", {}, ["assembly.0.bond_gap_tolerance=1e6"],
     "assembly.0.bond_gap_tolerance"),
    ("Lennard-Jones sigma² underflows", "tetra_chain", {}, ["tetra_chain.0.sigma=1e-200"], "tetra_chain.0.sigma"),
    ("Lennard-Jones sigma² overflows", "tetra_chain", {}, ["tetra_chain.0.sigma=1e200"], "tetra_chain.0.sigma"),
    ("non-ASCII digit as a list index", "torus_impact", {}, ["walls.\u00b2.point=[0, 0, 0]"], "--set"),
    ("override nested too deeply", "pendulum", {}, ["simulation.dt=" + "[" * 3000 + "]" * 3000], "--set"),
    ("override of 5000 digits", "pendulum", {}, ["simulation.dt=" + "9" * 5000], "--set"),
    ("newline in a key", "pendulum", {("simulation", "a\nb"): 1}, [], "simulation.a\\nb"),
]


@pytest.mark.parametrize("case, variant, edits, overrides, key", FOUND, ids=[f[0] for f in FOUND])
def test_found_by_fuzzing(case, variant, edits, overrides, key):
    scene = base_scene(variant)
    for path, value in edits.items():
        table = resolve(scene, path[:-1])
        if value is DROP:
            del table[path[-1]]
        else:
            table[path[-1]] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{variant.partition(':')[0]}.toml"
        path.write_text(dump(scene), encoding="utf-8")
        error = check_prepare(path, scene, overrides)
        if key is None:
            assert error is None, error
        elif key == "--set":
            assert error is not None and str(error).startswith("--set "), error
        else:  # an error caused by an override names it first (`dem.scene.origin`)
            assert error is not None, key
            message = str(error)
            for text in overrides:
                message = message.removeprefix(f"--set {dem.schema.printable(text)}: ")
            assert message.startswith(f"{path}: {key}: "), error


@pytest.mark.parametrize("variant, overrides, key", [
    ("torus_impact", ["torus.0.n_particles=1000000000000"], "torus.0.n_particles"),
    ("tetra_chain", ["tetra_chain.0.n_bodies=1000000000"], "tetra_chain.0.n_bodies"),
    ("assembly_impact:lattice", ["assembly.0.particle_diameter=1e-3"], "assembly.0.particle_diameter"),
    ("assembly_impact:random", ["assembly.0.diameter=3000"], "assembly.0.packing_fraction"),
])
def test_the_real_body_cap(variant, overrides, key):
    """Without the fuzzing cap: counts above `dem.schema.MAX_BODIES` fail before anything is
    allocated."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scene.toml"
        path.write_text(dump(base_scene(variant)), encoding="utf-8")
        with pytest.raises(SceneError, match=f"^--set {re.escape(overrides[0])}: {re.escape(str(path))}: "
                                             f"{re.escape(key)}: .*{dem.schema.MAX_BODIES}"):
            prepare(path, overrides)
