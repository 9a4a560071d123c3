"""The single-rigid-body baselines of seed 000 §5 and `lgvi` (`dem.baselines`): second order
against DOP853, symmetric, momentum-conserving on the free body where seed 000 Table I says so,
and the stress test's energy behaviour (seed 000 §6: VLV bounded, ELN/TLN/PRK drift down,
MCG/NEW3/LIEMID[EA] drift up). The full T = 10000 study is `tools/ortolan_saccon.py`."""

from pathlib import Path

import numpy as np
import pytest

from dem.baselines import (
    FREE, METHODS, NonConvergenceError, angular_momentum, energy, integrate, ortolan_saccon_potential,
    reference, rotation_matrix, step,
)

# seed 000 §6 (docs/theory.md §6, scenes/ortolan_saccon.toml)
J = np.array([2.0, 2.0, 4.0])
Q0 = rotation_matrix([0.0, 0.7227, 0.0])
OMEGA0 = np.array([0.0, 0.0, 0.625])
STRESS = ortolan_saccon_potential(0.3, rotation_matrix(np.array([2.5, 0.0, 2.5]) / np.sqrt(2.0)))

#: Methods that conserve the spatial angular momentum of the free rigid body (seed 000 Table I;
#: VLV and LGVI are variational, so they conserve it too).
MOMENTUM_CONSERVING = ("LIEMID[EA]", "PRK", "MCG", "NEW3", "VLV", "LGVI")


def test_potential_moment_is_minus_the_body_derivative():
    """``M·y = −DU(Q)·Qŷ`` (seed 000 §3), by central differences."""
    u, moment = STRESS(Q0)
    assert u == pytest.approx(energy(J, STRESS, Q0, np.zeros(3)))
    eps = 1e-6
    for k in range(3):
        y = np.zeros(3)
        y[k] = eps
        plus, minus = Q0 @ rotation_matrix(y), Q0 @ rotation_matrix(-y)
        assert -(STRESS(plus)[0] - STRESS(minus)[0]) / (2 * eps) == pytest.approx(moment[k], abs=1e-8)


@pytest.fixture(scope="module")
def reference_at_2():
    return reference(J, STRESS, Q0, OMEGA0, 2.0)


@pytest.mark.parametrize("method", METHODS)
def test_second_order_against_dop853(method, reference_at_2):
    """Seed 000 Fig. 2: global error ∝ h² in attitude and body angular velocity."""
    assert reference_at_2.energy[-1] == pytest.approx(reference_at_2.energy[0], abs=1e-11)
    errors = []
    for h in (1 / 8, 1 / 16, 1 / 32):
        n = int(round(2.0 / h))
        run = integrate(method, J, STRESS, Q0, OMEGA0, h, n, sample_every=n)
        errors.append((np.linalg.norm(run.rotation[-1] - reference_at_2.rotation[-1]),
                       np.linalg.norm(run.angular_velocity[-1] - reference_at_2.angular_velocity[-1])))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((orders > 1.9) & (orders < 2.1)), orders
    assert max(errors[-1]) < 1e-3


@pytest.mark.parametrize("method", METHODS)
def test_symmetric(method):
    """All seven baselines and LGVI are symmetric: a step back with −h undoes a step with h."""
    omega = np.array([0.3, -0.2, 0.625])
    Q1, omega1 = step(method, J, STRESS, Q0, omega, 0.25)
    Q_back, omega_back = step(method, J, STRESS, Q1, omega1, -0.25)
    assert np.abs(Q1 - Q0).max() > 0.05
    assert np.abs(Q_back - Q0).max() < 1e-14
    assert np.abs(omega_back - omega).max() < 1e-14


@pytest.mark.parametrize("method", METHODS)
def test_attitude_stays_a_rotation(method):
    run = integrate(method, J, STRESS, Q0, OMEGA0, 0.25, 4000, sample_every=4000)
    Q = run.rotation[-1]
    assert np.abs(Q.T @ Q - np.eye(3)).max() < 1e-14


@pytest.mark.parametrize("method", MOMENTUM_CONSERVING)
def test_free_body_keeps_spatial_angular_momentum(method):
    J_free, omega = np.array([1.0, 2.0, 3.0]), np.array([0.4, -0.7, 0.625])
    run = integrate(method, J_free, FREE, Q0, omega, 0.1, 5000, sample_every=50)
    L = angular_momentum(run.rotation, J_free, run.angular_velocity)
    assert np.abs(L - L[0]).max() < 1e-13 * np.linalg.norm(L[0])


@pytest.mark.parametrize("method", ["ELN", "TLN"])
def test_lie_newmark_does_not_keep_momentum(method):
    """The Lie–Newmark methods make no such claim (seed 000 Table I: '?'), and indeed do not."""
    J_free, omega = np.array([1.0, 2.0, 3.0]), np.array([0.4, -0.7, 0.625])
    run = integrate(method, J_free, FREE, Q0, omega, 0.1, 5000, sample_every=50)
    L = angular_momentum(run.rotation, J_free, run.angular_velocity)
    assert np.abs(L - L[0]).max() > 1e-6 * np.linalg.norm(L[0])


