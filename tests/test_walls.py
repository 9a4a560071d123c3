"""Walls (`dem.interactions.walls`, `dem.meshes`): triangulated floors equal to planes, the V a
sphere rests in, prescribed and servo motion, the work of moving walls in the energy budget,
walls.csv, the VTK drawing of moving walls and meshes, and bad input."""

import csv
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from support.granule import granule_file
from support.surfaces import floor_mesh, rig_file, stack_file, write_surface

from dem import Simulation, SystemBuilder
from dem.cli import main
from dem.engine import compute_forces
from dem.interactions import hertz
from dem.meshes import MAX_CONTACTS, merge_points
from dem.rotations import quat_from_rotvec, quat_from_rotvec_one, quat_matrix
from dem.runner import describe, prepare, run

K_PW = 1e3
GRAVITY = np.array([0.0, 0.0, -9.81])
#: a tilted frame, so that the floor's geometry carries round-off
TILT = quat_matrix(quat_from_rotvec(np.array([0.3, -0.4, 0.2])))


def sphere_on(surface, start, velocity, frame=np.eye(3), gravity=GRAVITY, angular_velocity=np.zeros(3), **sections):
    """One sphere (D = 1, m = 1) at ``start`` with ``velocity`` and ``angular_velocity`` (in the
    floor's frame) on the plane z = 0 (``surface`` None) or on the mesh ``surface``, the whole
    turned by ``frame``."""
    system = SystemBuilder()
    system.add_body(frame @ start, mass=1.0, inertia=0.1, diameter=1.0, velocity=frame @ velocity,
                    angular_velocity=frame @ angular_velocity)
    sections = {"contact": {"k_pw": K_PW}, "fields": {"gravity": frame @ gravity}, **sections}
    if surface is None:
        return system.finish([dict(point=(0.0, 0.0, 0.0), normal=frame @ (0.0, 0.0, 1.0))], **sections)
    points, faces = surface
    return system.finish([], [dict(vertices=points @ frame.T, faces=faces)], **sections)


def trajectory(model, state, steps, dt=1e-3):
    """Position, force, moment and ``(hertz_pw, total)`` after each step."""
    sim = Simulation(model, state, "rrp2", dt)
    out = []
    for _ in range(steps):
        sim.advance(1)
        row = sim.energy_budget()
        out.append((state.position[0].copy(), state.force[0].copy(), state.moment[0].copy(),
                    np.array([row["hertz_pw"], row["total"]])))
    return out


# ---------------------------------------------------------------------------------------------
# a triangulated plane is the plane
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("jitter", [0.0, 0.3])
def test_a_triangulated_floor_is_the_plane_at_every_point(jitter):
    """Spheres over face interiors, exactly over edges and exactly over vertices (the grid's
    points are exact in binary) feel what they feel from the plane: one contact each, the same
    force and energy to round-off (on the flat floor to the last bit over faces, and to the
    last bit of a square root over edges and vertices)."""
    points, faces = floor_mesh(jitter=jitter)
    rng = np.random.default_rng(1)
    exact = np.concatenate((points[:, :2], 0.5 * (points[faces[:, 0], :2] + points[faces[:, 1], :2])))
    spots = np.concatenate((rng.uniform(-2.9, 2.9, (40, 2)), exact, exact + rng.uniform(-1e-14, 1e-14, exact.shape)))
    for frame, tolerance in ((np.eye(3), 1e-15), (TILT, 1e-12)):
        for x, y in spots:
            start = np.array((x, y, rng.uniform(0.3, 0.499)))
            forces, energies = [], []
            for surface in (None, (points, faces)):
                model, state = sphere_on(surface, start, np.zeros(3), frame, gravity=np.zeros(3))
                sim = Simulation(model, state)
                forces.append(state.force[0].copy())
                energies.append(sim.energy_budget()["hertz_pw"])
            assert state.interactions["walls"].mesh_count[0] == 1
            scale = np.abs(forces[0]).max()
            assert np.abs(forces[1] - forces[0]).max() <= tolerance * scale, (x, y)
            assert abs(energies[1] - energies[0]) <= tolerance * energies[0], (x, y)


#: friction, rolling and twisting resistance (their dashpots off: a dashpot switches off where its
#: spring reaches its limit, and round-off would decide that step differently on the two floors)
FRICTIONAL = {"friction": 0.3, "rolling_friction": 0.05, "twisting_friction": 0.05, "rolling_damping": 0.0}


@pytest.mark.parametrize("start, velocity", [((-2.0, -2.0, 0.48), (2.0, 2.0, 0.0)),    # through vertices
                                             ((-2.5, 0.0, 0.49), (2.5, 0.0, 0.0)),     # along an edge
                                             ((0.3, -0.2, 0.48), (1.3, 0.9, 0.0))])    # across edges
