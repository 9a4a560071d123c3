"""The discharge of a silo through its orifice (``python -m dem flow RUN… | SWEEP_DIR``): the
steady mass flow rate of runs with an ``[[outlet]]`` (`dem.feeding`), and Beverloo's law fitted
to runs with different orifices.

For each run, from its ``flow.csv`` (`dem.observers.csv_log.FlowLog`, a row every ``log_every``
steps), the cumulative mass ``M(t)`` that left through outlet ``k`` (column ``mass_k``). Once the
orifice opens the flow starts up, runs steadily while the silo empties (above a fill of about the
silo's width the pressure at the bottom saturates, Janssen's effect, and the rate does not depend
on the fill), and slows as the last grains leave. The first row with a removal may hold a burst
(grains that had gathered below the orifice before the outlet opened, as in
``scenes/silo_discharge.toml``), and the flow takes a while to settle, so the steady part is taken
as the rows from the time when ``WINDOW[0]`` (20 %) of the mass removed after that first row had
left to the time when ``WINDOW[1]`` (80 %) had (at least `MIN_ROWS` rows). Over those rows a straight line
``M = M₀ + W t`` (least squares, `numpy.polyfit`) gives the mass flow rate ``W``, its standard
error (from the residuals) and the line's ``R²``; lines through the first and through the second
half of the rows give the ratio of their slopes (1 for a rate that does not depend on the fill,
below 1 for one that falls as the silo empties). Also reported: the particles removed, and the
time of the first row with one removed. The fill height is not in ``flow.csv``; the count of
particles in play, ``Σ inserted_k − Σ removed_k`` (in a silo of constant cross-section filled by
the sources, proportional to the fill height), stands for it at the two ends of the window.

The orifice diameter ``D`` of a run comes from the scene it ran, the scene text and ``--set``
overrides of its ``checkpoint.npz``: the orifice plate is ``[[mesh]]`` 0 (`ORIFICE_MESH`), whose
hole has radius 1 at scale 1, so ``D = 2 × mesh.0.scale``. With three runs or more of distinct
orifices it fits Beverloo's law (Beverloo, Leniger & van de Velde 1961, Chem. Eng. Sci. 15, 260)

    W = C ρ_b √g (D − k d)^{5/2}

with ``ρ_b`` the bulk density (default `BULK_FRACTION` = 0.6 times the particles' density), ``g``
the magnitude of the scene's ``fields.gravity`` and ``d`` the particles' mean diameter (diameter
and density from each run's last snapshot that holds particles, averaged over the runs). ``W^{2/5}
= a (D − k d)`` is a straight line in ``D``: slope ``a = (C ρ_b √g)^{2/5}``, intercept ``b = −a k
d``. An unweighted least-squares line through the runs' ``(D, W^{2/5})`` gives ``C = a^{5/2} / (ρ_b
√g)`` and ``k = −b / (a d)``, their standard errors propagated from the covariance of ``a`` and
``b``, and the line's ``R²``. The values usually quoted from Beverloo et al. for spheres are ``C ≈
0.58`` and ``k ≈ 1.4`` (`BEVERLOO_1961`); later work typically finds C between 0.55 and 0.65 and k
between 1 and 3, and the law holds over a limited range of orifices only (Mankoc et al. 2007,
Granular Matter, doi:10.1007/s10035-007-0062-2).

It writes ``discharge.csv`` (one row per run), ``discharge.png`` (``M(t)`` with the fitted lines,
and the particles in play) and, with the fit, ``beverloo.png`` (``W^{2/5}`` against ``D``).
"""

import csv
import tomllib
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .runfiles import RunFolderError, read_log, read_snapshot, run_folders, snapshot_entries
from .runner import CHECKPOINT
from .scene import MESH_KEYS, SCHEMA, apply_override, parse_override

#: the steady window: from this fraction of the finally removed mass to this one
WINDOW = (0.2, 0.8)
MIN_ROWS = 5
#: bulk density as a fraction of the particles' density (the default of ``--bulk-density``)
BULK_FRACTION = 0.6
#: the ``[[mesh]]`` that is the orifice plate, and the radius of its hole at scale 1
ORIFICE_MESH = 0
HOLE_RADIUS = 1.0
#: Beverloo, Leniger & van de Velde (1961), as usually quoted: C, k
BEVERLOO_1961 = (0.58, 1.4)
COLUMNS = ("run", "outlet", "orifice_diameter", "rate", "rate_error", "r_squared", "intercept", "t_first_removal",
           "t_from", "t_to", "rows", "half_ratio", "removed", "removed_mass", "in_play_from", "in_play_to")


@dataclass
class Discharge:
    run: str
    outlet: int
    orifice_diameter: float | None
    rate: float
    rate_error: float
    r_squared: float
    intercept: float
    t_first_removal: float
    t_from: float
    t_to: float
    rows: int
    half_ratio: float
    removed: int
    removed_mass: float
    in_play_from: int | None
    in_play_to: int | None


