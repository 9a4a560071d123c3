"""Parallel kernels: race-free and deterministic (bitwise identical across runs, thread counts
and the serial path), on a bonded block hitting a wall with breakage."""

import numba
import numpy as np
import pytest

from dem import Simulation, SystemBuilder
from dem.packing import bond_pairs, fcc_block

STATE_FIELDS = ("position", "velocity", "orientation", "angular_velocity", "force", "moment")


def seed_bonds(system, pairs):
    system.add_bonds(pairs[:, 0], pairs[:, 1], k_axial=200.0, k_shear=200.0, k_bending=10.0)


def block(n=5000, bonds=seed_bonds):
    """An FCC block of about ``n`` spheres flying at a wall; ``bonds(system, pairs)`` bonds the
    touching pairs."""
    position = fcc_block(n)
    position -= position.min(axis=0)
    pairs = bond_pairs(position, np.ones(len(position)), 1e-6)
    rng = np.random.default_rng(0)
    system = SystemBuilder()
    system.add_bodies(position, mass=1.0, inertia=0.1, diameter=1.0,
                      velocity=(-2.0, 0.0, 0.0) + 0.1 * rng.normal(size=(len(position), 3)),
                      angular_velocity=0.5 * rng.normal(size=(len(position), 3)))
    bonds(system, pairs)
    model, state = system.finish([dict(point=(-0.6, 0, 0), normal=(1.0, 0, 0), size=0.0)],
                                 contact={"k_pp": 1e5, "k_pw": 1e5},
                                 breakage={"tension": 0.01, "compression": 0.05, "shear": 0.05, "bending": 0.2})
    return model, state


def run(parallel, threads, steps=300):
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        model, state = block()
        sim = Simulation(model, state, "rrp2", 1e-3, parallel=parallel)
        sim.advance(steps)
        return model, state, sim
    finally:
        numba.set_num_threads(previous)


@pytest.fixture(scope="module")
def reference():
    return run(parallel=False, threads=1)


@pytest.mark.parametrize("parallel, threads", [(True, 1), (True, 2), (True, numba.config.NUMBA_NUM_THREADS),
                                               (False, 2)])
def test_bitwise_identical_across_threads_and_paths(reference, parallel, threads):
    ref_model, ref_state, _ = reference
    model, state, sim = run(parallel, threads)
    assert sim.parallel == parallel
    for name in STATE_FIELDS:
        assert np.array_equal(getattr(state, name), getattr(ref_state, name)), name
    for name, own in state.interactions.items():
        for field, value in zip(own._fields, own):
            assert np.array_equal(value, getattr(ref_state.interactions[name], field)), (name, field)


def test_the_reference_run_is_not_trivial(reference):
    model, state, sim = reference
    assert np.count_nonzero(state.interactions["binder"].broken) > 0  # bonds broke
    assert state.position[:, 0].min() < -0.05  # the block pressed into the wall
    assert sim.contacts.n_builds > 1
