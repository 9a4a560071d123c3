"""Command line: ``python -m dem [run|validate|plot|fragments|rig|repose|rheology|flow|sweep] …`` (see `main` and
``--help``)."""

import argparse
import gc
import logging
import math
import os
import sys
import time
from pathlib import Path

from . import distributed
from .fragments import write_fragments
from .repose import ReposeError
from .rig import TESTS, summary, write_rig
from .runfiles import RunFolderError
from .runner import CHECKPOINT, describe, log, run
from .scene import SceneError
from .simulation import SimulationError

EXAMPLES = """examples:
  python -m dem scenes/torus_impact.toml                     run a scene (same as: run SCENE)
  python -m dem run scenes/pendulum.toml --set simulation.integrator=rrp1 --set simulation.dt=0.005
  python -m dem run scenes/torus_impact.toml --set torus.0.velocity=[1,0,0] --set walls=[] --out output/free
  python -m dem validate scenes/assembly_impact.toml         check a scene, print what it builds
  python -m dem validate scenes/torus_impact.toml --show-loop  ... and the compiled loop it runs
  python -m dem run scenes/torus_impact.toml --restart output/torus_impact/checkpoint.npz
  python -m dem run scenes/torus_impact.toml --restart output/torus_impact/checkpoint.npz --set simulation.t_end=50
  python -m dem run scenes/torus_impact.toml --device cuda     on an NVIDIA GPU (pip install ".[gpu]")
  python -m dem plot output/torus_impact                     energy budget plots (PNG)
  python -m dem fragments output/assembly_impact --time 10   fragments.csv and fragments.png of a run
  python -m dem rig RUN_DIR                                  a material test's stress-strain curve: rig.csv, rig.png
  python -m dem sweep scenes/pendulum.toml --grid simulation.dt=[0.01,0.02] --out output/pendulum_dt
  mpiexec -n 4 python -m dem scenes/assembly_impact.toml       one run on 4 MPI processes (pip install ".[mpi]")
  python -m dem repose output/column_collapse                slope angle of the heap a run left
  python -m dem rheology output/shear_sweep                  mu(I) of sheared runs: rheology.csv, rheology.png
  python -m dem flow output/silo_sweep                       silo discharge rates, Beverloo fit: discharge.csv, .png

Ctrl-C (or SIGTERM) stops a run cleanly: a final checkpoint, complete logs and .pvd files, and a
line saying how to resume.
"""