@dataclass
class BeverlooFit:
    c: float
    k: float
    c_error: float
    k_error: float
    r_squared: float
    particle_diameter: float
    bulk_density: float
    gravity: float


def beverloo_rate(orifice_diameter, c, k, particle_diameter, bulk_density, g):
    """``W = C ρ_b √g (D − k d)^{5/2}`` (zero for ``D ≤ k d``)."""
    gap = np.maximum(np.asarray(orifice_diameter, float) - k * particle_diameter, 0.0)
    return c * bulk_density * np.sqrt(g) * gap ** 2.5


def read_flow_log(run_dir):
    """``RUN/flow.csv`` as ``{column: array}``."""
    return read_log(run_dir, "flow.csv", "a run with [[insert]] sources or [[outlet]] regions writes it")


def particles_in_play(log):
    """``Σ inserted_k − Σ removed_k`` of a `read_flow_log` table, or None for a run without sources."""
    if "inserted_0" not in log:
        return None
    return (sum(v for key, v in log.items() if key.startswith("inserted_"))
            - sum(v for key, v in log.items() if key.startswith("removed_"))).astype(int)


def steady_discharge(run_dir, outlet=0):
    """The `Discharge` through outlet ``outlet`` of one run (module docstring), without its
    orifice diameter (`orifice_diameter`)."""
    log = read_flow_log(run_dir)
    path = Path(run_dir) / "flow.csv"
    if f"mass_{outlet}" not in log:
        raise RunFolderError(f"{path}: no column mass_{outlet} (the scene has no [[outlet]] {outlet})")
    t, mass, removed = log["t"], log[f"mass_{outlet}"], log[f"removed_{outlet}"]
    if not mass[-1] > 0.0:
        raise RunFolderError(f"{path}: nothing left through outlet {outlet} (mass_{outlet} is 0)")
    burst = mass[np.argmax(mass > 0.0)]  # (the first row's removals)
    t_from, t_to = (t[np.argmax(mass >= burst + fraction * (mass[-1] - burst))] for fraction in WINDOW)
    window = (t >= t_from) & (t <= t_to)
    if window.sum() < MIN_ROWS:
        raise RunFolderError(f"{path}: fewer than {MIN_ROWS} rows between {WINDOW[0]:.0%} and {WINDOW[1]:.0%} of "
                             f"the removed mass: log more often (output.log_every)")
    (rate, intercept), covariance = np.polyfit(t[window], mass[window], 1, cov=True)
    residual = mass[window] - (intercept + rate * t[window])
    r_squared = 1.0 - np.sum(residual ** 2) / np.sum((mass[window] - mass[window].mean()) ** 2)
    (t_1, t_2), (mass_1, mass_2) = (np.array_split(values, 2) for values in (t[window], mass[window]))
    first, second = np.polyfit(t_1, mass_1, 1)[0], np.polyfit(t_2, mass_2, 1)[0]
    in_play = particles_in_play(log)
    return Discharge(run=str(run_dir), outlet=outlet, orifice_diameter=None, rate=float(rate),
                     rate_error=float(np.sqrt(covariance[0, 0])), r_squared=float(r_squared),
                     intercept=float(intercept),
                     t_first_removal=float(t[np.argmax(removed > 0)]), t_from=float(t_from), t_to=float(t_to),
                     rows=int(window.sum()), half_ratio=float(second / first) if first > 0.0 else float("nan"),
                     removed=int(removed[-1]), removed_mass=float(mass[-1]),
                     in_play_from=None if in_play is None else int(in_play[window][0]),
                     in_play_to=None if in_play is None else int(in_play[window][-1]))


def run_scene(run_dir):
    """The scene a run ran, as the TOML table of its checkpoint's ``scene_text`` with its
    ``overrides`` applied as `dem.scene.load_scene` applies them (not validated: the files it
    names need not exist here); None without a readable checkpoint."""
    try:
        with np.load(Path(run_dir) / CHECKPOINT, allow_pickle=False) as data:
            text, overrides = str(data["scene_text"]), [str(text) for text in data["overrides"]]
        table = tomllib.loads(text)
        for override in overrides:
            apply_override(table, *parse_override(override), override)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):  # (SceneError, TOMLDecodeError: ValueErrors)
        return None
    return table


def orifice_diameter(scene):
    """``2 × HOLE_RADIUS × scale`` of the scene's orifice plate ``mesh.ORIFICE_MESH`` (a table of
    `run_scene`), or None."""
    meshes = (scene or {}).get("mesh", [])
    if not isinstance(meshes, list) or len(meshes) <= ORIFICE_MESH or not isinstance(meshes[ORIFICE_MESH], dict):
        return None
    scale = meshes[ORIFICE_MESH].get("scale", MESH_KEYS["scale"].default)
    return 2.0 * HOLE_RADIUS * float(scale) if isinstance(scale, (int, float)) else None