@pytest.mark.parametrize("contact", [{}, FRICTIONAL], ids=["frictionless", "frictional"])
def test_a_sphere_sliding_over_a_triangulated_floor_moves_as_on_the_plane(start, velocity, contact):
    """Bouncing, sliding and (with friction) rolling across shared edges and vertices of a
    tilted floor of jittered triangles: positions, forces, moments and energies equal the
    plane's to round-off (the friction springs are carried from triangle to triangle)."""
    runs = [trajectory(*sphere_on(surface, np.array(start), np.array(velocity), TILT,
                                  contact={"k_pw": K_PW, **contact}), 1500)
            for surface in (None, floor_mesh(jitter=0.3))]
    for (x0, f0, m0, e0), (x1, f1, m1, e1) in zip(*runs):
        assert np.abs(x1 - x0).max() < 1e-13
        assert np.abs(f1 - f0).max() < 1e-12 * 9.81 * 5
        assert np.abs(m1 - m0).max() < 1e-12 * 9.81 * 5 * 0.5
        assert np.abs(e1 - e0).max() < 1e-12 * abs(e0[1])
    assert max(e[0] for _, _, _, e in runs[0]) > 0.01  # it touched the floor all along
    if contact:  # friction acted: the sphere turned (and its moment is not zero)
        assert max(np.abs(m).max() for _, _, m, _ in runs[0]) > 0.1
    x_end = TILT.T @ runs[0][-1][0]
    # and crossed several triangles (rolling, with friction, at about 5/7 of the speed)
    assert np.linalg.norm(x_end[:2] - np.array(start[:2])) > (1.3 if contact else 2.3)


def test_a_spinning_sphere_lands_slides_across_the_shared_edge_and_rolls_on_two_triangles_as_on_the_plane():
    """A spinning sphere dropped on a flat floor of two triangles (the square z = 0 split along
    its diagonal x + y = 0), with damping (restitution 0.6), friction, rolling and twisting
    resistance: it lands, slides across the shared edge, bounces three more times and ends
    rolling. Its position, velocity and spin equal those over the plane z = 0 to 1e-12 of their
    scale at every recorded step (the same bits: a contact that starts takes the gap of a step
    ago as over a plane, ``gap − h v_n``, `dem.interactions.friction.mesh_gap_before`; taking the
    gap it had now, the mean lever arm of the spring's first step was ``h |v_n|/4`` short, the
    spin turned that into a tangential velocity, and the runs parted by 1e-9 after the bounces)."""
    contact = {"k_pw": 1e5, "restitution": 0.6, "friction": 0.3, "rolling_friction": 0.1, "twisting_friction": 0.1}
    runs = []
    for surface in (None, floor_mesh(n=1, size=4.0)):
        model, state = sphere_on(surface, np.array((-0.03, -0.02, 0.505)), np.array((0.5, 0.6, -0.1)),
                                 gravity=np.array((0.0, 0.0, -1.0)), angular_velocity=np.array((-0.8, 0.8, 0.5)),
                                 contact=contact)
        sim = Simulation(model, state, "rrp2", 1e-4)
        rows = []
        for _ in range(600):
            sim.advance(10)
            rows.append(np.concatenate((state.position[0], state.velocity[0], state.angular_velocity[0])))
        runs.append(np.array(rows))
    plane, mesh = runs
    x, v, omega = plane[:, :3], plane[:, 3:6], plane[:, 6:]
    touching = x[:, 2] < 0.5
    slip = np.hypot(v[:, 0] - 0.5 * omega[:, 1], v[:, 1] + 0.5 * omega[:, 0])   # at the contact point
    assert np.count_nonzero(touching[1:] & ~touching[:-1]) == 4   # it landed and bounced three times
    crossing = np.argmax(x[:, 0] + x[:, 1] > 0)
    assert touching[crossing] and slip[crossing] > 0.1   # sliding across the shared edge
    assert touching[-100:].all() and slip[-1] < 1e-3 * np.linalg.norm(v[-1])   # rolling at the end
    worst = np.abs(mesh - plane).max() / np.abs(plane).max()
    assert worst <= 1e-12, worst


