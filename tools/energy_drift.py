"""Long-run energy behaviour of a scene (docs/theory.md §2, §4): bounded error or slow creep, and stability.

For each step ``dt`` runs the scene to ``--t-end`` (nothing written) and prints: steps, wall
time, max relative energy error ``max|E(t) − E(0)|/|E(0)|``, drift slope (least-squares line
through the relative error, per unit time), the max relative error over the first and last tenth
of the run, and ``unstable`` with the step if the run blows up (a `dem.SimulationError`, or a
relative energy error above 1). Then fits ``slope ∝ dt^p`` and ``max error ∝ dt^p`` over the
stable runs.

Examples::

    # binders only, free-flight vibrating torus: bounded, no drift
    python tools/energy_drift.py scenes/torus_impact.toml --dt 2e-3 --t-end 500 \\
        --set walls=[] --set contact.k_pp=0 --set contact.k_pw=0 \\
        --set torus.0.velocity=[1,0,0] --set torus.0.angular_velocity=[0.5,0,2]
    # the reference impact: largest stable step
    python tools/energy_drift.py scenes/torus_impact.toml --dt 1e-3 2e-3 3e-3 4e-3 --t-end 500
"""

import argparse
import sys

import numpy as np

from dem.convergence import drift, fitted_order, trajectory
from dem.scene import SceneError
from dem.simulation import SimulationError


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scene", help="scene file (TOML)")
    parser.add_argument("--dt", type=float, nargs="+", required=True, help="steps to run")
    parser.add_argument("--t-end", type=float, help="end time (default: the scene's)")
    parser.add_argument("--integrator", default="rrp2", help="integrator (default rrp2)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                        help="override a scene value (as for python -m dem)")
    parser.add_argument("--samples", type=int, default=5000,
                        help="about how many energy samples per run (default 5000)")
    return parser


def _sampling(n_steps, samples):
    """Steps between samples: a divisor of ``n_steps`` close to ``n_steps / samples``."""
    target = max(1, n_steps // max(samples, 1))
    for k in range(target, 0, -1):
        if n_steps % k == 0:
            return k
    return 1


def _fit_exponent(dts, values):
    dts, values = np.asarray(dts), np.asarray(values)
    if len(dts) < 2 or not (np.all(values > 0) or np.all(values < 0)):
        return None
    return fitted_order(dts, np.abs(values))


def main(argv=None):
    args = _parser().parse_args(argv)
    header = (f"{'dt':>9} {'steps':>9} {'wall s':>7} {'max rel err':>11} {'slope /time':>11} "
              f"{'early max':>10} {'late max':>10}  status")
    stable = []
    try:
        for dt in args.dt:
            t_end = args.t_end
            if t_end is None:
                from dem.scene import load_scene

                t_end = load_scene(args.scene, args.overrides).simulation["t_end"]
            n_steps = int(round(t_end / dt))
            k = _sampling(n_steps, args.samples)
            run = trajectory(args.scene, dt, args.integrator, args.overrides, sample_every_time=k * dt,
                             t_end=n_steps * dt, record_state=False, stop_on_failure=True,
                             blowup_relative_energy=1.0)
            if header:
                print(f"{args.scene}: {args.integrator}, t_end = {n_steps * dt:g}, E(0) = {run.energy[0]:.10g}, "
                      f"overrides: {' '.join(args.overrides) or 'none'}")
                print(header)
                header = None
            e0 = abs(run.energy[0])
            d = drift(run.t, run.energy / e0) if len(run.t) > 1 else dict(slope=np.nan, max=np.nan,
                                                                            early=np.nan, late=np.nan)
            if run.complete:
                status = "stable" if d["late"] <= 3 * d["early"] else "creeping (late > 3 x early)"
                stable.append((dt, d["slope"], d["max"]))
            else:
                status = f"unstable at step {run.failed_step} (t = {run.failed_step * dt:g}): {run.failure}"
            print(f"{dt:9.3g} {run.steps:9d} {run.wall_time:7.1f} {d['max']:11.3e} {d['slope']:11.3e} "
                  f"{d['early']:10.3e} {d['late']:10.3e}  {status}", flush=True)
    except (SceneError, SimulationError, ValueError) as error:
        print(f"energy_drift: error: {error}", file=sys.stderr)
        return 2
    if len(stable) > 1:
        dts, slopes, maxima = zip(*stable)
        print(f"fit over the stable runs: max error ∝ dt^{_fit_exponent(dts, maxima):.2f}")
        creeping = [(dt, slope) for dt, slope, _ in stable if slope > 0]
        if len(creeping) > 1:
            p_slope = _fit_exponent(*zip(*creeping))
            used = ", ".join(f"{dt:g}" for dt, _ in creeping)
            print(f"fit over the stable runs with a positive slope (dt = {used}): slope ∝ dt^{p_slope:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
