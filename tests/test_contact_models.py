"""The normal contact law as a sub-model (``[contact] normal``, `dem.interactions.normal`): every
registered law's compiled force, energy and stiffness against each other by finite differences;
a linear spring–dashpot (Hooke) against the closed-form damped oscillator, and friction riding on
it (an unknown law is a bad scene: ``test_scene.py``). The kernels against an independent numpy
law and the energy gradient are in the battery of ``test_interactions.py`` (its ``hooke``
variants)."""

import numpy as np
import pytest

from dem import Simulation, SystemBuilder
from dem.engine import compute_forces
from dem.interactions.normal import (
    LAWS, adhesive_law, normal_law, normal_stiffness, pull_off, separation, touch_energy,
)

#: a contact's stiffness K, length scale L, reduced radius R* and work of adhesion w
K, L, REDUCED, WORK = 50.0, 1.3, 0.3, 0.4
#: overlaps δ at which the laws are checked, and the finite-difference step relative to each
OVERLAPS = (0.002, 0.01, 0.05, 0.2)
STEP = 1e-6


def slope(function, delta):
    """``d function/dξ_n`` at ``δ`` (``ξ_n = L δ``) by central differences."""
    h = STEP * abs(delta)
    return (function(delta + h) - function(delta - h)) / (2 * h * L)


@pytest.mark.parametrize("code", range(len(LAWS)), ids=[law.name for law in LAWS])
def test_every_registered_law_is_its_energy_gradient(code):
    """For each law of the registry, through the kernels' dispatch on its code: the force is the
    energy's derivative along the overlap, ``F = −dU/dr = dU/dξ_n``, and the tangent stiffness the
    force's, ``k = dF/dξ_n`` (relative 1e-6; the dispatch returns the law's own functions' bits).
    An adhesive law's total energy ``U_H + U_a`` gives its force the same way (down to where it
    breaks, for a law that holds contacts stretched; ``U_H`` is the elastic part's energy), its
    least force is minus its pull-off force, and a law that holds contacts stretched has the
    energy its ``touch_energy`` and ``separation`` give where a contact forms (``ξ = 0``) and
    breaks."""
    law = LAWS[code]
    for delta in OVERLAPS:
        assert normal_law(code, delta, K, L) == law.energy_force(delta, K, L)
        assert normal_stiffness(code, delta, K, L) == law.stiffness(delta, K, L)
        force = normal_law(code, delta, K, L)[1]
        assert force == pytest.approx(slope(lambda d: normal_law(code, d, K, L)[0], delta), rel=1e-6)
        assert normal_stiffness(code, delta, K, L) == pytest.approx(
            slope(lambda d: normal_law(code, d, K, L)[1], delta), rel=1e-6)
    if not law.adhesive:
        return
    lowest = separation(code, K, L, REDUCED, WORK)[0] / L if law.beyond_contact else 1e-12
    for delta in OVERLAPS + ((0.5 * lowest,) if law.beyond_contact else ()):
        u_elastic, u_adhesion, force, k = adhesive_law(code, delta, K, L, REDUCED, WORK)
        assert u_elastic == (normal_law(code, delta, K, L)[0] if delta > 0 else 0.0)
        total = slope(lambda d: sum(adhesive_law(code, d, K, L, REDUCED, WORK)[:2]), delta)
        assert force == pytest.approx(total, rel=1e-6)
        assert k > 0.0
    forces = [adhesive_law(code, d, K, L, REDUCED, WORK)[2] for d in np.linspace(lowest, 0.05, 20001)]
    assert min(forces) == pytest.approx(-pull_off(code, REDUCED, WORK), rel=1e-5)
    if law.beyond_contact:
        assert sum(adhesive_law(code, 0.0, K, L, REDUCED, WORK)[:2]) == pytest.approx(
            touch_energy(code, K, L, REDUCED, WORK), rel=1e-9)
        broken, energy = separation(code, K, L, REDUCED, WORK)
        assert sum(adhesive_law(code, broken / L, K, L, REDUCED, WORK)[:2]) == pytest.approx(energy, rel=1e-6)


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


