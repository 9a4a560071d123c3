"""Scene loading: overrides, and bad scenes failing cleanly (file and key named, no traceback,
no output folder)."""

import subprocess
import sys
from pathlib import Path

import pytest

from dem import _numba_cache, runner
from dem.cli import main
from dem.scene import SceneError, load_scene

ROOT = Path(__file__).resolve().parents[1]

GOOD = """\
[simulation]
integrator = "rrp2"
dt = 0.01
t_end = 1.0

[fields]
gravity = [0.0, 0.0, -1.0]

[[pendulum]]
mass = 1.0
inertia = 1.0
"""


def bad_scene(tmp_path, old, new):
    assert old in GOOD
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace(old, new))
    return path


BAD = [
    ("missing file", None, None, "no such scene file", None),
    ("TOML syntax error", "dt = 0.01", "dt = = 0.01", "TOML syntax error", None),
    ("unknown key", "dt = 0.01", "dt = 0.01\ntimestep = 0.1", "simulation.timestep", "unknown key"),
    ("unknown section", "[fields]", "[feilds]", "feilds", "unknown section"),
    ("wrong type", "dt = 0.01", 'dt = "small"', "simulation.dt", "must be a number"),
    ("wrong vector", "gravity = [0.0, 0.0, -1.0]", "gravity = [0.0, -1.0]", "fields.gravity", "3 numbers"),
    ("non-positive dt", "dt = 0.01", "dt = 0.0", "simulation.dt", "positive"),
    ("negative dt", "dt = 0.01", "dt = -1e-3", "simulation.dt", "positive"),
    ("dt >= t_end", "dt = 0.01", "dt = 2.0", "simulation.dt", "smaller than simulation.t_end"),
    ("unknown integrator", '"rrp2"', '"verlet"', "simulation.integrator", "must be one of"),
    ("unknown normal law", "[fields]", '[contact]\nnormal = "jkrr"\n\n[fields]', "contact.normal", "hertz, hooke"),
    ("unknown damping", "[fields]", '[contact]\ndamping = "viscous"\n\n[fields]', "contact.damping",
     "restitution, tsuji, none"),
    ("adhesion without its work", "[fields]", '[contact]\nnormal = "jkr"\n\n[fields]', "contact.work_of_adhesion",
     "needs a work of adhesion"),
    ("negative work of adhesion", "[fields]", '[contact]\nnormal = "dmt"\nwork_of_adhesion = -1.0\n\n[fields]',
     "contact.work_of_adhesion", "zero or positive"),
    ("linear spring without stiffness", "[fields]", '[contact]\ntangential = "linear_history"\n\n[fields]',
     "contact.tangential_stiffness", "needs its stiffness"),
    ("no damping with a restitution", "[fields]", '[contact]\ndamping = "none"\nrestitution = 0.5\n\n[fields]',
     "contact.damping", "unused"),
    ("non-positive mass", "mass = 1.0", "mass = -1.0", "pendulum.0.mass", "positive"),
    ("missing required key", "inertia = 1.0\n", "", "pendulum.0.inertia", "required"),
    ("table instead of array", "[[pendulum]]", "[pendulum]", "pendulum", "array of tables"),
]


@pytest.mark.parametrize("case, old, new, key, problem", BAD, ids=[b[0] for b in BAD])
def test_bad_scene_fails_cleanly(tmp_path, monkeypatch, capsys, case, old, new, key, problem):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "missing.toml" if old is None else bad_scene(tmp_path, old, new)
    code = main([str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0] and key in lines[0]
    if problem:
        assert problem in lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "output").exists()