def _pair(text):
    try:
        first, second = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two wall indices A,B, got {text!r}") from None
    return first, second


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m dem", description="Discrete-element simulation with variational RRP integrators.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="{run,validate,plot,fragments,rig,repose,rheology,flow,sweep}")

    def scene_arguments(command):
        command.add_argument("scene", type=Path, help="scene file (TOML)")
        command.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                             help="override a scene value, e.g. simulation.dt=5e-4 or torus.0.velocity=[1,0,0]")
        command.add_argument("--out", type=Path, help="output folder (overrides [output] dir)")
        command.add_argument("--device", choices=("cpu", "cuda"),
                             help="where the steps run (overrides simulation.device): cuda, an NVIDIA GPU")
        verbosity = command.add_mutually_exclusive_group()
        verbosity.add_argument("--quiet", action="store_true", help="warnings and errors only, no progress bar")
        verbosity.add_argument("--verbose", action="store_true", help="also report details (chunks, rebuilds)")

    run = commands.add_parser("run", help="run a scene", epilog=EXAMPLES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    scene_arguments(run)
    run.add_argument("--restart", type=Path, metavar="CHECKPOINT",
                     help="continue from a checkpoint of this scene, appending to its log and .pvd files")
    validate = commands.add_parser("validate", help="check a scene and print what it would build (writes nothing)")
    scene_arguments(validate)
    validate.add_argument("--show-loop", action="store_true",
                          help="also print the compiled loop generated for the scene (dem/engine.py)")
    plot = commands.add_parser("plot", help="plot a run's energy budget, error and momenta (PNG)")
    plot.add_argument("run_dir", type=Path, help="a run's output folder (with energy.csv)")
    plot.add_argument("--out", type=Path, help="PNG file (default RUN_DIR/energy.png)")
    fragments = commands.add_parser("fragments", help="a run's fragments (connected components of intact bonds) "
                                    "at a snapshot: RUN_DIR/fragments.csv and fragments.png")
    fragments.add_argument("run_dir", type=Path, help="a run's output folder (with particles.pvd)")
    fragments.add_argument("--time", type=float, help="use the snapshot nearest this time (default: the last)")
    rig = commands.add_parser("rig", help="a material test's figures from its platens and snapshots (or a periodic "
                                          "cell's cell.csv): stress-strain curve, strength, E and ν (RUN_DIR/rig.csv "
                                          "and rig.png)")
    rig.add_argument("run_dir", type=Path, help="a run's output folder (with walls.csv and particles.pvd, or cell.csv)")
    rig.add_argument("--test", choices=TESTS, default="auto",
                     help="uniaxial compression, Brazilian disc or a strained periodic cell (auto: a run with cell.csv "
                          "and no walls is periodic, a disc-shaped specimen Brazilian)")
    rig.add_argument("--platens", type=_pair, metavar="A,B", help="the two platen walls (default: the run's two walls)")
    rig.add_argument("--interior", type=float, default=0.5, metavar="F",
                     help="the central box used for the affine strain and virial stress, as a fraction of the "
                          "specimen's extent (default 0.5)")
    from .sweep import add_sweep_command

    add_sweep_command(commands)
    repose = commands.add_parser("repose", help="slope angle of the heap of spheres a run left (angle of repose)",
                                 description="Measure the slope of the heap in a run's last particle snapshot: "
                                             "a line fitted through the heap's surface profile (docs/guide.md#"
                                             "angle-of-repose).")
    repose.add_argument("run_dir", type=Path, help="a run's output folder (with vtk/particles_*.vtp)")
    repose.add_argument("--up", metavar="X,Y,Z", help="the vertical (default: against the run's gravity, else +z)")
    repose.add_argument("--profile", action="store_true", help="also print the surface profile (ring, height)")
    rheology = commands.add_parser("rheology", help="effective friction against inertial number of sheared runs "
                                                    "(mu(I): rheology.csv, rheology.png)",
                                   description="Measure mu = tau/p and I = shear_rate d/sqrt(p/rho) over the steady "
                                               "part of runs in a Lees-Edwards cell (their cell.csv), and fit mu(I) "
                                               "(docs/guide.md#deforming-cells).")
    rheology.add_argument("runs", type=Path, nargs="+", help="run folders, or a sweep's folder (all its points)")
    rheology.add_argument("--skip", type=float, default=0.5, metavar="F",
                          help="leave out the rows below this fraction of a run's final shear strain (default 0.5)")
    rheology.add_argument("--out", type=Path, help="folder for rheology.csv and .png (default: the sweep folder, or "
                                                   "the first run's)")
    flow = commands.add_parser("flow", help="steady mass flow rate of discharging runs, Beverloo's law across "
                                            "orifices (discharge.csv, discharge.png, beverloo.png)",
                               description="Measure the steady mass flow rate W through an outlet (a line through the "
                                           "removed mass of flow.csv between 20% and 80% of what left after its first "
                                           "removals), the fill height above the orifice plate at each particle "
                                           "snapshot and whether the rate depends on it above one silo width, and, "
                                           "with three orifice diameters or more, fit Beverloo's law "
                                           "W = C rho_b sqrt(g) (D - k d)^(5/2).")
    flow.add_argument("runs", type=Path, nargs="+", help="run folders, or a sweep's folder (all its points)")
    flow.add_argument("--outlet", type=int, default=0, metavar="K", help="the [[outlet]] measured (default 0)")
    flow.add_argument("--bulk-density", type=float, metavar="RHO",
                      help="bulk density rho_b for Beverloo's law (default 0.6 times the particles' density)")
    flow.add_argument("--out", type=Path, help="folder for discharge.csv and the PNGs (default: the sweep folder, or "
                                               "the first run's)")
    flow.add_argument("--silo-width", type=float, metavar="L",
                      help="the silo's width, for whether the rate depends on the fill above it (default: the gap "
                           "between the scene's opposite [[walls]] planes of normal ±x, ±y)")
    return parser


def _repose(args):
    from .repose import measure_run

    up = None
    if args.up is not None:
        try:
            up = [float(c) for c in args.up.split(",")]
            assert len(up) == 3 and any(up) and all(map(math.isfinite, up))
        except (ValueError, AssertionError):
            raise SceneError(f"--up {args.up}: expected three numbers X,Y,Z, not all zero") from None
    slope, step, up = measure_run(args.run_dir, up)
    print(f"{args.run_dir}, step {step}: {slope.describe()}")
    if args.profile:
        print("rho,surface_height")
        print("\n".join(f"{rho:.6g},{height:.6g}" for rho, height in slope.profile))
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # python -m dem alone: what it does and how
        _parser().print_help()
        return 2
    if argv[0] not in ("run", "validate", "plot", "fragments", "rig", "repose", "rheology", "flow", "sweep", "-h",
                       "--help"):
        argv = ["run"] + argv  # the bare form: python -m dem SCENE
    args = _parser().parse_args(argv)
    if getattr(args, "device", None):
        args.overrides.append(f"simulation.device={args.device}")
    try:
        primary = distributed.rank() == 0  # under mpiexec only rank 0 speaks
    except distributed.MPIError as error:
        print(f"dem: error: {error}", file=sys.stderr)
        return 2
    level = logging.WARNING if getattr(args, "quiet", False) else (
        logging.DEBUG if getattr(args, "verbose", False) else logging.INFO)
    level = level if primary else logging.ERROR
    # dem's own messages at that level; other libraries' only from warnings up (matplotlib's
    # "generated new fontManager" on a fresh machine is not the user's business)
    logging.basicConfig(level=max(level, logging.WARNING), format="dem: %(message)s", stream=sys.stderr, force=True)
    logging.getLogger("dem").setLevel(level)
    started = time.perf_counter()
    try:
        if args.command == "plot":
            from .plotting import plot_energy

            print(plot_energy(args.run_dir, args.out))
            return 0
        if args.command == "fragments":
            snapshot, rows = write_fragments(args.run_dir, args.time)
            print(f"{len(rows)} fragment{'s' * (len(rows) != 1)} at t = {snapshot['time']:.6g} (step "
                  f"{snapshot['step']}): {args.run_dir / 'fragments.csv'}, {args.run_dir / 'fragments.png'}")
            return 0
        if args.command == "rig":
            print("\n".join(summary(write_rig(args.run_dir, args.test, args.platens, args.interior))))
            print(f"written: {args.run_dir / 'rig.csv'}, {args.run_dir / 'rig.png'}")
            return 0
        if args.command == "validate":
            print("\n".join(describe(args.scene, args.overrides, args.out, args.show_loop)))
            return 0
        if args.command == "sweep":
            from .sweep import sweep_command

            return sweep_command(args)
        if args.command == "repose":
            return _repose(args)
        if args.command == "rheology":
            from . import rheology

            flows, fit, out = rheology.write_rheology(args.runs, args.out, args.skip)
            print("\n".join(rheology.summary(flows, fit)))
            print(f"written: {out / 'rheology.csv'}, {out / 'rheology.png'}")
            return 0
        if args.command == "flow":
            from . import flow

            discharges, fit, notes, out = flow.write_discharge(args.runs, args.out, args.outlet, args.bulk_density,
                                                             args.silo_width)
            print("\n".join(flow.summary(discharges, fit, notes)))
            print(f"written: {out / 'discharge.csv'}, {out / 'discharge.png'}"
                  + (f", {out / 'beverloo.png'}" if fit is not None else ""))
            return 0
        sim, output_dir = run(args.scene, args.overrides, args.out, args.quiet, args.restart)
    except (SceneError, distributed.MPIError) as error:
        if primary:
            print(f"dem: error: {error}", file=sys.stderr)
        return 2
    except SimulationError as error:
        if primary:
            print(f"dem: run stopped: {error}\n     outputs written so far and the last checkpoint are kept.",
                  file=sys.stderr)
        return 1
    except (RunFolderError, ReposeError) as error:  # fragments, rig or repose of a folder without what they read
        print(f"dem: error: {error}", file=sys.stderr)
        return 2
    except FileNotFoundError as error:  # plot of a folder without a log
        print(f"dem: error: {error.filename}: no such file (give a run's output folder, which holds energy.csv)",
              file=sys.stderr)
        return 2
    except ValueError as error:  # plot of a log with no rows
        if args.command != "plot":
            raise
        print(f"dem: error: {error}", file=sys.stderr)
        return 2
    checkpoint = output_dir / CHECKPOINT
    if sim.stop_requested:
        if primary:
            print(f"dem: stopped by {sim.stop_requested} at step {sim.state.step} (t = {sim.state.time:.6g}); "
                  f"resume with: python -m dem run {args.scene} --restart {checkpoint}"
                  + "".join(f" --set {o}" for o in args.overrides), file=sys.stderr)
        return 130 if sim.stop_requested == "SIGINT" else 143
    log.info("%d steps in %.2f s; outputs in %s/", sim.state.step, time.perf_counter() - started, output_dir)
    return 0


def script():
    """``python -m dem`` and the console script ``dem``: `main` on the process's arguments, then
    its exit status. The objects that exist when it starts (the imported modules, numba's among
    them) and when it ends are frozen out of the cyclic garbage collector (`gc.freeze`): its full
    passes skip them during the run and at a shutdown. Once `main` has returned, every file it
    wrote is closed, so the process ends there (`os._exit`, after flushing the logs and the
    standard streams) instead of tearing down numba, LLVM, scipy and VTK module by module, which
    took 0.2–0.3 s after the torus impact; under MPI (mpi4py finalises MPI at exit) and with Dask
    (its clients close at exit) it exits as Python does. (Not in `main`: the tests call it many
    times in one process.)"""
    gc.freeze()
    status = main()
    gc.freeze()
    if isinstance(status, int) and not {"mpi4py.MPI", "distributed"} & sys.modules.keys():
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status