def gravity(scene):
    """``|fields.gravity|`` of a scene table of `run_scene` (its default where unset), or None."""
    value = (scene or {}).get("fields", {}).get("gravity", SCHEMA["fields"]["gravity"].default)
    try:
        return float(np.linalg.norm(np.asarray(value, float)))
    except (TypeError, ValueError):
        return None


def particle_properties(run_dir):
    """``(mean diameter, density)`` of the particles of a run's last snapshot that holds any."""
    for entry in reversed(snapshot_entries(run_dir)):
        snapshot = read_snapshot(run_dir, entry=entry)
        if len(snapshot["diameter"]):
            density = np.mean(snapshot["mass"] / (np.pi / 6.0 * snapshot["diameter"] ** 3))
            return float(snapshot["diameter"].mean()), float(density)
    raise RunFolderError(f"{Path(run_dir) / 'particles.pvd'}: no snapshot holds particles")


def fit_beverloo(orifice_diameters, rates, particle_diameter, bulk_density, g):
    """`BeverlooFit` of ``W = C ρ_b √g (D − k d)^{5/2}`` to the ``rates`` ``W`` at
    ``orifice_diameters`` ``D`` (at least three distinct): the line ``W^{2/5} = a D + b``."""
    x, y = np.asarray(orifice_diameters, float), np.asarray(rates, float) ** 0.4
    n = len(x)
    if n < 3 or len(np.unique(x)) < 3:
        raise ValueError(f"Beverloo's law needs three distinct orifice diameters, got {sorted(set(x.tolist()))}")
    spread = np.sum((x - x.mean()) ** 2)
    a = np.sum((x - x.mean()) * (y - y.mean())) / spread
    b = y.mean() - a * x.mean()
    residual = y - (a * x + b)
    variance = np.sum(residual ** 2) / (n - 2)
    var_a, cov_ab = variance / spread, -x.mean() * variance / spread
    var_b = variance * (1.0 / n + x.mean() ** 2 / spread)
    c = a ** 2.5 / (bulk_density * np.sqrt(g))
    k = -b / (a * particle_diameter)
    dk_da, dk_db = b / (a ** 2 * particle_diameter), -1.0 / (a * particle_diameter)
    k_variance = dk_da ** 2 * var_a + dk_db ** 2 * var_b + 2.0 * dk_da * dk_db * cov_ab
    return BeverlooFit(c=float(c), k=float(k), c_error=float(2.5 * c * np.sqrt(var_a) / a),
                       k_error=float(np.sqrt(max(k_variance, 0.0))),
                       r_squared=float(1.0 - np.sum(residual ** 2) / np.sum((y - y.mean()) ** 2)),
                       particle_diameter=float(particle_diameter), bulk_density=float(bulk_density), gravity=float(g))


def _beverloo(discharges, folders, scenes, bulk_density):
    """``(fit or None, notes)`` for the runs whose orifice is known (`run_scene`: ``scenes``)."""
    known = [(d, folder, scene) for d, folder, scene in zip(discharges, folders, scenes)
             if d.orifice_diameter is not None]
    notes = [f"orifice diameter unknown (no checkpoint.npz with a [[mesh]] {ORIFICE_MESH}), left out of any fit: "
             f"{d.run}" for d in discharges if d.orifice_diameter is None]
    if len({d.orifice_diameter for d, _, _ in known}) < 3:
        return None, notes + ["Beverloo fit skipped: it needs three runs or more with distinct orifice diameters"]
    g = [gravity(scene) for _, _, scene in known]
    if not all(g) or max(g) - min(g) > 1e-9 * max(g):
        return None, notes + [f"Beverloo fit skipped: the runs' gravity is unknown, zero or not the same ({g})"]
    diameter, density = np.mean([particle_properties(folder) for _, folder, _ in known], axis=0)
    bulk = BULK_FRACTION * density if bulk_density is None else bulk_density
    fit = fit_beverloo([d.orifice_diameter for d, _, _ in known], [d.rate for d, _, _ in known], diameter, bulk, g[0])
    return fit, notes


