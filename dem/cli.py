"""Command line: ``python -m dem [run|validate|plot|sweep] …`` (see `main` and ``--help``)."""

import argparse
import logging
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from tqdm import tqdm

from .builders import build_system
from .checkpoint import CheckpointError, load_checkpoint, restore
from .integrators import INTEGRATORS
from .scene import SceneError, load_scene
from .simulation import Simulation, SimulationError
from .stability import SAFE_FRACTION, EnergyGuard, critical_time_step, memory_estimate
from .writers import Checkpointer, EnergyLog, VTKWriter

log = logging.getLogger("dem")

EXAMPLES = """examples:
  python -m dem scenes/torus_impact.toml                     run a scene (same as: run SCENE)
  python -m dem run scenes/pendulum.toml --set simulation.integrator=rrp1 --set simulation.dt=0.005
  python -m dem run scenes/torus_impact.toml --set torus.0.velocity=[1,0,0] --set walls=[] --out output/free
  python -m dem validate scenes/assembly_impact.toml         check a scene, print what it builds
  python -m dem run scenes/torus_impact.toml --restart output/torus_impact/checkpoint.npz
  python -m dem run scenes/torus_impact.toml --restart output/torus_impact/checkpoint.npz --set simulation.t_end=50
  python -m dem plot output/torus_impact                     energy budget plots (PNG)
  python -m dem sweep scenes/pendulum.toml --grid simulation.dt=[0.01,0.02] --out output/pendulum_dt

Ctrl-C (or SIGTERM) stops a run cleanly: a final checkpoint, complete logs and .pvd files, and a
line saying how to resume.
"""

CHECKPOINT = "checkpoint.npz"


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m dem", description="Discrete-element simulation with variational RRP integrators.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{run,validate,plot,sweep}")

    def scene_arguments(command):
        command.add_argument("scene", type=Path, help="scene file (TOML)")
        command.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                             help="override a scene value, e.g. simulation.dt=5e-4 or torus.0.velocity=[1,0,0]")
        command.add_argument("--out", type=Path, help="output folder (overrides [output] dir)")
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
    plot = commands.add_parser("plot", help="plot a run's energy budget, error and momenta (PNG)")
    plot.add_argument("run_dir", type=Path, help="a run's output folder (with energy.csv)")
    plot.add_argument("--out", type=Path, help="PNG file (default RUN_DIR/energy.png)")
    from .sweep import add_sweep_command

    add_sweep_command(commands)
    return parser


def prepare(scene_path, overrides=(), out=None):
    """Validate the scene and build the system; nothing is written. Returns ``(scene, model,
    state, output_dir)``; raises `SceneError`."""
    scene = load_scene(scene_path, overrides)
    model, state = build_system(scene)
    integrator = scene.simulation["integrator"]
    if INTEGRATORS[integrator][1] and not model.spherical:
        raise SceneError(f"{scene.path}: simulation.integrator: {integrator!r} needs spherical bodies "
                         f"(J1 = J2 = J3); use 'lgvi' for general inertia")
    output_dir = Path(out) if out is not None else Path(scene.output["dir"] or Path("output") / scene.name)
    return scene, model, state, output_dir


def check_time_step(scene, model, state):
    """Log the critical time step estimate; warn when dt is above a safe fraction of it."""
    critical = critical_time_step(model, state)
    dt = scene.simulation["dt"]
    text = critical.describe(dt)
    if dt > SAFE_FRACTION * critical.dt:
        log.warning("%s: simulation.dt: %s — above the safe fraction %g; the run may go unstable or its energy "
                    "creep: consider dt ≤ %.2g", scene.path, text, SAFE_FRACTION, SAFE_FRACTION * critical.dt)
    else:
        log.info(text)
    return critical


