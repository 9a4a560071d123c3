"""Running a scene end to end: validate and build it (`prepare`), then run it with its observers,
a progress bar, signal handling and checkpoints (`run`); `describe` says what a scene builds.
The command line (`dem.cli`) and the tools call these.
"""

import logging
import signal
import threading
from contextlib import contextmanager
from pathlib import Path

import numba
from tqdm import tqdm

from . import _numba_cache, distributed
from .cell import ORIGIN, PERIOD, SHEARS
from .checkpoint import CheckpointError, load_checkpoint, restore
from .engine import loop_source
from .feeding import Feeder
from .integrators import SCHEMES
from .interactions.clump_contacts import keep_member_loads
from .observers import CellLog, Checkpointer, EnergyGuard, EnergyLog, FabricLog, FlowLog, VTKWriter, WallLog
from .observers.vtk import wall_square
from .scene import SceneError, load_scene
from .simulation import PARALLEL_THRESHOLD
from .stability import SAFE_FRACTION, critical_time_step, memory_estimate
from .stress import CellServo
from .system import build_system

log = logging.getLogger("dem")

CHECKPOINT = "checkpoint.npz"


def prepare(scene_path, overrides=(), out=None):
    """Validate the scene and build the system; nothing is written. Returns ``(scene, model,
    state, output_dir)``; raises `SceneError`."""
    scene = load_scene(scene_path, overrides)
    announce_compiling()  # before the builders' kernels compile (seconds), once the scene reads without error
    model, state = build_system(scene)
    if scene.output["contacts"]:
        keep_member_loads(model)   # (clumps: the contact network lists their member pairs)
    integrator = scene.simulation["integrator"]
    if SCHEMES[integrator].spherical and not model.spherical:
        raise SceneError(f"{scene.path}: simulation.integrator: {integrator!r} needs spherical bodies "
                         f"(J1 = J2 = J3); use 'lgvi' for general inertia")
    if scene.simulation["device"] == "cuda":
        from .gpu import problem
        refused = problem(model, integrator)
        if refused is not None:
            raise SceneError(f"{scene.path}: simulation.device: {refused}")
    output_dir = Path(out) if out is not None else Path(scene.output["dir"] or Path("output") / scene.name)
    return scene, model, state, output_dir


def announce_compiling():
    """Say once per process, on the first run of this version of `dem` on this machine, that its
    kernels compile now (`dem._numba_cache.FRESH`)."""
    if _numba_cache.FRESH:
        log.info("first run of this dem version on this machine: compiling its kernels, cached in %s for every "
                 "later run, from any folder", numba.config.CACHE_DIR)
        _numba_cache.FRESH = False


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