def test_an_stl_floor_in_a_scene_logs_what_the_plane_logs(tmp_path):
    """The granule dropped on a floor: from an STL file (two big triangles and a fine jittered
    grid, coplanar) through the scene loader, energy.csv equals that of the plane wall."""
    points, faces = floor_mesh(n=8, size=24.0, jitter=1.0)
    points = points[:, [2, 0, 1]]  # the plane x = 0, as the granule's wall
    write_surface(tmp_path / "floor.stl", points, faces)
    scene = granule_file(tmp_path)
    settings = ["simulation.t_end=0.4", "contact.restitution=0.7"]
    run(scene, settings, tmp_path / "plane", quiet=True)
    run(scene, settings + ["walls=[]", 'mesh=[{file = "floor.stl"}]'], tmp_path / "mesh", quiet=True)
    plane, mesh = (list(csv.DictReader(open(tmp_path / name / "energy.csv"))) for name in ("plane", "mesh"))
    assert len(plane) == len(mesh) == 41
    assert max(float(r["hertz_pw"]) for r in plane) > 1.0
    for a, b in zip(plane, mesh):
        for key in a:
            assert float(b[key]) == pytest.approx(float(a[key]), rel=1e-12, abs=1e-12), key


# ---------------------------------------------------------------------------------------------
# a sphere in a V
# ---------------------------------------------------------------------------------------------

ANGLES = (np.radians(30.0), np.radians(50.0))  # the slopes of the two faces


def v_surfaces(split, angles=ANGLES):
    """Two planes rising at ``angles`` from the line y = z = 0, each a 4 × 4 triangulated strip:
    one mesh (``split`` False) or two."""
    strips = []
    for side, angle in zip((-1.0, 1.0), angles):  # the first rises towards −y, the second towards +y
        points, faces = floor_mesh(n=4, size=4.0, jitter=0.3, seed=3)
        points[:, 1] = side * (points[:, 1] + 2.0)  # y in [0, 4], away from the crease
        turn = quat_matrix(quat_from_rotvec(np.array([side * angle, 0.0, 0.0])))
        strips.append((points @ turn.T, faces if side < 0 else faces[:, ::-1]))
    if split:
        return strips
    (p0, f0), (p1, f1) = strips
    return [merge_points(np.concatenate((p0, p1)), np.concatenate((f0, f1 + len(p0))))]  # sharing the crease


def statics():
    """Normal forces ``(N_A, N_B)`` and the unit normals of a unit-mass sphere resting in the V."""
    normals = [np.array((0.0, np.sin(a) * side, np.cos(a))) for side, a in zip((1.0, -1.0), ANGLES)]
    forces = np.linalg.lstsq(np.column_stack(normals), -GRAVITY, rcond=None)[0]
    return forces, normals


@pytest.mark.parametrize("split", [False, True], ids=["one mesh", "two meshes"])
def test_a_sphere_in_a_v_feels_the_normal_forces_statics_predicts(split):
    """At the static configuration (computed) the two contact forces balance the weight to
    round-off; released off it with local damping, the sphere settles there to 1e-6."""
    (n_a, n_b), (u_a, u_b) = statics()
    radius = 0.5
    deltas = [(n * radius / K_PW) ** (2.0 / 3.0) for n in (n_a, n_b)]  # (K/r) δ^{3/2} = N
    gaps = [radius * (1 - d) for d in deltas]
    position = np.linalg.solve(np.array([u_a, u_b, (1.0, 0.0, 0.0)]), np.array(gaps + [0.2]))
    system = SystemBuilder()
    system.add_body(position, mass=1.0, inertia=0.1, diameter=1.0)
    model, state = system.finish([], [dict(vertices=p, faces=f) for p, f in v_surfaces(split)],
                                 contact={"k_pw": K_PW}, fields={"gravity": GRAVITY}, damping={"local": 0.7})
    compute_forces(model, state)
    assert np.abs(state.force[0]).max() < 1e-12 * 9.81
    walls = state.interactions["walls"]
    assert walls.mesh_count[0] == 2 and set(walls.mesh_wall[0, :2]) == ({0, 1} if split else {0})
    if split:  # the loads on the two meshes are the normal forces, pushing them away
        np.testing.assert_allclose(walls.load[:2, :3], [-n_a * u_a, -n_b * u_b], rtol=0, atol=1e-12 * 9.81)
    state.position[0] += (0.0, 0.03, 0.05)
    sim = Simulation(model, state, "rrp2", 1e-3)
    sim.advance(8000)
    assert np.abs(state.position[0, 1:] - position[1:]).max() < 1e-6 * radius
    forces = sorted(hertz(1 - g / radius, K_PW, radius)[1] for g in walls.mesh_gap[0, :2])
    np.testing.assert_allclose(forces, sorted((n_a, n_b)), rtol=1e-6)


