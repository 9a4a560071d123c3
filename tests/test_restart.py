"""Long runs: exact restart from checkpoints, clean stop on SIGTERM, stability guards."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
from support.feeding import pour_file
from support.granule import granule_file
from support.surfaces import rig_file

from dem.checkpoint import load_checkpoint
from dem.cli import main
from dem.runner import run

ROOT = Path(__file__).resolve().parents[1]
TORUS = str(ROOT / "scenes/torus_impact.toml")



def outputs(folder):
    """Everything a run leaves that must match bit for bit."""
    checkpoint = load_checkpoint(folder / "checkpoint.npz")
    pvd = {series: (folder / f"{series}.pvd").read_text() for series in ("particles", "bonds", "walls", "meshes")
           if (folder / f"{series}.pvd").exists()}
    logs = {name: (folder / name).read_text() for name in ("energy.csv", "walls.csv", "cell.csv", "flow.csv")
            if (folder / name).exists()}
    return logs, pvd, checkpoint


def assert_same_run(first, second):
    log1, pvd1, checkpoint1 = first
    log2, pvd2, checkpoint2 = second
    assert log1 == log2
    assert pvd1 == pvd2
    assert checkpoint1.keys() == checkpoint2.keys()
    for name in checkpoint1:  # state, the interactions' own arrays, scheme state, contact table
        if name.startswith(("state_", "interaction.", "scheme.", "contacts.")):
            assert np.array_equal(checkpoint1[name], checkpoint2[name]), name
    assert int(checkpoint1["step"]) == int(checkpoint2["step"])


#: "sticky" (JKR adhesion with friction: a loop of five interactions that only this check compiles) is slow
@pytest.mark.parametrize("case", ["torus", "assembly", pytest.param("sticky", marks=pytest.mark.slow), "rig",
                                  "delayed", "periodic", "sheared", "filling"])
def test_restart_is_exact(tmp_path, case):
    scene = TORUS
    settings = ["simulation.t_end=1.5", "output.vtk_every=100"]
    if case in ("assembly", "sticky"):
        scene = granule_file(tmp_path)
        settings = ["simulation.t_end=0.6", "output.vtk_every=100", "contact.restitution=0.7",
                    "breakage.tension=0.005", "breakage.shear=0.01"]
    if case == "sticky":  # JKR contacts with friction: formed flags in the pair history and per plane
        settings += ["contact.normal='jkr'", "contact.work_of_adhesion=0.5", "contact.friction=0.5"]
    if case == "rig":  # moving, servo and mesh walls, damping
        scene = rig_file(tmp_path)
        settings = ["simulation.t_end=0.8", "output.vtk_every=100"]
    if case == "delayed":  # the rig's moving plane and mesh start after the restart (the mesh between two steps)
        scene = rig_file(tmp_path)
        settings = ["simulation.t_end=0.8", "output.vtk_every=100", "walls.1.start=0.65", "mesh.0.start=0.7003"]
    if case == "periodic":  # frictional contacts through the faces of a periodic cell
        scene = str(ROOT / "scenes/granular_gas.toml")
        settings = ["simulation.t_end=0.6", "output.vtk_every=200", "contact.friction=0.5",
                    "contact.rolling_friction=0.1"]
    if case == "sheared":  # Lees-Edwards shear along xy, xz and yz with a servoed edge: the lattice, rates, list
        scene = str(ROOT / "scenes/simple_shear.toml")
        settings = ["simulation.t_end=1.2", "output.vtk_every=200", "output.log_every=100",
                    "cell.shear_rate=[0.5, 0.3, 0.5]"]
    if case == "filling":  # insertion and an outlet: parked bodies, counts, books, the list rebuilt between steps
        scene = pour_file(tmp_path)
        settings = ["simulation.t_end=1.5"]
    straight, pieces = tmp_path / "straight", tmp_path / "pieces"
    run(scene, settings, straight, quiet=True)
    # on the VTK grid: a run snapshots its last step
    stop = {"torus": "0.7", "assembly": "0.3", "sticky": "0.3", "rig": "0.6", "delayed": "0.6", "periodic": "0.3",
            "sheared": "0.5", "filling": "0.75"}[case]
    run(scene, settings + [f"simulation.t_end={stop}"], pieces, quiet=True)
    sim, _ = run(scene, settings, pieces, quiet=True, restart=pieces / "checkpoint.npz")
    assert_same_run(outputs(straight), outputs(pieces))
    if case == "assembly":
        assert np.count_nonzero(sim.state.interactions["binder"].broken) > 0  # breakage happened, before and after the restart
        assert float(outputs(straight)[0]["energy.csv"].splitlines()[-1].split(",")[13]) > 0  # dissipated energy booked
    if case == "sticky":  # contacts formed, and some broke, before and after the restart
        assert sim.state.interactions["adhesive_pw"].adhered.any()
        assert sim.energy_budget()["hysteresis"] > 0
    if case == "periodic":  # pairs across the faces carried springs over the restart
        assert sim.energy_budget()["friction"] > 0
    if case == "filling":  # particles entered before and after the restart, and left after it
        flow = np.genfromtxt(pieces / "flow.csv", delimiter=",", names=True)
        assert flow["inserted_0"][flow["t"] < 0.75][-1] > 100 and flow["removed_0"][-1] > 0
    if case == "sheared":  # the servo moved the edge, the tilt wrapped past half an edge, the cell drove it
        log = np.genfromtxt(pieces / "cell.csv", delimiter=",", names=True)
        assert len(set(log["rate_yy"])) > 1 and log["tilt_xy"][-1] < 0 < log["tilt_xy"].max()
        assert log["tilt_yz"][-1] < 0 < log["tilt_yz"].max()
        assert sim.energy_budget()["cell"] < 0
    if case == "rig":
        walls = sim.state.interactions["walls"]
        assert np.abs(walls.load[1:, :3]).max(axis=1).min() > 0 and walls.work.sum() < 0  # the moving walls pushed
    if case == "delayed":  # the plane and the plate moved from their starts on (velocities: −1 along x, −0.5 along z)
        walls = sim.state.interactions["walls"]
        assert walls.point[1, 0] == pytest.approx(9.6 - 1.0 * (0.8 - 0.65), abs=1e-12)
        assert walls.point[3, 2] == pytest.approx(sim.model.interactions["walls"].point[3, 2] - 0.5 * (0.8 - 0.7003),
                                                  abs=1e-12)


def test_restart_after_a_stop_request_drops_later_rows(tmp_path):
    """A run stopped mid-way (checkpoint at the stop) and restarted equals an uninterrupted one."""
    from dem.simulation import Simulation

    straight, pieces = tmp_path / "straight", tmp_path / "pieces"
    settings = ["simulation.t_end=1.2", "output.checkpoint_every=500"]
    run(TORUS, settings, straight, quiet=True)

    original_advance = Simulation._advance
    requested = []

    def advance_then_stop(self, n_steps, every):
        original_advance(self, n_steps, every)
        if self.state.step >= 640 and not requested:
            requested.append(self.state.step)  # (700: chunks end at the snapshots, every 100 steps)
            self.request_stop("SIGTERM")

    Simulation._advance = advance_then_stop
    try:
        sim, _ = run(TORUS, settings, pieces, quiet=True)
    finally:
        Simulation._advance = original_advance
    assert sim.stop_requested and sim.state.step == requested[0] == 700  # honoured before the next chunk
    run(TORUS, settings, pieces, quiet=True, restart=pieces / "checkpoint.npz")
    assert_same_run(outputs(straight), outputs(pieces))


def test_sigterm_leaves_valid_outputs_and_a_checkpoint_that_restarts(tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "dem", "run", TORUS, "--out", str(out), "--quiet",
               "--set", "simulation.t_end=200", "--set", "output.vtk_every=500"]
    # run from the repository (as `python -m dem` would be), sharing this process's compiled kernels
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    log = out / "energy.csv"
    deadline = time.monotonic() + 600
    while (not log.exists() or log.read_text().count("\n") < 50) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.kill(process.pid, signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr
    assert "stopped by SIGTERM" in stderr and "--restart" in stderr and "Traceback" not in stderr
    lines = log.read_text().splitlines()
    assert all(len(line.split(",")) == len(lines[0].split(",")) for line in lines)
    steps = [int(line.split(",")[0]) for line in lines[1:]]
    assert steps == sorted(steps) and steps[-1] < 200_000
    for series in ("particles", "bonds", "walls"):
        files = [d.get("file") for d in ElementTree.parse(out / f"{series}.pvd").getroot().iter("DataSet")]
        assert files and all((out / name).exists() for name in files)
    checkpoint = load_checkpoint(out / "checkpoint.npz")
    assert steps[-1] <= int(checkpoint["step"]) < 200_000
    code = main(["run", TORUS, "--out", str(out), "--quiet", "--restart", str(out / "checkpoint.npz"),
                 "--set", f"simulation.t_end={int(checkpoint['step']) * 1e-3 + 0.5}", "--set", "output.vtk_every=500"])
    assert code == 0
    resumed = [int(line.split(",")[0]) for line in log.read_text().splitlines()[1:]]
    assert resumed[: len(steps)] == steps and resumed == sorted(set(resumed))


def test_too_large_a_step_is_warned_about_and_stopped_when_it_blows_up(tmp_path, capsys):
    code = main(["run", TORUS, "--out", str(tmp_path / "run"), "--quiet", "--set", "simulation.dt=5e-3",
                 "--set", "simulation.energy_tolerance=0.05"])
    err = capsys.readouterr().err
    assert "simulation.dt" in err and "safe fraction" in err  # warned before the start
    assert code == 1
    assert "run stopped" in err and "energy error" in err and "fastest body" in err and "critical time step" in err
    assert (tmp_path / "run" / "checkpoint.npz").exists() and (tmp_path / "run" / "energy.csv").exists()


def test_a_blow_up_stops_by_default_and_names_the_step_against_the_critical_one(tmp_path, capsys):
    """dt = 0.008 is 1.8× the torus' critical step: the energy explodes; the default guard (ten
    times the initial energy scale) stops the run with exit 1 and keeps what was written."""
    out = tmp_path / "run"
    code = main(["run", TORUS, "--out", str(out), "--quiet", "--set", "simulation.dt=0.008"])
    err = capsys.readouterr().err
    assert code == 1
    assert "went unstable" in err and "simulation.dt = 0.008 is 1.8 × the critical time step" in err
    assert "reduce it, to at most" in err
    rows = np.genfromtxt(out / "energy.csv", delimiter=",", names=True)
    assert rows["step"][-1] < 1000  # stopped within a second of simulated time, not at t_end = 35
    assert abs(rows["total"][-1] - rows["total"][0]) > 10 * rows["total"][0]  # the row that set it off is kept
    assert f"step {int(rows['step'][-1])} (t = " in err  # and the message names it
    # the rows are sampled in the loop, which returns at the snapshots (every 100 steps): the final
    # checkpoint holds the step the run had reached, the end of the row's interval
    assert int(load_checkpoint(out / "checkpoint.npz")["step"]) == 100 * np.ceil(rows["step"][-1] / 100)


def test_the_default_guard_lets_a_stable_run_finish(tmp_path):
    """The shipped torus at its own dt, well past first impact: the guard never fires."""
    assert main(["run", TORUS, "--out", str(tmp_path / "run"), "--quiet", "--set", "simulation.t_end=5"]) == 0


def test_non_finite_state_is_caught(tmp_path, capsys):
    code = main(["run", TORUS, "--out", str(tmp_path / "run"), "--quiet", "--set", "simulation.dt=2e-2",
                 "--set", "simulation.t_end=20", "--set", "simulation.energy_tolerance=0"])  # (guard off)
    err = capsys.readouterr().err
    assert code == 1 and "non-finite" in err and "body" in err and "critical time step" in err


def test_restart_of_a_finished_run_needs_a_later_end(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", TORUS, "--out", str(out), "--quiet", "--set", "simulation.t_end=0.2"]) == 0
    code = main(["run", TORUS, "--out", str(out), "--quiet", "--set", "simulation.t_end=0.2",
                 "--restart", str(out / "checkpoint.npz")])
    assert code == 2 and "simulation.t_end" in capsys.readouterr().err


def test_a_checkpoint_of_another_format_is_refused_clearly(tmp_path, capsys):
    """Checkpoints written before the interaction redesign (format 1: bond flags in the model,
    no keyed contact table) are refused, not misread."""
    old = tmp_path / "old.npz"
    np.savez(old, format=1, step=10, state_position=np.zeros((80, 3)))
    code = main(["run", TORUS, "--out", str(tmp_path / "run"), "--quiet", "--restart", str(old)])
    err = capsys.readouterr().err
    assert code == 2 and "checkpoint format 1" in err and "rerun the scene from the start" in err
    assert not (tmp_path / "run").exists()


def test_a_checkpoint_of_the_separate_wall_interactions_restores_into_the_wall_pipeline():
    """Checkpoints written while hertz_pw (adhesive_pw), friction_pw and rolling_pw acted one after the
    other give contact_pw's (adhesive_contact_pw's) state (their slots side by side); slots that differ are
    not merged."""
    from dem.interactions.wall_contact import separate_wall_states

    rng = np.random.default_rng(1)
    keys = rng.integers(-1, 3, size=(6, 4)).astype(np.int32)
    previous = rng.normal(size=(6, 4, 4))
    old = {"interaction.hertz_pw.dissipated": rng.normal(size=6)}
    for name, width in (("friction_pw", 3), ("rolling_pw", 4)):
        old.update({f"interaction.{name}.{field}": value for field, value in (
            ("friction", rng.normal(size=6)), ("dissipated", rng.normal(size=6)), ("wall_key", keys),
            ("wall_spring", rng.normal(size=(6, 4, width))), ("mesh_contact", previous))})
    new = separate_wall_states(old)
    assert np.array_equal(new["dissipated"], old["interaction.hertz_pw.dissipated"])
    for part, name in (("tangential", "friction_pw"), ("rolling", "rolling_pw")):
        assert np.array_equal(new[f"{part}_friction"], old[f"interaction.{name}.friction"])
        assert np.array_equal(new[f"{part}_dissipated"], old[f"interaction.{name}.dissipated"])
    assert np.array_equal(new["wall_spring"], np.concatenate((old["interaction.friction_pw.wall_spring"],
                                                              old["interaction.rolling_pw.wall_spring"]), axis=2))
    assert np.array_equal(new["wall_key"], keys) and np.array_equal(new["mesh_contact"], previous)
    assert "mesh_load" not in new  # scratch: not in checkpoints
    adhesive = {key.replace("hertz_pw", "adhesive_pw"): value for key, value in old.items()}
    adhesive["interaction.adhesive_pw.adhered"] = rng.integers(0, 2, size=(6, 2)).astype(np.uint8)
    adhesive["interaction.adhesive_pw.hysteresis"] = rng.normal(size=6)
    converted = separate_wall_states(adhesive, normal="adhesive_pw")  # adhesive_contact_pw's
    assert np.array_equal(converted["dissipated"], old["interaction.hertz_pw.dissipated"])
    for field in ("adhered", "hysteresis"):
        assert converted[field] is adhesive[f"interaction.adhesive_pw.{field}"]
    old["interaction.rolling_pw.wall_key"] = np.roll(keys, 1, axis=1)
    assert separate_wall_states(old) == {}


def test_validate_prints_what_it_builds_and_writes_nothing(tmp_path, capsys):
    assert main(["validate", TORUS, "--out", str(tmp_path / "x")]) == 0
    out = capsys.readouterr().out
    assert "bodies       80" in out and "bonds        80" in out and "critical time step" in out and "memory" in out
    assert not (tmp_path / "x").exists()
