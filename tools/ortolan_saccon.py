"""Seed 000 §6 stress test (Ortolan & Saccon 2012): energy drift of rigid-body integrators.

One rigid body in the potential ``U(Q) = (‖Q − I‖_F − 1)² − α/‖Q − Q_m‖_F`` (seed 000 eq. 3),
integrated by every method of `dem.baselines` (ELN, TLN, LIEMID[EA], PRK, MCG, NEW3, VLV of seed
000 §5, and `dem`'s LGVI of docs/theory.md §2) to ``--t-end`` at each step of ``--steps``. Parameters come
from the scene file (``[[rigid_body]]``, ``[ortolan_saccon]``, ``[simulation]``), read with tomllib.

Writes into ``--out`` (default ``output/ortolan_saccon``):

* ``energy_error.png`` — seed 000 Fig. 1, one panel per ``h``: ``E(t) − E(0)`` of every method
  (band: min–max per time bin; line: the bin mean);
* ``energy_error_by_method.png`` — the same, one panel per method (rows) and ``h`` (columns);
* ``global_error.png`` — seed 000 Fig. 2: attitude error ``‖Q − Q_ref‖_F`` and body
  angular-velocity error ``|ω − ω_ref|`` at ``T = --order-time`` against DOP853, for
  ``h = 1, 1/2, …, 1/2^(--order-levels − 1)``;
* ``drift.csv`` and ``orders.csv`` — the numbers of the tables printed.

Printed: per method, the drift slope (least-squares line through ``E(t) − E(0)``) at each ``h``,
the ratio of slopes (≈ 4 for a drift ``O(T h²)``; also over the first quarter of the run only,
since a drift that has taken the body far from ``E(0)`` changes its own rate), ``max |E − E(0)|``,
``slope·T / max|E − E(0)|`` (near 1: the error is a drift; near 0: bounded), the verdict against
seed 000 §6 (VLV bounded; ELN, TLN, PRK down; MCG, NEW3, LIEMID[EA] up), the observed orders from
the Fig. 2 data, and two structural checks: the drift of the spatial angular momentum ``L = QJω`` on a free asymmetric body
(seed 000 Table I) and the symmetry error ``|Φ_{−h}(Φ_h(y)) − y|`` (all these methods are
symmetric).

Example::

    python tools/ortolan_saccon.py                       # the paper's case: T = 10000, h = 0.125, 0.25
    python tools/ortolan_saccon.py --t-end 2000 --steps 0.25 0.5 --out /tmp/os
"""

import argparse
import csv
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

from dem.baselines import (
    FREE, METHODS, NonConvergenceError, angular_momentum, energy, integrate, ortolan_saccon_potential, reference,
    rotation_matrix,
)
from dem.convergence import fitted_order

ROOT = Path(__file__).resolve().parent.parent
#: Seed 000 §6: sign of the energy drift of each method ("bounded": no drift).
EXPECTED = {"ELN": "down", "TLN": "down", "PRK": "down", "MCG": "up", "NEW3": "up", "LIEMID[EA]": "up",
            "VLV": "bounded", "LGVI": "bounded"}
#: ``|slope|·T`` above this fraction of ``max|E − E(0)|`` counts as a drift.
DRIFT_FRACTION = 0.2
COLORS = dict(zip(METHODS, ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
                            "black", "tab:gray")))


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scene", default=str(ROOT / "scenes" / "ortolan_saccon.toml"), help="scene file")
    parser.add_argument("--t-end", type=float, help="end time of the drift runs (default: the scene's)")
    parser.add_argument("--steps", type=float, nargs="+",
                        help="steps h of the drift runs (default: the scene's dt and twice it)")
    parser.add_argument("--out", default=str(ROOT / "output" / "ortolan_saccon"), help="output folder")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS, metavar="METHOD",
                        help=f"methods to run (default all: {' '.join(METHODS)})")
    parser.add_argument("--order-time", type=float, default=5.0, help="T of the global-error study (default 5)")
    parser.add_argument("--order-levels", type=int, default=10,
                        help="h = 1, 1/2, ..., 1/2^(levels-1) in the global-error study (default 10)")
    parser.add_argument("--bins", type=int, default=400, help="time bins of the energy plots (default 400)")
    return parser


