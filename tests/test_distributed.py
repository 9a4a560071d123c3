"""MPI (``mpiexec -n R python -m dem``, `dem.distributed`): the same run, bit for bit, on 1, 2 and 3
ranks — positions, velocities, forces, own states and contact histories in the checkpoint, the
energy log and the VTK snapshots; the walls' loads (``walls.csv``) to round-off. The default suite
runs the torus (bonds, contacts, per-contact history: the test probe of `history_probe`) against
a fixed, a moving and a servo plane, and restarts it on another number of ranks: one loop of the
ranks to compile; and clumps on 2 ranks (dimers and tetrahedra on a rough floor and a mesh step,
pushed by a moving wall, with their contact network; a dimer, a tetrahedron and a sphere
colliding): one more. The slow suite (``python -m pytest -m slow``)
adds both bond laws with contact and local damping and breakage, rigid clusters under
Lennard-Jones and applied forces (``lgvi``), a frictional gas in a periodic cell (``cell.csv``
too), a mesh wall, a sheared cell, particles poured in and let out (``flow.csv`` too; a restart
mid-filling on another number of ranks), on 2 ranks friction, rolling and twisting resistance
and JKR adhesion, the clumps on 4 ranks (restarted there from 2 ranks half-way; the collision
with a rank that owns no body), and clumps poured and let out (restarted mid-filling on 3 ranks). The ranks run
`support/mpi_job.py`; the one-process runs are made here."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.granule import GRANULE, PARALLEL_BONDED, granule_file
from support.feeding import pour_file
from support.history_probe import PROBE
from test_clumps import COLLISION, FLOOR, clump_pour, clump_scene, raised_step, read_lines
from test_restart import assert_same_run, outputs

from dem.cell import box_cell
from dem.checkpoint import load_checkpoint
from dem.distributed import Bisection
from dem.interactions import register, unregister
from dem.runner import run

ROOT = Path(__file__).resolve().parents[1]
MPIEXEC = Path(sys.executable).with_name("mpiexec")
try:
    import mpi4py  # noqa: F401
    HAVE_MPI = MPIEXEC.exists()
except ImportError:
    HAVE_MPI = False
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="needs the mpi extra (mpi4py, mpiexec): pip install '.[mpi]'")

TORUS = str(ROOT / "scenes/torus_impact.toml")
TORUS_SETTINGS = ["simulation.t_end=1.5", "output.vtk_every=500", "output.log_every=20"]
GRANULE_SETTINGS = ["simulation.t_end=0.4", "output.vtk_every=200", "contact.restitution=0.7",
                    "breakage.tension=0.005", "breakage.shear=0.01", "damping.local=0.1"]
#: the granule with Coulomb friction, rolling and twisting resistance (pair and wall histories)
ROUGH_SETTINGS = GRANULE_SETTINGS + ["contact.friction=0.5", "contact.rolling_friction=0.1",
                                     "contact.twisting_friction=0.1"]
#: the rough granule with JKR adhesion (the pipeline's history with its formed flags, the
#: planes' flags, the hysteresis booked)
STICKY_SETTINGS = ROUGH_SETTINGS + ["contact.normal='jkr'", "contact.work_of_adhesion=0.5"]
#: the walls' state fields that hold loads and the work of moving walls: a rank's share under MPI,
#: added in rank order
LOADS = ("interaction.walls.load", "interaction.walls.partial", "interaction.walls.work")
#: the torus against a plane that moves towards it (its motion the same on every rank, its work
#: each rank's share)
MOVING_SETTINGS = TORUS_SETTINGS + ["walls.0.velocity=[0.3,0,0]"]
#: the torus against a servo plane (its load booked in whole quanta: the ranks' shares add up to
#: the one process's load, and the servo moves alike)
SERVO_SETTINGS = TORUS_SETTINGS + ["walls.0.servo=true", "walls.0.target_force=2.0"]
#: the rotating drum, a moving mesh wall (each particle's mesh contacts travel with it): its bed
#: falls onto the drum and slides
#: Lees-Edwards shear with a servoed edge (the images slide past half an edge; the servo's rates
#: set on rank 0's view reach every rank)
SHEAR = str(ROOT / "scenes/simple_shear.toml")
SHEAR_SETTINGS = ["simulation.t_end=1.2", "output.vtk_every=200", "output.log_every=20",
                  "cell.shear_rate=[0.5, 0.3, 0.5]"]
DRUM = str(ROOT / "scenes/rotating_drum.toml")
DRUM_SETTINGS = ["simulation.t_end=0.8", "output.vtk_every=400", "output.log_every=40"]
#: a frictional gas in a cell periodic along x, y and z: pairs, histories, ghosts and migration
#: across the faces
GAS = str(ROOT / "scenes/granular_gas.toml")
GAS_SETTINGS = ["simulation.t_end=0.4", "output.vtk_every=200", "output.log_every=20", "contact.friction=0.5",
                "contact.rolling_friction=0.1"]
TETRA = str(ROOT / "scenes/tetra_chain.toml")
TETRA_SETTINGS = ["simulation.t_end=0.5", "output.vtk_every=250"]
#: the clumps of `clump_file`: rough contacts between members and with the walls, the contact
#: network of the member pairs written (``contacts.pvd``, ``fabric.csv``)
CLUMP_SETTINGS = ["simulation.dt=1e-3", "simulation.t_end=2.0", "output.vtk_every=200", "output.log_every=50",
                  "contact.k_pp=2e4", "contact.rolling_friction=0.1", "contact.twisting_friction=0.05",
                  "output.contacts=true"]
#: tests/test_clumps.py's collision of a dimer, a tetrahedron and a sphere (no gravity, no walls) with
#: rolling and twisting resistance too, its contact network written at every log row
COLLISION_SETTINGS = ["simulation.dt=5e-4", "simulation.t_end=1.0", "output.vtk_every=40", "output.log_every=40",
                      "contact.rolling_friction=0.1", "contact.twisting_friction=0.05", "output.contacts=true"]


def serial(scene, settings, out, restart=None, probe=True):
    """The one-process run (with the history probe registered)."""
    if probe:
        register(PROBE)
    try:
        return run(scene, settings, out, quiet=True, restart=restart)[0]
    finally:
        if probe:
            unregister(PROBE.name)


def ranks(n, jobs, folder):
    """Run ``jobs`` (`mpi_job.py`) on ``n`` ranks; returns rank 0's report of each."""
    path = folder / f"jobs_{n}.json"
    path.write_text(json.dumps([{"restart": None, "probe": True, **job} for job in jobs]), encoding="utf-8")
    done = subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, str(ROOT / "tests/support/mpi_job.py"),
                           str(path)], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def assert_same_but_wall_loads(one, many):
    """`assert_same_run`, but for the walls' loads and work (``walls.csv``, the checkpoint's
    `LOADS`, the ``walls`` and ``total`` columns of ``energy.csv``): those equal to 1e-12 of the
    largest (``partial`` is scratch: not compared)."""
    (logs1, pvd1, checkpoint1), (logs2, pvd2, checkpoint2) = one, many
    for name, summed in (("walls.csv", lambda column: "_f" in column or "_m" in column),
                         ("energy.csv", lambda column: column in ("walls", "total"))):
        log1, log2 = (np.genfromtxt(logs.pop(name).splitlines(), delimiter=",", names=True) for logs in (logs1, logs2))
        assert log1.dtype.names == log2.dtype.names and len(log1) == len(log2)
        largest = max(np.abs(log1[column]).max() for column in log1.dtype.names if summed(column))
        for column in log1.dtype.names:  # the rest exact: points, steps, times, every other energy
            scale = 1e-12 * largest if summed(column) else 0.0  # (of the largest load: a small one cancels)
            assert np.abs(log1[column] - log2[column]).max() <= scale, (name, column)
        if name == "walls.csv":
            walls1 = log1
    for key in ("interaction.walls.load", "interaction.walls.work"):
        value1, value2 = checkpoint1[key], checkpoint2[key]
        assert np.abs(value1 - value2).max() <= 1e-12 * np.abs(value1).max(), key
    assert_same_run((logs1, pvd1, {k: v for k, v in checkpoint1.items() if k not in LOADS}),
                    (logs2, pvd2, {k: v for k, v in checkpoint2.items() if k not in LOADS}))
    return walls1


