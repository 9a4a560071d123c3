"""Plots from a run's log (docs/theory.md §7): energy budget, energy error and momenta from ``energy.csv``.

`plot_energy` draws five panels over time ``t``:

(a) the energy budget as seed 001 Fig. 4: the non-negative components (translational and
    rotational kinetic, bending, shear, axial, particle–particle and particle–wall strain energy,
    ``broken`` and ``dissipated``, and the other interactions' columns that never go negative:
    friction's, rolling's, …) stacked, the signed ones (``gravity``, ``lj``, ``external``, a
    moving wall's ``walls`` work) as lines, and the ``total`` (`components`);
(b) the same components one by one on a logarithmic scale (signed ones by magnitude), so that
    those a thousand times smaller than the largest are as readable as it; the scale stops
    `LOG_RANGE` below the largest energy, and round-off below that is left out;
(c) the relative energy error ``|E(t) − E(0)|/|E(0)|``, also on a logarithmic scale (over
    ``|E(0)| + |W(t)|`` when moving walls or a deforming cell put in work ``W``, the ``walls``
    and ``cell`` columns: the energy they bring is in play too, as for the energy guard);
(d) the total linear momentum ``P`` and (e) angular momentum ``L`` (about the origin, or the
    pivot), by component.

Components that are zero throughout the run are left out of every panel and named under them.
`dem` has no unit system (docs/guide.md): axes read "[scene units]" unless ``units`` names the
system the scene was written in (`UNIT_SYSTEMS`, e.g. ``"SI"``) or gives the unit of each
quantity.

Example::

    from dem.plotting import plot_energy
    plot_energy("output/torus_impact")          # writes output/torus_impact/energy.png
    plot_energy("output/my_si_run", units="SI") # axes in s, J, kg·m/s, kg·m²/s
"""

from pathlib import Path

import numpy as np

#: (column, label) of the non-negative components, stacked bottom to top in panel (a)
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
#: (column, label) of the signed components, drawn as lines
SIGNED = (("gravity", "gravity"), ("lj", "Lennard-Jones"), ("external", "external"))
#: panel (b) shows this many decades below the largest energy of the run
LOG_RANGE = 1e-7
#: units of a named system, by quantity
UNIT_SYSTEMS = {
    "SI": {"time": "s", "energy": "J", "momentum": "kg·m/s", "angular momentum": "kg·m²/s"},
    "CGS": {"time": "s", "energy": "erg", "momentum": "g·cm/s", "angular momentum": "g·cm²/s"},
}
SCENE_UNITS = "scene units"


def units_of(units):
    """``{quantity: unit}`` for ``units``: None (every quantity in "scene units"), a name of
    `UNIT_SYSTEMS`, or a dict that gives some quantities their unit (the others stay in scene
    units)."""
    names = ("time", "energy", "momentum", "angular momentum")
    if units is None:
        return dict.fromkeys(names, SCENE_UNITS)
    if isinstance(units, str):
        if units not in UNIT_SYSTEMS:
            raise ValueError(f"unknown unit system {units!r}; known: {', '.join(UNIT_SYSTEMS)}")
        return dict(UNIT_SYSTEMS[units])
    unknown = set(units) - set(names)
    if unknown:
        raise ValueError(f"units for unknown quantities {sorted(unknown)}; known: {', '.join(names)}")
    return {name: units.get(name, SCENE_UNITS) for name in names}


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


def components(log):
    """``(stacked, signed, zero)`` of a log (`read_log`): the (column, label) pairs of panel (a)'s
    stack and lines, and the energy columns that are zero throughout. Beyond `STACKED` and
    `SIGNED`, every other energy column of ``total`` (`dem.interactions.energy_columns`: friction's
    ``tangential`` and ``friction``, the moving walls' ``walls``, …) is stacked when it is never
    negative and drawn as a line otherwise, so that the stack and lines add up to ``total``."""
    from .interactions import energy_columns

    known = dict(STACKED + SIGNED)
    extra = [name for name in energy_columns() if name not in known and name in log]
    zero = [name for name in [*known, *extra] if name in log and not np.any(log[name] != 0.0)]
    stacked = [(name, label) for name, label in STACKED if name in log and name not in zero]
    stacked += [(name, name) for name in extra if name not in zero and np.all(log[name] >= 0.0)]
    signed = [(name, label) for name, label in SIGNED if name in log and name not in zero]
    signed += [(name, name) for name in extra if name not in zero and np.any(log[name] < 0.0)]
    return stacked, signed, zero