def load_case(path):
    """The stress test's parameters from the scene file."""
    with open(path, "rb") as f:
        scene = tomllib.load(f)
    body = scene["rigid_body"][0]
    stress = scene["ortolan_saccon"]
    return dict(
        J=np.array(body["inertia"], dtype=float),
        Q0=rotation_matrix(body["rotation_vector"]),
        omega0=np.array(body["body_angular_velocity"], dtype=float),
        potential=ortolan_saccon_potential(stress["alpha"], rotation_matrix(stress["attractor_rotation_vector"])),
        dt=float(scene["simulation"]["dt"]),
        t_end=float(scene["simulation"]["t_end"]),
    )


# ---------------------------------------------------------------------------------------------
# the three studies
# ---------------------------------------------------------------------------------------------


def drift_runs(case, methods, steps, t_end):
    """``{(method, h): dict(t, error, slope, slope_early, max, seconds)}`` or ``dict(failure=...)``;
    ``slope_early`` is fitted over the first quarter of the run only."""
    results = {}
    for h in steps:
        n_steps = int(round(t_end / h))
        for method in methods:
            start = time.perf_counter()
            try:
                run = integrate(method, case["J"], case["potential"], case["Q0"], case["omega0"], h, n_steps)
            except NonConvergenceError as error:
                results[method, h] = dict(failure=str(error))
                continue
            error = run.energy - run.energy[0]
            early = run.t <= 0.25 * run.t[-1]
            results[method, h] = dict(t=run.t, error=error, slope=float(np.polyfit(run.t, error, 1)[0]),
                                      slope_early=float(np.polyfit(run.t[early], error[early], 1)[0]),
                                      max=float(np.abs(error).max()), seconds=time.perf_counter() - start)
    return results


def global_errors(case, methods, order_time, levels):
    """Seed 000 Fig. 2: ``h``, and per method the attitude and angular-velocity errors at T."""
    steps = 2.0 ** -np.arange(levels)
    ref = reference(case["J"], case["potential"], case["Q0"], case["omega0"], order_time)
    errors = {}
    for method in methods:
        attitude, velocity = [], []
        for h in steps:
            n_steps = int(round(order_time / h))
            try:
                run = integrate(method, case["J"], case["potential"], case["Q0"], case["omega0"], h, n_steps,
                                sample_every=n_steps)
                attitude.append(np.linalg.norm(run.rotation[-1] - ref.rotation[-1]))
                velocity.append(np.linalg.norm(run.angular_velocity[-1] - ref.angular_velocity[-1]))
            except NonConvergenceError:
                attitude.append(np.nan)
                velocity.append(np.nan)
        errors[method] = (np.array(attitude), np.array(velocity))
    return steps, errors


def observed_order(steps, errors, h_max=0.125, floor=1e-12):
    """Least-squares slope of ``log error`` against ``log h`` over ``h ≤ h_max``."""
    keep = (steps <= h_max) & np.isfinite(errors) & (errors > floor)
    return fitted_order(steps[keep], errors[keep]) if keep.sum() >= 2 else np.nan


def structure_checks(case, methods, h, n_steps=10_000):
    """Per method: max relative drift of ``L = QJω`` on a free asymmetric body over ``n_steps``,
    and the symmetry error ``max |Φ_{−h}(Φ_h(y)) − y|`` on the stress test's initial state."""
    J_free, omega_free = np.array([1.0, 2.0, 3.0]), np.array([0.4, -0.7, 0.625])
    checks = {}
    for method in methods:
        free = integrate(method, J_free, FREE, case["Q0"], omega_free, h, n_steps, sample_every=100)
        L = angular_momentum(free.rotation, J_free, free.angular_velocity)
        momentum = np.abs(L - L[0]).max() / np.linalg.norm(L[0])
        there = integrate(method, case["J"], case["potential"], case["Q0"], case["omega0"], h, 1)
        back = integrate(method, case["J"], case["potential"], there.rotation[-1], there.angular_velocity[-1], -h, 1)
        symmetry = max(np.abs(back.rotation[-1] - case["Q0"]).max(),
                       np.abs(back.angular_velocity[-1] - case["omega0"]).max())
        checks[method] = (momentum, symmetry)
    return checks


def verdict(slope, t_end, max_error):
    if not np.isfinite(slope):
        return "failed"
    if abs(slope) * t_end < DRIFT_FRACTION * max_error:
        return "bounded"
    return "up" if slope > 0 else "down"


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------


def _envelope(t, values, bins):
    """Per time bin: centre, min, max, mean."""
    edges = np.linspace(t[0], t[-1], bins + 1)
    index = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, bins - 1)
    counts = np.bincount(index, minlength=bins)
    used = counts > 0
    lo = np.full(bins, np.inf)
    hi = np.full(bins, -np.inf)
    np.minimum.at(lo, index, values)
    np.maximum.at(hi, index, values)
    mean = np.bincount(index, weights=values, minlength=bins) / np.maximum(counts, 1)
    centre = 0.5 * (edges[:-1] + edges[1:])
    return centre[used], lo[used], hi[used], mean[used]


