"""The ``[[sphere]]`` and ``[[particles]]`` builders, friction keys in scenes, and bad granular
input failing cleanly (one line naming the file, the key and the problem; nothing written)."""

import meshio
import numpy as np
import pytest

from dem import Simulation
from dem.cli import main
from dem.runner import prepare

HEAD = """\
[simulation]
dt = 1e-3
t_end = 0.02

[fields]
gravity = [0.0, 0.0, -1.0]

[contact]
k_pp = 1e4
k_pw = 1e4
friction = 0.5

[[walls]]
point = [0.0, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]
"""

SPHERE = """
[[sphere]]
position = [0.0, 0.0, 2.0]
diameter = 1.0
density = 2.0
velocity = [1.0, 0.0, 0.0]
"""


#: rolling resistance too, for the runs: they then step the interactions of scenes/column_collapse.toml,
#: whose loop the force-chain picture (test_docs.py) and test_friction.py compile as well
ROLLING = "contact.rolling_friction=0.1"


def scene(folder, text, name="scene.toml"):
    path = folder / name
    path.write_text(HEAD + text, encoding="utf-8")
    return path


def fails_cleanly(tmp_path, capsys, path, *needles):
    """The scene stops before anything is written, with one line naming all of ``needles``."""
    code = main([str(path), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "Traceback" not in err and len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err
    assert not (tmp_path / "out").exists()
    return err


# ---------------------------------------------------------------------------------------------
# [[sphere]]
# ---------------------------------------------------------------------------------------------

def test_sphere_mass_inertia_and_motion(tmp_path):
    _, model, state, _ = prepare(scene(tmp_path, SPHERE + SPHERE.replace("density = 2.0", "mass = 3.0")
                                       .replace("[0.0, 0.0, 2.0]", "[5.0, 0.0, 2.0]")))
    assert model.mass == pytest.approx([2.0 * np.pi / 6, 3.0])
    assert model.inertia[:, 0] == pytest.approx(0.1 * model.mass)
    assert state.velocity[0] == pytest.approx([1.0, 0.0, 0.0])
    assert not model.pinned.any() and not model.clamped.any()
    assert set(model.interactions) >= {"contact_pp", "contact_pw"}


def test_a_fixed_sphere_stays_put_when_hit(tmp_path):
    fixed = """
[[sphere]]
position = [0.0, 0.0, 0.5]
diameter = 1.0
fixed = true

[[sphere]]
position = [-1.2, 0.3, 0.5]
diameter = 1.0
velocity = [2.0, 0.0, 0.0]
angular_velocity = [0.0, 0.0, 5.0]
"""
    _, model, state, _ = prepare(scene(tmp_path, fixed), [ROLLING])
    assert model.pinned[0] and model.clamped[0]
    start = state.position.copy(), state.orientation.copy()
    sim = Simulation(model, state, "rrp2", 1e-4)
    sim.advance(3000)
    assert np.array_equal(state.position[0], start[0][0]) and np.array_equal(state.orientation[0], start[1][0])
    assert state.velocity[1, 0] < 1.0 and sim.energy_budget()["friction"] > 0   # it hit, with friction


@pytest.mark.parametrize("old, new, key, problem", [
    ("density = 2.0", "density = 2.0\nmass = 1.0", "sphere.0.mass", "not both"),
    ("density = 2.0", "density = 2.0\nfixed = true", "sphere.0.velocity", "a fixed sphere does not move"),
    ("diameter = 1.0", "diameter = -1.0", "sphere.0.diameter", "positive"),
], ids=["density and mass", "fixed with velocity", "negative diameter"])
def test_bad_sphere(tmp_path, capsys, old, new, key, problem):
    fails_cleanly(tmp_path, capsys, scene(tmp_path, SPHERE.replace(old, new)), "scene.toml", key, problem)


@pytest.mark.parametrize("old, new, key, problem", [
    ("friction = 0.5", "friction = -0.1", "contact.friction", "zero or positive"),
    ("friction = 0.5", "friction = nan", "contact.friction", "finite number"),
    ("friction = 0.5", "friction = inf", "contact.friction", "finite number"),
    ("friction = 0.5", "rolling_friction = -1.0", "contact.rolling_friction", "zero or positive"),
    ("friction = 0.5", "twisting_friction = nan", "contact.twisting_friction", "finite number"),
    ("friction = 0.5", "poisson_ratio = 0.7", "contact.poisson_ratio", "[0, 0.5]"),
    ("normal = [0.0, 0.0, 1.0]", "normal = [0.0, 0.0, 1.0]\nfriction = -0.5", "walls.0.friction",
     "zero or positive"),
    ("normal = [0.0, 0.0, 1.0]", "normal = [0.0, 0.0, 1.0]\nrolling_friction = nan", "walls.0.rolling_friction",
     "finite number"),
], ids=["negative", "nan", "inf", "negative rolling", "nan twisting", "poisson", "wall negative", "wall nan"])
def test_bad_friction_coefficients(tmp_path, capsys, old, new, key, problem):
    path = tmp_path / "scene.toml"
    path.write_text((HEAD + SPHERE).replace(old, new), encoding="utf-8")
    fails_cleanly(tmp_path, capsys, path, "scene.toml", key, problem)


def test_friction_is_off_unless_asked_and_walls_override_it(tmp_path):
    _, model, _, _ = prepare(scene(tmp_path, SPHERE).parent / "scene.toml", ["contact.friction=0.0"])
    assert not {"contact_pp", "contact_pw", "adhesive_contact_pw"} & set(model.interactions)
    _, model, _, _ = prepare(tmp_path / "scene.toml", ["contact.friction=0.0", "walls.0.friction=0.3",
                                                       "walls.0.rolling_friction=0.1"])
    assert "contact_pw" in model.interactions and "hertz_pw" not in model.interactions
    assert "contact_pp" not in model.interactions and "hertz_pp" in model.interactions
    assert model.interactions["contact_pw"].walls[:, 3:].tolist() == [[0.3, 0.1, 0.0]]   # (normal, μ, μ_r, μ_t)
    _, model, _, _ = prepare(tmp_path / "scene.toml", ["walls.0.friction=0.0"])
    assert "contact_pw" not in model.interactions and "contact_pp" in model.interactions


# ---------------------------------------------------------------------------------------------
# [[particles]]
# ---------------------------------------------------------------------------------------------

def packing(n=30, seed=0):
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    return 1.2 * grid + [0, 0, 1.0], rng.uniform(0.8, 1.1, n), rng.normal(size=(n, 3))


def write_csv(path, position, diameter, velocity=None, names="x,y,z,diameter"):
    columns = [position, diameter[:, None]] + ([velocity] if velocity is not None else [])
    np.savetxt(path, np.hstack(columns), delimiter=",", header=names + (",vx,vy,vz" if velocity is not None else ""),
               comments="")


def particles(file, extra=""):
    return f'\n[[particles]]\nfile = "{file}"\ndensity = 2.0\n{extra}'


def test_csv_packing_relative_to_the_scene(tmp_path):
    position, diameter, velocity = packing()
    (tmp_path / "data").mkdir()
    write_csv(tmp_path / "data" / "pack.csv", position, diameter, velocity, names=" X, y ,Z,diameter")
    path = scene(tmp_path, particles("data/pack.csv", "shift = [10.0, 0.0, 0.0]\nvelocity = [0.0, 1.0, 0.0]"))
    _, model, state, _ = prepare(path)
    assert model.n_bodies == 30
    assert np.allclose(state.position, position + [10.0, 0.0, 0.0])
    assert np.allclose(model.diameter, diameter)
    assert np.allclose(state.velocity, velocity + [0.0, 1.0, 0.0])
    assert np.allclose(model.mass, 2.0 * np.pi / 6 * diameter ** 3)


def test_csv_packing_with_radius_and_no_velocity(tmp_path):
    position, diameter, _ = packing()
    write_csv(tmp_path / "pack.csv", position, 0.5 * diameter, names="x,y,z,radius")
    _, model, state, _ = prepare(scene(tmp_path, particles("pack.csv")))
    assert np.allclose(model.diameter, diameter) and not state.velocity.any()


def test_vtk_packing_through_meshio(tmp_path):
    position, diameter, velocity = packing()
    meshio.write_points_cells(tmp_path / "pack.vtu", position, [("vertex", np.arange(30)[:, None])],
                              point_data={"diameter": diameter, "velocity": velocity})
    _, model, state, _ = prepare(scene(tmp_path, particles("pack.vtu")))
    assert np.allclose(state.position, position) and np.allclose(model.diameter, diameter)
    assert np.allclose(state.velocity, velocity)


def test_a_snapshot_of_a_run_imports_as_a_packing(tmp_path):
    """The last ``particles_*.vtp`` of a run is a packing file: settle once, start many runs."""
    position, diameter, velocity = packing()
    write_csv(tmp_path / "pack.csv", position, diameter, velocity)
    assert main([str(scene(tmp_path, particles("pack.csv"))), "--out", str(tmp_path / "run"), "--quiet",
                 "--set", ROLLING]) == 0
    snapshot = sorted((tmp_path / "run" / "vtk").glob("particles_*.vtp"))[-1]
    _, model, state, _ = prepare(scene(tmp_path, particles(snapshot), name="again.toml"))
    assert model.n_bodies == 30 and np.allclose(model.diameter, diameter)
    assert not np.allclose(state.position, position)   # it moved during the run


@pytest.mark.parametrize("content, problem", [
    (None, "no such file"),
    ("x,y,diameter\n0,0,1\n", "no column 'z'"),
    ("x,y,z\n0,0,0\n", "no column 'diameter'"),
    ("x,y,z,diameter\n0,0,0,1\n3,0,0,0\n", "sphere 1 (row 2): diameter must be positive"),
    ("x,y,z,diameter\n0,0,0,1\n3,0,0,-2\n", "diameter must be positive"),
    ("x,y,z,diameter\n0,0,0,1\n0.5,0,0,1\n", "spheres 0 and 1 (rows 1 and 2) overlap by 0.5"),
    ("x,y,z,diameter\n0,0,0,1\n0,0,abc,1\n", "not a table of numbers"),
    ("x,y,z,diameter\n0,0,0,nan\n", "diameter is not a finite number"),
    ("x,y,z,diameter,vx\n0,0,0,1,2\n", "velocity columns vx without the others"),
    ("", "no header row"),
    ("x,y,z,diameter\n", "holds no sphere"),
], ids=["missing", "no z", "no diameter", "zero diameter", "negative diameter", "overlap", "text", "nan",
        "partial velocity", "empty", "no rows"])
def test_bad_packing_files(tmp_path, capsys, content, problem):
    if content is not None:
        (tmp_path / "pack.csv").write_text(content, encoding="utf-8")
    fails_cleanly(tmp_path, capsys, scene(tmp_path, particles("pack.csv")), "scene.toml", "particles.0.file",
                  str(tmp_path / "pack.csv"), problem)


def test_overlap_tolerance_admits_small_overlaps(tmp_path, capsys):
    (tmp_path / "pack.csv").write_text("x,y,z,diameter\n0,0,1,1\n0.995,0,1,1\n", encoding="utf-8")
    assert prepare(scene(tmp_path, particles("pack.csv")))[1].n_bodies == 2   # 0.5 % < the default 1 %
    fails_cleanly(tmp_path, capsys, scene(tmp_path, particles("pack.csv", "overlap_tolerance = 0.001")),
                  "particles.0.file", "overlap by 0.005")


def test_bad_vtk_packing(tmp_path, capsys):
    position, diameter, _ = packing()
    meshio.write_points_cells(tmp_path / "pack.vtu", position, [("vertex", np.arange(30)[:, None])],
                              point_data={"size": diameter})
    fails_cleanly(tmp_path, capsys, scene(tmp_path, particles("pack.vtu")), "particles.0.file",
                  "no point data 'diameter' or 'radius'")
    (tmp_path / "junk.vtk").write_text("not vtk at all", encoding="utf-8")
    fails_cleanly(tmp_path, capsys, scene(tmp_path, particles("junk.vtk")), "particles.0.file", "meshio cannot read")
