"""``python -m dem sweep``: a pendulum sweep on a real local Dask cluster (2 worker processes) and
on a real ``dask scheduler`` + ``dask worker``; point folders identical to the same runs made
alone; failures recorded; re-runs skip the points done; bad input stops before anything starts."""

import csv
import json
import os
import py_compile
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dem
from dem import sweep as sweep_module
from dem.cli import main
from dem.sweep import SWEEP_CSV, energy_errors, folder_name, parse_grid, plan_sweep, toml_text

ROOT = Path(__file__).resolve().parents[1]
PENDULUM = str(ROOT / "scenes" / "pendulum.toml")
SLURM_SCRIPT = ROOT / "tools" / "sweep_slurm.py"
# 100 steps of dt = 0.02 run; one step of dt = 1.5 with 'rrp' and g = 2 would turn the pendulum by
# more than π/2 and stops with a SimulationError; 'rrp2' has no such limit.
FIXED = ["--set", "simulation.t_end=2", "--set", "fields.gravity=[0,0,-2]"]
GRID = ["--grid", "simulation.dt=[0.02,1.5]", "--grid", "simulation.integrator=[rrp,rrp2]"]
FOLDERS = ["simulation.dt=0.02,simulation.integrator=rrp", "simulation.dt=0.02,simulation.integrator=rrp2",
           "simulation.dt=1.5,simulation.integrator=rrp", "simulation.dt=1.5,simulation.integrator=rrp2"]
HEADER = ["simulation.dt", "simulation.integrator", "folder", "status", "final_energy_error", "max_energy_error",
          "wall_time", "error", "warnings"]


def read_csv(path):
    with open(path, encoding="utf-8", newline="") as file:
        return list(csv.reader(file))


def no_cluster(_workers):
    raise AssertionError("a cluster was started")


#: the points of GRID run alone, to compare with the sweep: (dt, integrator) by point index
ALONE = {0: ("0.02", "rrp"), 3: ("1.5", "rrp2")}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """Two points run alone, then the 4-point sweep on a local cluster of 2 processes: ``(sweep
    folder, exit status, {point index: folder of the run alone})``. The runs alone come first, so
    that the workers find numba's cache written instead of both compiling."""
    pytest.importorskip("distributed")
    base = tmp_path_factory.mktemp("sweep")
    alone = {}
    for point, (dt, integrator) in ALONE.items():
        alone[point] = base / f"alone_{point}"
        assert main(["run", PENDULUM, *FIXED, "--set", f"simulation.dt={dt}", "--set",
                     f"simulation.integrator={integrator}", "--out", str(alone[point]), "--quiet"]) == 0
    out = base / "pendulum"
    status = main(["sweep", PENDULUM, *FIXED, *GRID, "--workers", "2", "--out", str(out), "--quiet"])
    return out, status, alone


def copy_of(swept, tmp_path):
    out = tmp_path / "pendulum"
    shutil.copytree(swept[0], out)
    return out


def test_sweep_writes_one_folder_and_row_per_point(swept):
    out, status, _ = swept
    assert status == 1  # one point failed
    rows = read_csv(out / SWEEP_CSV)
    assert rows[0] == HEADER
    assert [row[:3] for row in rows[1:]] == [["0.02", "rrp", FOLDERS[0]], ["0.02", "rrp2", FOLDERS[1]],
                                             ["1.5", "rrp", FOLDERS[2]], ["1.5", "rrp2", FOLDERS[3]]]
    assert [row[3] for row in rows[1:]] == ["ok", "ok", "failed", "ok"]
    for row in rows[1:]:
        final, maximum = energy_errors(out / row[2] / "energy.csv")
        assert (float(row[4]), float(row[5])) == (final, maximum)
        assert 0 <= final <= maximum
        assert float(row[6]) > 0
    assert float(rows[1][5]) < 1e-3  # dt = 0.02 conserves energy well
    failed = rows[3]
    assert failed[7].startswith("SimulationError: step 1: body 0 would turn by π/2 or more in one step")
    assert "above the safe fraction" in failed[8]  # the run's warning, from the worker
    assert sorted(path.name for path in out.iterdir()) == sorted(FOLDERS + [SWEEP_CSV])
    assert (out / FOLDERS[2] / "energy.csv").is_file()  # what the failed run wrote is kept