@pytest.mark.parametrize("mu", [0.4, 0.8])
def test_a_sphere_pressed_into_a_frictional_v_holds_where_statics_says(mu):
    """A sphere pressed into a V of two meshes, faces at 30° from its axis, and released (no
    gravity): the normal forces push it out, the friction along the faces holds it. Statics:
    it holds when ``tan 30° ≤ μ``, with ``|F_t|/F_n = tan 30°`` on each face; else it slides out."""
    half = np.radians(30.0)
    rise = np.pi / 2 - half
    radius, overlap = 0.5, 0.02
    system = SystemBuilder()
    start = np.array((0.2, 0.0, radius * (1 - overlap) / np.cos(rise)))
    system.add_body(start, mass=1.0, inertia=0.1, diameter=1.0)
    model, state = system.finish([], [dict(vertices=p, faces=f) for p, f in v_surfaces(True, (rise, rise))],
                                 contact={"k_pw": K_PW, "friction": mu, "restitution": 0.5})
    sim = Simulation(model, state, "rrp2", 5e-4)
    sim.advance(20_000)
    walls = state.interactions["walls"]
    if mu < np.tan(half):
        assert walls.mesh_count[0] == 0 and state.velocity[0, 2] > 0.1   # out, and leaving
        assert sim.energy_budget()["friction"] > 0
        return
    assert walls.mesh_count[0] == 2 and np.abs(state.velocity[0]).max() < 1e-9
    assert np.abs(state.position[0] - start).max() < 0.05 * radius   # held near where it was pressed in
    for k, side in enumerate((1.0, -1.0)):
        normal = np.array((0.0, side * np.sin(rise), np.cos(rise)))
        load = walls.load[k, :3]
        along = load @ normal
        assert np.linalg.norm(load - along * normal) == pytest.approx(np.tan(half) * abs(along), rel=1e-6)


# ---------------------------------------------------------------------------------------------
# moving walls
# ---------------------------------------------------------------------------------------------


def test_prescribed_motion_is_exact_in_time():
    """After any number of steps a wall is at ``p0 + v t`` and a mesh turned by ``exp(ω t)``,
    computed from t (no accumulated round-off)."""
    system = SystemBuilder()
    system.add_body((0.0, 0.0, 5.0), mass=1.0, inertia=1.0, diameter=1.0)
    points, faces = floor_mesh(n=2, size=2.0)
    model, state = system.finish([dict(point=(0.1, 0.2, -3.0), normal=(0, 0, 1), velocity=(0.3, -0.7, 0.1))],
                                 [dict(vertices=points, faces=faces, velocity=(0.0, 0.1, 0.0),
                                       angular_velocity=(0.2, 0.0, 1.3), center=(0.0, 0.0, -2.0))],
                                 contact={"k_pw": 10.0})
    dt = 1e-3
    sim = Simulation(model, state, "rrp2", dt)
    sim.advance(12345)
    walls = state.interactions["walls"]
    t = 12345 * dt
    assert walls.step[0] == 12345 and sim.state.time == t
    for c in range(3):
        assert walls.point[0, c] == (0.1, 0.2, -3.0)[c] + (0.3, -0.7, 0.1)[c] * t
        assert walls.point[1, c] == (0.0, 0.0, -2.0)[c] + (0.0, 0.1, 0.0)[c] * t
    assert tuple(walls.rotation[1]) == quat_from_rotvec_one((0.2 * t, 0.0 * t, 1.3 * t))


def test_a_delayed_motion_holds_still_until_its_start_then_runs_from_it():
    """A plane that starts at t = 2 (on a step) and a turning mesh that starts at t = 3.0004
    (between two steps) stand exactly still before, with zero velocities in the state; on the
    step the mesh starts in its velocities are the fraction of the step it moved; later they are
    at ``p0 + v (t − start)`` and turned by ``exp(ω (t − start))``."""
    system = SystemBuilder()
    system.add_body((0.0, 0.0, 5.0), mass=1.0, inertia=1.0, diameter=1.0)
    points, faces = floor_mesh(n=2, size=2.0)
    p0, v, c0, u, omega = (0.1, 0.2, -3.0), (0.3, -0.7, 0.1), (0.0, 0.0, -2.0), (0.0, 0.1, 0.0), (0.2, 0.0, 1.3)
    model, state = system.finish([dict(point=p0, normal=(0, 0, 1), velocity=v, start=2.0)],
                                 [dict(vertices=points, faces=faces, velocity=u, angular_velocity=omega, center=c0,
                                       start=3.0004)], contact={"k_pw": 10.0})
    walls = state.interactions["walls"]
    assert not walls.velocity.any() and not walls.angular_velocity.any()  # (at t = 0 too)
    sim = Simulation(model, state, "rrp2", 1e-3)
    sim.advance(2000)  # t = 2: the plane is about to start
    assert tuple(walls.point[0]) == p0 and tuple(walls.point[1]) == c0 and tuple(walls.rotation[1]) == (1, 0, 0, 0)
    assert not walls.velocity.any() and not walls.angular_velocity.any()
    sim.advance(1001)  # t = 3.001: the mesh moved for 0.6 of the step
    assert tuple(walls.velocity[0]) == v  # (the plane moves at full speed)
    assert walls.velocity[1] == pytest.approx(0.6 * np.array(u), rel=1e-9)
    assert walls.angular_velocity[1] == pytest.approx(0.6 * np.array(omega), rel=1e-9)
    sim.advance(12345 - 3001)
    t = 12345 * 1e-3
    assert walls.point[0] == pytest.approx(np.array(p0) + np.array(v) * (t - 2.0), rel=0.0, abs=1e-14)
    assert walls.point[1] == pytest.approx(np.array(c0) + np.array(u) * (t - 3.0004), rel=0.0, abs=1e-14)
    assert walls.rotation[1] == pytest.approx(quat_from_rotvec_one(tuple(np.array(omega) * (t - 3.0004))), abs=1e-14)
    assert tuple(walls.velocity[0]) == v and tuple(walls.velocity[1]) == u and tuple(walls.angular_velocity[1]) == omega


