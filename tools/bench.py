"""Stepping speed on a bonded FCC block hitting a wall (issue: assemblies at scale), or of a
scene's whole run of steps.

    python tools/bench.py --n 100000 --steps 200 --threads 2
    python tools/bench.py --scene scenes/torus_impact.toml      # all of t_end, no output

Builds an FCC block of about N unit-diameter spheres, bonded to all touching neighbours (12 per
interior sphere; K_a = K_s = 200, K_m = 10), Hertz contact K = 1e5 between spheres and with a wall
at distance 0.5 in front of the block, initial velocity (−1, 0, 0), dt = 1e-3, rrp2. Compiles and
warms up (20 steps), then times S steps (R times with --repeat R: the best counts). Prints N,
bonds, threads, seconds, time per bond-step, peak memory per particle (whole process, and the growth from building the block onwards) and,
as its last line, ``particle-steps/s: X``.
"""

import argparse
import resource
import time

import numba
import numpy as np

from dem import Simulation, SystemBuilder
from dem.runner import prepare
from dem.packing import bond_pairs, fcc_block


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build_block(n_target):
    position = fcc_block(n_target, diameter=1.0)
    position -= position.min(axis=0)
    pairs = bond_pairs(position, np.ones(len(position)), 1e-6)
    system = SystemBuilder()
    system.add_bodies(position, mass=1.0, inertia=0.1, diameter=1.0, velocity=(-1.0, 0.0, 0.0))
    system.add_bonds(pairs[:, 0], pairs[:, 1], k_axial=200.0, k_shear=200.0, k_bending=10.0)
    del position, pairs
    wall = dict(point=(-1.0, 0.0, 0.0), normal=(1.0, 0.0, 0.0), size=0.0)
    return system.finish([wall], contact={"k_pp": 1e5, "k_pw": 1e5})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="approximate number of spheres")
    parser.add_argument("--steps", type=int, default=200, help="timed steps")
    parser.add_argument("--repeat", type=int, default=1,
                        help="time this many runs of STEPS steps and report the best (shared machines are noisy)")
    parser.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS, help="numba threads")
    parser.add_argument("--scene", help="time the stepping of this scene (all its steps) instead of the block")
    args = parser.parse_args()
    numba.set_num_threads(args.threads)
    baseline = peak_rss_bytes()
    if args.scene:
        scene, model, state, _ = prepare(args.scene)
        args.steps = scene.n_steps
        warm = Simulation(*prepare(args.scene)[1:3], scene.simulation["integrator"], scene.simulation["dt"])
        warm.advance(20)  # compile (or load the cache) on a copy
        sim = Simulation(model, state, scene.simulation["integrator"], scene.simulation["dt"])
    else:
        model, state = build_block(args.n)
        sim = Simulation(model, state, "rrp2", 1e-3)
        sim.advance(20)  # compile (or load the cache) and warm up
    n = model.n_bodies
    times = []
    for _ in range(1 if args.scene else max(1, args.repeat)):
        start = time.perf_counter()
        sim.advance(args.steps)
        times.append(time.perf_counter() - start)
    seconds = min(times)
    peak = peak_rss_bytes()
    bonds = len(model.bonds)
    print(f"N: {n}")
    print(f"bonds: {bonds}")
    print(f"threads: {args.threads} (parallel kernels: {sim.parallel and args.threads > 1})")
    print(f"steps: {args.steps}")
    print(f"seconds: {seconds:.3f}" + (f" (best of {len(times)}; median {np.median(times):.3f})" if len(times) > 1 else ""))
    if bonds:
        print(f"ns per bond-step: {seconds / (args.steps * bonds) * 1e9:.1f}")
    print(f"peak memory per particle: {peak / n:.0f} B (growth after start-up: {(peak - baseline) / n:.0f} B)")
    print(f"particle-steps/s: {n * args.steps / seconds:.4g}")


if __name__ == "__main__":
    main()