def instability_hint(scene, critical):
    """What to tell a user whose run went unstable: the step against its critical estimate and
    the remedy."""
    dt = scene.simulation["dt"]
    return (f"simulation.dt = {dt:g} is {dt / critical.dt:.2g} × the critical time step ≈ {critical.dt:.3g} "
            f"({critical.limited_by}): reduce it, to at most {SAFE_FRACTION * critical.dt:.2g} for a bounded energy "
            f"error, or soften the stiffest interaction")


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
    square = wall_square(model, state) if len(model.wall_point) else None  # of the initial state, restart or not
    restored, energy_reference = None, None
    if restart is not None:
        try:
            checkpoint = load_checkpoint(restart)
            restored, energy_reference = restore(checkpoint, model, state, restart)
        except CheckpointError as error:
            raise SceneError(f"--restart {error}") from None
        if float(checkpoint["dt"]) != scene.simulation["dt"]:
            log.warning("restarting with dt = %g; the checkpoint's run used %g", scene.simulation["dt"],
                        float(checkpoint["dt"]))
        log.info("restarting %s at step %d (t = %.6g)", scene.name, state.step, state.time)
    if state.step >= scene.n_steps:
        raise SceneError(f"{scene.path}: simulation.t_end: the checkpoint is at t = {state.time:g}, already at or "
                         f"past t_end = {scene.simulation['t_end']:g}; extend it with --set simulation.t_end=LATER")
    critical = check_time_step(scene, model, state)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SceneError(f"{scene.path}: output.dir: cannot create the output folder {output_dir}: "
                         f"{error.strerror}") from None
    resume_step = state.step if restart is not None else None
    hint = instability_hint(scene, critical)
    guard = EnergyGuard(scene.output["log_every"], scene.simulation["energy_tolerance"],
                        tuple(energy_reference) if energy_reference is not None else None, hint)
    checkpointer = Checkpointer(output_dir / CHECKPOINT, scene.output["checkpoint_every"], scene.path, overrides,
                                guard)
    # the guard after the writers: the row that set it off is in the logs too
    observers = [EnergyLog(output_dir / "energy.csv", scene.output["log_every"], resume_step),
                 VTKWriter(output_dir, scene.output["vtk_every"], square=square, contacts=scene.output["contacts"],
                           background=True),
                 guard, checkpointer]
    if scene.output["contacts"]:
        observers.insert(1, FabricLog(output_dir / "fabric.csv", scene.output["log_every"], resume_step))
    if (state.cell[PERIOD] > 0.0).all():
        observers.insert(1, CellLog(output_dir / "cell.csv", scene.output["log_every"], resume_step))
    if "walls" in model.inputs:
        observers.insert(1, WallLog(output_dir / "walls.csv", scene.output["log_every"], resume_step))
    if "insertion" in model.interactions:
        observers.insert(1, FlowLog(output_dir / "flow.csv", scene.output["log_every"], resume_step))
        observers.insert(0, Feeder(model, scene.simulation["dt"]))  # first: what it changes is in every output
    if "cell" in model.interactions:  # first: the rates it sets are in the checkpoints
        observers.insert(0, CellServo(model))
    sim = distributed.simulation(model, state, scene.simulation["integrator"], scene.simulation["dt"], observers,
                                 restored=restored, device=scene.simulation["device"])
    sim.instability_hint = hint
    log.debug("%d bodies, %d bonds, parallel kernels: %s", model.n_bodies, len(model.bonds), sim.parallel)
    with tqdm(total=scene.n_steps, initial=state.step, unit="step", disable=quiet or distributed.rank() > 0,
              desc=scene.name,
              dynamic_ncols=True, mininterval=0.5) as bar, _stop_on_signals(sim):
        started = []

        def progress(step):
            if not started:  # the start is reported (and every kernel compiled): the clock starts
                started.append(step)
                if not bar.disable:
                    bar.start_t = bar.last_print_t = bar._time()
            bar.set_postfix_str(f"t={sim.state.time:.4g}/{scene.simulation['t_end']:g}", refresh=False)
            bar.update(step - bar.n)

        try:
            sim.run(scene.n_steps, progress=progress)
        finally:
            view = sim.snapshot()  # (under MPI: gathered on rank 0)
            if view is not None:
                checkpointer.write(view)  # the state reached, also when the run breaks down
    return sim, output_dir


def describe_walls(model):
    """``"2 planes (1 moving, 1 servo), mesh of 3264 triangles from drum.stl, moving from t = 12"``
    (``from t = …``: a mesh whose motion starts later), or ``"none"``."""
    given = model.inputs.get("walls")
    if not given:
        return "none"
    parts = []
    motion = {"moving": sum(any(t["velocity"]) for t in given["planes"]),
              "servo": sum(t["servo"] for t in given["planes"])}
    if given["planes"]:
        kinds = ", ".join(f"{count} {kind}" for kind, count in motion.items() if count)
        parts.append(f"{len(given['planes'])} plane{'s' * (len(given['planes']) > 1)}" + (f" ({kinds})" if kinds else ""))
    for mesh in given["meshes"]:
        moving = ", moving" if mesh["velocity"].any() or mesh["angular_velocity"].any() else ""
        moving += f" from t = {mesh['start']:g}" if moving and mesh["start"] > 0.0 else ""
        parts.append(f"mesh of {len(mesh['faces'])} triangles from {mesh['name'] or '(arrays)'}{moving}")
    return ", ".join(parts)