def belt(dt, start=0.3, speed=1.0):
    """A sphere (D = 1, m = 1) dropped 0.02 into a frictional floor (`FRICTIONAL`) that starts to
    slide along x at ``speed`` at ``start``: a belt. ``(model, state)``."""
    system = SystemBuilder()
    system.add_body((0.0, 0.0, 0.48), mass=1.0, inertia=0.1, diameter=1.0)
    return system.finish([dict(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), velocity=(speed, 0.0, 0.0),
                               start=start)], contact={"k_pw": K_PW, **FRICTIONAL}, fields={"gravity": GRAVITY})


def test_a_belt_that_starts_late_does_no_work_before_and_closes_the_budget_after():
    """Until the belt starts the sphere bounces on it without moving along x and the belt's work is
    zero; after, the belt drags it along, and since it is the only horizontal force on the sphere
    its work is ``−V`` times the momentum it gave (``walls = −V m v_x``, the trapezoidal rule on
    both sides); ``total`` stays constant to the integrator's accuracy: to 10⁻³ of the belt's work,
    falling as h (measured, 2026-11-27: 2.6·10⁻⁴, 1.3·10⁻⁴, 6.6·10⁻⁵ at h = 10⁻³, 5·10⁻⁴,
    2.5·10⁻⁴, of a work of 0.53; the same belt moving from t = 0: 5.4·10⁻⁴, 2.7·10⁻⁴, 1.4·10⁻⁴ of
    0.64)."""
    model, state = belt(1e-3)
    sim = Simulation(model, state, "rrp2", 1e-3)
    sim.advance(300)  # t = 0.3
    assert sim.energy_budget()["walls"] == 0.0 and state.position[0, 0] == 0.0 and state.velocity[0, 0] == 0.0
    assert sim.energy_budget()["hertz_pw"] > 0.0  # (touching it all along)
    errors = []
    for dt in (1e-3, 5e-4):
        error, sim = budget_error(lambda: belt(dt), dt, 1.3)
        row, velocity = sim.energy_budget(), sim.state.velocity[0]
        assert 0.2 < velocity[0] < 1.0 and row["walls"] == pytest.approx(-1.0 * velocity[0], rel=1e-9)
        errors.append(error)
    assert errors[0] < 1e-3 * abs(row["walls"])
    assert errors[1] < 0.6 * errors[0]  # (first order, as with a belt moving from t = 0: the stick–slip switch)


def budget_error(model_state, dt, duration, samples=40):
    """Largest ``|total − total(0)|`` over a run."""
    model, state = model_state()
    sim = Simulation(model, state, "rrp2", dt)
    start = sim.energy_budget()["total"]
    steps = int(round(duration / dt))
    error = 0.0
    for _ in range(samples):
        sim.advance(steps // samples)
        error = max(error, abs(sim.energy_budget()["total"] - start))
    return error, sim


STILL = ["assembly.0.velocity=[0,0,0]", "assembly.0.angular_velocity=[0,0,0]"]


@pytest.fixture(scope="module")
def granule_path(tmp_path_factory):
    return granule_file(tmp_path_factory.mktemp("granule"))


def test_the_work_of_a_moving_wall_closes_the_budget(granule_path):
    """A wall driven into the bonded granule at speed 1 puts energy in; with the work it does
    booked in 'walls', total stays constant to the integrator's accuracy: the error falls as h²."""
    errors = []
    for dt in (1e-3, 5e-4):
        settings = STILL + [f"simulation.dt={dt}", "walls.0.point=[-0.5,0,0]", "walls.0.velocity=[1.0,0,0]"]
        error, sim = budget_error(lambda: prepare(granule_path, settings)[1:3], dt, 1.5)
        row = sim.energy_budget()
        assert row["walls"] < -20.0  # the wall did work on the granule
        errors.append(error)
    assert errors[0] < 0.02 * abs(row["walls"])
    assert errors[1] < errors[0] / 3.0


def turning_paddle():
    """Six spheres at rest, no gravity, in the way of a triangular paddle (a mesh) that turns
    about the z axis and moves: the wall's work is its force and its moment about its centre."""
    system = SystemBuilder()
    for k in range(6):
        angle = 0.6 + 0.9 * k
        system.add_body((2.2 * np.cos(angle), 2.2 * np.sin(angle), 0.1 * k - 0.2), mass=1.0, inertia=0.1,
                        diameter=1.0)
    paddle = np.array([[0.0, 0.0, -1.0], [3.0, 0.0, -1.0], [3.0, 0.0, 1.0], [0.0, 0.0, 1.0], [3.0, 0.4, 0.0]])
    faces = np.array([[0, 1, 2], [0, 2, 3], [1, 4, 2]])
    return system.finish([], [dict(vertices=paddle, faces=faces, center=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 2.0),
                                   velocity=(0.05, 0.0, 0.0))], contact={"k_pw": 1e3, "k_pp": 1e3})


