"""The RRP maps of docs/theory.md §2: exactness for a free spinning sphere, conservation and
convergence on seed 001's 3-D pendulum (Fig. 1)."""

import csv

import numpy as np
import pytest

from dem import SystemBuilder, Simulation
from dem.runner import run
from dem.diagnostics import energy_budget
from dem.rotations import quat_from_rotvec, quat_matrix

PENDULUM = "scenes/pendulum.toml"


def read_log(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return {key: np.array([float(r[key]) for r in rows]) for key in rows[0]}


@pytest.mark.parametrize("integrator, angle_per_step", [
    ("rrp2", lambda h, w: 2 * np.arctan(h * w / 2)),   # Δα = hΩ, |θ| = 2 atan(|Δα|/2)
    ("rrp", lambda h, w: np.arcsin(h * w)),             # Δα = 2hΩ/(1+√(1−h²Ω²)), |θ| = asin(h|Ω|)
    ("rrp1", lambda h, w: 2 * np.arctan(h * w / 2)),
])
def test_free_sphere_spins_exactly(integrator, angle_per_step):
    omega = np.array([30.0, -40.0, 0.0])  # |Ω| = 50 rad/s
    system = SystemBuilder()
    system.add_body((1.0, 2.0, 3.0), mass=2.0, inertia=0.7, velocity=(0.5, 0, 0), angular_velocity=omega, diameter=1.0)
    model, state = system.finish()
    sim = Simulation(model, state, integrator, dt=1e-3)
    before = energy_budget(model, state)
    n_steps = 100_000
    sim.advance(n_steps)
    after = energy_budget(model, state)

    matrix = quat_matrix(state.orientation[0])
    assert np.abs(matrix.T @ matrix - np.eye(3)).max() < 1e-12
    assert np.array_equal(state.angular_velocity[0], omega)
    assert abs(after["total"] - before["total"]) <= 1e-14 * before["total"]
    assert np.abs(state.position[0] - (np.array([1.0, 2, 3]) + n_steps * 1e-3 * np.array([0.5, 0, 0]))).max() < 1e-9
    # the orientation has turned about Ω by n_steps times the map's per-step angle
    turned = n_steps * angle_per_step(1e-3, 50.0)
    expected = quat_matrix(quat_from_rotvec(turned * omega / 50.0))
    assert np.abs(matrix - expected).max() < 1e-8


def pendulum_log(tmp_path, integrator, dt):
    out = tmp_path / f"{integrator}_{dt}"
    run(PENDULUM, [f"simulation.integrator={integrator}", f"simulation.dt={dt}", "output.log_every=1"], out, quiet=True)
    return read_log(out / "energy.csv")


@pytest.mark.parametrize("integrator", ["rrp2", "rrp", "rrp1"])
def test_pendulum_invariants_to_round_off(tmp_path, integrator):
    log = pendulum_log(tmp_path, integrator, 0.01)
    assert len(log["t"]) == 1001 and log["t"][-1] == pytest.approx(10.0)
    assert np.abs(log["rho_norm"] - 1.0).max() < 1e-13
    assert np.abs(log["rho_dot_omega"]).max() < 1e-13
    # the pendulum really swings: the invariants are not trivially constant
    assert np.ptp(log["gravity"]) > 1e-3


@pytest.mark.parametrize("integrator, order", [("rrp2", 2.0), ("rrp", 2.0), ("rrp1", 1.0)])
def test_pendulum_energy_error_order(tmp_path, integrator, order):
    steps = (0.02, 0.01, 0.005)
    errors = []
    for dt in steps:
        log = pendulum_log(tmp_path, integrator, dt)
        errors.append(np.abs(log["total"] - log["total"][0]).max())
    observed = np.log(errors[0] / errors[2]) / np.log(steps[0] / steps[2])
    assert abs(observed - order) < 0.1, (errors, observed)


def test_rrp_stops_when_the_increment_reaches_a_quarter_turn(tmp_path):
    from dem import SimulationError

    system = SystemBuilder()
    system.add_body((0, 0, 0), mass=1.0, inertia=1.0, angular_velocity=(0, 0, 2000.0))
    model, state = system.finish()
    with pytest.raises(SimulationError, match=r"body 0 .*reduce simulation.dt"):
        Simulation(model, state, "rrp", dt=1e-3).advance(1)
