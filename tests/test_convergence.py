"""Convergence orders of the integrators (docs/theory.md §2) and the metrics of seed 001 eqs. (35)–(38).

The physics check uses the smooth free flight of the spinning, vibrating torus (binders only, no
contact): energy error O(h²) for ``rrp2``/``rrp``, O(h) for ``rrp1``; max-norm trajectory error
O(h²) for ``rrp2``. The steps are below the binders' stability limit (about 8e-3).
"""

from pathlib import Path

import numpy as np
import pytest

from dem.convergence import (
    Trajectory, drift, energy_error_h0, energy_error_max, fitted_order, h1_norm_squared, observed_orders, q_error_h1,
    rotation_angle, state_error_max, steps_per_sample, trajectory,
)

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "torus_impact.toml"
FREE_FLIGHT = [
    "walls=[]", "contact.k_pp=0", "contact.k_pw=0", "torus.0.velocity=[1,0,0]",
    "torus.0.angular_velocity=[0.5,0,2]", "simulation.t_end=2",
]
STEPS = (0.005, 0.0025, 0.00125)
EXPECTED_ORDER = {"rrp2": 2, "rrp": 2, "rrp1": 1}


def _runs(integrator):
    return [trajectory(SCENE, dt, integrator, FREE_FLIGHT, sample_every_time=STEPS[0]) for dt in STEPS]


@pytest.fixture(scope="module")
def reference():
    return trajectory(SCENE, 1e-4, "rrp2", FREE_FLIGHT, sample_every_time=STEPS[0])


@pytest.mark.parametrize("integrator", sorted(EXPECTED_ORDER))
def test_energy_error_order(integrator):
    runs = _runs(integrator)
    for metric in (energy_error_max, energy_error_h0):
        errors = [metric(run.t, run.energy) for run in runs]
        assert np.allclose(observed_orders(STEPS, errors), EXPECTED_ORDER[integrator], atol=0.2), (metric, errors)


def test_state_error_second_order_rrp2(reference):
    runs = _runs("rrp2")
    errors = [state_error_max(reference, run) for run in runs]
    for key in ("state", "position", "velocity", "rotation", "angular_velocity"):
        orders = observed_orders(STEPS, [e[key] for e in errors])
        assert np.allclose(orders, 2, atol=0.2), (key, orders)
    # the H1 q-error of eq. (37) compares norms: it shows half the order
    q_orders = observed_orders(STEPS, [q_error_h1(reference, run) for run in runs])
    assert np.allclose(q_orders, 1, atol=0.2), q_orders


def test_runs_sampled_at_common_times(reference):
    run = trajectory(SCENE, STEPS[1], "rrp2", FREE_FLIGHT, sample_every_time=STEPS[0])
    assert np.array_equal(run.t, reference.t)
    assert run.position.shape == (len(run.t), 80, 3) and run.orientation.shape == (len(run.t), 80, 4)
    assert run.steps == 2 * (len(run.t) - 1)
    with pytest.raises(ValueError, match="multiple"):
        steps_per_sample(0.01, 0.003)


def test_blowup_is_reported_not_raised():
    run = trajectory(SCENE, 0.02, "rrp2", FREE_FLIGHT, record_state=False, stop_on_failure=True,
                     blowup_relative_energy=1.0)
    assert not run.complete and run.failed_step is not None and run.failed_step < 100


# --- metrics on synthetic data -------------------------------------------------------------------


def test_energy_error_h0_of_known_function():
    t = np.linspace(0.0, 2.0, 20001)
    energy = 2.0 + 0.1 * np.sin(np.pi * t)  # ∫_0^2 (0.1 sin πt)² dt = 0.01; ‖E0‖² = 4·2
    assert energy_error_h0(t, energy) == pytest.approx(np.sqrt(0.01 / 8.0), rel=1e-6)
    assert energy_error_max(t, energy) == pytest.approx(0.1, rel=1e-6)


def test_drift_slope_and_early_late():
    t = np.linspace(0.0, 10.0, 1001)
    creeping = 5.0 + 1e-3 * t + 1e-4 * np.sin(7 * t)
    d = drift(t, creeping)
    assert d["slope"] == pytest.approx(1e-3, rel=1e-2)
    assert d["late"] > 5 * d["early"]
    bounded = drift(t, 5.0 + 1e-4 * np.sin(7 * t))
    assert abs(bounded["slope"]) < 1e-5 and bounded["late"] < 2 * bounded["early"]


def _synthetic(t, angle, offset=0.0):
    n = len(t)
    axis = np.array([0.0, 0.6, 0.8])
    orientation = np.concatenate([np.cos(angle / 2)[:, None], np.sin(angle / 2)[:, None] * axis], axis=1)
    ones = np.ones((n, 1, 3))
    return Trajectory("synthetic", "none", 0.1, t, np.zeros(n), position=ones * (1.0 + offset),
                      velocity=2 * ones, orientation=orientation[:, None, :], angular_velocity=3 * ones)


def test_h1_norm_state_and_q_errors():
    t = np.linspace(0.0, 1.0, 11)
    reference = _synthetic(t, 0.5 * np.ones_like(t))
    # integrand: |x|² + |v|² + |θ|² + |Ω|² = 3 + 12 + 0.25 + 27 per unit time
    assert h1_norm_squared(reference) == pytest.approx(42.25)
    run = _synthetic(t, 0.5 * np.ones_like(t) + 0.01, offset=0.1)
    errors = state_error_max(reference, run)
    assert errors["position"] == pytest.approx(0.1 * np.sqrt(3))
    assert errors["velocity"] == 0.0 and errors["angular_velocity"] == 0.0
    assert errors["rotation"] == pytest.approx(0.01)
    assert errors["state"] == pytest.approx(0.1 * np.sqrt(3))
    expected_q = np.sqrt(abs(3 * 1.1**2 + 12 + 0.51**2 + 27 - 42.25) / 42.25)
    assert q_error_h1(reference, run) == pytest.approx(expected_q)
    assert rotation_angle(np.array([[0.0, 0.0, 0.0, 1.0], [-1.0, 0.0, 0.0, 0.0]])) == pytest.approx([np.pi, 0.0])


def test_observed_orders():
    assert observed_orders([0.1, 0.05, 0.025], [4e-2, 1e-2, 2.5e-3]) == pytest.approx([2.0, 2.0])
    assert np.isnan(observed_orders([0.1, 0.05], [0.0, 1.0])[0])


def test_fitted_order_is_the_slope_over_all_steps():
    dts = np.array([0.1, 0.05, 0.025, 0.0125])
    assert fitted_order(dts, 3.0 * dts ** 2.5) == pytest.approx(2.5)
    # scattered orders (3, 1, 3 between consecutive steps): the fit sees their trend
    assert fitted_order(dts, [8e-3, 1e-3, 5e-4, 6.25e-5]) == pytest.approx(2.25, abs=0.2)
    assert np.isnan(fitted_order(dts, [1e-2, 0.0, 1e-3, 1e-4]))