@pytest.mark.parametrize("point", sorted(ALONE))
def test_point_is_identical_to_the_run_made_alone(swept, point):
    out, _, runs_alone = swept
    alone, folder = runs_alone[point], out / FOLDERS[point]
    assert (folder / "energy.csv").read_bytes() == (alone / "energy.csv").read_bytes()
    files = sorted(path.relative_to(alone) for path in alone.rglob("*") if path.is_file())
    assert files == sorted(path.relative_to(folder) for path in folder.rglob("*") if path.is_file())
    for name in files:
        if name.name != "checkpoint.npz":  # it names the scene file as given
            assert (folder / name).read_bytes() == (alone / name).read_bytes(), name


def test_rerun_skips_the_points_done_and_runs_the_others(swept, tmp_path):
    out = copy_of(swept, tmp_path)
    before = read_csv(out / SWEEP_CSV)
    stamps = {name: (out / name / "energy.csv").stat().st_mtime_ns for name in FOLDERS}
    assert main(["sweep", PENDULUM, *FIXED, *GRID, "--workers", "1", "--out", str(out), "--quiet"]) == 1
    after = read_csv(out / SWEEP_CSV)
    for k in (1, 2, 4):
        assert after[k] == before[k]  # kept, wall time included
        assert (out / FOLDERS[k - 1] / "energy.csv").stat().st_mtime_ns == stamps[FOLDERS[k - 1]]
    assert after[3][:4] == before[3][:4] and after[3][6] != before[3][6]  # the failed point ran again


def test_rerun_with_every_point_done_starts_no_cluster(swept, tmp_path, monkeypatch):
    out = copy_of(swept, tmp_path)
    monkeypatch.setattr(sweep_module, "local_cluster", no_cluster)
    before = read_csv(out / SWEEP_CSV)
    assert main(["sweep", PENDULUM, *FIXED, "--grid", "simulation.dt=[0.02]", "--grid",
                 "simulation.integrator=[rrp,rrp2]", "--out", str(out), "--quiet"]) == 0
    assert read_csv(out / SWEEP_CSV) == [before[0], before[1], before[2]]  # the points of this sweep
    grids = ["simulation.dt=[0.02]", "simulation.integrator=[rrp]"]
    same = plan_sweep(PENDULUM, grids, out, FIXED[1::2])
    assert same.points[0].folder == FOLDERS[0] and sweep_module.pending_points(same)[1] == []
    changed = plan_sweep(PENDULUM, grids, out, FIXED[1::2] + ["simulation.t_end=3"])  # another run
    assert sweep_module.pending_points(changed)[1] == list(changed.points)


