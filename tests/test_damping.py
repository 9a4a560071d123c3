"""Damping for quasi-static loading (`dem.interactions.damping`): the forces it adds, the work
it books, a budget that closes to O(h) with it, a loaded granule brought to rest, a static
equilibrium left unbiased, and bad values."""

import numpy as np
import pytest
from support.granule import granule_file
from support.surfaces import stack_file

from dem import Simulation, SystemBuilder
from dem.engine import compute_forces
from dem.rotations import quat_from_rotvec, quat_matrix
from dem.runner import prepare


def test_the_damping_forces_and_their_booked_work():
    """Per component ``F_d = −α |F| sign(v) − c m v`` and ``τ_d = −α |τ| sign(Ω) − c R J Rᵀ Ω``
    on top of the other forces (gravity and an applied force here); booked ``−h (F_d·v + τ_d·Ω)``."""
    rng = np.random.default_rng(4)
    system = SystemBuilder()
    inertia = np.array([0.5, 0.7, 1.1])
    for k in range(4):
        system.add_body(rng.normal(size=3), mass=1.0 + k, inertia=inertia, orientation=quat_from_rotvec(rng.normal(size=3)),
                        velocity=rng.normal(size=3) * (k != 3), angular_velocity=rng.normal(size=3), com_offset=rng.normal(size=3))
    system.append_input("applied_force", "bodies", 2)
    system.append_input("applied_force", "forces", (1.0, -2.0, 0.5))
    alpha, c, h = 0.3, 0.2, 1e-3
    model, state = system.finish(fields={"gravity": (0.0, -1.0, -9.81)}, damping={"local": alpha, "viscous": c})
    assert list(model.interactions) == ["gravity", "applied_force", "damping"]
    compute_forces(model, state, dt=h)
    rotation = quat_matrix(state.orientation)
    load = model.mass[:, None] * np.array([0.0, -1.0, -9.81])
    load[2] += (1.0, -2.0, 0.5)
    arm = np.einsum("nij,nj->ni", rotation, model.com_offset)
    torque = np.cross(arm, model.mass[:, None] * np.array([0.0, -1.0, -9.81]))
    spin = np.einsum("nij,nj,nkj,nk->ni", rotation, inertia[None, :] * np.ones((4, 3)), rotation, state.angular_velocity)
    f_d = -alpha * np.abs(load) * np.sign(state.velocity) - c * model.mass[:, None] * state.velocity
    tau_d = -alpha * np.abs(torque) * np.sign(state.angular_velocity) - c * spin
    np.testing.assert_allclose(state.force, load + f_d, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(state.moment, torque + tau_d, rtol=1e-13, atol=1e-13)
    assert not f_d[3].any()  # a body at rest feels no damping force
    booked = state.interactions["damping"].dissipated
    np.testing.assert_allclose(booked, -h * (np.sum(f_d * state.velocity, axis=1)
                                             + np.sum(tau_d * state.angular_velocity, axis=1)), rtol=1e-13)
    assert (booked >= 0).all() and booked.sum() > 0


@pytest.fixture(scope="module")
def granule(tmp_path_factory):
    return granule_file(tmp_path_factory.mktemp("granule"))


def budget_error(granule, dt, settings, duration=1.0):
    _, model, state, _ = prepare(granule, [f"simulation.dt={dt}"] + settings)
    sim = Simulation(model, state, "rrp2", dt)
    start = sim.energy_budget()["total"]
    error = 0.0
    for _ in range(20):
        sim.advance(int(round(duration / dt / 20)))
        error = max(error, abs(sim.energy_budget()["total"] - start))
    return error, sim.energy_budget()


@pytest.mark.parametrize("settings", [["damping.local=0.3"], ["damping.viscous=0.5"]], ids=["local", "viscous"])
def test_with_damping_the_budget_closes_to_first_order(granule, settings):
    """The granule hitting the wall with damping: 'dissipated' grows to a good part of the
    energy, and total stays constant up to an error that halves with h."""
    errors = []
    for dt in (1e-3, 5e-4, 2.5e-4):
        error, row = budget_error(granule, dt, settings)
        assert row["dissipated"] > 50.0
        errors.append(error)
    assert errors[0] < 0.02 * row["dissipated"]
    assert 1.6 < errors[0] / errors[1] < 2.6 and 1.6 < errors[1] / errors[2] < 2.6


def test_a_loaded_granule_comes_to_rest(tmp_path):
    """A bonded cube of 27 spheres, thrown spinning against the floor and pressed there by a
    servo platen (force 50), with local damping: it stops (kinetic energy below 1e-5 of the
    start) under the platen's load. (Local damping alone does not stop a free granule sliding or
    tipping on a frictionless wall: it opposes unbalanced forces, and such motions have none.)"""
    _, model, state, _ = prepare(stack_file(tmp_path), [
        "assembly.0.bonded=true", "assembly.0.k_axial=2000", "assembly.0.k_shear=2000", "assembly.0.k_bending=100",
        "assembly.0.velocity=[0.3,0.2,-0.1]", "assembly.0.angular_velocity=[0.5,-0.3,0.2]"])
    sim = Simulation(model, state, "rrp2", 1e-3)
    row = sim.energy_budget()
    start = row["kinetic_translational"] + row["kinetic_rotational"]
    sim.advance(4000)
    row = sim.energy_budget()
    assert row["kinetic_translational"] + row["kinetic_rotational"] < 1e-5 * start
    assert state.interactions["walls"].load[1, 0] == pytest.approx(50.0, rel=0.01)


def test_local_damping_leaves_the_static_equilibrium_alone():
    """A sphere dropped on a floor settles at the overlap where (K/r) δ^{3/2} = m g, to 1e-9."""
    system = SystemBuilder()
    system.add_body((0.0, 0.0, 0.52), mass=2.0, inertia=0.1, diameter=1.0)
    model, state = system.finish([dict(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0))], contact={"k_pw": 1e3},
                                 fields={"gravity": (0.0, 0.0, -9.81)}, damping={"local": 0.8})
    Simulation(model, state, "rrp2", 1e-3).advance(5000)
    delta = (2.0 * 9.81 * 0.5 / 1e3) ** (2.0 / 3.0)
    assert state.position[0, 2] == pytest.approx(0.5 * (1 - delta), abs=1e-9)
