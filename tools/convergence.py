"""Convergence study of a scene (seed 001 Fig. 7; docs/theory.md §4): errors against a small-step reference.

For each integrator and step ``dt`` prints the E(t)-error (seed 001 eq. 38, H0 in time), the
max relative energy error ``max|E(t) − E(0)|/|E(0)|``, the q(t)-error (eq. 37, H1 norm of
eq. 35) and a max-norm state error (max over samples and bodies of ``|x − x_ref|``,
``|v − v_ref|``, the angle of ``R R_refᵀ`` and ``|Ω − Ω_ref|``), each with the observed order
``log(e1/e2)/log(dt1/dt2)`` between consecutive steps. All runs are sampled at the same instants
(every ``--sample-every``, default the coarsest ``dt``). Nothing is written except ``--plot``.

The q(t)-error compares *norms* (a square root of a difference of squares), so an order-2 method
shows order 1 there (as seed 001 reports); the max-norm state error shows the order itself.

Examples (smooth free flight of the spinning torus, then the impact)::

    python tools/convergence.py scenes/torus_impact.toml --t-end 10 \\
        --dt 0.005 0.0025 0.00125 0.000625 --reference-dt 1e-5 --integrators rrp2 rrp rrp1 \\
        --set walls=[] --set contact.k_pp=0 --set contact.k_pw=0 \\
        --set torus.0.velocity=[1,0,0] --set torus.0.angular_velocity=[0.5,0,2] --plot fig7.png
    python tools/convergence.py scenes/torus_impact.toml --t-end 10 \\
        --dt 2e-3 1e-3 5e-4 2.5e-4 --reference-dt 1e-5 --integrators rrp2
"""

import argparse
import sys
import time

import numpy as np

from dem.convergence import (
    energy_error_h0, energy_error_max, observed_orders, q_error_h1, state_error_max, trajectory,
)
from dem.scene import SceneError
from dem.simulation import SimulationError

COLUMNS = (("E(t)-err eq38", "h0"), ("max|dE|/|E0|", "max"), ("q(t)-err eq37", "q"), ("state max-err", "state"))
MARKERS = {"rrp": "o", "rrp2": "v", "rrp1": "s", "lgvi": "D"}


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scene", help="scene file (TOML)")
    parser.add_argument("--dt", type=float, nargs="+", default=[0.005, 0.0025, 0.00125],
                        help="steps to study, coarsest first (default 0.005 0.0025 0.00125)")
    parser.add_argument("--reference-dt", type=float, default=1e-5, help="step of the reference run (default 1e-5)")
    parser.add_argument("--reference-integrator", default="rrp2", help="integrator of the reference run (default rrp2)")
    parser.add_argument("--integrators", nargs="+", default=["rrp2", "rrp", "rrp1"])
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                        help="override a scene value (as for python -m dem)")
    parser.add_argument("--t-end", type=float, help="end time (default: the scene's)")
    parser.add_argument("--sample-every", type=float,
                        help="sampling interval in time, a multiple of every dt (default: the coarsest dt)")
    parser.add_argument("--plot", help="write a log-log figure (PNG) like seed 001 Fig. 7")
    return parser


def _format(value):
    return f"{value:10.3e}" if np.isfinite(value) else f"{'—':>10}"


def _order(value):
    return f"{value:6.2f}" if np.isfinite(value) else f"{'':6}"


def study(args):
    dts = sorted(args.dt, reverse=True)
    sample_every = args.sample_every or dts[0]
    common = dict(overrides=args.overrides, sample_every_time=sample_every, t_end=args.t_end)
    started = time.perf_counter()
    reference = trajectory(args.scene, args.reference_dt, args.reference_integrator, **common)
    print(f"reference: {args.reference_integrator}, dt = {args.reference_dt:g}, t_end = {reference.t[-1]:g}, "
          f"{reference.steps} steps in {time.perf_counter() - started:.1f} s; "
          f"sampled every {sample_every:g} ({len(reference.t)} samples); E(0) = {reference.energy[0]:.10g}")
    results = {}
    for integrator in args.integrators:
        rows = []
        for dt in dts:
            run = trajectory(args.scene, dt, integrator, stop_on_failure=True, blowup_relative_energy=1.0, **common)
            if not run.complete:
                rows.append(dict(dt=dt, h0=np.nan, max=np.nan, q=np.nan, state=np.nan,
                                 note=f"unstable at step {run.failed_step}: {run.failure}"))
                continue
            rows.append(dict(dt=dt, h0=energy_error_h0(run.t, run.energy),
                             max=energy_error_max(run.t, run.energy) / abs(run.energy[0]),
                             q=q_error_h1(reference, run), state=state_error_max(reference, run)["state"],
                             note=f"{run.wall_time:.2f} s"))
        orders = {key: [np.nan] + observed_orders(dts, [r[key] for r in rows]) for _, key in COLUMNS}
        results[integrator] = rows
        print(f"\n{integrator}")
        print(f"{'dt':>10} " + " ".join(f"{title:>10} {'order':>6}" for title, _ in COLUMNS) + "  run")
        for n, row in enumerate(rows):
            cells = " ".join(f"{_format(row[key])} {_order(orders[key][n])}" for _, key in COLUMNS)
            print(f"{row['dt']:10.4g} {cells}  {row['note']}")
    return results


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(2, 2, figsize=(9, 7.5))
    for ax, (title, key) in zip(axes.flat, COLUMNS):
        for integrator, rows in results.items():
            dt = np.array([r["dt"] for r in rows])
            err = np.array([r[key] for r in rows])
            ok = np.isfinite(err) & (err > 0)
            ax.loglog(dt[ok], err[ok], marker=MARKERS.get(integrator, "x"), label=integrator)
        all_dt = np.array(sorted({r["dt"] for rows in results.values() for r in rows if np.isfinite(r[key])}))
        for slope, style in ((1, ":"), (2, "--")):
            anchor = [r[key] for rows in results.values() for r in rows if np.isfinite(r[key]) and r[key] > 0]
            if anchor and len(all_dt) > 1:
                y0 = min(anchor)
                ax.loglog(all_dt, y0 * (all_dt / all_dt[0]) ** slope, "k" + style, lw=0.8,
                          label=f"slope {slope}")
        ax.set_xlabel("dt")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(title)
        ax.grid(True, which="both", lw=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    print(f"\nfigure: {path}")


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        results = study(args)
    except (SceneError, SimulationError, ValueError) as error:
        print(f"convergence: error: {error}", file=sys.stderr)
        return 2
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