def plot_energy(run_dir, out=None, units=None):
    """Plot ``run_dir/energy.csv`` into ``out`` (default ``run_dir/energy.png``); returns its path.
    ``units``: see `units_of` (default: every axis in "scene units").

    Raises `FileNotFoundError` without a log and `ValueError` for a log with no rows.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    unit = units_of(units)
    run_dir = Path(run_dir)
    log_path = run_dir / "energy.csv"
    log = read_log(log_path)
    if len(log["t"]) == 0:
        raise ValueError(f"{log_path}: no rows to plot")
    out = Path(out) if out is not None else run_dir / "energy.png"
    t = log["t"]
    total = log["total"]

    stacked, signed, zero = components(log)
    present = [name for name, _ in stacked + signed] + zero
    palette = plt.get_cmap("tab10").colors
    color = {name: palette[k % len(palette)] for k, (name, _) in enumerate(stacked + signed)}

    figure = plt.figure(figsize=(10.0, 13.0), constrained_layout=True)
    grid = figure.add_gridspec(4, 2, height_ratios=(2.0, 1.6, 1.0, 1.0))
    budget = figure.add_subplot(grid[0, :])
    parts = figure.add_subplot(grid[1, :], sharex=budget)
    error = figure.add_subplot(grid[2, :], sharex=budget)
    linear = figure.add_subplot(grid[3, 0], sharex=budget)
    angular = figure.add_subplot(grid[3, 1], sharex=budget)
    figure.suptitle(f"{run_dir.name}: energy budget, energy error and momenta")
    time_label = f"time $t$ [{unit['time']}]"
    energy_label = f"energy [{unit['energy']}]"

    # (a) energy budget, components stacked
    if stacked:
        budget.stackplot(t, *[log[name] for name, _ in stacked], labels=[label for _, label in stacked],
                         colors=[color[name] for name, _ in stacked], alpha=0.85, linewidth=0.0)
    for name, label in signed:
        budget.plot(t, log[name], color=color[name], linewidth=1.2, label=label)
    budget.plot(t, total, color="black", linewidth=1.5, label="total  $E$")
    budget.set_ylabel(energy_label)
    budget.set_title("(a) energy budget (components stacked)", loc="left", fontsize="medium")
    budget.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", frameon=False)
    budget.grid(True, alpha=0.3)

    # (b) each component on a log scale
    largest = max([np.max(np.abs(log[name])) for name in present] + [np.max(np.abs(total))])
    floor = LOG_RANGE * largest if largest > 0.0 else 1.0
    faint = []
    lowest = largest if largest > 0.0 else 1.0
    for name, label in stacked + signed + [("total", "total  $E$")]:
        magnitude = np.abs(log[name])
        kept = magnitude >= floor
        if not np.any(kept):
            faint.append(name)
            continue
        lowest = min(lowest, np.min(magnitude[kept]))
        label = f"|{label}|" if name == "total" or (name, label) in signed else label
        parts.plot(t, np.where(kept, magnitude, np.nan), color=color.get(name, "black"),
                   linewidth=1.3 if name == "total" else 1.1, label=label)
    parts.set_yscale("log")
    parts.set_ylim(max(floor, 0.5 * lowest), 2.0 * largest if largest > 0.0 else 10.0)
    parts.set_ylabel(f"{energy_label}, log scale")
    parts.set_title("(b) each component (signed ones by magnitude)", loc="left", fontsize="medium")
    parts.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", frameon=False)
    parts.grid(True, which="major", alpha=0.3)

    # (c) relative energy error on a log scale
    # (`dem.interactions.DRIVEN_COLUMNS`; not imported: plotting a log needs no compiled kernels)
    driven = sum((np.abs(log[name]) for name in ("walls", "cell", "inserted") if name in log), np.zeros_like(total))
    scale = abs(total[0]) + driven if driven.any() else abs(total[0]) if total[0] != 0.0 else np.max(np.abs(total))
    scale = np.where(scale > 0.0, scale, 1.0)
    relative = np.abs(total - total[0]) / scale
    shown = relative > 0.0
    if np.any(shown):
        error.semilogy(t[shown], relative[shown], color="tab:red", linewidth=1.0)
    else:
        error.text(0.5, 0.5, "E(t) = E(0) in every row", transform=error.transAxes, ha="center", va="center")
        error.set_yscale("log")
    denominator = "(|E(0)| + |W|)" if driven.any() else "|E(0)|" if total[0] != 0.0 else "\\max|E|"
    error.set_ylabel(f"$|E(t) - E(0)|/{denominator}$")
    error.set_title(f"(c) relative energy error (largest {np.max(relative):.3g})", loc="left", fontsize="medium")
    error.grid(True, which="major", alpha=0.3)

    # (d), (e) momenta
    for axes, (symbol, quantity) in ((linear, ("P", "momentum")), (angular, ("L", "angular momentum"))):
        for k, axis in enumerate("xyz"):
            axes.plot(t, log[f"{symbol}{axis}"], color=palette[k], linewidth=1.2, label=f"${symbol}_{axis}$")
        axes.set_ylabel(f"{quantity} [{unit[quantity]}]")
        axes.set_xlabel(time_label)
        axes.legend(loc="best", fontsize="small", frameon=False)
        axes.grid(True, alpha=0.3)
        axes.yaxis.set_major_formatter(FormatStrFormatter("%.3g"))  # no offset text over the title
    linear.set_title("(d) linear momentum $P$", loc="left", fontsize="medium")
    angular.set_title("(e) angular momentum $L$ (about the origin, or the pivot)", loc="left", fontsize="medium")
    budget.set_xlim(t[0], t[-1] if t[-1] > t[0] else t[0] + 1.0)
    for axes in (budget, parts, error):
        axes.tick_params(labelbottom=False)

    notes = []
    if zero:
        notes.append("zero throughout: " + ", ".join(zero))
    if faint:
        notes.append(f"below {LOG_RANGE:.0e} of the largest energy throughout (not in (b)): " + ", ".join(faint))
    if notes:  # under the panels (supxlabel: the layout leaves room for it)
        figure.supxlabel(";  ".join(notes), x=0.01, ha="left", fontsize="small", color="0.35")

    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return out