def last_snapshot(folder):
    return max((folder / "vtk").glob("particles_*.vtp")).read_bytes()


def snapshots(folder):
    """Every VTK file of a run (particles, sites, walls, meshes, contact network), by name."""
    return {path.name: path.read_bytes() for path in (folder / "vtk").glob("*.vtp")}


def clump_file(folder):
    """Tetrahedral clumps (4 members) dropped on a rough floor, half of it under a raised step (a
    mesh), and dimers (2 members) thrown down onto them, pushed by a wall moving along −x (the
    interactions of tests/test_clumps.py's clumps on the floor: its loops): the path of the scene,
    written into ``folder``."""
    return clump_scene(folder, FLOOR + "[[walls]]\npoint = [3.5, 0, 0]\nnormal = [-1, 0, 0]\nvelocity = [-0.5, 0, 0]\n"
                       '[[clump]]\ntemplate = "tetrahedron"\nradius = 0.5\ncount = 10\nmin = [-2.5, -2.5, 0.2]\n'
                       "max = [2.5, 2.5, 4]\nattempts = 1000\nvelocity = [0.3, 0, -1]\n"
                       '[[clump]]\ntemplate = "dimer"\nradius = 0.4\ncount = 10\nmin = [-3, -3, 4.5]\nmax = [3, 3, 7]\n'
                       "seed = 2\nvelocity = [-0.3, 0, -2.5]\n"
                       + raised_step(folder, (-8.0, 0.0), (-8.0, 8.0), 0.1, n=6), name="clumps.toml")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The torus against its plane, against a plane that moves and against a servo plane, one
    process and the same on 2 ranks (the torus on 3 too), and a restart from a one-process
    checkpoint on 2 ranks: one loop of the ranks to compile."""
    folder = tmp_path_factory.mktemp("mpi")
    serial(TORUS, TORUS_SETTINGS, folder / "torus_1")
    serial(TORUS, TORUS_SETTINGS + ["simulation.t_end=1.0"], folder / "torus_1to2")
    serial(TORUS, MOVING_SETTINGS, folder / "moving_1")
    serial(TORUS, SERVO_SETTINGS, folder / "servo_1")
    reports = ranks(2, [
        {"scene": TORUS, "settings": TORUS_SETTINGS, "out": str(folder / "torus_2")},
        {"scene": TORUS, "settings": MOVING_SETTINGS, "out": str(folder / "moving_2")},
        {"scene": TORUS, "settings": SERVO_SETTINGS, "out": str(folder / "servo_2")},
        {"scene": TORUS, "settings": TORUS_SETTINGS, "out": str(folder / "torus_1to2"),
         "restart": str(folder / "torus_1to2/checkpoint.npz")},
    ], folder)
    reports += ranks(3, [{"scene": TORUS, "settings": TORUS_SETTINGS, "out": str(folder / "torus_3")}], folder)
    return folder, {Path(report["out"]).name: report for report in reports}


@pytest.fixture(scope="module")
def feature_runs(tmp_path_factory):
    """The other scenes, one process and on 2 and 3 ranks (one mpiexec each), and restarts from a
    2-rank checkpoint on 3 ranks (slow: a loop of the ranks to compile for each). The granule is
    the mixed one (`GRANULE` + `PARALLEL_BONDED`: both bond laws, one loop to compile)."""
    folder = tmp_path_factory.mktemp("mpi_features")
    mixed = str(granule_file(folder, "mixed.toml", GRANULE + PARALLEL_BONDED))
    serial(mixed, GRANULE_SETTINGS, folder / "mixed_1")
    serial(TETRA, TETRA_SETTINGS, folder / "tetra_1", probe=False)
    serial(GAS, GAS_SETTINGS, folder / "gas_1", probe=False)
    serial(DRUM, DRUM_SETTINGS, folder / "drum_1", probe=False)
    serial(SHEAR, SHEAR_SETTINGS, folder / "shear_1", probe=False)
    pour = pour_file(folder)
    serial(pour, [], folder / "filling_1", probe=False)
    reports = ranks(2, [
        {"scene": DRUM, "settings": DRUM_SETTINGS, "out": str(folder / "drum_2"), "probe": False},
        {"scene": SHEAR, "settings": SHEAR_SETTINGS, "out": str(folder / "shear_2"), "probe": False},
        {"scene": mixed, "settings": GRANULE_SETTINGS, "out": str(folder / "mixed_2")},
        {"scene": TETRA, "settings": TETRA_SETTINGS, "out": str(folder / "tetra_2"), "probe": False},
        {"scene": GAS, "settings": GAS_SETTINGS, "out": str(folder / "gas_2"), "probe": False},
        {"scene": mixed, "settings": GRANULE_SETTINGS + ["simulation.t_end=0.2"], "out": str(folder / "mixed_2to3")},
        {"scene": pour, "settings": [], "out": str(folder / "filling_2"), "probe": False},
        {"scene": pour, "settings": ["simulation.t_end=0.5"], "out": str(folder / "filling_2to3"), "probe": False},
    ], folder)
    reports += ranks(3, [
        {"scene": mixed, "settings": GRANULE_SETTINGS, "out": str(folder / "mixed_3")},
        {"scene": TETRA, "settings": TETRA_SETTINGS, "out": str(folder / "tetra_3"), "probe": False},
        {"scene": GAS, "settings": GAS_SETTINGS, "out": str(folder / "gas_3"), "probe": False},
        {"scene": SHEAR, "settings": SHEAR_SETTINGS, "out": str(folder / "shear_3"), "probe": False},
        {"scene": mixed, "settings": GRANULE_SETTINGS, "out": str(folder / "mixed_2to3"),
         "restart": str(folder / "mixed_2to3/checkpoint.npz")},
        {"scene": pour, "settings": [], "out": str(folder / "filling_2to3"), "probe": False,
         "restart": str(folder / "filling_2to3/checkpoint.npz")},
    ], folder)
    return folder, {Path(report["out"]).name: report for report in reports}


@pytest.fixture(scope="module")
def rough_runs(tmp_path_factory):
    """The granule with friction, rolling and twisting resistance (`ROUGH_SETTINGS`) and with JKR
    adhesion too (`STICKY_SETTINGS`) on one process and on 2 ranks: two more loops of six to
    eight interactions, each compiled for one process and for the ranks (slow)."""
    folder = tmp_path_factory.mktemp("mpi_rough")
    granule = str(granule_file(folder))
    serial(granule, ROUGH_SETTINGS, folder / "rough_1")
    serial(granule, STICKY_SETTINGS, folder / "sticky_1")
    reports = ranks(2, [{"scene": granule, "settings": ROUGH_SETTINGS, "out": str(folder / "rough_2")},
                        {"scene": granule, "settings": STICKY_SETTINGS, "out": str(folder / "sticky_2")}], folder)
    return folder, {Path(report["out"]).name: report for report in reports}


@pytest.fixture(scope="module")
def clump_runs(tmp_path_factory):
    """The clumps of `clump_file` on one process and on 2 ranks, and half-way on 2 ranks (its
    checkpoint kept as ``midway.npz``); the collision of `COLLISION_SETTINGS` on one process and on 2
    ranks: one loop of the ranks to compile (the one process's are tests/test_clumps.py's)."""
    folder = tmp_path_factory.mktemp("mpi_clumps")
    scene = str(clump_file(folder))
    collision = str(clump_scene(folder, COLLISION, name="collision.toml"))
    serial(scene, CLUMP_SETTINGS, folder / "clumps_1", probe=False)
    serial(collision, COLLISION_SETTINGS, folder / "collision_1", probe=False)
    jobs = [{"scene": scene, "settings": CLUMP_SETTINGS, "out": str(folder / "clumps_2"), "probe": False},
            {"scene": scene, "settings": CLUMP_SETTINGS + ["simulation.t_end=1.0"], "out": str(folder / "clumps_2to4"),
             "probe": False},
            {"scene": collision, "settings": COLLISION_SETTINGS, "out": str(folder / "collision_2"), "probe": False}]
    reports = ranks(2, jobs, folder)
    shutil.copy(folder / "clumps_2to4/checkpoint.npz", folder / "midway.npz")
    return folder, jobs, {Path(report["out"]).name: report for report in reports}


@pytest.fixture(scope="module")
def clump_runs_on_4(clump_runs):
    """`clump_runs` on 4 ranks too, and restarted on 4 ranks from the checkpoint of 2 ranks
    half-way; the collision on 4 ranks, one of which owns no body (slow: on a 2-core machine 4 ranks
    take turns on the cores, about 20 s)."""
    folder, jobs, reports = clump_runs
    reports = {**reports}
    for report in ranks(4, [{**jobs[0], "out": str(folder / "clumps_4")},
                            {**jobs[0], "out": str(folder / "clumps_2to4"),
                             "restart": str(folder / "clumps_2to4/checkpoint.npz")},
                            {**jobs[2], "out": str(folder / "collision_4")}], folder):
        reports[Path(report["out"]).name] = report
    return folder, reports


@pytest.fixture(scope="module")
def clump_pour_runs(tmp_path_factory):
    """tests/test_clumps.py's pour of tetrahedral clumps (a source and an outlet) on one process and
    on 2 ranks, and stopped mid-filling on 2 ranks and restarted on 3 (slow: a loop of the ranks to
    compile)."""
    folder = tmp_path_factory.mktemp("mpi_clump_pour")
    pour = str(clump_pour(folder))
    serial(pour, [], folder / "clumpfill_1", probe=False)
    job = {"scene": pour, "settings": [], "probe": False}
    ranks(2, [{**job, "out": str(folder / "clumpfill_2")},
              {**job, "settings": ["simulation.t_end=0.5"], "out": str(folder / "clumpfill_2to3")}], folder)
    ranks(3, [{**job, "out": str(folder / "clumpfill_2to3"), "restart": str(folder / "clumpfill_2to3/checkpoint.npz")}],
          folder)
    return folder


def assert_same_as_one_process(runs, scene, n):
    folder, reports = runs
    one, many = folder / f"{scene}_1", folder / f"{scene}_{n}"
    if scene in ("tetra", "gas", "shear"):  # no walls
        assert_same_run(outputs(one), outputs(many))
    elif scene == "filling":  # (the outlet takes the particles that reach the floor)
        assert_same_but_wall_loads(outputs(one), outputs(many))
    else:  # the wall was loaded
        walls = assert_same_but_wall_loads(outputs(one), outputs(many))
        assert np.abs(walls["m0_fz" if scene == "drum" else "w0_fx"]).max() > 0
    assert last_snapshot(one) == last_snapshot(many)
    if scene not in ("tetra", "filling"):  # bodies crossed from one rank's box to another's during the run
        assert reports[f"{scene}_{n}"]["migrated"] > 0
    if scene == "torus":  # the ring's bounce unbalanced the boxes: they were cut anew
        assert reports[f"{scene}_{n}"]["rebalanced"] > 0
    if scene == "shear":  # the images slid past half an edge across the y and z faces, the servo moved the y edge
        log = np.genfromtxt(outputs(many)[0]["cell.csv"].splitlines(), delimiter=",", names=True)
        assert log["tilt_xy"][-1] < 0 < log["tilt_xy"].max() and log["tilt_yz"][-1] < 0 < log["tilt_yz"].max()
        assert len(set(log["L_y"])) > 10 and np.abs(log["tilt_xz"]).max() > 1.0
    if scene == "drum":  # particles touched the mesh, and the drum turned on every rank alike
        checkpoint = outputs(many)[2]
        assert checkpoint["interaction.walls.mesh_most"].max() >= 2 and checkpoint["interaction.walls.work"][0] != 0
    if scene == "filling":  # particles entered and left (rank 0's Feeder; every rank took its part of the change)
        flow = np.genfromtxt(outputs(many)[0]["flow.csv"].splitlines(), delimiter=",", names=True)
        assert flow["inserted_0"][-1] > 300 and flow["removed_0"][-1] > 0
    if scene == "servo":  # the servo moved the plane, on every rank alike (walls.csv's points are exact)
        logs, _, checkpoint = outputs(many)
        walls = np.genfromtxt(logs["walls.csv"].splitlines(), delimiter=",", names=True)
        assert checkpoint["interaction.walls.point"][0, 0] > 0.05 and walls["w0_fx"].min() < 0
    if scene == "moving":  # the plane moved, on every rank alike, and did work on the ring
        checkpoint = outputs(many)[2]
        assert checkpoint["interaction.walls.point"][0, 0] > 0.4 and checkpoint["interaction.walls.work"][0] < 0
    if scene in ("rough", "sticky", "mixed"):
        checkpoint = outputs(many)[2]
        assert np.count_nonzero(checkpoint["interaction.binder.broken"]) > 0  # bonds broke
        assert np.count_nonzero(checkpoint["contacts.history_values.history_probe"]) > 0  # live contact histories
    if scene == "gas":  # live springs, some of them between pairs across the faces; the cell's stress logged
        checkpoint = outputs(many)[2]
        keys = checkpoint["contacts.history_keys.contact_pp"]
        position = checkpoint["state_position"]
        assert np.abs(position[keys[:, 0]] - position[keys[:, 1]]).max() > 10.0
        assert "cell.csv" in outputs(many)[0]
    if scene == "mixed":  # both bond laws: parallel bonds broke too
        assert np.count_nonzero(outputs(many)[2]["interaction.parallel_bond.broken"]) > 0
    if scene == "rough":  # live tangential, rolling and twisting springs between particles and with the wall
        checkpoint = outputs(many)[2]
        assert np.count_nonzero(checkpoint["contacts.history_values.contact_pp"]) > 0
        springs = checkpoint["interaction.contact_pw.wall_spring"]
        for part, components in (("tangential", slice(0, 3)), ("rolling", slice(3, 7))):
            assert np.count_nonzero(springs[..., components]) > 0, part
    if scene == "sticky":  # JKR contacts formed (and some broke) between particles and with the wall
        checkpoint = outputs(many)[2]
        assert np.count_nonzero(checkpoint["contacts.history_values.adhesive_pp"][:, -1]) > 0
        assert np.count_nonzero(checkpoint["interaction.adhesive_contact_pw.adhered"]) > 0
        log = np.genfromtxt(outputs(many)[0]["energy.csv"].splitlines(), delimiter=",", names=True)
        assert log["hysteresis"][-1] > 0


@needs_mpi
@pytest.mark.parametrize("scene, n", [("torus", 2), ("torus", 3), ("moving", 2), ("servo", 2)])
def test_same_as_one_process(runs, scene, n):
    assert_same_as_one_process(runs, scene, n)


@needs_mpi
@pytest.mark.slow
@pytest.mark.parametrize("scene, n", [(scene, n) for n in (2, 3) for scene in ("mixed", "tetra", "gas", "shear")]
                         + [("drum", 2), ("filling", 2)])
def test_same_as_one_process_for_every_feature(feature_runs, scene, n):
    assert_same_as_one_process(feature_runs, scene, n)


@needs_mpi
@pytest.mark.slow
@pytest.mark.parametrize("scene", ["rough", "sticky"])
def test_same_as_one_process_with_friction_and_adhesion(rough_runs, scene):
    assert_same_as_one_process(rough_runs, scene, 2)


@needs_mpi
def test_restart_on_another_number_of_ranks(runs):
    folder, _ = runs
    assert_same_but_wall_loads(outputs(folder / "torus_1"), outputs(folder / "torus_1to2"))


@needs_mpi
@pytest.mark.slow
@pytest.mark.parametrize("case", ["mixed_2to3", "filling_2to3"])
def test_restart_of_every_feature_on_another_number_of_ranks(feature_runs, case):
    folder, _ = feature_runs
    scene = case.partition("_")[0]
    assert_same_but_wall_loads(outputs(folder / f"{scene}_1"), outputs(folder / case))


def assert_clumps_same_as_one_process(folder, reports, case):
    """Clumps on ranks (``case``): the same run as one process's, bit for bit (the walls' loads to
    round-off; the collision has none): the state, the members' wall springs and mesh contacts, the
    member pairs' springs and booked energies in the checkpoint, energy.csv, every snapshot of the
    bodies, their member spheres and the contact network of the member pairs, and fabric.csv."""
    scene = case.partition("_")[0]
    one, many = folder / f"{scene}_1", folder / case
    if scene == "collision":
        assert_same_run(outputs(one), outputs(many))
    else:
        assert_same_but_wall_loads(outputs(one), outputs(many))
    assert snapshots(one) == snapshots(many)
    assert (one / "fabric.csv").read_text() == (many / "fabric.csv").read_text()
    if case in ("clumps_2", "clumps_4"):  # bodies crossed from one rank's box to another's
        assert reports[case]["migrated"] > 0


@needs_mpi
@pytest.mark.parametrize("case", ["clumps_2", "collision_2"])
def test_clumps_are_the_same_as_one_process(clump_runs, case):
    """Clumps on 2 ranks (`assert_clumps_same_as_one_process`)."""
    folder, _, reports = clump_runs
    assert_clumps_same_as_one_process(folder, reports, case)


@needs_mpi
@pytest.mark.slow
@pytest.mark.parametrize("case", ["clumps_4", "clumps_2to4", "collision_4"])
def test_clumps_are_the_same_as_one_process_on_4_ranks(clump_runs_on_4, case):
    """Clumps on 4 ranks, and restarted from 2 ranks on 4 (`assert_clumps_same_as_one_process`)."""
    folder, reports = clump_runs_on_4
    assert_clumps_same_as_one_process(folder, reports, case)


@needs_mpi
def test_the_clumps_on_ranks_form_load_slide_and_break_their_springs(clump_runs):
    """What the runs of `test_clumps_are_the_same_as_one_process` went through (so that the test
    can fail): member pairs touched and parted (the pairs with springs half-way are not all there at
    the end), their springs and the members' wall springs were loaded (tangential, rolling and
    twisting energies) and slipped (friction work), members held springs on the floor and on the
    step (a mesh: its contacts kept), and the contact network listed member pairs."""
    folder, _, _ = clump_runs
    logs, _, last = outputs(folder / "clumps_2")
    midway = load_checkpoint(folder / "midway.npz")
    held, kept = (set(map(tuple, checkpoint["contacts.history_keys.clump_pp"])) for checkpoint in (midway, last))
    assert len(held) >= 3 and held - kept
    log = np.genfromtxt(logs["energy.csv"].splitlines(), delimiter=",", names=True)
    for column in ("hertz_pp", "tangential", "rolling", "twisting"):
        assert log[column].max() > 1e-3, column
    assert log["friction"][-1] > 1.0
    keys = last["interaction.clump_pw.wall_key"]
    assert (keys == 0).any() and (keys == 2).any() and last["interaction.clump_pw.mesh_contact"].any()
    fabric = np.genfromtxt((folder / "clumps_2/fabric.csv").read_text().splitlines(), delimiter=",", names=True)
    assert fabric["contacts"].max() >= 3


@needs_mpi
def test_a_clump_and_a_sphere_colliding_on_ranks_keep_their_momenta(clump_runs):
    """The collision on 2 ranks (`test_clumps_are_the_same_as_one_process`): the dimer hit the
    tetrahedron and the sphere hit the tetrahedron (the contact network's lines join bodies 1 and 2,
    then 0, the sphere, and 2), their springs loaded and slipping, and every contact opened again;
    linear and angular momenta stayed what they were to 1e-12 of their size."""
    folder, _, _ = clump_runs
    many = folder / "collision_2"
    pairs = set()
    for path in (many / "vtk").glob("contacts_*.vtp"):
        arrays = read_lines(path)[2]
        pairs.update(zip(arrays["i"], arrays["j"]))
    assert pairs == {(1, 2), (0, 2)}
    log = np.genfromtxt((many / "energy.csv").read_text().splitlines(), delimiter=",", names=True)
    for column in ("tangential", "rolling", "twisting"):
        assert log[column].max() > 1e-4, column
    assert log["friction"][-1] > 0.05 and log["hertz_pp"][-1] == 0.0
    for momentum in ("P", "L"):
        size = np.linalg.norm([log[f"{momentum}{c}"][0] for c in "xyz"])
        for c in "xyz":
            assert np.abs(log[f"{momentum}{c}"] - log[f"{momentum}{c}"][0]).max() < 1e-12 * size


@needs_mpi
@pytest.mark.slow
@pytest.mark.parametrize("case", ["clumpfill_2", "clumpfill_2to3"])
def test_a_pour_of_clumps_is_the_same_as_one_process(clump_pour_runs, case):
    """Clumps poured by a source and taken by an outlet (rank 0's Feeder on the gathered state; every
    rank takes its part of what it changed, the clumps' list diameters too) on 2 ranks, and stopped
    mid-filling on 2 ranks and restarted on 3: energy.csv, flow.csv, the checkpoint and every
    snapshot are the one process's, bit for bit (the walls' loads to round-off)."""
    folder = clump_pour_runs
    one, many = folder / "clumpfill_1", folder / case
    assert_same_but_wall_loads(outputs(one), outputs(many))
    assert snapshots(one) == snapshots(many)
    flow = np.genfromtxt(outputs(many)[0]["flow.csv"].splitlines(), delimiter=",", names=True)
    assert flow["inserted_0"][-1] > 100 and flow["removed_0"][-1] > 10


def test_bisection_tiles_space_in_balanced_boxes():
    points = np.random.default_rng(5).normal(size=(3000, 3)) * (3.0, 1.0, 0.5)
    for parts in (1, 2, 3, 5):
        bisection = Bisection(points, parts, box_cell())
        owners = bisection.owners(points)
        counts = np.bincount(owners, minlength=parts)
        assert counts.max() - counts.min() <= parts  # balanced by count
        for part in range(parts):  # each point lies in the box of its owner, and in no other
            inside = np.all((bisection.boxes[part, 0] <= points) & (points < bisection.boxes[part, 1]), axis=1)
            assert np.array_equal(inside, owners == part)
        if parts > 1:
            assert bisection.tree[0] == 0  # the first cut is across the widest extent (x)
            width = 0.3
            near = bisection.near(points, 0, width)
            gap = np.maximum(np.maximum(bisection.boxes[0, 0] - points, points - bisection.boxes[0, 1]), 0)
            assert np.array_equal(near, np.linalg.norm(gap, axis=1) <= width)
            assert near.sum() > counts[0]  # the halo reaches beyond the box


def test_alone_without_mpi():
    """Without mpiexec dem runs as one process and never imports mpi4py; under mpiexec without
    mpi4py it says what to install."""
    code = ("import sys; from dem import distributed; print(distributed.world(), 'mpi4py' in sys.modules)")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_"))}
    alone = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, cwd=ROOT)
    assert alone.stdout.split() == ["None", "False"]
    missing = ("import sys; sys.modules['mpi4py'] = None; from dem.cli import main; "
               f"sys.exit(main(['run', {TORUS!r}]))")
    launched = subprocess.run([sys.executable, "-c", missing], capture_output=True, text=True, cwd=ROOT,
                              env={**environment, "PMI_SIZE": "2", "PMI_RANK": "0"})
    assert launched.returncode == 2
    assert "one of 2 processes, but mpi4py is not installed: pip install 'dem[mpi]'" in launched.stderr