@pytest.mark.parametrize("grids, message", [
    (["simulation.dtt=[0.02]"], "--grid simulation.dtt=[0.02]: value 0.02: {scene}: simulation.dtt: unknown key"),
    (["simulation.dt=[0.02,-1]"],
     "--grid simulation.dt=[0.02,-1]: value -1: {scene}: simulation.dt: must be positive, got -1"),
    (["simulation.dt=[0.02]", "simulation.integrator=[rrp,rk4]"],
     "--grid simulation.integrator=[rrp,rk4]: value 'rk4': {scene}: simulation.integrator: must be one of"),
    (["simulation.dt=[0.5,1]", "simulation.t_end=[0.8,2]"],
     ("--grid simulation.dt=[0.5,1] --grid simulation.t_end=[0.8,2]: point simulation.dt=1, simulation.t_end=0.8: "
      "{scene}: simulation.dt: must be smaller than simulation.t_end = 0.8, got 1")),
    (["pendulum.3.mass=[1,2]"],
     "--grid pendulum.3.mass=[1,2]: value 1: pendulum.3: no element 3 (the list has 1)"),
    (["simulation.dt=0.02"], "--grid simulation.dt=0.02: the values must be a list [v1,v2,...]"),
    (["simulation.dt=[]"], "--grid simulation.dt=[]: the list of values is empty"),
    (["simulation.dt=[0.02,2e-2]"], "--grid simulation.dt=[0.02,2e-2]: the value 0.02 appears twice"),
    (["simulation.dt"], "--grid simulation.dt: expected KEY=[v1,v2,...]"),
    (["simulation.dt=[0.02]", "simulation.dt=[0.01]"], "--grid simulation.dt: the key is given twice"),
    (["output.dir=[a,b]"], "--grid output.dir=[a,b]: the sweep chooses each point's folder"),
])
def test_bad_grid_stops_before_anything_starts(tmp_path, capsys, monkeypatch, grids, message):
    pytest.importorskip("distributed")
    monkeypatch.setattr(sweep_module, "local_cluster", no_cluster)
    out = tmp_path / "never"
    arguments = [item for grid in grids for item in ("--grid", grid)]
    assert main(["sweep", PENDULUM, *arguments, "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("dem: error: " + message.format(scene=PENDULUM)), error
    assert not out.exists()


def test_bad_scheduler_address_writes_nothing(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(sweep_module, "CONNECT_TIMEOUT", "1s")
    out = tmp_path / "never"
    assert main(["sweep", PENDULUM, "--grid", "simulation.dt=[0.02]", "--scheduler", "tcp://127.0.0.1:1",
                 "--out", str(out), "--quiet"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("dem: error: --scheduler tcp://127.0.0.1:1: cannot connect")
    assert not out.exists()


def test_without_dask_sweep_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed raises ImportError
    assert main(["sweep", PENDULUM, "--grid", "simulation.dt=[0.02]", "--out", str(tmp_path / "never")]) == 2
    assert capsys.readouterr().err == ('dem: error: sweep needs Dask, which is not installed: pip install '
                                       '"dask[distributed]"  (in dem\'s repository: pip install ".[dask]")\n')
    assert not (tmp_path / "never").exists()


def test_dem_does_not_import_dask_unless_it_sweeps():
    code = ("import sys; from dem.cli import _parser; _parser().parse_args(['sweep', 'x', '--out', 'y']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"


def test_grid_values_folder_names_and_toml_text():
    grid = parse_grid("fields.gravity=[[0,0,-1], [0.0,0,-2.5]]")
    assert grid.values == ([0, 0, -1], [0.0, 0, -2.5])
    overrides = (f"fields.gravity={toml_text(grid.values[1])}",)
    assert overrides == ("fields.gravity=[0.0, 0, -2.5]",)
    name = folder_name((grid,), (grid.values[1],), overrides)
    assert name.startswith("fields.gravity=_0.0,0,-2.5_-") and len(name) == len("fields.gravity=_0.0,0,-2.5_-") + 8
    assert parse_grid("simulation.integrator=[rrp, rrp2,]").values == ("rrp", "rrp2")
    assert parse_grid('a.b=["x y", 1e-5, true]').values == ("x y", 1e-5, True)
    assert toml_text('quote " and \\ and \x7f') == '"quote \\" and \\\\ and \\u007f"'


@pytest.fixture
def dask_scheduler_and_worker(tmp_path):
    """A real ``dask scheduler`` on a free loopback port and one ``dask worker`` process; yields
    the scheduler's address and stops both (their process groups) afterwards."""
    pytest.importorskip("distributed")
    scheduler_file = tmp_path / "scheduler.json"
    common = {"cwd": tmp_path, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    processes = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                   "--no-dashboard", "--scheduler-file", str(scheduler_file)], **common)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.is_file() or not scheduler_file.read_text():
            assert time.monotonic() < deadline and processes[0].poll() is None, "the dask scheduler did not start"
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        # the worker imports the dem that these tests import (and finds its numba cache)
        path = os.pathsep.join(filter(None, [str(Path(dem.__file__).parents[1]), os.environ.get("PYTHONPATH")]))
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
             "--host", "127.0.0.1"], env={**os.environ, "NUMBA_NUM_THREADS": "1", "PYTHONPATH": path}, **common))
        yield address
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def test_sweep_on_a_running_dask_scheduler(dask_scheduler_and_worker, tmp_path):
    out = tmp_path / "sweep"
    assert main(["sweep", PENDULUM, *FIXED, "--grid", "simulation.dt=[0.02,0.04]", "--scheduler",
                 dask_scheduler_and_worker, "--out", str(out), "--quiet"]) == 0
    rows = read_csv(out / SWEEP_CSV)
    assert rows[0] == HEADER[:1] + HEADER[2:]
    assert [row[:3] for row in rows[1:]] == [["0.02", "simulation.dt=0.02", "ok"], ["0.04", "simulation.dt=0.04", "ok"]]
    assert all((out / row[1] / "checkpoint.npz").is_file() for row in rows[1:])


def test_slurm_example_compiles_and_explains_itself(tmp_path):
    py_compile.compile(str(SLURM_SCRIPT), cfile=str(tmp_path / "sweep_slurm.pyc"), doraise=True)
    result = subprocess.run([sys.executable, str(SLURM_SCRIPT), "--help"], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0 and "dask-jobqueue" in result.stdout