def test_lgvi_spherical_inertia_is_closed_form_rrp():
    """docs/theory.md §2: for J = j I, β = 2u/(1 + √(1 − |u|²)), u = hΠ/j (the `rrp` map, seed 001 eq. 23)."""
    j, h, omega = 1.5, 0.2, np.array([1.0, -2.0, 0.5])
    Q1, omega1 = step("LGVI", [j, j, j], STRESS, Q0, omega, h)
    momentum = j * omega + 0.5 * h * STRESS(Q0)[1]
    u = h * momentum / j
    beta = 2 * u / (1 + np.sqrt(1 - u @ u))
    angle = 2 * np.arctan(np.linalg.norm(beta) / 2)          # |θ| = 2 atan(|β|/2) (docs/theory.md §1)
    Q_expected = Q0 @ rotation_matrix(angle * beta / np.linalg.norm(beta))
    assert np.abs(Q1 - Q_expected).max() < 1e-14
    # Jω⁺ = R(β)ᵀΠ + (h/2)M⁺ with R(β)ᵀΠ = Π for spherical J (β ∥ Π)
    assert np.abs(j * omega1 - (momentum + 0.5 * h * STRESS(Q1)[1])).max() < 1e-14


def test_stress_energy_drift():
    """Seed 000 §6 at h = 0.25 over T = 2000: the variational VLV and LGVI keep a bounded energy
    error; ELN, TLN, PRK drift down and MCG, NEW3, LIEMID[EA] drift up, linearly in time."""
    h, t_end = 0.25, 2000.0
    fraction = {}
    slopes = {}
    for method in METHODS:
        run = integrate(method, J, STRESS, Q0, OMEGA0, h, int(t_end / h), sample_every=4)
        error = run.energy - run.energy[0]
        slopes[method] = np.polyfit(run.t, error, 1)[0]
        # the fitted drift over the run, as a fraction of the largest error: ~1 drift, ~0 bounded
        fraction[method] = slopes[method] * t_end / np.abs(error).max()
    for method in ("VLV", "LGVI"):
        assert abs(fraction[method]) < 0.02, fraction
        assert abs(slopes[method]) < 0.01 * abs(slopes["ELN"]), slopes
    for method in ("ELN", "TLN", "PRK"):
        assert fraction[method] < -0.3, fraction
    for method in ("MCG", "NEW3"):
        assert fraction[method] > 0.3, fraction
    assert fraction["LIEMID[EA]"] > 0.1, fraction
    # LIEMID[EA] has the smallest slope of the drifting methods (seed 000 §6)
    assert abs(slopes["LIEMID[EA]"]) == min(abs(slopes[m]) for m in METHODS if m not in ("VLV", "LGVI"))


def test_unknown_method_and_non_convergence_are_errors():
    with pytest.raises(ValueError, match="unknown method"):
        integrate("RK4", J, STRESS, Q0, OMEGA0, 0.1, 10)
    # |h ω| ≈ 9: NEW3's (11b) has no solution near the start; the run stops with the method's name
    with pytest.raises(NonConvergenceError, match="NEW3"):
        integrate("NEW3", [1.0, 2.0, 3.0], FREE, Q0, np.array([3.0, -5.0, 7.0]), 1.0, 20)


def test_core_lgvi_runs_the_stress_scene_like_the_single_body_lgvi():
    """`python -m dem scenes/ortolan_saccon.toml` (the multi-body core's lgvi) and the baseline
    module's single-body LGVI are two transcriptions of docs/theory.md §2: same trajectory to round-off."""
    from dem import Simulation
    from dem.runner import prepare
    from dem.rotations import quat_matrix

    scene, model, state, _ = prepare(Path(__file__).resolve().parents[1] / "scenes/ortolan_saccon.toml")
    params = model.interactions["ortolan_saccon"]
    assert params.body.tolist() == [0]
    rotation0 = quat_matrix(state.orientation[0])
    omega0 = rotation0.T @ state.angular_velocity[0]
    Simulation(model, state, "lgvi", scene.simulation["dt"]).advance(400)
    from dem import baselines

    stress = baselines.ortolan_saccon_potential(params.alpha, params.attractor)
    single = baselines.integrate("LGVI", model.inertia[0], stress, rotation0, omega0, scene.simulation["dt"], 400)
    rotation = quat_matrix(state.orientation[0])
    assert np.abs(rotation - single.rotation[-1]).max() < 1e-9
    assert np.abs(rotation.T @ state.angular_velocity[0] - single.angular_velocity[-1]).max() < 1e-9
