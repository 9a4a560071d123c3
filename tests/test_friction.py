"""Friction, rolling and twisting resistance (`dem.interactions.friction`, `dem.interactions.rolling`):
single-sphere mechanics against the rigid-body results, conservation of momenta, the energy
budget, and the per-contact springs across neighbour rebuilds, restarts and thread counts."""

import numba
import numpy as np
import pytest
from support.surfaces import floor_mesh

from dem import Simulation, SystemBuilder
from dem.checkpoint import load_checkpoint, restore, save_checkpoint
from dem.packing import bond_pairs, fcc_block, make_shape, random_packing

RADIUS, MASS, GRAVITY = 0.5, 1.0, 1.0
INERTIA = 0.4 * MASS * RADIUS ** 2
K_WALL = 1e5
FLOOR = dict(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), size=0.0)


def resting_overlap(weight):
    """Hertz overlap δ of a sphere of radius ``RADIUS`` pressed on a wall by ``weight``."""
    return (weight * RADIUS / K_WALL) ** (2 / 3)


def sphere_on_floor(velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0), tilt=0.0, dt=2e-4, floor=FLOOR,
                    **contact):
    """One sphere resting on the floor z = 0 (the ``[[walls]]`` table ``floor``) in gravity ``g``
    tilted by ``tilt`` about y (an incline of angle ``tilt`` with the sphere rolling down +x)."""
    g = GRAVITY * np.array([np.sin(tilt), 0.0, -np.cos(tilt)])
    system = SystemBuilder()
    height = RADIUS * (1.0 - resting_overlap(MASS * GRAVITY * np.cos(tilt)))
    system.add_body((0.0, 0.0, height), mass=MASS, inertia=INERTIA, diameter=2 * RADIUS, velocity=velocity,
                    angular_velocity=angular_velocity)
    model, state = system.finish([floor], contact={"k_pw": K_WALL, **contact}, fields={"gravity": tuple(g)})
    return Simulation(model, state, "rrp2", dt)