@contextmanager
def _stop_on_signals(sim):
    """SIGINT and SIGTERM ask the simulation to stop after the current chunk of steps."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach only the main thread (a run on a Dask worker's thread: the worker handles them)
        return

    def handler(number, _frame):
        sim.request_stop(signal.Signals(number).name)

    previous = {number: signal.signal(number, handler) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def run(scene_path, overrides=(), out=None, quiet=False, restart=None):
    """Run a scene end to end (or continue one from the checkpoint ``restart``); returns
    ``(sim, output_dir)``. Raises `SceneError` before anything is written, `SimulationError`
    (outputs and the last checkpoint kept) if the run breaks down. A run stopped by a signal
    returns with ``sim.stop_requested`` set, after writing a final checkpoint."""
    scene, model, state, output_dir = prepare(scene_path, overrides, out)
    restored, energy_reference = None, None
    if restart is not None:
        try:
            checkpoint = load_checkpoint(restart)
            *restored, energy_reference = restore(checkpoint, model, state, restart)
        except CheckpointError as error:
            raise SceneError(f"--restart {error}") from None
        if float(checkpoint["dt"]) != scene.simulation["dt"]:
            log.warning("restarting with dt = %g; the checkpoint's run used %g", scene.simulation["dt"],
                        float(checkpoint["dt"]))
        log.info("restarting %s at step %d (t = %.6g)", scene.name, state.step, state.time)
    if state.step >= scene.n_steps:
        raise SceneError(f"{scene.path}: simulation.t_end: the checkpoint is at t = {state.time:g}, already at or "
                         f"past t_end = {scene.simulation['t_end']:g}; extend it with --set simulation.t_end=LATER")
    check_time_step(scene, model, state)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SceneError(f"{scene.path}: output.dir: cannot create the output folder {output_dir}: "
                         f"{error.strerror}") from None
    resume_step = state.step if restart is not None else None
    guard = EnergyGuard(scene.output["log_every"], scene.simulation["energy_tolerance"],
                        tuple(energy_reference) if energy_reference is not None else None)
    checkpointer = Checkpointer(output_dir / CHECKPOINT, scene.output["checkpoint_every"], scene.path, overrides,
                                guard)
    observers = [guard, EnergyLog(output_dir / "energy.csv", scene.output["log_every"], resume_step),
                 VTKWriter(output_dir, scene.output["vtk_every"]), checkpointer]
    sim = Simulation(model, state, scene.simulation["integrator"], scene.simulation["dt"], observers,
                     restored=restored)
    log.debug("%d bodies, %d bonds, parallel kernels: %s", model.n_bodies, len(model.bonds), sim.parallel)
    with tqdm(total=scene.n_steps, initial=state.step, unit="step", disable=quiet, desc=scene.name,
              dynamic_ncols=True, mininterval=0.5) as bar, _stop_on_signals(sim):
        def progress(step):
            bar.set_postfix_str(f"t={sim.state.time:.4g}/{scene.simulation['t_end']:g}", refresh=False)
            bar.update(step - bar.n)

        try:
            sim.run(scene.n_steps, progress=progress)
        finally:
            checkpointer.write(sim)  # the last good state, also when the run breaks down
    return sim, output_dir


def validate(scene_path, overrides=(), out=None):
    """Print what a scene builds: bodies per builder, bonds, walls, sites, the time step and its
    critical estimate, steps, memory, outputs."""
    scene, model, state, output_dir = prepare(scene_path, overrides, out)
    critical = critical_time_step(model, state)
    dt = scene.simulation["dt"]
    memory = memory_estimate(model)
    lines = [
        f"scene        {scene.path}",
        f"bodies       {model.n_bodies} in {len(set(model.group.tolist()))} group(s) from "
        + ", ".join(f"[[{name}]]" for name, _, _ in scene.builders),
        f"bonds        {len(model.bonds)} ({len(model.bonds.color_start) - 1} colours)",
        f"walls        {len(model.wall_point)}",
        f"sites        {model.n_sites} ({len(model.lj_pairs)} Lennard-Jones body pairs)",
        f"inertia      {'spherical' if model.spherical else 'general'}",
        f"integrator   {scene.simulation['integrator']}, dt = {dt:g}, {scene.n_steps} steps to t = "
        f"{scene.simulation['t_end']:g}",
        f"stability    {critical.describe(dt)}"
        + ("  <- above the safe fraction" if dt > SAFE_FRACTION * critical.dt else ""),
        f"memory       ≈ {memory / 2**20:.3g} MiB ({memory / model.n_bodies:.0f} B per body)",
        f"outputs      {output_dir}/ (energy.csv every {scene.output['log_every']} steps, VTK every "
        f"{scene.output['vtk_every'] or 'start and end only'}, checkpoint "
        + (f"every {scene.output['checkpoint_every']} steps" if scene.output["checkpoint_every"] else "at the end")
        + ")",
    ]
    print("\n".join(lines))


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in ("run", "validate", "plot", "sweep", "-h", "--help"):
        argv = ["run"] + argv  # the bare form: python -m dem SCENE
    args = _parser().parse_args(argv)
    level = logging.WARNING if getattr(args, "quiet", False) else (
        logging.DEBUG if getattr(args, "verbose", False) else logging.INFO)
    logging.basicConfig(level=level, format="dem: %(message)s", stream=sys.stderr, force=True)
    started = time.perf_counter()
    try:
        if args.command == "plot":
            from .plotting import plot_energy

            print(plot_energy(args.run_dir, args.out))
            return 0
        if args.command == "validate":
            validate(args.scene, args.overrides, args.out)
            return 0
        if args.command == "sweep":
            from .sweep import sweep_command

            return sweep_command(args)
        sim, output_dir = run(args.scene, args.overrides, args.out, args.quiet, args.restart)
    except SceneError as error:
        print(f"dem: error: {error}", file=sys.stderr)
        return 2
    except SimulationError as error:
        print(f"dem: run stopped: {error}\n     outputs written so far and the last checkpoint are kept.",
              file=sys.stderr)
        return 1
    except FileNotFoundError as error:  # plot of a folder without a log
        print(f"dem: error: {error}", file=sys.stderr)
        return 2
    checkpoint = output_dir / CHECKPOINT
    if sim.stop_requested:
        print(f"dem: stopped by {sim.stop_requested} at step {sim.state.step} (t = {sim.state.time:.6g}); "
              f"resume with: python -m dem run {args.scene} --restart {checkpoint}"
              + "".join(f" --set {o}" for o in args.overrides), file=sys.stderr)
        return 130 if sim.stop_requested == "SIGINT" else 143
    log.info("%d steps in %.2f s; outputs in %s/", sim.state.step, time.perf_counter() - started, output_dir)
    return 0
