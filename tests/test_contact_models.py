"""The normal contact law as a sub-model (``[contact] normal``, `dem.interactions.hertz.normal_law`):
a linear spring–dashpot (Hooke) against the closed-form damped oscillator, and friction riding on
it (an unknown law is a bad scene: ``test_scene.py``). The kernels against an independent numpy
law and the energy gradient are in the battery of ``test_interactions.py`` (its ``hooke``
variants)."""

import numpy as np
import pytest

from dem import Simulation, SystemBuilder


def damped_oscillator(k, mass, restitution):
    """``(ζ, t_c)`` of a linear spring–dashpot of stiffness ``k`` on the mass ``mass`` whose
    dashpot gives the coefficient of restitution ``e``: ``e = exp(−ζπ/√(1 − ζ²))`` and the contact
    lasts half a damped period, ``π/√(k/m − (c/2m)²)`` with ``c = 2ζ√(k m)``."""
    log_e = np.log(restitution)
    zeta = -log_e / np.sqrt(np.pi ** 2 + log_e ** 2)
    c = 2 * zeta * np.sqrt(k * mass)
    return zeta, np.pi / np.sqrt(k / mass - (c / (2 * mass)) ** 2)


def collide(sim, steps, touching):
    """Run ``steps`` steps; returns ``(contact time, state)`` with the contact time from the first
    step at which ``touching(state)`` to the first after it at which not (to one step)."""
    start = end = None
    for step in range(steps):
        sim.advance(1)
        if touching(sim.state) and start is None:
            start = sim.state.time
        if start is not None and end is None and not touching(sim.state):
            end = sim.state.time
    assert start is not None and end is not None, "the bodies must touch and part"
    return end - start, sim.state


@pytest.mark.parametrize("restitution", [0.5, 0.9])
def test_hooke_head_on_collision_rebounds_at_the_restitution(restitution):
    """Two unit spheres (m* = ½) meet head on: they part at e times their approach speed after
    the damped oscillator's half period."""
    k, speed = 2e4, 1.0
    zeta, contact_time = damped_oscillator(k, 0.5, restitution)
    dt = contact_time / 2000
    system = SystemBuilder()
    system.add_body((-0.5, 0.0, 0.0), mass=1.0, inertia=0.1, diameter=1.0, velocity=(0.5 * speed, 0.0, 0.0))
    system.add_body((0.5 + 0.01, 0.0, 0.0), mass=1.0, inertia=0.1, diameter=1.0, velocity=(-0.5 * speed, 0.0, 0.0))
    model, state = system.finish(contact={"normal": "hooke", "k_pp": k, "restitution": restitution})
    sim = Simulation(model, state, "rrp2", dt)
    measured, end = collide(sim, int(round((0.01 / speed + 1.5 * contact_time) / dt)),
                            lambda s: s.position[1, 0] - s.position[0, 0] < 1.0)
    rebound = end.velocity[1, 0] - end.velocity[0, 0]
    assert rebound / speed == pytest.approx(restitution, rel=1e-3)
    assert measured == pytest.approx(contact_time, abs=1.01 * dt)
    assert np.abs(end.velocity.sum(axis=0)).max() < 1e-12   # momentum: two equal masses, opposite velocities


def test_hooke_wall_impact_rebounds_at_the_restitution():
    """A sphere hits a Hooke wall (m* = m): its normal speed is e times the impact speed after
    the damped oscillator's half period; the energy budget books what the dashpot took."""
    k, speed, restitution = 5e3, 2.0, 0.6
    zeta, contact_time = damped_oscillator(k, 1.0, restitution)
    dt = contact_time / 2000
    system = SystemBuilder()
    system.add_body((0.0, 0.0, 0.51), mass=1.0, inertia=0.1, diameter=1.0, velocity=(0.3, 0.0, -speed))
    model, state = system.finish([dict(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), size=0.0)],
                                 contact={"normal": "hooke", "k_pw": k, "restitution": restitution})
    sim = Simulation(model, state, "rrp2", dt)
    start = sim.energy_budget()
    measured, end = collide(sim, int(round((0.01 / speed + 1.5 * contact_time) / dt)),
                            lambda s: s.position[0, 2] < 0.5)
    assert end.velocity[0, 2] / speed == pytest.approx(restitution, rel=1e-3)
    assert end.velocity[0, 0] == 0.3                                       # no friction: the tangential motion stays
    assert measured == pytest.approx(contact_time, abs=1.01 * dt)
    budget = sim.energy_budget()
    lost = 0.5 * (speed ** 2 - end.velocity[0, 2] ** 2)
    assert budget["dissipated"] == pytest.approx(lost, rel=1e-3)
    assert abs(budget["total"] - start["total"]) < 1e-3 * start["total"]


def test_friction_rides_on_the_hooke_law():
    """A sphere sliding on a Hooke floor under gravity decelerates at μ g (Coulomb on the linear
    spring's normal force), then rolls at 5/7 of its speed, as on a Hertz floor."""
    mu, v0, g, radius = 0.3, 1.0, 1.0, 0.5
    k = 1e4
    system = SystemBuilder()
    system.add_body((0.0, 0.0, radius - g / k), mass=1.0, inertia=0.4 * radius ** 2, diameter=2 * radius,
                    velocity=(v0, 0.0, 0.0))
    model, state = system.finish([dict(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), size=0.0)],
                                 contact={"normal": "hooke", "k_pw": k, "friction": mu},
                                 fields={"gravity": (0.0, 0.0, -g)})
    sim = Simulation(model, state, "rrp2", 2e-4)
    times, speeds = [], []
    for _ in range(100):
        sim.advance(10)
        times.append(sim.state.time)
        speeds.append(sim.state.velocity[0, 0])
    sliding = np.array(times) < 0.5 * (2 / 7) * v0 / (mu * g)
    assert np.polyfit(np.array(times)[sliding], np.array(speeds)[sliding], 1)[0] == pytest.approx(-mu * g, rel=2e-3)
    sim.advance(int(v0 / (mu * g) / 2e-4))
    assert sim.state.velocity[0, 0] == pytest.approx(5 / 7 * v0, rel=2e-3)

