"""General inertia (`lgvi`, docs/theory.md §2): agreement with `rrp` for spheres, the free asymmetric body,
rigid tetrahedron clusters and chains (seed 003), and the heavy top (seed 004)."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from dem import Simulation, SystemBuilder
from dem.builders.tetra_chain import TETRAHEDRON
from dem.runner import prepare
from dem.diagnostics import energy_budget
from dem.rotations import quat_matrix


def momenta(model, state):
    row = energy_budget(model, state)
    return np.array([row["P" + a] for a in "xyz"]), np.array([row["L" + a] for a in "xyz"]), row["total"]


def rigid_body_reference(inertia, rotation, omega, t_end, torque=None):
    """DOP853 on (R, ω): Ṙ = R S(ω), J ω̇ = Jω × ω + M(R)."""
    def rhs(_, y):
        r = y[:9].reshape(3, 3)
        w = y[9:]
        moment = np.zeros(3) if torque is None else torque(r)
        skew = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        return np.concatenate([(r @ skew).ravel(), (np.cross(inertia * w, w) + moment) / inertia])

    sol = solve_ivp(rhs, (0, t_end), np.concatenate([rotation.ravel(), omega]), method="DOP853", rtol=1e-13,
                    atol=1e-14)
    return sol.y[:9, -1].reshape(3, 3), sol.y[9:, -1]


def test_lgvi_equals_rrp_for_spherical_bodies():
    states = {}
    for integrator in ("rrp", "lgvi"):
        # the plane moved out of the ring's reach: test_respa's torus, the same interactions, compiled once
        _, model, state, _ = prepare("scenes/torus_impact.toml", [
            "torus.0.velocity=[1,0,0]", "torus.0.angular_velocity=[0.5,0.3,2.0]", "walls.0.point=[-50.0,0.0,0.0]"])
        Simulation(model, state, integrator, 1e-3).advance(1000)
        states[integrator] = state
    a, b = states["rrp"], states["lgvi"]
    for name in ("position", "velocity", "orientation", "angular_velocity"):
        assert np.abs(getattr(a, name) - getattr(b, name)).max() <= 1e-12


def free_asymmetric_body():
    system = SystemBuilder()
    system.add_body((0, 0, 0), mass=1.0, inertia=(1.0, 2.0, 3.0), angular_velocity=(0.3, 1.0, -0.5),
                    orientation=(0.9, 0.1, -0.3, 0.2))
    return system.finish()


def test_lgvi_increment_without_a_solution_is_nan():
    """Newton from ``β = hJ⁻¹Π`` finds the increment for a modest step and, where it diverges
    (here its Jacobian underflows to zero), says so with NaN, not with a division error."""
    from dem.integrators.stages import lgvi_increment

    j, momentum = (1.0, 2.0, 3.0), (1.0, -2.0, 0.5)
    beta = np.array(lgvi_increment(0.01, j, momentum))
    c = 4.0 / (4.0 + beta @ beta)
    np.testing.assert_allclose(c * (j * beta + 0.5 * np.cross(beta, j * beta)), 0.01 * np.array(momentum), atol=1e-16)
    assert np.isnan(lgvi_increment(10.0, j, (100.0, -2.0, 0.5))).all()


def test_a_step_too_large_for_lgvi_stops_the_run_with_the_scheme_message():
    from dem.integrators import SCHEMES
    from dem.simulation import SimulationError

    model, state = free_asymmetric_body()
    state.angular_velocity[0] = (100.0, -2.0, 0.5)
    sim = Simulation(model, state, "lgvi", 10.0)
    with pytest.raises(SimulationError, match=SCHEMES["lgvi"].failure[:30]):
        sim.advance(1)


def long_free_flight(chunks, steps_per_chunk=10_000):
    """A free asymmetric body under ``lgvi`` for ``chunks × steps_per_chunk`` steps: the largest
    relative energy error seen, the final angular momentum error, the orthogonality error."""
    model, state = free_asymmetric_body()
    sim = Simulation(model, state, "lgvi", 0.01)
    _, angular0, energy0 = momenta(model, state)
    errors = []
    for _ in range(chunks):
        sim.advance(steps_per_chunk)
        _, angular, energy = momenta(model, state)
        errors.append(abs(energy - energy0) / energy0)
    matrix = quat_matrix(state.orientation[0])
    return (max(errors), np.abs(angular - angular0).max() / np.linalg.norm(angular0),
            np.abs(matrix.T @ matrix - np.eye(3)).max())


def test_free_asymmetric_body_over_a_hundred_thousand_steps():
    energy, angular, orthogonality = long_free_flight(10)
    # lgvi integrates the spatial angular momentum itself: exact up to the Ω ↔ L conversion
    assert angular < 1e-14 and energy < 1e-12 and orthogonality < 1e-12


@pytest.mark.slow
def test_free_asymmetric_body_over_a_million_steps():
    """The same over 10⁶ steps (``python -m pytest -m slow``; not in the default suite)."""
    energy, angular, orthogonality = long_free_flight(100)
    assert angular < 1e-14 and energy < 1e-11 and orthogonality < 1e-12  # round-off accumulated


def test_free_asymmetric_body_is_second_order():
    model, state = free_asymmetric_body()
    rotation0 = quat_matrix(state.orientation[0])
    reference, omega_ref = rigid_body_reference(model.inertia[0], rotation0, rotation0.T @ state.angular_velocity[0], 2.0)
    errors = []
    for dt in (0.04, 0.02, 0.01):
        model, state = free_asymmetric_body()
        Simulation(model, state, "lgvi", dt).advance(int(round(2.0 / dt)))
        errors.append(np.abs(quat_matrix(state.orientation[0]) - reference).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 2.0) < 0.1), (errors, orders)


def test_tetrahedron_inertia_from_its_sites():
    system = SystemBuilder()
    body = system.add_cluster(TETRAHEDRON + [5.0, -1.0, 2.0], 1.0)
    model, state = system.finish()
    assert np.allclose(model.inertia[body], [17 / 12, 5 / 4, 7 / 6], rtol=1e-14)
    assert np.allclose(state.position[body], [5.0, -1.0, 2.0]) and model.mass[body] == 4.0
    assert np.allclose(state.orientation[body], [1, 0, 0, 0])


def test_cluster_principal_frame_reproduces_the_sites():
    rng = np.random.default_rng(3)
    sites = rng.normal(size=(5, 3))
    masses = rng.uniform(0.5, 2.0, 5)
    system = SystemBuilder()
    system.add_cluster(sites, masses)
    model, state = system.finish()
    world = state.position[0] + model.site_offset @ quat_matrix(state.orientation[0]).T
    assert np.allclose(world, sites, atol=1e-12)
    arms = sites - state.position[0]
    tensor = np.sum(masses[:, None, None] * (np.sum(arms ** 2, 1)[:, None, None] * np.eye(3)
                                             - arms[:, :, None] * arms[:, None, :]), 0)
    rotation = quat_matrix(state.orientation[0])
    assert np.allclose(rotation.T @ tensor @ rotation, np.diag(model.inertia[0]), atol=1e-12)


@pytest.mark.parametrize("ends", ["clamped-clamped", "clamped-force", "clamped-displacement", "free"])
def test_tetra_chain_end_conditions(ends):
    overrides = [f"tetra_chain.0.ends={ends}", "simulation.t_end=10"]
    if ends == "clamped-displacement":
        overrides.append("tetra_chain.0.end_position=[14.3,0.2,0]")
    _, model, state, _ = prepare("scenes/tetra_chain.toml", overrides)
    sim = Simulation(model, state, "lgvi", 1e-3)
    start = state.position.copy()
    momentum0, angular0, energy0 = momenta(model, state)
    errors = []
    for _ in range(100):
        sim.advance(100)
        errors.append(energy_budget(model, state)["total"] - energy0)
    errors = np.abs(errors)
    scale = abs(energy_budget(model, state)["lj"])
    assert errors.max() < 1e-3 * scale
    assert errors[50:].max() < 3 * errors[:50].max() + 1e-12  # bounded, no drift
    moved = np.linalg.norm(state.position - start, axis=1)
    assert moved[3] > 1e-3  # the chain moves
    if ends != "free":
        assert moved[0] == 0.0 and np.array_equal(state.orientation[0], [1, 0, 0, 0])
    if ends in ("clamped-clamped", "clamped-displacement"):
        assert moved[-1] == 0.0
    if ends == "clamped-clamped":
        assert np.array_equal(state.orientation[-1], [1, 0, 0, 0])
    if ends == "free":
        momentum, angular, _ = momenta(model, state)
        assert np.abs(momentum - momentum0).max() < 1e-12 and np.abs(angular - angular0).max() < 1e-11


def top_state(dt, rates="[0,0,50]"):
    _, model, state, _ = prepare("scenes/heavy_top.toml", [f"simulation.dt={dt}", f"top.0.euler_rates={rates}"])
    return model, state


@pytest.mark.parametrize("rates", ["[0,0,50]", "[-10,0,50]"])
def test_heavy_top_invariants(rates):
    model, state = top_state(1e-3, rates)
    sim = Simulation(model, state, "lgvi", 1e-3)
    spin = model.invariants["spin"]
    _, angular0, energy0 = momenta(model, state)
    spin0 = spin(model, state)
    assert spin0 == pytest.approx(1.8 * (50.0 + (-10.0 if "-10" in rates else 0.0) * 0.5))
    errors = []
    for _ in range(100):  # 10⁵ steps
        sim.advance(1000)
        _, angular, energy = momenta(model, state)
        errors.append(abs(energy - energy0) / energy0)
        assert abs(angular[2] - angular0[2]) < 1e-14 * abs(angular0[2])
        assert abs(spin(model, state) - spin0) < 1e-11 * abs(spin0)  # round-off over up to 10⁵ steps
    errors = np.array(errors)
    assert errors.max() < 1e-5 and errors[50:].max() < 2 * errors[:50].max()


def test_heavy_top_trajectory_is_second_order():
    model, state = top_state(1e-3)
    rotation0 = quat_matrix(state.orientation[0])
    arm = model.com_offset[0]
    weight = model.mass[0] * model.interactions["gravity"].gravity

    def torque(r):
        return np.cross(arm, r.T @ weight)

    reference, _ = rigid_body_reference(model.inertia[0], rotation0, rotation0.T @ state.angular_velocity[0], 2.0,
                                        torque)
    errors = []
    for dt in (2e-3, 1e-3, 5e-4):
        model, state = top_state(dt)
        Simulation(model, state, "lgvi", dt).advance(int(round(2.0 / dt)))
        errors.append(np.abs(quat_matrix(state.orientation[0]) - reference).max())
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(orders - 2.0) < 0.15), (errors, orders)
    assert errors[1] < 0.05  # at dt = 1e-3 (spin 50 rad/s: 100 rad turned in 2 s)
