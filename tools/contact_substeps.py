"""The torus impact's long-run energy error against the contact sub-steps (issue 15,
`dem.integrators.respa`): ``max |E(t) − E0|/E0`` over the run and the slope of a straight line
fitted to ``(E(t) − E0)/E0`` (the secular trend, per 500 time units), for each ``M`` of
``--substeps`` (1: the plain map), with the stepping time of each run.

    python tools/contact_substeps.py --substeps 1 2 3 4 --t-end 500 --plot docs/contact_substeps.png

``--extra LABEL=energy.csv`` (split at the last ``=``) adds the curve of another run's log to the
figure (and the table), e.g. a probe with a modified contact law; ``--log`` plots ``|E − E0|/E0``
on a logarithmic axis. Runs go to ``--out`` (one folder per ``M``, the scene's outputs but no VTK,
the energy logged every ``--log-every`` steps).
"""

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

from dem.runner import run

SCENE = "scenes/torus_impact.toml"


def read_error(path):
    """``(t, (E − E0)/E0)`` of a run's ``energy.csv``."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    t = np.array([float(r["t"]) for r in rows])
    total = np.array([float(r["total"]) for r in rows])
    return t, (total - total[0]) / total[0]


def summary(t, error):
    """``(max |error|, trend per 500 time units)``."""
    return np.abs(error).max(), 500.0 * np.polyfit(t, error, 1)[0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scene", default=SCENE)
    parser.add_argument("--substeps", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--t-end", type=float, default=500.0)
    parser.add_argument("--log-every", type=int, default=100)
    parser.add_argument("--out", default="output/contact_substeps")
    parser.add_argument("--extra", nargs="*", default=[], metavar="LABEL=CSV")
    parser.add_argument("--plot", help="write the figure (PNG)")
    parser.add_argument("--log", action="store_true",
                        help="plot |E − E0|/E0 on a logarithmic axis (curves of very different size)")
    args = parser.parse_args(argv)
    curves = {}
    print(f"{'run':>24} {'max|dE|/E0':>11} {'trend/500':>10} {'seconds':>8}")
    for m in args.substeps:
        folder = Path(args.out) / f"substeps_{m}"
        started = time.perf_counter()
        run(args.scene, [f"contact.substeps={m}", f"simulation.t_end={args.t_end}", "output.vtk_every=0",
                         f"output.log_every={args.log_every}"], folder, quiet=True)
        seconds = time.perf_counter() - started
        label = "plain (M = 1)" if m == 1 else f"M = {m}"
        curves[label] = read_error(folder / "energy.csv")
        print(f"{label:>24} {summary(*curves[label])[0]:11.3e} {summary(*curves[label])[1]:+10.2e} {seconds:8.1f}")
    for item in args.extra:
        label, _, path = item.rpartition("=")
        curves[label] = read_error(path)
        print(f"{label:>24} {summary(*curves[label])[0]:11.3e} {summary(*curves[label])[1]:+10.2e}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 4.5 + 0.2 * ((len(curves) + 1) // 2)))
        for n, (label, (t, error)) in enumerate(curves.items()):
            ax.plot(t, np.abs(error) if args.log else error, lw=0.7, color=f"C{n}",
                    label=f"{label}: max {summary(t, error)[0]:.1e}")
        ax.axhline(1e-3, color="k", ls=":", lw=0.8)
        if args.log:
            ax.set_yscale("log")
            ax.set_ylim(1e-6, None)
        else:
            ax.axhline(-1e-3, color="k", ls=":", lw=0.8)
        ax.set_xlabel("t")
        ax.set_ylabel("|E − E0| / E0" if args.log else "(E − E0) / E0")
        ax.set_title("Torus impact, dt = 1e-3: energy error with M contact sub-steps "
                     f"(dotted: {'' if args.log else '±'}1e-3)", fontsize=9)
        ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.13))  # below: hides no curve
        ax.grid(True, lw=0.3)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=130)
        print(f"figure: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