def test_the_work_of_a_turning_mesh_closes_the_budget():
    errors = []
    for dt in (1e-3, 5e-4):
        error, sim = budget_error(turning_paddle, dt, 3.0)
        errors.append(error)
    assert sim.energy_budget()["walls"] < -5.0  # the paddle swept the spheres along
    assert errors[0] < 1e-3 * abs(sim.energy_budget()["walls"])
    assert errors[1] < errors[0] / 3.0


def test_a_servo_wall_holds_its_target(tmp_path):
    """A 3 × 3 × 3 stack of spheres on the floor x = 0 under a servo platen, stress 12.5 on area
    4, with local damping: the platen closes in at its speed limit, then holds the stack's force
    on it at 50 within 1 % from t = 0.6 on, and to 1e-4 at the end; the floor carries the same.
    (Measured at t = 1.5, 2026-11-24: 1.6e-6 on the platen, 2e-5 on the floor with the default
    contact sub-steps, 2e-9 and 1.3e-9 with the plain map, `contact.substeps = 1`: the stack's
    last vibration dies out more slowly with sub-steps; 1.5e-7 on the floor by t = 4.)"""
    sim, out = run(stack_file(tmp_path), [], tmp_path / "run", quiet=True)
    rows = [{key: float(value) for key, value in row.items()} for row in csv.DictReader(open(out / "walls.csv"))]
    assert rows[2]["w1_x"] == pytest.approx(3.2 - 0.1, abs=1e-9)  # t = 0.1: no contact yet, at max_speed
    held = np.array([row["w1_fx"] for row in rows if row["t"] >= 0.6])
    assert len(held) == 19 and np.abs(held / 50.0 - 1.0).max() < 0.01
    assert rows[-1]["w1_fx"] == pytest.approx(50.0, rel=1e-4)
    assert rows[-1]["w0_fx"] == pytest.approx(-50.0, rel=1e-4)


# ---------------------------------------------------------------------------------------------
# walls.csv, VTK, validate
# ---------------------------------------------------------------------------------------------


def test_walls_csv_logs_points_and_forces(tmp_path):
    scene = rig_file(tmp_path)
    sim, out = run(scene, ["simulation.t_end=1.0"], tmp_path / "run", quiet=True)
    rows = list(csv.reader(open(out / "walls.csv")))
    header = rows[0]
    expected = ["step", "t"]
    for name in ("w0", "w1", "w2", "m0"):
        expected += [f"{name}_{c}" for c in ("x", "y", "z", "fx", "fy", "fz")]
    assert header == expected + ["m0_mx", "m0_my", "m0_mz"]
    assert [int(r[0]) for r in rows[1:]] == list(range(0, 1001, 10))
    last = dict(zip(header, map(float, rows[-1])))
    assert last["w1_x"] == 9.6 + -1.0 * 1.0 and last["m0_z"] == pytest.approx(4.9 - 0.5, abs=1e-14)
    assert last["w1_fx"] > 0 and last["w2_fy"] < 0  # pushed outwards by the granule
    walls = sim.state.interactions["walls"]
    assert [last[f"m0_{c}"] for c in ("fx", "fy", "fz", "mx", "my", "mz")] == list(walls.load[3, :6])
    # the walls' loads are the reactions of the particles' wall forces
    _, model, state, _ = prepare(scene, ["damping.local=0", "damping.viscous=0", "fields.gravity=[0,0,0]",
                                         "contact.k_pp=0", "assembly.0.k_axial=0", "assembly.0.k_shear=0",
                                         "assembly.0.k_bending=0"])
    state.position[:] = sim.state.position
    state.interactions["walls"].point[:] = walls.point
    state.interactions["walls"].rotation[:] = walls.rotation
    compute_forces(model, state)
    np.testing.assert_allclose(state.interactions["walls"].load[:, :3].sum(axis=0), -state.force.sum(axis=0),
                               atol=1e-10 * np.abs(state.force).sum())


