"""Plots from a run's log (SPEC §7): energy budget, energy error and momenta from ``energy.csv``.

`plot_energy` draws three panels over time ``t``:

(a) the energy budget as seed 001 Fig. 4: the non-negative components (translational and
    rotational kinetic, bending, shear, axial, particle–particle and particle–wall strain energy,
    and ``broken``/``dissipated`` when non-zero) stacked, signed ones (``gravity``, ``lj``,
    ``external``, when non-zero) as lines, and the ``total``;
(b) the relative energy error ``(E(t) − E(0))/|E(0)|``;
(c) the total momenta ``P`` (solid) and ``L`` (dashed), by component.

Example::

    from dem.plotting import plot_energy
    plot_energy("output/torus_impact")          # writes output/torus_impact/energy.png
"""

from pathlib import Path

import numpy as np

#: (column, label) of the stacked, non-negative components, bottom to top
STACKED = (
    ("kinetic_translational", "kinetic, translational  $m|v|^2/2$"),
    ("kinetic_rotational", "kinetic, rotational  $J|\\omega|^2/2$"),
    ("bending", "bending  $U^m$"),
    ("shear", "shear  $U^s$"),
    ("axial", "axial  $U^a$"),
    ("hertz_pp", "particle–particle  $U^{pp}$"),
    ("hertz_pw", "particle–wall  $U^{pw}$"),
    ("broken", "broken bonds"),
    ("dissipated", "dissipated"),
)
#: components shown only when non-zero somewhere in the run
OPTIONAL = ("broken", "dissipated", "gravity", "lj", "external")
#: (column, label) of the signed components, drawn as lines
SIGNED = (("gravity", "gravity"), ("lj", "Lennard-Jones"), ("external", "external"))


def read_log(path):
    """Columns of an ``energy.csv`` as ``{name: (n_rows,) float array}``. Rows that do not have
    one value per column (a line cut short by a killed run) are skipped."""
    path = Path(path)
    with open(path, encoding="utf-8") as file:
        header = file.readline().strip().split(",")
        rows = []
        for line in file:
            values = line.strip().split(",")
            if len(values) != len(header):
                continue
            try:
                rows.append([float(value) for value in values])
            except ValueError:
                continue
    if not header or header == [""]:
        raise ValueError(f"{path}: empty log")
    table = np.array(rows, dtype=np.float64).reshape(-1, len(header))
    return {name: table[:, k] for k, name in enumerate(header)}


def plot_energy(run_dir, out=None):
    """Plot ``run_dir/energy.csv`` into ``out`` (default ``run_dir/energy.png``); returns its path.

    Raises `FileNotFoundError` without a log and `ValueError` for a log with no rows.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    log_path = run_dir / "energy.csv"
    log = read_log(log_path)
    if len(log["t"]) == 0:
        raise ValueError(f"{log_path}: no rows to plot")
    out = Path(out) if out is not None else run_dir / "energy.png"
    t = log["t"]

    def shown(name):
        return name in log and (name not in OPTIONAL or np.any(log[name] != 0.0))

    figure, (budget, error, momenta) = plt.subplots(
        3, 1, sharex=True, figsize=(9.0, 10.0), gridspec_kw={"height_ratios": (2.2, 1.0, 1.0)},
        constrained_layout=True,
    )
    figure.suptitle(f"{run_dir.name}: energy budget, energy error and momenta")

    # (a) energy budget
    colors = plt.get_cmap("tab10").colors
    stacked = [(name, label) for name, label in STACKED if shown(name)]
    budget.stackplot(t, *[log[name] for name, _ in stacked], labels=[label for _, label in stacked],
                     colors=colors[: len(stacked)], alpha=0.85, linewidth=0.0)
    for k, (name, label) in enumerate((n, l) for n, l in SIGNED if shown(n)):
        budget.plot(t, log[name], color=colors[(len(stacked) + k) % len(colors)], linewidth=1.2, label=label)
    budget.plot(t, log["total"], color="black", linewidth=1.5, label="total  $E$")
    budget.set_ylabel("energy")
    budget.set_title("(a) energy budget (components stacked)", loc="left", fontsize="medium")
    budget.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", frameon=False)
    budget.grid(True, alpha=0.3)

    # (b) relative energy error
    total = log["total"]
    scale = abs(total[0]) if total[0] != 0.0 else np.max(np.abs(total))
    scale = scale if scale > 0.0 else 1.0
    relative = (total - total[0]) / scale
    error.plot(t, relative, color="tab:red", linewidth=1.0)
    error.axhline(0.0, color="black", linewidth=0.6)
    error.set_ylabel("$(E(t) - E(0))/|E(0)|$" if total[0] != 0.0 else "$(E(t) - E(0))/\\max|E|$")
    error.set_title(f"(b) relative energy error (max |error| = {np.max(np.abs(relative)):.3g})",
                    loc="left", fontsize="medium")
    error.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    error.grid(True, alpha=0.3)

    # (c) momenta
    for k, axis in enumerate("xyz"):
        momenta.plot(t, log[f"P{axis}"], color=colors[k], linewidth=1.2, label=f"$P_{axis}$")
    for k, axis in enumerate("xyz"):
        momenta.plot(t, log[f"L{axis}"], color=colors[k], linewidth=1.2, linestyle="--", label=f"$L_{axis}$")
    momenta.set_ylabel("momentum")
    momenta.set_xlabel("t")
    momenta.set_title("(c) linear momentum P (solid) and angular momentum L about the origin (dashed)",
                      loc="left", fontsize="medium")
    momenta.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", frameon=False)
    momenta.grid(True, alpha=0.3)
    momenta.set_xlim(t[0], t[-1] if t[-1] > t[0] else t[0] + 1.0)

    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return out
