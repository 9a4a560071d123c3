"""Contact sub-stepping (`dem.integrators.respa`, issue 15) on the torus impact: the energy error
it takes out, momenta to round-off, the plain map where no contact is active, and the same
results bit for bit on the serial and the parallel path at any number of threads."""

import numba
import numpy as np
import pytest

from dem import Simulation, SystemBuilder
from dem.contacts import Contacts
from dem.diagnostics import energy_budget
from dem.engine import arguments
from dem.interactions.binder import binder_axial_fast
from dem.interactions.hertz import hertz_pp_fast, hertz_pp_fast_pairs
from dem.neighbors import NeighborList
from dem.runner import prepare

SCENE = "scenes/torus_impact.toml"
ARRAYS = ("position", "velocity", "orientation", "angular_velocity", "force", "moment")


def torus(substeps, *overrides):
    _, model, state, _ = prepare(SCENE, [f"contact.substeps={substeps}", *overrides])
    return model, state


def energy_error(substeps, steps):
    """``max |E − E0|/E0`` over the log rows (every 10 steps) of the torus impact."""
    model, state = torus(substeps)
    sim = Simulation(model, state, "rrp2", 1e-3)
    e0 = energy_budget(model, state)["total"]
    error = 0.0
    for _ in range(steps // 10):
        sim.advance(10)
        error = max(error, abs(energy_budget(model, state)["total"] - e0) / e0)
    return error, sim


def test_sub_steps_take_out_the_creep_of_the_torus_and_keep_its_momenta():
    """To t = 60 (the impact, then the ring vibrating; read every 10 steps, 2026-11-26 evening: 3
    sub-steps 5.9e-4, plain 2.7e-3 (4.4e-3 on 2026-11-24, before the neighbour rows were sorted);
    to t = 500, 6.3e-4 and 1.7e-2, docs/guide.md)."""
    plain, _ = energy_error(1, 60_000)
    error, sim = energy_error(3, 60_000)
    assert error < 7e-4 and plain > 4 * error
    assert (sim.state.interactions["hertz_pp"].active > 0).any()  # contacts were sub-stepped
    row = energy_budget(sim.model, sim.state)
    assert abs(row["Py"]) < 1e-12 * 80 and row["Pz"] == 0.0  # tangent to the wall: exact


def test_momenta_to_round_off_in_a_vibrating_free_ring():
    """No wall: the ring's spheres given random velocities, so the touching neighbours collide and
    part in every step (sub-stepped): linear and angular momentum stay at their initial values to
    round-off (measured 2026-11-24: at most 1.3e-16 of the momentum scale)."""
    model, state = torus(3, "walls=[]")
    state.velocity[:] += np.random.default_rng(1).normal(scale=0.2, size=state.velocity.shape)
    sim = Simulation(model, state, "rrp2", 1e-3)
    before = energy_budget(model, state)
    sim.advance(3000)
    after = energy_budget(model, state)
    assert (state.interactions["hertz_pp"].active > 0).any()
    scale = np.abs(state.velocity).sum() * model.mass.max() * (1.0 + np.abs(state.position).max())
    for key in ("Px", "Py", "Pz", "Lx", "Ly", "Lz"):
        assert abs(after[key] - before[key]) < 1e-14 * scale, key


def test_the_force_evaluation_leaves_the_fast_force_bit_for_bit():
    """After a step's force evaluation with active contacts, ``fast`` holds what the sub-steps'
    kernels compute for that configuration, the binder's axial force included (its force kernel
    adds it: the step needs no pass of its own for it), to the last bit."""
    model, state = torus(3)
    sim = Simulation(model, state, "rrp2", 1e-3)
    sim.advance(1500)
    assert (state.interactions["hertz_pp"].active > 0).any()
    _, parameters = arguments(model, state, sim.contacts)
    p = dict(zip(model.interactions, zip(parameters[::2], parameters[1::2])))
    st, table = state.arrays(), sim.contacts
    expected = np.zeros((model.n_bodies, 3))
    hertz_pp_fast(0, model.n_bodies, st, sim.bodies, Contacts(table.start, table.index, table.owner_start),
                  p["hertz_pp"][0], expected)
    contacts_only = expected.copy()
    binder, own = p["binder"]
    binder_axial_fast(0, binder.color_start[-1], st, sim.bodies, binder, own, expected)
    left = state.interactions["hertz_pp"].fast
    assert np.array_equal(left, expected)
    assert np.abs(left - contacts_only).max() > 1e-3 * np.abs(left).max()  # the binder's part is there


def test_a_ring_in_rigid_flight_steps_with_the_plain_map():
    """Touching neighbours with no approach speed are not active: the step is the plain map, bit
    for bit."""
    runs = []
    for substeps in (1, 3):
        model, state = torus(substeps, "walls=[]")
        Simulation(model, state, "rrp2", 1e-3).advance(300)
        runs.append(state)
        assert not (state.interactions["hertz_pp"].active > 0).any()
    for name in ARRAYS:
        assert np.array_equal(getattr(runs[0], name), getattr(runs[1], name)), name


@pytest.mark.slow
def test_the_same_bits_serial_and_parallel_at_any_thread_count():
    """The sub-stepped torus (Hertz contacts), serial and on 1 and 2 threads. Slow: its parallel
    loop is compiled for it alone; the default suite checks sub-stepped contacts across threads on
    Mindlin contacts (test_friction's `test_springs_are_independent_of_the_thread_count`)."""
    previous = numba.get_num_threads()
    states = []
    try:
        for parallel, threads in ((False, 1), (True, 1), (True, min(2, numba.config.NUMBA_NUM_THREADS))):
            numba.set_num_threads(threads)
            model, state = torus(3)
            Simulation(model, state, "rrp2", 1e-3, parallel=parallel).advance(1500)
            states.append(state)
    finally:
        numba.set_num_threads(previous)
    assert (states[0].interactions["hertz_pp"].active > 0).any()
    for state in states[1:]:
        for name in ARRAYS:
            assert np.array_equal(getattr(states[0], name), getattr(state, name)), name


@pytest.mark.parametrize("integrator", ["rrp", "lgvi"])
def test_every_scheme_with_rotation_stages_sub_steps(integrator):
    """``rrp`` and ``lgvi`` sub-step too (their ``turn``/``spin``); spherical bodies, so lgvi is rrp."""
    runs = []
    for name in (integrator, "rrp"):
        model, state = torus(3, f"simulation.integrator={name}")
        Simulation(model, state, name, 1e-3).advance(1500)
        runs.append(state)
    assert (runs[0].interactions["hertz_pp"].active > 0).any()
    assert np.allclose(runs[0].position, runs[1].position, rtol=0, atol=1e-12)


def test_each_pair_once_gives_the_rows_sums_bit_for_bit():
    """The serial fast pass visits each pair once (`hertz_pp_fast_pairs`); with the rows in
    ascending order every particle receives its pairs' forces in its row's order: the sums of the
    rows (the parallel and MPI passes), to the last bit, in a dense polydisperse packing where
    particles have up to a dozen overlapping neighbours."""
    rng = np.random.default_rng(3)
    n = 600
    diameter = rng.uniform(0.6, 1.4, n)
    position = rng.uniform(0.0, 7.0, size=(n, 3))
    neighbors = NeighborList(n)
    neighbors.update(position, diameter, 0.1)
    system = SystemBuilder()
    system.add_bodies(position, mass=1.0, inertia=0.1, diameter=diameter)
    model, state = system.finish([], contact={"k_pp": 1e4})
    contacts = Contacts(neighbors.start, neighbors.index, np.zeros(n + 1, np.int64))
    p = model.interactions["hertz_pp"]
    rows, pairs = np.zeros((n, 3)), np.full((n, 3), np.nan)
    hertz_pp_fast(0, n, state.arrays(), model.body_arrays(), contacts, p, rows)
    hertz_pp_fast_pairs(state.arrays(), model.body_arrays(), contacts, p, pairs)
    assert np.array_equal(rows, pairs)
    neighbour_rows = [neighbors.index[neighbors.start[i]:neighbors.start[i + 1]] for i in range(n)]
    overlapping = [np.sum(np.linalg.norm(position[row] - position[i], axis=1) < 0.5 * (diameter[i] + diameter[row]))
                   for i, row in enumerate(neighbour_rows)]
    assert max(overlapping) >= 8


def trio(far_pair, substeps=4):
    """Spheres 0 and 1 bonded, the bond stretching; sphere 2 leaving its contact with 0 (active for
    two steps, then not); with ``far_pair`` two more spheres far away, pressed together (active
    throughout)."""
    position = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (-0.9993, 0.0, 0.0)]
    velocity = [(0.0, 0.0, 0.0), (0.3, 0.0, 0.0), (-0.5, 0.0, 0.0)]
    if far_pair:
        position += [(20.0, 0.0, 0.0), (20.99, 0.0, 0.0)]
        velocity += [(0.0, 0.0, 0.0), (0.0, 0.0, 0.0)]
    system = SystemBuilder()
    system.add_bodies(np.array(position), mass=1.0, inertia=0.1, diameter=1.0, velocity=np.array(velocity))
    system.add_bonds([0], [1], k_axial=200.0, k_shear=200.0, k_bending=10.0)
    return system.finish([], contact={"k_pp": 1e4, "substeps": substeps})