def describe_cell(cell, section):
    """The periodic cell (`dem.cell`) of the ``[cell]`` section (its values) in words."""
    if not cell.any():
        return "none (not periodic)"
    axes = [axis for axis in range(3) if cell[PERIOD, axis] > 0.0]
    words = (f"periodic in {''.join('xyz'[a] for a in axes)}: "
             + ", ".join(f"{'xyz'[a]} in [{cell[ORIGIN, a]:g}, {cell[ORIGIN, a] + cell[PERIOD, a]:g})" for a in axes))
    sheared = [k for k in range(3) if section["shear_rate"][k]]
    if sheared:
        words += "; sheared " + ", ".join(f"d v_{'xyz'[SHEARS[k][0]]}/d{'xyz'[SHEARS[k][1]]} = "
                                          f"{section['shear_rate'][k]:g}" for k in sheared) + " (Lees-Edwards)"
    strained = [a for a in range(3) if section["strain_rate"][a]]
    if strained:
        words += "; strained " + ", ".join(f"{'xyz'[a]} at {section['strain_rate'][a]:g}" for a in strained)
    servoed = [a for a in range(3) if section["stress_control"][a]]
    if servoed:
        words += "; stress " + ", ".join(f"s_{'xyz'[a] * 2} = {section['target_stress'][a]:g}" for a in servoed) \
            + f" held by the servo (gain {section['servo_gain']:g}, every {section['servo_interval']} steps)"
    return words


def describe(scene_path, overrides=(), out=None, show_loop=False):
    """What a scene builds, as lines of text: bodies per builder, bonds, walls, sites, the acting
    interactions, the time step and its critical estimate, steps, memory, outputs; with
    ``show_loop``, the source of the compiled loop generated for it (`dem.engine`; on the GPU its
    kernels too, `dem.gpu`)."""
    scene, model, state, output_dir = prepare(scene_path, overrides, out)
    critical = critical_time_step(model, state)
    dt = scene.simulation["dt"]
    memory = memory_estimate(model, state)
    lines = [
        f"scene        {scene.path}",
        f"bodies       {model.n_bodies} in {len(set(model.group.tolist()))} group(s) from "
        + ", ".join(f"[[{name}]]" for name, _, _ in scene.builders),
        f"bonds        {len(model.bonds)} ({model.bonds.n_colors} colours)",
        f"walls        {describe_walls(model)}",
        f"cell         {describe_cell(state.cell, model.sections['cell'])}",
        f"sites        {model.n_sites}" + (f" (member spheres of "
                                               f"{int((model.site_start[1:] > model.site_start[:-1]).sum())} clumps)"
                                               if model.has_clumps else ""),
        f"interactions {', '.join(model.interactions) or 'none'}",
        f"inertia      {'spherical' if model.spherical else 'general'}",
        f"integrator   {scene.simulation['integrator']}, dt = {dt:g}, {scene.n_steps} steps to t = "
        f"{scene.simulation['t_end']:g}" + (" (on the GPU)" if scene.simulation["device"] == "cuda" else ""),
        f"stability    {critical.describe(dt)}"
        + ("  <- above the safe fraction" if dt > SAFE_FRACTION * critical.dt else ""),
        f"memory       ≈ {memory / 2**20:.3g} MiB ({memory / model.n_bodies:.0f} B per body)",
        f"outputs      {output_dir}/ (energy.csv every {scene.output['log_every']} steps, VTK every "
        f"{scene.output['vtk_every'] or 'start and end only'}, checkpoint "
        + (f"every {scene.output['checkpoint_every']} steps" if scene.output["checkpoint_every"] else "at the end")
        + (", contact network: contacts.pvd, fabric.csv" if scene.output["contacts"] else "") + ")",
    ]
    if show_loop:
        parallel = model.n_bodies >= PARALLEL_THRESHOLD
        scheme = SCHEMES[scene.simulation["integrator"]]
        lines += ["", loop_source(scheme, model.interactions, parallel)]
        if scene.simulation["device"] == "cuda":  # and the GPU's kernels (`dem.gpu`)
            from .gpu import kernels_source
            name, text = kernels_source(scheme, tuple(model.interactions))
            lines += [f"# {name}.py\n{text}"]
    return lines