def test_vtk_draws_walls_and_meshes_where_they_are(tmp_path):
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLPolyDataReader

    scene = rig_file(tmp_path)
    sim, out = run(scene, ["simulation.t_end=0.5", "output.vtk_every=250"], tmp_path / "run", quiet=True)

    def read(name):
        reader = vtkXMLPolyDataReader()
        reader.SetFileName(str(out / "vtk" / name))
        reader.Update()
        return reader.GetOutput()

    walls = read("walls_000000500.vtp")
    corners = vtk_to_numpy(walls.GetPoints().GetData()).reshape(3, 4, 3)
    np.testing.assert_allclose(corners[1, :, 0], 9.6 - 0.5)  # the moving wall, moved
    meshes = read("meshes_000000500.vtp")
    assert meshes.GetNumberOfPolys() == 32
    turn = quat_matrix(quat_from_rotvec(np.array([0.0, 0.0, 0.8 * 0.5])))
    mesh = sim.model.inputs["walls"]["meshes"][0]
    expected = mesh["vertices"] @ turn.T + mesh["center"] + (0.0, 0.0, -0.25)
    np.testing.assert_allclose(vtk_to_numpy(meshes.GetPoints().GetData()), expected, atol=1e-12)
    assert "mesh" in [meshes.GetCellData().GetArrayName(k) for k in range(meshes.GetCellData().GetNumberOfArrays())]
    assert (out / "meshes.pvd").read_text().count("<DataSet") == 3


def test_validate_shows_walls_and_meshes(tmp_path):
    text = "\n".join(describe(rig_file(tmp_path)))
    assert "walls        3 planes (1 moving, 1 servo), mesh of 32 triangles from plate.stl, moving" in text
    assert "interactions binder, hertz_pp, hertz_pw, walls, damping" in text


def test_the_rotating_drum_example_validates():
    root = Path(__file__).resolve().parents[1]
    text = "\n".join(describe(root / "scenes/rotating_drum.toml"))
    assert "mesh of 3300 triangles from meshes/drum.stl, moving" in text