def test_a_distant_contact_does_not_change_the_motion():
    """The trio's second step is sub-stepped and the third is not (its contact has ended); with a
    distant pair in contact the third is sub-stepped too. The closing kick of the second step uses
    the whole fast force of the new configuration, the binder's axial force included, either way:
    the trio moves to the same bits. (Before 2026-11-26 a step followed by a plain one closed with
    the Hertz part alone, and the distant pair changed the trio's velocities by 4.5e-5.)"""
    runs = []
    for far in (False, True):
        model, state = trio(far)
        sim = Simulation(model, state, "rrp2", 1e-3)
        active = []
        for _ in range(2):
            sim.advance(1)
            active.append(state.interactions["hertz_pp"].active[:3].copy())
        runs.append((state, active))
    (alone, active), (beside, _) = runs
    assert active[0].any() and not active[1].any()  # sub-stepped, then the plain map next
    for name in ARRAYS:
        assert np.array_equal(getattr(alone, name)[:3], getattr(beside, name)[:3]), name


def test_a_run_that_starts_in_contact_sub_steps_its_first_step():
    """The force evaluation at a run's start counts the contacts active (overlapping now: it has no
    step to look ahead over), so the first step is sub-stepped like the others, not the plain map."""
    states = []
    for substeps in (1, 4):
        model, state = trio(False, substeps)
        sim = Simulation(model, state, "rrp2", 1e-3)
        assert (state.interactions["hertz_pp"].active > 0).sum() == (2 if substeps > 1 else 0)
        sim.advance(1)
        states.append(state)
    assert not np.array_equal(states[0].velocity, states[1].velocity)
