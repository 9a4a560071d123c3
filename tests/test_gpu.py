"""The step on a GPU (`dem.gpu`, ``device = "cuda"``), checked without one: numba-cuda's simulator
runs the GPU loop's kernels on the CPU, and they give the CPU loop's bits (the same compiled
functions, in the same order; on a real GPU the compiler's fused multiply-adds make the
differences round-off, `tools/gpu_check.py`); a run moves between CPU and GPU through its
checkpoint, bit for bit; every kernel the loop launches compiles for the GPU (PTX, no driver; in
the slow suite); what the GPU does not run is refused in one line naming ``simulation.device``.
The simulator must be chosen before numba-cuda is imported, so those runs are processes of their
own."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_restart import assert_same_run, outputs

from dem.runner import run

ROOT = Path(__file__).resolve().parents[1]
TORUS = str(ROOT / "scenes/torus_impact.toml")
SIMULATED = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
try:
    import numba_cuda  # noqa: F401
    HAVE_NUMBA_CUDA = True
except ImportError:
    HAVE_NUMBA_CUDA = False
needs_numba_cuda = pytest.mark.skipif(not HAVE_NUMBA_CUDA, reason="needs the gpu extra: pip install '.[gpu]'")


def simulated(*arguments, cwd=ROOT):
    done = subprocess.run([sys.executable, *arguments], capture_output=True, text=True, env=SIMULATED, cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@needs_numba_cuda
def test_restart_moves_between_cpu_and_gpu(tmp_path):
    """The torus (bonds, contact sub-steps, a plane) run 20 steps on the CPU, 5 on the GPU from its
    checkpoint and 10 on the CPU again: every log line, snapshot and checkpoint array as the CPU's
    run alone."""
    settings = ["output.vtk_every=5", "output.log_every=5"]
    alone = tmp_path / "alone"
    run(TORUS, ["simulation.t_end=0.035", *settings], alone, quiet=True)
    moved = tmp_path / "moved"
    run(TORUS, ["simulation.t_end=0.02", *settings], moved, quiet=True)
    simulated("-m", "dem", "run", TORUS, "--quiet", "--device", "cuda", "--set", "simulation.t_end=0.025",
              *[word for setting in settings for word in ("--set", setting)], "--out", str(moved), "--restart",
              str(moved / "checkpoint.npz"))
    run(TORUS, ["simulation.t_end=0.035", *settings], moved, quiet=True, restart=moved / "checkpoint.npz")
    assert_same_run(outputs(alone), outputs(moved))


@needs_numba_cuda
@pytest.mark.parametrize("case", ["periodic", pytest.param("sticky", marks=pytest.mark.slow)])
def test_frictional_pile_is_the_cpus(tmp_path, case):
    """The frictional pile of `tools/bench.py`, periodic in x and y (Mindlin friction, rolling and
    twisting springs in the pair and wall histories, a floor, gravity, nearest images), 12 steps
    from its start (the springs are loaded by then): its neighbour list built on the device, its
    histories carried, the same bits as the CPU's; in the slow suite the pile with JKR adhesion,
    40 steps (walled: the formed flags, the hysteresis)."""
    files = {device: tmp_path / f"{device}.npz" for device in ("cpu", "cuda")}
    steps = "12" if case == "periodic" else "40"
    for device, path in files.items():
        simulated("tools/gpu_check.py", "--case", case, "--device", device, "--n", "60", "--steps", steps,
                  "--start", "0", "--save", str(path))
    cpu, gpu = (np.load(files[device]) for device in ("cpu", "cuda"))
    for name in ("position", "velocity", "omega", "values"):
        assert np.array_equal(cpu[name], gpu[name]), name
    budget = dict(zip(cpu["names"], cpu["values"]))
    assert budget["tangential"] > 0.0  # the springs were loaded
    assert budget["rolling"] > 0.0 if case == "periodic" else budget["adhesion"] < 0.0 < budget["hysteresis"]


@needs_numba_cuda
@pytest.mark.slow
@pytest.mark.parametrize("case", ["torus", "pile"])
def test_every_kernel_compiles_for_the_gpu(tmp_path, case):
    """Each kernel the loop launches (recorded on the simulator with its argument types) compiles to
    PTX: the CUDA target types and lowers what the CPU's kernels do (the torus: contact sub-steps,
    bonds, the walls' sums; the frictional pile: the contact pipeline's update and rows). Slow: NVVM
    takes 20–30 s a case on 2 cores."""
    signatures = tmp_path / "signatures.pkl"
    simulated("tests/support/gpu_kernels.py", "record", str(signatures), case, "60", "8")
    done = subprocess.run([sys.executable, "tests/support/gpu_kernels.py", "compile", str(signatures)],
                          capture_output=True, text=True, cwd=ROOT)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines and all(line.endswith(" ok") for line in lines), done.stdout + done.stderr
    assert {"before", "rows", "after"} <= {line.split()[0] for line in lines}


def test_refused_in_one_line(tmp_path):
    """What the GPU does not run, or a machine without one, stops the run before anything is
    written, with one line naming the key."""
    silo = subprocess.run([sys.executable, "-m", "dem", "run", str(ROOT / "scenes/silo_discharge.toml"), "--device",
                           "cuda", "--out", str(tmp_path / "silo")], capture_output=True, text=True, env=SIMULATED)
    assert silo.returncode == 2 and not (tmp_path / "silo").exists()
    assert "simulation.device: interaction 'insertion' does not run on the GPU yet" in silo.stderr
    if HAVE_NUMBA_CUDA:
        from numba import cuda
        if cuda.is_available():
            return  # (a machine with a GPU runs it)
    bare = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    torus = subprocess.run([sys.executable, "-m", "dem", "run", TORUS, "--device", "cuda", "--out",
                            str(tmp_path / "torus")], capture_output=True, text=True, env=bare)
    assert torus.returncode == 2 and not (tmp_path / "torus").exists()
    error = [line for line in torus.stderr.splitlines() if line.startswith("dem: error:")]
    assert len(error) == 1 and "simulation.device:" in error[0]
    assert ("no CUDA GPU found" in error[0]) if HAVE_NUMBA_CUDA else ("pip install '.[gpu]'" in error[0])