def test_the_column_collapse_tube_is_the_documented_open_tube(tmp_path):
    """``scenes/meshes/tube.stl`` is what the command in docs/guide.md writes, byte for byte: an
    open tube (no caps: two triangles per quadrilateral of the shell, every vertex at radius 8.2,
    y from −5 to 5), which the column collapse stands on the floor and lifts."""
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "tube.stl"
    command = "--radius 8.2 --length 10 --n-along 10 --lifters 0 --open"
    guide = (root / "docs/guide.md").read_text().replace("\n", " ")
    assert f"make_drum_mesh.py scenes/meshes/tube.stl {command}" in guide
    spec = importlib.util.spec_from_file_location("make_drum_mesh", root / "tools/make_drum_mesh.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    tool.main([str(out), *command.split()])
    assert out.read_bytes() == (root / "scenes/meshes/tube.stl").read_bytes()
    points, triangles = tool.drum(8.2, 10.0, 96, 10, lifters=0, caps=False)
    assert len(triangles) == 2 * 96 * 10
    assert np.allclose(np.hypot(points[:, 0], points[:, 2]), 8.2)
    assert points[:, 1].min() == -5.0 and points[:, 1].max() == 5.0
    text = "\n".join(describe(root / "scenes/column_collapse.toml"))
    assert "mesh of 1920 triangles from meshes/tube.stl, moving" in text


def test_a_particle_touching_too_many_features_stops_the_run(tmp_path, capsys):
    """A fan of many thin triangles round a vertex, a sphere on the vertex: more contacts than
    slots is an error that names the particle, not a silently dropped force."""
    angles = np.linspace(0.0, 2 * np.pi, 4 * MAX_CONTACTS, endpoint=False)
    rim = np.column_stack((np.cos(angles), np.sin(angles), 0.8 + 0.0 * angles))  # a cone: every face concave
    points = np.concatenate(([[0.0, 0.0, 0.0]], rim))
    faces = np.array([(0, 1 + k, 1 + (k + 1) % len(rim)) for k in range(len(rim))])
    write_surface(tmp_path / "cone.stl", points, faces)
    scene = tmp_path / "cone.toml"
    scene.write_text('[simulation]\ndt = 1e-3\nt_end = 0.01\n[contact]\nk_pw = 100.0\n[[mesh]]\nfile = "cone.stl"\n'
                     '[[assembly]]\nshape = "box"\nsize = [0.5, 0.5, 0.5]\ncenter = [0.0, 0.0, 0.22]\n'
                     'particle_diameter = 0.5\nbonded = false\n')
    code = main(["run", str(scene), "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and f"particle 0 touched {len(faces)} mesh features at once" in err, err


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------

SCENE = """\
[simulation]
dt = 1e-3
t_end = 0.1
[contact]
k_pw = 100.0
[[assembly]]
shape = "box"
size = [2.0, 2.0, 2.0]
center = [0.0, 0.0, 2.0]
particle_diameter = 1.0
bonded = false
"""

BAD = [
    ("missing mesh file", '[[mesh]]\nfile = "nowhere.stl"\n', "mesh.0.file: no such mesh file"),
    ("unreadable mesh file", '[[mesh]]\nfile = "garbage.stl"\n', "mesh.0.file: cannot read"),
    ("unknown mesh format", '[[mesh]]\nfile = "floor.xyz"\n', "mesh.0.file: cannot read"),
    ("degenerate triangle", '[[mesh]]\nfile = "degenerate.stl"\n', "mesh.0.file:"),
    ("a mesh of lines", '[[mesh]]\nfile = "lines.vtu"\n', "mesh.0.file:"),
    ("scale that overflows", '[[mesh]]\nfile = "floor.stl"\nscale = 1e308\n', "mesh.0.scale:"),
    ("axis without angle", '[[mesh]]\nfile = "floor.stl"\nrotate_axis = [0, 0, 1]\n', "mesh.0.rotate_axis:"),
    ("two rotations", '[[mesh]]\nfile = "floor.stl"\nrotate = [0, 0, 1]\nrotate_axis = [0, 0, 1]\n'
                      'rotate_angle = 1.0\n', "mesh.0.rotate:"),
    ("servo without target", "[[walls]]\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\nservo = true\n", "walls.0.servo:"),
    ("servo that also moves", "[[walls]]\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\nservo = true\ntarget_force = 1.0\n"
                              "velocity = [0, 0, 1]\n", "walls.0.velocity:"),
    ("target without servo", "[[walls]]\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\ntarget_force = 1.0\n",
     "walls.0.target_force:"),
    ("stress without area", "[[walls]]\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\nservo = true\ntarget_stress = 1.0\n",
     "walls.0.area:"),
    ("negative start", "[[walls]]\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\nvelocity = [0, 0, 1]\nstart = -1.0\n",
     "walls.0.start: must be zero or positive"),
    ("negative mesh start", '[[mesh]]\nfile = "floor.stl"\nvelocity = [0, 0, 1]\nstart = -0.5\n',
     "mesh.0.start: must be zero or positive"),
    ("servo with a start", "[[walls]]\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\nservo = true\ntarget_force = 1.0\n"
                           "start = 1.0\n", "walls.0.start: delays a prescribed velocity"),
    ("local damping above 1", "[damping]\nlocal = 1.5\n", "damping.local: must be in [0, 1]"),
    ("local damping below 0", "[damping]\nlocal = -0.1\n", "damping.local: must be in [0, 1]"),
]


@pytest.mark.parametrize("what, table, message", BAD, ids=[b[0] for b in BAD])
def test_bad_walls_meshes_and_damping_are_one_clear_line(tmp_path, capsys, what, table, message):
    import meshio

    points, faces = floor_mesh(n=2, size=4.0)
    write_surface(tmp_path / "floor.stl", points, faces)
    with np.errstate(invalid="ignore"):  # (meshio normalises the zero normal)
        write_surface(tmp_path / "degenerate.stl", points, np.concatenate((faces, [[0, 1, 2]])))
    (tmp_path / "garbage.stl").write_bytes(b"solid x\n this is not an STL file \x00\x01")
    (tmp_path / "floor.xyz").write_text("1 2 3\n")
    meshio.write_points_cells(tmp_path / "lines.vtu", points, [("line", np.array([[0, 1], [1, 2]]))])
    scene = tmp_path / "scene.toml"
    scene.write_text(SCENE + table)
    code = main(["run", str(scene), "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"dem: error: {scene}: {message}"), err
    assert not (tmp_path / "run").exists()


def test_a_degenerate_triangle_is_named():
    points, faces = floor_mesh(n=2, size=4.0)
    system = SystemBuilder()
    system.add_body((0.0, 0.0, 1.0), mass=1.0, inertia=1.0, diameter=1.0)
    with pytest.raises(ValueError, match="degenerate triangle.*the first is triangle 8"):
        system.finish([], [dict(vertices=points, faces=np.concatenate((faces, [[3, 3, 4]])))])