def record(sim, steps, every=10):
    """``t, x, v (n, 3), Ω (n, 3), total`` of body 0 every ``every`` steps."""
    rows = []
    for _ in range(steps // every):
        sim.advance(every)
        s = sim.state
        rows.append((s.time, *s.position[0], *s.velocity[0], *s.angular_velocity[0], sim.energy_budget()["total"]))
    rows = np.array(rows)
    return rows[:, 0], rows[:, 1:4], rows[:, 4:7], rows[:, 7:10], rows[:, 10]


def slope(t, y):
    return np.polyfit(t, y, 1)[0]


# ---------------------------------------------------------------------------------------------
# Single spheres
# ---------------------------------------------------------------------------------------------

def test_sliding_sphere_decelerates_at_mu_g_then_rolls_at_five_sevenths():
    mu, v0 = 0.3, 1.0
    sim = sphere_on_floor(velocity=(v0, 0.0, 0.0), friction=mu)
    start = sim.energy_budget()
    t, x, v, omega, total = record(sim, 10_000)
    switch = 2 * v0 / (7 * mu * GRAVITY)   # v − ωR = v0 − (7/2) μ g t reaches 0
    sliding = (t > 0.1) & (t < 0.9 * switch)
    assert slope(t[sliding], v[sliding, 0]) == pytest.approx(-mu * GRAVITY, rel=2e-3)
    assert slope(t[sliding], omega[sliding, 1]) * RADIUS == pytest.approx(2.5 * mu * GRAVITY, rel=5e-3)
    rolling = t > 1.2 * switch
    assert v[rolling, 0].mean() == pytest.approx(5 / 7 * v0, rel=1e-3)
    assert (omega[rolling, 1] * RADIUS).mean() == pytest.approx(5 / 7 * v0, rel=2e-3)
    slip_speed = v[:, 0] - omega[:, 1] * RADIUS
    assert t[np.argmax(slip_speed < 0.01 * v0)] == pytest.approx(switch, rel=0.02)
    # the energy budget closes: slip work is booked as friction
    end = sim.energy_budget()
    assert end["friction"] == pytest.approx(0.5 * MASS * v0 ** 2 * (1 - 5 / 7), rel=5e-3)
    assert np.abs(total - start["total"]).max() < 1e-3 * 0.5 * MASS * v0 ** 2


def test_a_sphere_on_a_moving_floor_ends_rolling_at_two_sevenths_of_its_speed():
    """A sphere at rest set on a frictional floor that slides at ``V``: friction (the only force
    with a moment about the contact point) leaves the angular momentum about that point zero,
    ``m v R + J ω = 0``, so when it rolls on the floor (``v − ωR = V``) ``v = 2V/7``. The
    friction's reaction ``−μ m g`` loads the floor while it slips, and the floor's work (column
    ``walls``) closes the energy budget."""
    mu, speed = 0.3, 1.0
    sim = sphere_on_floor(floor=dict(FLOOR, velocity=(speed, 0.0, 0.0)), friction=mu)
    start = sim.energy_budget()
    loads = []
    rows = []
    for _ in range(1000):
        sim.advance(10)
        loads.append(sim.state.interactions["walls"].load[0, :3].copy())
        rows.append((sim.state.time, sim.state.velocity[0, 0], sim.state.angular_velocity[0, 1],
                     sim.energy_budget()["total"]))
    t, v, omega, total = np.array(rows).T
    loads = np.array(loads)
    switch = 2 * speed / (7 * mu * GRAVITY)   # V − (v − ωR) = (7/2) μ g t reaches V
    momentum = MASS * v * RADIUS + INERTIA * omega   # about the contact point
    assert np.abs(momentum).max() < 1e-3 * MASS * speed * RADIUS
    sliding = (t > 0.1) & (t < 0.9 * switch)
    assert slope(t[sliding], v[sliding]) == pytest.approx(mu * GRAVITY, rel=2e-3)
    np.testing.assert_allclose(loads[sliding, 0], -mu * MASS * GRAVITY, rtol=1e-3)
    rolling = t > 1.2 * switch
    assert v[rolling].mean() == pytest.approx(2 / 7 * speed, rel=1e-3)
    assert (v[rolling] - omega[rolling] * RADIUS).mean() == pytest.approx(speed, rel=1e-3)
    end = sim.energy_budget()
    assert end["walls"] < -0.1 * MASS * speed ** 2   # the floor did work on the sphere …
    assert end["friction"] > 0.1 * MASS * speed ** 2   # … part of it lost in slip
    assert np.abs(total - start["total"]).max() < 1e-3 * 0.5 * MASS * speed ** 2


@pytest.mark.parametrize("rolls", [True, False])
def test_sphere_on_an_incline(rolls):
    """``a = 5/7 g sin θ`` rolling when ``tan θ < 7/2 μ``, else ``g (sin θ − μ cos θ)`` sliding."""
    mu = 0.2
    theta = np.arctan(3.5 * mu * (0.7 if rolls else 1.5))
    sim = sphere_on_floor(tilt=theta, friction=mu)
    t, x, v, omega, total = record(sim, 10_000)
    late = t > 0.2
    a = slope(t[late], v[late, 0])
    if rolls:
        assert a == pytest.approx(5 / 7 * GRAVITY * np.sin(theta), rel=2e-3)
        assert slope(t[late], omega[late, 1]) * RADIUS == pytest.approx(a, rel=2e-3)
    else:
        assert a == pytest.approx(GRAVITY * (np.sin(theta) - mu * np.cos(theta)), rel=2e-3)
        assert slope(t[late], omega[late, 1]) * RADIUS == pytest.approx(2.5 * mu * GRAVITY * np.cos(theta), rel=5e-3)
    assert np.abs(total - total[0]).max() < 1e-3 * 0.5 * MASS * v[-1, 0] ** 2


def test_rolling_resistance_stops_a_rolling_sphere():
    """A constant resisting moment ``μ_r R m g`` decelerates a rolling sphere at ``5/7 μ_r g``:
    it stops after ``7 v0² / (10 μ_r g)``."""
    mu_r, v0 = 0.1, 0.5
    sim = sphere_on_floor(velocity=(v0, 0.0, 0.0), angular_velocity=(0.0, v0 / RADIUS, 0.0), friction=0.5,
                          rolling_friction=mu_r, restitution=0.5)
    t, x, v, omega, total = record(sim, 50_000)
    stop = np.argmax(v[:, 0] <= 0.0)
    assert stop > 0
    assert x[stop, 0] == pytest.approx(7 * v0 ** 2 / (10 * mu_r * GRAVITY), rel=5e-3)
    assert t[stop] == pytest.approx(v0 / (5 / 7 * mu_r * GRAVITY), rel=5e-3)
    assert np.abs(v[-1000:, 0]).max() < 1e-3 * v0 and np.abs(x[-1000:, 0] - x[-1, 0]).max() < 1e-3
    assert np.abs(total - total[0]).max() < 1e-3 * 0.5 * MASS * v0 ** 2 * 1.4


def test_twisting_resistance_stops_a_spinning_sphere():
    """A sphere spinning about the floor's normal decelerates at ``μ_t R m g / J`` once its
    twisting spring has wound up to the limit (after ``θ_lim = μ_t R F_n/k_tw``, about 0.3 rad
    here: the stop comes ``θ_lim/(2 Ω0)`` later than for a constant moment); the spring then
    rocks it back, damped by its dashpot."""
    mu_t, spin = 0.2, 2.0
    sim = sphere_on_floor(angular_velocity=(0.0, 0.0, spin), friction=0.5, twisting_friction=mu_t)
    t, x, v, omega, total = record(sim, 40_000)
    deceleration = mu_t * RADIUS * MASS * GRAVITY / INERTIA
    turning = (t > 0.5) & (t < 1.5)
    assert slope(t[turning], omega[turning, 2]) == pytest.approx(-deceleration, rel=1e-3)
    stop = np.argmax(omega[:, 2] <= 0.0)
    assert t[stop] == pytest.approx(spin / deceleration, rel=0.05)
    assert np.abs(omega[-500:, 2]).max() < 0.05 * spin   # the spring's rebound, damped by the dashpot
    assert np.abs(total - total[0]).max() < 1e-3 * 0.5 * INERTIA * spin ** 2


@pytest.mark.parametrize("incidence", [0.2, 5.0])
def test_oblique_impact_on_a_wall(incidence):
    """A sphere hits a frictional wall (no gravity, elastic normal law) with tangential speed
    ``incidence × v_n``. Sliding throughout (``v_t/v_n > 7/2 μ (1 + e)``) it leaves with
    ``v_t' = v_t − 2 μ v_n`` and ``R ΔΩ = 5/2 · 2 μ v_n``; sticking (small incidence) it leaves
    with less tangential speed than it came with, but never reversed beyond the rolling speed.
    Either way momentum about the contact changes only through the wall and the energy budget
    closes (total constant, friction work ≥ 0)."""
    mu, v_n = 0.3, 1.0
    system = SystemBuilder()
    system.add_body((0.0, 0.0, RADIUS * 1.001), mass=MASS, inertia=INERTIA, diameter=2 * RADIUS,
                    velocity=(incidence * v_n, 0.0, -v_n))
    model, state = system.finish([FLOOR], contact={"k_pw": K_WALL, "friction": mu})
    sim = Simulation(model, state, "rrp2", 1e-5)
    start = sim.energy_budget()
    sim.advance(3000)   # the contact lasts about 1.3e-2
    end = sim.energy_budget()
    assert state.position[0, 2] > RADIUS and state.velocity[0, 2] == pytest.approx(v_n, rel=1e-6)
    v_t, spin = state.velocity[0, 0], state.angular_velocity[0, 1] * RADIUS
    if incidence > 3.5 * mu * 2:
        assert v_t == pytest.approx(incidence * v_n - 2 * mu * v_n, rel=1e-6)
        assert spin == pytest.approx(2.5 * 2 * mu * v_n, rel=5e-3)
    else:
        assert 0.0 < spin and v_t < incidence * v_n and v_t - spin > -incidence * v_n
        # the spin gained equals the tangential momentum lost (the friction impulse), about the centre
        # (the lever arm R − ξ_n/2 is up to 0.6 % shorter than R during the contact)
        assert INERTIA * state.angular_velocity[0, 1] == pytest.approx(MASS * (incidence * v_n - v_t) * RADIUS,
                                                                        rel=1e-2)
    assert end["friction"] >= 0.0 and end["tangential"] == 0.0
    assert end["total"] == pytest.approx(start["total"], rel=1e-4)


# ---------------------------------------------------------------------------------------------
# Granules: momenta, energy, the springs' bookkeeping
# ---------------------------------------------------------------------------------------------

FRICTIONAL = {"k_pp": 1e4, "k_pw": 1e4, "friction": 0.5, "rolling_friction": 0.1, "twisting_friction": 0.1}


def granule(n=150, seed=0, walls=(), gravity=(0.0, 0.0, 0.0), skin=0.0, speed=1.0, meshes=(), shape=None, **contact):
    """``n`` touching spheres in a ball (or in ``shape``), with random velocities and spins (they
    collide), with the ``[[walls]]`` tables ``walls`` and the mesh walls ``meshes``."""
    rng = np.random.default_rng(seed)
    shape = shape or make_shape("sphere", diameter=1.4 * n ** (1 / 3), center=(0, 0, 4.0))
    position, diameter = random_packing(shape, n_particles=n, distribution="uniform", diameter_min=0.8,
                                        diameter_max=1.2, seed=seed)
    mass = np.pi / 6 * diameter ** 3
    system = SystemBuilder()
    system.add_bodies(position, mass=mass, inertia=0.1 * mass * diameter ** 2, diameter=diameter,
                      velocity=speed * rng.normal(size=(n, 3)), angular_velocity=3 * speed * rng.normal(size=(n, 3)))
    return system.finish(list(walls), list(meshes), contact={**FRICTIONAL, "skin": skin, **contact},
                         fields={"gravity": gravity})


def momenta(sim):
    row = sim.energy_budget()
    return np.array([row[k] for k in ("Px", "Py", "Pz")]), np.array([row[k] for k in ("Lx", "Ly", "Lz")])


def test_friction_between_particles_conserves_momenta():
    model, state = granule(restitution=0.6)
    assert set(model.interactions) == {"contact_pp"}
    sim = Simulation(model, state, "rrp2", 2e-4)
    p0, l0 = momenta(sim)
    p_scale = np.sum(model.mass[:, None] * np.abs(state.velocity))
    l_scale = (np.sum(np.abs(np.cross(state.position, model.mass[:, None] * state.velocity)))
               + np.sum(model.inertia[:, :1] * np.abs(state.angular_velocity)))
    sim.advance(2000)
    p1, l1 = momenta(sim)
    row = sim.energy_budget()
    assert row["friction"] > 0 and row["tangential"] > 0 and row["rolling"] > 0 and row["twisting"] > 0
    assert np.abs(p1 - p0).max() < 1e-13 * p_scale
    assert np.abs(l1 - l0).max() < 1e-13 * l_scale


def test_the_forces_of_a_pair_are_opposite_about_the_contact_point():
    """Two spheres pressed together, spinning and sliding: bitwise opposite forces, and moments
    that balance about the contact point on the line of centres."""
    system = SystemBuilder()
    system.add_body((0.0, 0.0, 0.0), mass=1.0, inertia=0.1, diameter=1.0, velocity=(0.0, 0.3, -0.2),
                    angular_velocity=(1.0, -2.0, 3.0))
    system.add_body((0.97, 0.1, -0.05), mass=1.2, inertia=0.15, diameter=1.1, velocity=(-0.1, -0.4, 0.2),
                    angular_velocity=(-2.0, 0.5, 1.0))
    model, state = system.finish(contact=FRICTIONAL)
    sim = Simulation(model, state, "rrp2", 1e-4)
    sim.advance(20)
    assert sim.energy_budget()["tangential"] > 0 and sim.energy_budget()["rolling"] > 0
    force, moment, x = state.force, state.moment, state.position
    assert np.array_equal(force[0], -force[1])
    d = x[0] - x[1]
    r = np.linalg.norm(d)
    overlap = 0.5 * (model.diameter[0] + model.diameter[1]) - r
    contact = x[1] + (0.5 * model.diameter[1] - overlap / 2) * d / r
    torque = np.cross(x[0] - contact, force[0]) + moment[0] + np.cross(x[1] - contact, force[1]) + moment[1]
    assert np.abs(torque).max() < 1e-14 * np.abs(moment).max()


def turntable(size=12.0):
    """A frictional floor z = 0 of jittered triangles (a mesh), turning about the z axis."""
    points, faces = floor_mesh(n=8, size=size, jitter=0.3 * size / 8)
    return dict(vertices=points, faces=faces, center=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.5))


