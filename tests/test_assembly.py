"""Assemblies (docs/theory.md §5): parallel kernels against brute-force references, conservation in free
flight, and an energy budget that closes with breakage and damping booked."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from support.granule import granule_file
from support.reference_laws import REFERENCE

from dem import Simulation
from dem.diagnostics import energy_budget
from dem.engine import compute_forces
from dem.runner import prepare, run



@pytest.fixture
def scene_file(tmp_path):
    return granule_file(tmp_path)


def brute_force_forces(model, state):
    """Hertz (all pairs, O(N²)), walls and binders from the docs/theory.md §3 formulas, in numpy."""
    loads = [REFERENCE[name](model, state) for name in ("binder", "hertz_pp", "hertz_pw")]
    return sum(load[1] for load in loads), sum(load[2] for load in loads)


def test_parallel_kernels_equal_brute_force(scene_file):
    _, model, state, _ = prepare(scene_file)
    assert model.n_bodies > 300 and len(set(np.round(model.diameter, 6))) > 100  # polydisperse
    rng = np.random.default_rng(5)
    state.position += 0.02 * rng.normal(size=state.position.shape)  # overlaps and stretched bonds
    state.position[:, 0] -= 0.65  # pressed into the wall
    state.orientation[:] = Rotation.from_rotvec(0.05 * rng.normal(size=(model.n_bodies, 3))).as_quat()[:, [3, 0, 1, 2]]
    compute_forces(model, state, parallel=True)
    force, moment = brute_force_forces(model, state)
    scale = np.abs(force).max()
    assert scale > 1.0
    assert np.abs(state.force - force).max() < 1e-11 * scale
    assert np.abs(state.moment - moment).max() < 1e-11 * np.abs(moment).max()


def test_free_flight_conserves_momenta(scene_file):
    """The serial loop (the parallel one steps to the same bits: test_parallel.py)."""
    _, model, state, _ = prepare(scene_file, ["walls=[]"])
    sim = Simulation(model, state, "rrp2", 1e-3)
    start = energy_budget(model, state)
    sim.advance(500)
    end = sim.energy_budget()
    for names in (("Px", "Py", "Pz"), ("Lx", "Ly", "Lz")):
        before = np.array([start[k] for k in names])
        after = np.array([end[k] for k in names])
        assert np.abs(after - before).max() < 1e-12 * np.linalg.norm(before)
    assert end["hertz_pp"] > 0  # the spinning granule's particles do touch


def max_budget_error(scene_file, tmp_path, dt):
    sim, out = run(scene_file, [f"simulation.dt={dt}", "contact.restitution=0.6", "breakage.tension=0.003",
                                "breakage.shear=0.003", "output.vtk_every=0", "output.log_every=5"],
                   tmp_path / f"run{dt}", quiet=True)
    rows = np.genfromtxt(out / "energy.csv", delimiter=",", names=True)
    booked = rows["broken"][-1] + rows["dissipated"][-1]
    return np.abs(rows["total"] - rows["total"][0]).max() / rows["total"][0], booked / rows["total"][0], sim


def test_energy_budget_closes_with_breakage_and_damping(scene_file, tmp_path):
    coarse, booked, sim = max_budget_error(scene_file, tmp_path, 1e-3)
    fine, _, _ = max_budget_error(scene_file, tmp_path, 5e-4)
    assert np.count_nonzero(sim.state.interactions["binder"].broken) > 10 and booked > 0.05  # energy really left the budget
    assert coarse < 5e-3 and fine < coarse  # closes to the integrator's error, which falls with dt
