"""Command line: ``python -m dem [run] SCENE.toml [--set PATH=VALUE ...] [--out DIR]``."""

import argparse
import sys
import time
from pathlib import Path

from tqdm import tqdm

from .builders import build_system
from .integrators import INTEGRATORS
from .scene import SceneError, load_scene
from .simulation import Simulation, SimulationError
from .writers import EnergyLog, VTKWriter

EXAMPLES = """examples:
  python -m dem scenes/torus_impact.toml
  python -m dem scenes/pendulum.toml --set simulation.integrator=rrp1 --set simulation.dt=0.005
  python -m dem scenes/torus_impact.toml --set torus.0.velocity=[1,0,0] --set walls=[] --out output/free
"""


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m dem", description="Run a dem scene (TOML); outputs go under output/<scene>/.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scene", type=Path, help="scene file (TOML)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                        help="override a scene value, e.g. simulation.dt=5e-4 or torus.0.velocity=[1,0,0]")
    parser.add_argument("--out", type=Path, help="output folder (overrides [output] dir)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
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


def observers_for(scene, output_dir):
    return [
        EnergyLog(output_dir / "energy.csv", scene.output["log_every"]),
        VTKWriter(output_dir, scene.output["vtk_every"]),
    ]


def run(scene_path, overrides=(), out=None, quiet=False):
    """Run a scene end to end; returns the `Simulation`. Raises `SceneError` before anything is
    written, `SimulationError` (outputs kept) if the run breaks down."""
    scene, model, state, output_dir = prepare(scene_path, overrides, out)
    output_dir.mkdir(parents=True, exist_ok=True)
    sim = Simulation(model, state, scene.simulation["integrator"], scene.simulation["dt"],
                     observers_for(scene, output_dir))
    n_steps = scene.n_steps
    with tqdm(total=n_steps, unit="step", disable=quiet, desc=scene.name, dynamic_ncols=True,
              mininterval=0.5) as bar:
        def progress(done):
            bar.set_postfix_str(f"t={sim.state.time:.4g}", refresh=False)
            bar.update(done - bar.n)

        sim.run(n_steps, progress=progress)
    return sim, output_dir


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        argv = argv[1:]
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    try:
        sim, output_dir = run(args.scene, args.overrides, args.out, args.quiet)
    except SceneError as error:
        print(f"dem: error: {error}", file=sys.stderr)
        return 2
    except SimulationError as error:
        print(f"dem: run stopped: {error}\n     outputs written so far are kept.", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"dem: {sim.state.step} steps in {time.perf_counter() - started:.2f} s; outputs in {output_dir}/")
    return 0