def _plot_band(ax, run, bins, color, label):
    centre, lo, hi, mean = _envelope(run["t"], run["error"], bins)
    ax.fill_between(centre, lo, hi, color=color, alpha=0.25, linewidth=0)
    ax.plot(centre, mean, color=color, linewidth=1.2, label=label)


def plot_energy(results, methods, steps, bins, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(steps), figsize=(6.5 * len(steps), 5.2), squeeze=False, sharey=True)
    for ax, h in zip(axes[0], steps):
        for method in methods:
            run = results[method, h]
            if "failure" not in run:
                _plot_band(ax, run, bins, COLORS[method], f"{method} ({run['slope']:+.2e}/time)")
        ax.axhline(0.0, color="0.6", linewidth=0.6)
        ax.set_title(f"h = {h:g}")
        ax.set_xlabel("t")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best", title="method (drift slope)", title_fontsize=8)
    axes[0, 0].set_ylabel("E(t) − E(0)")
    fig.suptitle("Ortolan–Saccon stress test (seed 000 Fig. 1): energy error; band = min–max per bin, "
                 "line = bin mean", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "energy_error.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(len(methods), len(steps), figsize=(5.5 * len(steps), 1.9 * len(methods)),
                             squeeze=False, sharex=True)
    for row, method in enumerate(methods):
        for col, h in enumerate(steps):
            ax = axes[row, col]
            run = results[method, h]
            if "failure" in run:
                ax.text(0.5, 0.5, "failed", transform=ax.transAxes, ha="center")
            else:
                _plot_band(ax, run, bins, COLORS[method], method)
                ax.text(0.01, 0.95, f"{method}, h = {h:g}: slope {run['slope']:+.2e}", transform=ax.transAxes,
                        va="top", fontsize=8)
            ax.axhline(0.0, color="0.6", linewidth=0.6)
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
            ax.tick_params(labelsize=7)
            ax.yaxis.get_offset_text().set_fontsize(7)
            ax.grid(alpha=0.3)
        axes[row, 0].set_ylabel("E − E(0)", fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("t")
    fig.tight_layout()
    fig.savefig(out / "energy_error_by_method.png", dpi=100)
    plt.close(fig)


def plot_orders(steps, errors, methods, order_time, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    titles = (f"(a) attitude error ‖Q − Q_ref‖_F at T = {order_time:g}",
              f"(b) body angular-velocity error |ω − ω_ref| at T = {order_time:g}")
    for k, ax in enumerate(axes):
        for method in methods:
            ax.loglog(steps, errors[method][k], "o-", color=COLORS[method], markersize=3.5, label=method)
        scale = np.nanmax([errors[m][k][-1] for m in methods]) * 2
        ax.loglog(steps, scale * (steps / steps[-1]) ** 2, "k--", linewidth=1.5, label="O(h²)")
        ax.set_xlabel("h")
        ax.set_title(titles[k], fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.suptitle("Global error against DOP853 (seed 000 Fig. 2)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "global_error.png", dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------


def drift_table(results, methods, steps, t_end):
    """Print the drift table (seed 000 Fig. 1 in numbers); return its rows for ``drift.csv``."""
    names = [format(h, "g") for h in steps]
    print("Energy drift: slope of the least-squares line through E(t) − E(0), per unit time")
    print(f"{'method':<11} " + " ".join(f"{'slope h=' + n:>14}" for n in names) + f" {'ratio':>6} {'ratio¼':>6} "
          + " ".join(f"{'max|dE| h=' + n:>15}" for n in names) + " "
          + " ".join(f"{'sT/max h=' + n:>14}" for n in names) + f"  {'verdict':<8} seed 000 §6")
    rows = []
    for method in methods:
        runs = [results[method, h] for h in steps]
        slopes = np.array([r.get("slope", np.nan) for r in runs])
        early = np.array([r.get("slope_early", np.nan) for r in runs])
        maxima = np.array([r.get("max", np.nan) for r in runs])
        verdicts = [verdict(s, t_end, m) for s, m in zip(slopes, maxima)]
        ratio = slopes[-1] / slopes[0] if len(steps) > 1 else np.nan
        ratio_early = early[-1] / early[0] if len(steps) > 1 else np.nan
        fractions = np.abs(slopes) * t_end / maxima
        joined = verdicts[0] if len(set(verdicts)) == 1 else "/".join(verdicts)
        match = "matches" if all(v == EXPECTED[method] for v in verdicts) else f"DIFFERS (expected {EXPECTED[method]})"
        print(f"{method:<11} " + " ".join(f"{s:>14.4e}" for s in slopes) + f" {ratio:>6.2f} {ratio_early:>6.2f} "
              + " ".join(f"{m:>15.4e}" for m in maxima) + " " + " ".join(f"{f:>14.3f}" for f in fractions)
              + f"  {joined:<8} {match}")
        for h, r, v in zip(steps, runs, verdicts):
            rows.append(dict(method=method, h=h, t_end=t_end, slope=r.get("slope", np.nan),
                             slope_first_quarter=r.get("slope_early", np.nan),
                             max_abs_energy_error=r.get("max", np.nan), verdict=v, expected=EXPECTED[method],
                             seconds=r.get("seconds", np.nan), failure=r.get("failure", "")))
    for method in methods:
        for h in steps:
            if "failure" in results[method, h]:
                print(f"  {method}, h = {h:g}: {results[method, h]['failure']}")
    print(f"ratio = slope(h = {steps[-1]:g}) / slope(h = {steps[0]:g}): 4 for a drift O(T h²); ratio¼: the same over "
          "the first quarter of the run, before a drifting run has moved far from E(0).\n"
          f"sT/max = |slope|·T / max|E − E(0)|: a drift if > {DRIFT_FRACTION}, bounded if ≈ 0.")
    return rows


def accuracy_table(methods, order_steps, errors, checks, order_time, h_check):
    """Print the observed orders (seed 000 Fig. 2) and the structural checks."""
    print(f"Accuracy at T = {order_time:g} against DOP853 and structure")
    print(f"{'method':<11} {'p(Q)':>6} {'p(ω)':>6} {'|ΔQ| h=' + format(order_steps[-1], '.3g'):>16} "
          f"{'|Δω| h=' + format(order_steps[-1], '.3g'):>16} {'free |ΔL|/|L|':>14} {'symmetry':>9}")
    for method in methods:
        attitude, velocity = errors[method]
        momentum, symmetry = checks[method]
        p_attitude, p_velocity = observed_order(order_steps, attitude), observed_order(order_steps, velocity)
        print(f"{method:<11} {p_attitude:>6.2f} {p_velocity:>6.2f} {attitude[-1]:>16.3e} {velocity[-1]:>16.3e} {momentum:>14.1e} {symmetry:>9.1e}")
    print("p(Q), p(ω): least-squares orders over h ≤ 1/8; free |ΔL|/|L|: spatial angular momentum QJω of a free "
          f"body, J = diag(1, 2, 3), h = {h_check:g}, 10000 steps;\nsymmetry: max |Φ_−h(Φ_h(y)) − y| from the "
          "stress test's initial state.")


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------


def main(argv=None):
    args = _parser().parse_args(argv)
    start = time.perf_counter()
    try:
        case = load_case(args.scene)
    except (OSError, KeyError, tomllib.TOMLDecodeError, ValueError) as error:
        print(f"ortolan_saccon: cannot read {args.scene}: {error!r}", file=sys.stderr)
        return 2
    steps = args.steps or [case["dt"], 2 * case["dt"]]
    t_end = args.t_end or case["t_end"]
    methods = [m for m in METHODS if m in args.methods]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    results = drift_runs(case, methods, steps, t_end)
    drift_seconds = time.perf_counter() - start
    order_steps, errors = global_errors(case, methods, args.order_time, args.order_levels)
    checks = structure_checks(case, methods, steps[0])

    print(f"Ortolan–Saccon stress test ({args.scene}): J = {case['J']}, T = {t_end:g}, h = {steps}; "
          f"E(0) = {energy(case['J'], case['potential'], case['Q0'], case['omega0']):.12g}")
    rows = drift_table(results, methods, steps, t_end)
    print()
    accuracy_table(methods, order_steps, errors, checks, args.order_time, steps[0])
    print()

    with open(out / "drift.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(out / "orders.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["h"] + [f"{m} {q}" for m in methods for q in ("attitude", "angular_velocity")])
        for i, h in enumerate(order_steps):
            writer.writerow([h] + [errors[m][k][i] for m in methods for k in (0, 1)])
    plot_energy(results, methods, steps, args.bins, out)
    plot_orders(order_steps, errors, methods, args.order_time, out)
    print(f"figures and tables in {out}; drift runs {drift_seconds:.1f} s, total {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
