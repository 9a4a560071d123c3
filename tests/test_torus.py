"""The particle–binder torus of seed 001 §4.1: builder geometry, free flight (momenta to
round-off) and the reference impact against the wall (bounce, energy error, tangential momentum)."""

import csv

import numpy as np
import pytest

from dem import Simulation
from dem.runner import prepare, run
from dem.diagnostics import energy_budget

SCENE = "scenes/torus_impact.toml"


def read_log(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return {key: np.array([float(r[key]) for r in rows]) for key in rows[0]}


def test_builder_makes_a_touching_bonded_ring():
    _, model, state, _ = prepare(SCENE)
    n = 80
    diameter = 3.0 * np.sin(np.pi / n)
    assert model.n_bodies == n and len(model.bonds) == n
    assert np.allclose(model.diameter, diameter)
    centre = np.array([1.5 + diameter / 2 + 0.5, 0, 0])
    assert np.allclose(np.linalg.norm(state.position - centre, axis=1), 1.5)
    assert np.allclose(state.position[:, 2], 0.0)
    assert np.allclose(model.bonds.rest_length, diameter)          # neighbours touch
    assert state.position[:, 0].min() - diameter / 2 == pytest.approx(0.5)  # first contact at t = 0.5
    assert np.allclose(state.velocity, [-1.0, 0, 0]) and not state.angular_velocity.any()
    assert np.allclose(state.orientation, [1.0, 0, 0, 0])


def test_builder_spins_the_ring_rigidly():
    omega = np.array([0.3, -0.2, 2.0])
    _, model, state, _ = prepare(SCENE, ["torus.0.angular_velocity=[0.3,-0.2,2.0]", "torus.0.velocity=[1,0,0]"])
    centre = state.position.mean(axis=0)
    assert np.allclose(state.velocity, [1.0, 0, 0] + np.cross(omega, state.position - centre))
    assert np.allclose(state.angular_velocity, omega)


@pytest.mark.parametrize("integrator", ["rrp2", "rrp", "rrp1"])
def test_free_flight_conserves_momenta_to_round_off(integrator):
    _, model, state, _ = prepare(SCENE, [
        "torus.0.velocity=[1,0,0]", "torus.0.angular_velocity=[0.5,0.3,2.0]", "walls=[]",
        f"simulation.integrator={integrator}",
    ])
    sim = Simulation(model, state, integrator, 1e-3)
    start = energy_budget(model, state)
    sim.advance(10_000)
    end = energy_budget(model, state)
    momentum = np.array([[row["P" + a] for a in "xyz"] for row in (start, end)])
    angular = np.array([[row["L" + a] for a in "xyz"] for row in (start, end)])
    assert np.abs(momentum[1] - momentum[0]).max() < 1e-12 * np.linalg.norm(momentum[0])
    assert np.abs(angular[1] - angular[0]).max() < 1e-12 * np.linalg.norm(angular[0])
    # the ring did deform (centrifugal loading starts it vibrating): the test is not trivial
    assert end["axial"] + end["shear"] + end["bending"] > 1e-3


def test_reference_impact(tmp_path):
    """rrp2, dt = 1e-3, t_end = 35: the torus bounces off deformed and vibrating; the maximum
    relative energy error stays below 3e-3; momentum tangent to the wall stays exact."""
    sim, _ = run(SCENE, ["output.vtk_every=0"], tmp_path, quiet=True)
    log = read_log(tmp_path / "energy.csv")
    assert log["t"][-1] == pytest.approx(35.0) and len(log["t"]) == 3501
    energy0 = log["total"][0]
    assert energy0 == pytest.approx(40.0)
    relative_error = np.abs(log["total"] - energy0) / energy0
    assert relative_error.max() < 3e-3
    # the bounce: wall contact happened, the ring moves away from the wall at the end
    assert log["hertz_pw"].max() > 0.1
    assert log["hertz_pw"][-100:].max() == 0.0
    assert log["Px"][-1] > 1.0 and sim.state.position[:, 0].min() > 1.0
    # deformed and vibrating: strain energy stays in the binders, and it oscillates
    strain = log["axial"] + log["shear"] + log["bending"]
    assert strain[-500:].min() > 0.01 and np.ptp(strain[-500:]) > 0.01
    # momentum tangent to the wall (y, z) stays exact
    assert np.abs(log["Py"]).max() < 1e-12 * 80 and np.abs(log["Pz"]).max() == 0.0