@pytest.mark.parametrize("damping, tolerance", [("restitution", 1e-4), ("tsuji", 2e-3)])
def test_hertz_damping_sub_models_rebound_at_the_restitution(damping, tolerance):
    """Two Hertz spheres meet head on: ``damping = "restitution"`` rebounds at e (exactly, to the
    step's error), Tsuji's fit (Marshall 2009 eq. 53) to its accuracy, 10⁻³."""
    restitution, speed = 0.8, 1.0
    system = SystemBuilder()
    system.add_body((-0.5, 0.0, 0.0), mass=1.0, inertia=0.1, diameter=1.0, velocity=(0.5 * speed, 0.0, 0.0))
    system.add_body((0.5 + 0.01, 0.0, 0.0), mass=1.0, inertia=0.1, diameter=1.0, velocity=(-0.5 * speed, 0.0, 0.0))
    model, state = system.finish(contact={"k_pp": 1e4, "restitution": restitution, "damping": damping})
    sim = Simulation(model, state, "rrp2", 2e-5)
    _, end = collide(sim, 10000, lambda s: s.position[1, 0] - s.position[0, 0] < 1.0)
    rebound = end.velocity[1, 0] - end.velocity[0, 0]
    assert rebound / speed == pytest.approx(restitution, abs=tolerance)


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



# ---------------------------------------------------------------------------------------------
# Adhesion: JKR and DMT (`dem.interactions.normal.jkr`, `.dmt`)
# ---------------------------------------------------------------------------------------------

def jkr_theory(stiffness, length, reduced, work):
    """``(E*, a_t, a_c, ξ_c, ΔE)`` of a JKR contact, from the JKR curve written independently of
    the code: the contact radius where it forms at touch (``ξ = 0``) and where it breaks
    (``dξ/da = 0``), the overlap at break and the energy a contact loses over one cycle of
    forming and breaking, ``∫ F dξ`` along the curve from ``a_t`` to ``a_c`` (a polynomial in
    ``x = √a``, integrated by numpy)."""
    Polynomial = np.polynomial.Polynomial
    modulus = 3 * stiffness / (4 * length ** 2.5 * np.sqrt(reduced))
    s = np.sqrt(2 * np.pi * work / modulus)
    a_touch = (2 * np.pi * work * reduced ** 2 / modulus) ** (1 / 3)
    a_break = (np.pi * work * reduced ** 2 / (8 * modulus)) ** (1 / 3)
    xi_break = a_break ** 2 / reduced - s * np.sqrt(a_break)
    force = Polynomial([0, 0, 0, -np.sqrt(8 * np.pi * work * modulus), 0, 0, 4 * modulus / (3 * reduced)])
    energy = (force * Polynomial([-s, 0, 0, 4 / reduced])).integ()   # dξ = (4x³/R* − s) dx
    return modulus, a_touch, a_break, xi_break, energy(np.sqrt(a_break)) - energy(np.sqrt(a_touch))


def assert_pull_off_curve(law, overlaps, forces, pull_off, xi_break):
    """Of the normal ``forces`` (positive in compression) of a contact pulled apart through
    ``overlaps``: the least is ``−pull_off`` to 1 %; a DMT contact acts only while it overlaps, a
    JKR contact holds, stretched, down to ``xi_break`` and not beyond."""
    assert forces.min() == pytest.approx(-pull_off, rel=1e-2)
    if law == "dmt":
        assert (forces[overlaps <= 0] == 0).all() and (forces[overlaps > 0] < 0).any()
        return
    holds = forces != 0
    assert holds[overlaps > xi_break * (1 - 1e-3)].all() and not holds[overlaps < xi_break * (1 + 1e-3)].any()