def test_bad_scene_from_the_command_line_has_no_traceback(tmp_path):
    path = bad_scene(tmp_path, "dt = 0.01", "dt = 0.0")
    result = subprocess.run([sys.executable, "-m", "dem", str(path)], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"{path}: simulation.dt: must be positive" in result.stderr
    assert not (tmp_path / "output").exists()


def test_the_first_run_says_it_compiles_as_soon_as_the_scene_reads(tmp_path, monkeypatch, caplog):
    """The first run of a version of dem (`dem._numba_cache.FRESH`) says that it compiles before
    the builders' kernels compile (seconds), into a terminal or a log alike, and says it once."""
    logged = []

    def build(scene):
        logged.append(caplog.text)
        raise SceneError("stopped before building")

    monkeypatch.setattr(_numba_cache, "FRESH", True)
    monkeypatch.setattr(runner, "build_system", build)
    with caplog.at_level("INFO", logger="dem"):
        for _ in range(2):
            with pytest.raises(SceneError, match="stopped before building"):
                runner.run(ROOT / "scenes/torus_impact.toml", out=tmp_path / "out")
    notice = "first run of this dem version on this machine: compiling its kernels"
    assert [text.count(notice) for text in logged] == [1, 1]
    assert notice in caplog.text.splitlines()[0]  # the first thing said
    assert not (tmp_path / "out").exists()


def test_overrides_reach_nested_keys_and_lists():
    scene = load_scene(ROOT / "scenes/torus_impact.toml",
                       ["simulation.dt=5e-4", "torus.0.velocity=[1,0,0]", "walls=[]", "simulation.integrator=rrp"])
    assert scene.simulation["dt"] == 5e-4
    assert scene.simulation["integrator"] == "rrp"
    assert scene.builders[0][2]["velocity"] == (1.0, 0.0, 0.0)
    assert scene.walls == []


@pytest.mark.parametrize("override, message", [
    ("simulation.dt", "expected PATH=VALUE"),
    ("torus.3.mass=1", "no element 3"),
    ("simulation.dtt=1", "simulation.dtt: unknown key"),
    ("torus.0.mass=[1, 2]", "torus.0.mass: must be a number"),
])
def test_bad_overrides(override, message):
    with pytest.raises(SceneError, match=message):
        load_scene(ROOT / "scenes/torus_impact.toml", [override])


def test_defaults_are_filled_in():
    scene = load_scene(ROOT / "scenes/pendulum.toml")
    assert scene.output["log_every"] == 1
    assert scene.sections["contact"]["k_pp"] == 0.0
    assert scene.n_steps == 1000


@pytest.mark.parametrize("override, key", [
    ("simulation.dt=-1", "simulation.dt"),
    ("torus.0.mass=[1, 2]", "torus.0.mass"),
    ("torus.0.velocity=[1e308,0,0]", "torus.0"),  # a builder table that makes an overflowing state
])
def test_an_error_from_a_set_names_the_set_argument(tmp_path, capsys, override, key):
    code = main([str(ROOT / "scenes/torus_impact.toml"), "--set", override, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"dem: error: --set {override}: {ROOT / 'scenes/torus_impact.toml'}: {key}: ")
    assert not (tmp_path / "out").exists()


def test_an_overflowing_initial_state_is_refused_before_anything_is_written(tmp_path, capsys):
    code = main([str(ROOT / "scenes/torus_impact.toml"), "--set", "torus.0.velocity=[1e308,0,0]",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "kinetic energy or momentum that overflows" in err and "RuntimeWarning" not in err
    assert not (tmp_path / "out").exists()


def test_dem_alone_prints_its_usage(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m dem") and "examples:" in out


@pytest.mark.parametrize("argv, message", [
    (["plot", "{tmp}/nowhere"], "{tmp}/nowhere/energy.csv: no such file"),
    ([str(ROOT / "scenes/torus_impact.toml"), "--restart", "{tmp}/none.npz", "--out", "{tmp}/out"],
     "--restart {tmp}/none.npz: no such checkpoint file"),
])
def test_missing_paths_give_one_line(tmp_path, capsys, argv, message):
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"dem: error: {message.format(tmp=tmp_path)}")
    assert not (tmp_path / "out").exists()