@pytest.mark.parametrize("case", ["sliding", "rolling", "granule", "turntable"])
def test_energy_budget_closes(case):
    """``total`` (kinetic + Hertz + gravity + tangential + rolling + twisting + friction +
    dissipated, + the work of a moving wall) stays constant to 1e-3 of the kinetic energy
    scale."""
    if case in ("granule", "turntable"):   # a frictional granule falls on a frictional floor and settles
        floor = {"walls": [dict(FLOOR, size=0.0)]} if case == "granule" else {"meshes": [turntable()]}
        model, state = granule(**floor, gravity=(0.0, 0.0, -1.0), restitution=0.7)
        sim = Simulation(model, state, "rrp2", 2e-4)
        steps = 10_000
    else:
        spin = (0.0, 3.0, 0.0) if case == "rolling" else (0.0, 0.0, 0.0)
        sim = sphere_on_floor(velocity=(1.0, 0.0, 0.0), angular_velocity=spin, friction=0.3, rolling_friction=0.05,
                              twisting_friction=0.05)
        steps = 20_000
    start = sim.energy_budget()
    scale = start["kinetic_translational"] + start["kinetic_rotational"]
    worst = 0.0
    for _ in range(20):
        sim.advance(steps // 20)
        worst = max(worst, abs(sim.energy_budget()["total"] - start["total"]))
    row = sim.energy_budget()
    assert row["friction"] > 0.05 * scale
    assert worst < 1e-3 * scale
    if case == "turntable":   # the floor turned the granule: its work is part of the budget
        assert row["walls"] < -0.05 * scale


def pressed_pair(skin):
    """Two spheres held pressed together by a bond, one spinning, flying along x: one contact
    that slips, sticks and rolls while the pair travels across many skins."""
    system = SystemBuilder()
    system.add_bodies([(0.0, 0.0, 0.0), (0.0, 0.99, 0.0)], mass=1.0, inertia=0.1, diameter=1.0,
                      velocity=(5.0, 0.0, 0.0), angular_velocity=[(0.0, 0.0, 0.0), (0.5, 0.3, 4.0)])
    system.add_bond(0, 1, k_axial=5e3, k_shear=0.0, k_bending=0.0)
    return system.finish(contact={**FRICTIONAL, "skin": skin})


def test_springs_survive_neighbour_rebuilds():
    """The pair's contact behaves as if the neighbour list had never been rebuilt."""
    runs = []
    for skin in (0.02, 1e3):
        model, state = pressed_pair(skin)
        sim = Simulation(model, state, "rrp2", 1e-4)
        sim.advance(6000)
        runs.append((state, sim))
    (moved, rebuilt), (still, once) = runs
    assert rebuilt.contacts.n_builds > 250 and once.contacts.n_builds == 1
    assert moved.position[0, 0] > 100 * 0.02
    for field in ("position", "velocity", "angular_velocity", "orientation"):
        assert np.array_equal(getattr(moved, field), getattr(still, field)), field
    assert rebuilt.energy_budget()["friction"] > 0 and rebuilt.energy_budget()["tangential"] > 0


def floor_granule(seed=2, n=150, mesh=False, shape=None, skin=0.0, substeps=0):
    """The granule falling on a frictional floor that slides along x (``mesh``: a turning
    triangulated floor, `turntable`), beside a frictional servo platen (``substeps``: the contact
    sub-steps; 0, the default, runs an unbonded granule with the plain map)."""
    floor = [] if mesh else [dict(FLOOR, size=0.0, velocity=(0.3, 0.1, 0.0))]
    return granule(n=n, seed=seed, walls=floor + [dict(point=(3.0, 0, 0), normal=(-1.0, 0, 0), size=0.0,
                                                       friction=0.2, servo=True, target_force=20.0, max_speed=0.5)],
                   meshes=[turntable(60.0)] if mesh else [], gravity=(0.0, 0.0, -1.0), restitution=0.7,
                   shape=shape, skin=skin, substeps=substeps)


def slab(n, overlap=0.02):
    """A box 8 high for ``n`` spheres packed as densely as `granule`'s ball, set on the floor and
    against the servo platen of `floor_granule` so that the spheres next to them press on them by
    at most ``overlap``."""
    side = np.sqrt(np.pi / 6 * 1.4 ** 3 * n / 8.0)
    return make_shape("box", size=(side, side, 8.0), center=(3.0 + overlap - side / 2, 0.0, 4.0 - overlap))


def test_restart_continues_bit_for_bit(tmp_path):
    scene = tmp_path / "scene.toml"
    scene.write_text("# stand-in for the scene file a checkpoint records\n")
    model, state = floor_granule(substeps=3)
    assert set(model.interactions) >= {"contact_pp", "contact_pw"}
    sim = Simulation(model, state, "rrp2", 2e-4)
    sim.advance(2000)
    for _ in range(40):   # on to a step where friction loads both walls (along y: friction only)
        sim.advance(50)
        if np.abs(state.interactions["walls"].load[:, 1]).min() > 0:
            break
    assert np.abs(state.interactions["walls"].load[:, 1]).min() > 0
    assert (state.interactions["contact_pp"].active > 0).any()  # sub-stepped across the restart
    save_checkpoint(tmp_path / "checkpoint.npz", sim, scene, (), (0.0, 1.0))
    sim.advance(500)

    model2, state2 = floor_granule(substeps=3)
    restored, _ = restore(load_checkpoint(tmp_path / "checkpoint.npz"), model2, state2)
    resumed = Simulation(model2, state2, "rrp2", 2e-4, restored=restored)
    resumed.advance(500)
    for field in ("position", "velocity", "angular_velocity"):
        assert np.array_equal(getattr(state2, field), getattr(state, field))
    for name in ("contact_pp",):
        assert np.array_equal(resumed.contacts.export()[f"history_values.{name}"],
                              sim.contacts.export()[f"history_values.{name}"])
    for a, b in zip(state2.interactions["contact_pw"], state.interactions["contact_pw"]):
        assert np.array_equal(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("mesh", [False, True], ids=["planes", "mesh"])
def test_springs_are_independent_of_the_thread_count(mesh):
    """5000 spheres on planes or a turning mesh, in three parallel chunks, sub-stepped. Slow: its
    parallel loop is compiled for it alone; the default suite checks the springs across threads in
    test_insertion's pour (`test_threads_do_not_change_a_filling_and_emptying_run`)."""
    runs = []
    for parallel, threads in ((False, 1), (True, 1), (True, 2)):
        numba.set_num_threads(threads)
        try:
            # three parallel chunks; a thin skin, so that the neighbour list is rebuilt every few steps
            model, state = floor_granule(n=5000, seed=4, mesh=mesh, shape=slab(5000), skin=0.02, substeps=3)
            sim = Simulation(model, state, "rrp2", 2e-4, parallel=parallel)
            sim.advance(200)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        assert 5 <= sim.contacts.n_builds <= 100
        runs.append((state, sim.contacts.export()))
    assert (runs[0][0].interactions["contact_pp"].active > 0).any()  # the contacts were sub-stepped
    for state, export in runs[1:]:
        assert np.array_equal(state.position, runs[0][0].position)
        assert np.array_equal(state.angular_velocity, runs[0][0].angular_velocity)
        for key in ("history_values.contact_pp",):
            assert np.array_equal(export[key], runs[0][1][key])
        for name in ("walls", "contact_pw"):
            for a, b in zip(state.interactions[name], runs[0][0].interactions[name]):
                assert np.array_equal(a, b)
    # the springs of the floor's contacts took part (the mesh's keys are 1 and up): 65 and 61 at the end
    assert (runs[0][0].interactions["contact_pw"].wall_key >= (1 if mesh else 0)).sum() > 40


def test_spheres_touching_by_round_off_carry_no_friction():
    """A bonded FCC block of touching spheres in rigid flight (a fifth of its neighbour pairs
    overlap by round-off, δ ~ 1e-16) steps to the same bits with friction, rolling and twisting
    resistance as without: such pairs carry none (`hertz.in_contact`, δ > 1e-9). A pair sliding
    past each other carries friction at δ = 1e-8, none at δ = 1e-10."""
    position = fcc_block(200, diameter=1.0)
    pairs = bond_pairs(position, np.ones(len(position)), 1e-6)
    d = position[pairs[:, 0]] - position[pairs[:, 1]]
    assert np.count_nonzero(np.einsum("ij,ij->i", d, d) < 1.0) > len(pairs) // 10  # round-off overlaps
    runs = []
    for contact in ({"k_pp": 1e5}, {"k_pp": 1e5, "friction": 0.5, "rolling_friction": 0.1, "twisting_friction": 0.1}):
        system = SystemBuilder()
        system.add_bodies(position, mass=1.0, inertia=0.1, diameter=1.0, velocity=(-1.0, 0.3, 0.0))
        system.add_bonds(pairs[:, 0], pairs[:, 1], k_axial=200.0, k_shear=200.0, k_bending=10.0)
        model, state = system.finish([], contact=contact)
        Simulation(model, state, "rrp2", 1e-3).advance(300)
        runs.append(state)
    assert "contact_pp" in runs[1].interactions
    for name in ("position", "velocity", "orientation", "angular_velocity"):
        assert np.array_equal(getattr(runs[0], name), getattr(runs[1], name)), name
    for overlap, carries in ((1e-8, True), (1e-10, False)):
        system = SystemBuilder()
        system.add_bodies([[0.0, 0.0, 0.0], [1.0 - overlap, 0.0, 0.0]], mass=1.0, inertia=0.1, diameter=1.0,
                          velocity=[[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        model, state = system.finish([], contact={"k_pp": 1e5, "friction": 0.5})
        sim = Simulation(model, state, "rrp2", 1e-4)
        sim.advance(1)
        assert (sim.energy_budget()["friction"] > 0.0) == carries, overlap