def write_discharge(paths, out=None, outlet=0, bulk_density=None):
    """Measure the runs of ``paths`` (`dem.runfiles.run_folders`) through ``outlet``, write ``discharge.csv``,
    ``discharge.png`` and (with a Beverloo fit) ``beverloo.png`` into ``out`` (default: the sweep
    folder, or the first run's folder); returns ``(discharges, fit, notes, out)``, ``fit`` None
    and ``notes`` saying why where there is none."""
    folders = run_folders(paths, "flow.csv")
    scenes = [run_scene(folder) for folder in folders]
    discharges = [replace(steady_discharge(folder, outlet), orifice_diameter=orifice_diameter(scene))
                  for folder, scene in zip(folders, scenes)]
    out = Path(out) if out is not None else (Path(paths[0]) if (Path(paths[0]) / "sweep.csv").is_file()
                                              else folders[0])
    out.mkdir(parents=True, exist_ok=True)
    fit, notes = _beverloo(discharges, folders, scenes, bulk_density)
    discharges = sorted(discharges, key=lambda d: (d.orifice_diameter is None, d.orifice_diameter or 0.0, d.run))
    with open(out / "discharge.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(COLUMNS)
        for discharge in discharges:
            writer.writerow([_cell(getattr(discharge, c)) for c in COLUMNS])
    _plot_discharge(discharges, out / "discharge.png")
    if fit is not None:
        _plot_beverloo(discharges, fit, out / "beverloo.png")
    return discharges, fit, notes, out


def _cell(value):
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_discharge(discharges, path):
    plt = _pyplot()
    logs = [read_flow_log(d.run) for d in discharges]
    filled = any(d.in_play_from is not None for d in discharges)
    figure, axes = plt.subplots(2 if filled else 1, 1, figsize=(6, 7 if filled else 4), sharex=True, squeeze=False)
    top = axes[0, 0]
    for discharge, log in zip(discharges, logs):
        label = Path(discharge.run).name + (f" (D = {discharge.orifice_diameter:g})"
                                            if discharge.orifice_diameter is not None else "")
        (drawn,) = top.plot(log["t"], log[f"mass_{discharge.outlet}"], label=label)
        span = np.array([discharge.t_from, discharge.t_to])
        top.plot(span, discharge.intercept + discharge.rate * span, "k--", lw=1.0)
        if filled and discharge.in_play_from is not None:
            axes[1, 0].plot(log["t"], particles_in_play(log), color=drawn.get_color())
    top.set_ylabel(f"mass removed (outlet {discharges[0].outlet})")
    top.set_title(f"dashed: steady fit, {WINDOW[0]:.0%} to {WINDOW[1]:.0%} of the mass after the first removals",
                  fontsize=9)
    top.legend(fontsize=8)
    if filled:
        axes[1, 0].set_ylabel("particles in play (inserted − removed)")
    axes[-1, 0].set_xlabel("t")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _plot_beverloo(discharges, fit, path):
    plt = _pyplot()
    known = [d for d in discharges if d.orifice_diameter is not None]
    diameter = np.array([d.orifice_diameter for d in known])
    figure, axis = plt.subplots(figsize=(6, 4.5))
    axis.plot(diameter, np.array([d.rate for d in known]) ** 0.4, "o", label="dem")
    grid = np.linspace(0.0, 1.1 * diameter.max(), 200)
    conditions = (fit.particle_diameter, fit.bulk_density, fit.gravity)
    axis.plot(grid, beverloo_rate(grid, fit.c, fit.k, *conditions) ** 0.4,
              label=f"fit: C = {fit.c:.3f}, k = {fit.k:.2f} (R² = {fit.r_squared:.4f})")
    axis.plot(grid, beverloo_rate(grid, *BEVERLOO_1961, *conditions) ** 0.4, "--",
              label=f"Beverloo et al. 1961: C = {BEVERLOO_1961[0]}, k = {BEVERLOO_1961[1]}")
    axis.set_xlabel(f"orifice diameter D (d = {fit.particle_diameter:.3g})")
    axis.set_ylabel("W^(2/5)")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def summary(discharges, fit, notes):
    """Lines for the terminal."""
    lines = ["D        W           ± err      R2       2nd/1st  removed  (t window)  run"]
    lines += [f"{'-' if d.orifice_diameter is None else format(d.orifice_diameter, '.4g'):<8} {d.rate:<11.5g} "
              f"{d.rate_error:<10.3g} {d.r_squared:<8.5f} {d.half_ratio:<8.3f} {d.removed:<8} "
              f"({d.t_from:.3g}-{d.t_to:.3g})  {d.run}" for d in discharges]
    if fit is not None:
        lines.append(f"fit W = C rho_b sqrt(g) (D - k d)^(5/2): C = {fit.c:.3f} ± {fit.c_error:.3f}, "
                     f"k = {fit.k:.2f} ± {fit.k_error:.2f} (R² of W^(2/5) against D {fit.r_squared:.4f}; "
                     f"d = {fit.particle_diameter:.4g}, rho_b = {fit.bulk_density:.4g}, g = {fit.gravity:.4g})")
        lines.append(f"  Beverloo et al. 1961, as usually quoted: C = {BEVERLOO_1961[0]}, k = {BEVERLOO_1961[1]}; "
                     f"later work typically C 0.55-0.65, k 1-3")
    return lines + notes