@pytest.mark.parametrize("law, factor", [("jkr", 1.5), ("dmt", 2.0)])
def test_spheres_pulled_apart_quasi_statically_reach_the_pull_off_force(law, factor):
    """Two spheres (R* = 0.3) pulled apart in small steps of their distance: the least force is
    the pull-off force, 1.5 π w R* (JKR) or 2 π w R* (DMT), to 1 %. A JKR contact holds, stretched,
    until ξ_c and breaks there; pushed back, it does not form again before the spheres touch,
    and then at once on the JKR branch (−8/9 of the pull-off force at ξ = 0)."""
    stiffness, work = 1e4, 2.0
    reach, reduced = 1.25, 0.5 * 0.75 / 1.25
    system = SystemBuilder()
    system.add_body((0.0, 0.0, 0.0), mass=1.0, inertia=0.1, diameter=1.0)
    system.add_body((reach - 0.02, 0.0, 0.0), mass=1.0, inertia=0.1, diameter=1.5)
    model, state = system.finish(contact={"normal": law, "k_pp": stiffness, "work_of_adhesion": work})
    xi_break = jkr_theory(stiffness, reach, reduced, work)[3]
    overlaps = np.linspace(0.02, 1.5 * xi_break, 4001)
    forces, contacts = [], None
    for xi in overlaps:
        state.position[1, 0] = reach - xi
        contacts = compute_forces(model, state, contacts)
        forces.append(state.force[1, 0])   # on the second sphere, away from the first: positive in compression
        assert state.force[0, 0] == -state.force[1, 0]
    pull_off = factor * np.pi * work * reduced
    assert_pull_off_curve(law, overlaps, np.array(forces), pull_off, xi_break)
    if law == "dmt":
        return
    for xi in (0.5 * xi_break, -1e-9 * reach):   # back towards touch: apart, it stays broken
        state.position[1, 0] = reach - xi
        contacts = compute_forces(model, state, contacts)
        assert state.force[1, 0] == 0.0
    state.position[1, 0] = reach * (1 - 1e-12)
    compute_forces(model, state, contacts)
    assert state.force[1, 0] == pytest.approx(-8 / 9 * pull_off, rel=1e-6)


@pytest.mark.parametrize("ratio", [0.8, 1.25])
def test_a_slow_sphere_sticks_to_a_jkr_wall_and_a_fast_one_rebounds(ratio):
    """A sphere (m = 1, R = 0.5) meets a JKR plane head on, undamped, at ``ratio`` times the
    sticking velocity ``v_s = √(2ΔE/m)`` of its contact's hysteresis ``ΔE`` (`jkr_theory`: the
    energy of Thornton and Ning's (1998) argument; in closed form ``v_s = 1.035 (F_c⁵/(E*² R* m³))^{1/6}``
    with the pull-off force ``F_c``): below it the sphere stays bound, above it leaves at
    ``√(v² − v_s²)``, having booked exactly ΔE as ``hysteresis``; the budget closes."""
    stiffness, work, radius = 1e4, 1.0, 0.5
    modulus, _, _, xi_break, lost = jkr_theory(stiffness, radius, radius, work)
    sticking = np.sqrt(2 * lost)
    pull_off = 1.5 * np.pi * work * radius
    assert sticking == pytest.approx(1.035 * (pull_off ** 5 / (modulus ** 2 * radius)) ** (1 / 6), rel=1e-3)
    speed = ratio * sticking
    system = SystemBuilder()
    system.add_body((0.0, 0.0, radius + 1e-3), mass=1.0, inertia=0.1, diameter=2 * radius, velocity=(0.0, 0.0, -speed))
    model, state = system.finish([dict(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), size=0.0)],
                                 contact={"normal": "jkr", "k_pw": stiffness, "work_of_adhesion": work})
    sim = Simulation(model, state, "rrp2", 2e-5)
    start = sim.energy_budget()
    sim.advance(40000)
    budget = sim.energy_budget()
    bound = sim.state.position[0, 2] < radius - xi_break
    assert bound == (ratio < 1)
    if not bound:
        assert sim.state.velocity[0, 2] == pytest.approx(np.sqrt(speed ** 2 - sticking ** 2), rel=1e-2)
        assert budget["hysteresis"] == pytest.approx(lost, rel=1e-12)   # one cycle: the loop's energy
    assert abs(budget["total"] - start["total"]) < 1e-3 * start["kinetic_translational"]
