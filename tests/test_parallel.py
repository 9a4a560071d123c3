"""Parallel kernels: race-free and deterministic (bitwise identical across runs, thread counts
and the serial path), on a block bonded by both bond laws hitting a wall with breakage, and on
the same block in a rig (a wall pushed in, a servo wall, a turning mesh, more damping): the walls'
loads, work and motion too. Both cases have the same interactions, so they share one compiled
serial loop and one parallel loop."""

import numba
import numpy as np
import pytest

from dem import Simulation, SystemBuilder
from dem.engine import CHUNK
from dem.packing import bond_pairs, fcc_block
from support.surfaces import floor_mesh

STATE_FIELDS = ("position", "velocity", "orientation", "angular_velocity", "force", "moment")


def seed_bonds(system, pairs):
    system.add_bonds(pairs[:, 0], pairs[:, 1], k_axial=200.0, k_shear=200.0, k_bending=10.0)


def both_laws(system, pairs):
    """Every tenth touching pair by the three-spring binder, the others by breakable parallel bonds."""
    seed_bonds(system, pairs[::10])
    parallel = np.delete(pairs, np.s_[::10], axis=0)
    system.add_bonds(parallel[:, 0], parallel[:, 1], law="parallel_bond", modulus=300.0, shear_modulus=120.0,
                     radius=0.5, tensile_strength=3.0, shear_strength=4.0)


def block(rig=False, n=5000, bonds=both_laws):
    """An FCC block of about ``n`` spheres flying at a wall, with viscous damping (in a rig of
    moving walls, a servo wall, a turning mesh and local damping too with ``rig``);
    ``bonds(system, pairs)`` bonds the touching pairs."""
    position = fcc_block(n)
    position -= position.min(axis=0)
    pairs = bond_pairs(position, np.ones(len(position)), 1e-6)
    rng = np.random.default_rng(0)
    system = SystemBuilder()
    system.add_bodies(position, mass=1.0, inertia=0.1, diameter=1.0,
                      velocity=(-2.0, 0.0, 0.0) + 0.1 * rng.normal(size=(len(position), 3)),
                      angular_velocity=0.5 * rng.normal(size=(len(position), 3)))
    bonds(system, pairs)
    walls, meshes = [dict(point=(-0.6, 0, 0), normal=(1.0, 0, 0), size=0.0)], []
    sections = {"damping": {"local": 0.0, "viscous": 0.1}}
    if rig:
        top = position.max(axis=0)
        walls += [dict(point=(0.0, 0.0, top[2] + 0.55), normal=(0.0, 0.0, -1.0), velocity=(0.0, 0.0, -1.0)),
                  dict(point=(0.0, -0.7, 0.0), normal=(0.0, 1.0, 0.0), servo=True, target_force=300.0, max_speed=2.0)]
        points, faces = floor_mesh(n=8, size=2.0 * top.max(), jitter=0.3)
        meshes = [dict(vertices=points + (0.5 * top[0], top[1] + 0.5, 0.5 * top[2]), faces=faces[:, [0, 2, 1]],
                       velocity=(0.0, -0.5, 0.0), angular_velocity=(0.0, 0.3, 0.0))]
        meshes[0]["vertices"] = meshes[0]["vertices"][:, [0, 2, 1]]  # the plane y = top + 0.5
        sections = {"damping": {"local": 0.3, "viscous": 0.1}}
    model, state = system.finish(walls, meshes, contact={"k_pp": 1e5, "k_pw": 1e5},
                                 breakage={"tension": 0.01, "compression": 0.05, "shear": 0.05, "bending": 0.2},
                                 **sections)
    return model, state


def run(rig, parallel, threads, steps=300):
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        model, state = block(rig)
        sim = Simulation(model, state, "rrp2", 1e-3, parallel=parallel)
        sim.advance(steps)
        return model, state, sim
    finally:
        numba.set_num_threads(previous)


# the block at its wall alone is part of the rig (the same block, bonds and wall): in the slow suite
@pytest.fixture(scope="module", params=[pytest.param(False, marks=pytest.mark.slow), True], ids=["wall", "rig"])
def reference(request):
    return (request.param,) + run(request.param, parallel=False, threads=1)


# (all numba's threads: a case of its own only where there are more than 2)
@pytest.mark.parametrize("parallel, threads", sorted({(True, 1), (True, 2), (True, numba.config.NUMBA_NUM_THREADS),
                                                      (False, 2)}))
def test_bitwise_identical_across_threads_and_paths(reference, parallel, threads):
    rig, ref_model, ref_state, _ = reference
    model, state, sim = run(rig, parallel, threads)
    assert sim.parallel == parallel
    for name in STATE_FIELDS:
        assert np.array_equal(getattr(state, name), getattr(ref_state, name)), name
    for name, own in state.interactions.items():
        for field, value in zip(own._fields, own):
            assert np.array_equal(value, getattr(ref_state.interactions[name], field)), (name, field)


def test_the_reference_run_is_not_trivial(reference):
    rig, model, state, sim = reference
    assert np.count_nonzero(state.interactions["binder"].broken) > 0  # bonds of both laws broke
    assert np.count_nonzero(state.interactions["parallel_bond"].broken) > 0
    # colours of more than one chunk of parallel bonds: the threads split them
    assert np.diff(model.bonds.color_start("parallel_bond")).max() > CHUNK
    assert state.position[:, 0].min() < -0.05  # the block pressed into the wall
    assert sim.contacts.n_builds > 1
    if rig:  # every wall was loaded, over several chunks of rows, and moved
        walls = state.interactions["walls"]
        assert np.all(np.abs(walls.load[:, :3]).max(axis=1) > 1.0) and walls.partial.shape[0] > 1
        assert walls.work[1] < 0 and walls.point[2, 1] != -0.7 and walls.mesh_count.max() > 0
