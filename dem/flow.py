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
time of the first row with one removed.

The fill height ``H`` at each of the run's particle snapshots (``particles.pvd``): the height above
the orifice plate of the bed's top surface. The plate lies in the plane z = 0 of its file
(``tools/make_orifice_mesh.py``), so its level is the z of ``mesh.0.translate``. Only the
particles whose centre is above that level count (not those falling through the orifice or lying
below it). The silo's cross-section, the box the particles above the plate span in x and y over
all snapshots, is cut into square bins about `FILL_BIN` (3) mean diameters wide; in each bin the
bed's top is the highest particle top ``z + D/2`` (the plate's level where the bin is empty), and
``H`` is the median of the bins' tops, over the bins that hold a particle in some snapshot (the
silo's footprint), minus the plate's level. The median leaves out a stray grain above the bed
and, during a discharge, the crater above the orifice while it covers less than half of the
cross-section. The fill heights at the steady window's ends are interpolated linearly between the
snapshots.

Whether the rate depends on the fill while the fill is above one silo width ``L`` (the smaller gap
between opposite ``[[walls]]`` planes of normal ±x and ±y, or ``--silo-width``): the steady window
is cut at the snapshots' times into sub-windows (one with fewer than `MIN_SUB_ROWS` rows joins the
next, the last the one before), each with its rate (a line through its rows) and mean fill height
(of the fills interpolated at its ends). Over the sub-windows whose mean fill is at or above ``L``
(at least `MIN_ABOVE`) a least-squares line ``W = a + b H`` gives the relative change of the rate
over the fill range they span, ``b (H_max − H_min) / mean W``, and its standard error (from the
residuals). Within `FILL_TOLERANCE` (5 %), two standard errors included, the rate does not depend
on the fill; beyond 5 % and more than two standard errors from zero it does; otherwise the data
do not tell. The
summary gives the fill range too, as a fraction of ``L``: a discharge that lowers the fill little
tests the rate over that little only.

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
the fill height against time, and the sub-windows' rates against the fill height) and, with the
fit, ``beverloo.png`` (``W^{2/5}`` against ``D``).
"""

import csv
import tomllib
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy.stats import linregress

from .runfiles import RunFolderError, read_log, read_snapshot, run_folders, snapshot_entries, snapshot_spheres
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
#: the fill height's bins: squares of the silo's cross-section about this many mean diameters wide
FILL_BIN = 3.0
#: the fewest rows of a sub-window, and the fewest sub-windows above one silo width for a verdict
MIN_SUB_ROWS, MIN_ABOVE = 3, 3
#: a relative change of the rate over the fill above one silo width within which it does not depend on the fill
FILL_TOLERANCE = 0.05
COLUMNS = ("run", "outlet", "orifice_diameter", "rate", "rate_error", "r_squared", "intercept", "t_first_removal",
           "t_from", "t_to", "rows", "half_ratio", "removed", "removed_mass", "fill_from", "fill_to", "silo_width",
           "above_windows", "above_change", "above_change_error")


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
    #: the fill height at t_from and t_to; the silo's width; over the sub-windows above one width:
    #: their number, the rate's relative change and its standard error (None: unknown, too few)
    fill_from: float | None = None
    fill_to: float | None = None
    silo_width: float | None = None
    above_windows: int | None = None
    above_change: float | None = None
    above_change_error: float | None = None
    #: not in discharge.csv: the snapshots' ``(times, fill heights)``, and the sub-windows' ``(t_a,
    #: t_b, mean fill, rate)``
    fill: tuple | None = field(default=None, repr=False)
    windows: list = field(default_factory=list, repr=False)


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


def fill_heights(snapshots, level):
    """The fill height (module docstring) of each of ``snapshots`` (dicts of `read_snapshot`: at
    least ``position`` and ``diameter``) above the plate's ``level``, an array."""
    above = [s["position"][:, 2] > level for s in snapshots]
    xy = np.concatenate([s["position"][a, :2] for s, a in zip(snapshots, above)] + [np.zeros((0, 2))])
    if not len(xy):
        return np.zeros(len(snapshots))
    diameter = np.concatenate([s["diameter"][a] for s, a in zip(snapshots, above)]).mean()
    low, extent = xy.min(axis=0), xy.max(axis=0) - xy.min(axis=0)
    bins = np.maximum(np.floor(extent / (FILL_BIN * diameter)), 1).astype(int)
    scale = np.where(extent > 0.0, bins / np.where(extent > 0.0, extent, 1.0), 0.0)
    tops, footprint = [], np.zeros(bins[0] * bins[1], bool)
    for snapshot, a in zip(snapshots, above):
        cell = np.minimum((snapshot["position"][a, :2] - low) * scale, bins - 1).astype(int)
        flat = cell[:, 0] * bins[1] + cell[:, 1]
        top = np.full(len(footprint), level)
        np.maximum.at(top, flat, snapshot["position"][a, 2] + 0.5 * snapshot["diameter"][a])
        footprint[flat] = True
        tops.append(top)
    return np.array([np.median(top[footprint]) - level for top in tops])


def run_fill_heights(run_dir, level):
    """``(times, fill heights)`` of the particle snapshots of a run (`fill_heights`), read as
    spheres (`dem.runfiles.snapshot_spheres`: a clump's member spheres)."""
    entries = snapshot_entries(run_dir)
    snapshots = []
    for entry in entries:
        position, diameter = snapshot_spheres(run_dir, read_snapshot(run_dir, entry=entry))
        snapshots.append({"position": position, "diameter": diameter})
    return np.array([entry[1] for entry in entries], float), fill_heights(snapshots, level)


def sub_windows(t, mass, t_from, t_to, times, fills):
    """``[(t_a, t_b, mean fill, rate)]`` of the steady window ``[t_from, t_to]`` cut at the
    snapshots' ``times`` (module docstring): ``t``, ``mass`` the flow log's, ``fills`` the
    fill heights at ``times``."""
    cuts = [t_from] + [time for time in times if t_from < time < t_to] + [t_to]
    spans, a = [], 0
    for b in range(1, len(cuts)):
        if np.sum((t >= cuts[a]) & (t <= cuts[b])) >= MIN_SUB_ROWS:
            spans.append((cuts[a], cuts[b]))
            a = b
    if spans and a < len(cuts) - 1:  # the rows left over join the last sub-window
        spans[-1] = (spans[-1][0], cuts[-1])
    out = []
    for t_a, t_b in spans:
        rows = (t >= t_a) & (t <= t_b)
        fill = 0.5 * (np.interp(t_a, times, fills) + np.interp(t_b, times, fills))
        out.append((float(t_a), float(t_b), float(fill), float(np.polyfit(t[rows], mass[rows], 1)[0])))
    return out


def fill_dependence(windows, width):
    """``(count, change, error)`` of the sub-windows (`sub_windows`) whose mean fill is at or above
    ``width``: their number, the relative change of the rate over their fill range and its
    standard error (module docstring); change and error None with fewer than `MIN_ABOVE`."""
    above = [(fill, rate) for t_a, t_b, fill, rate in windows if fill >= width]
    if len(above) < MIN_ABOVE:
        return len(above), None, None
    fill, rate = np.array(above).T
    if not np.ptp(fill) > 0.0:
        return len(above), None, None
    line = linregress(fill, rate)
    span = (fill.max() - fill.min()) / rate.mean()
    return len(above), float(line.slope * span), float(line.stderr * span)


def steady_discharge(run_dir, outlet=0, level=None, width=None):
    """The `Discharge` through outlet ``outlet`` of one run (module docstring), without its
    orifice diameter (`orifice_diameter`); with the orifice plate's ``level`` the fill heights
    from its snapshots, and with the silo's ``width`` too whether the rate depends on them."""
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
    filled = {}
    if level is not None:
        times, fills = run_fill_heights(run_dir, level)
        windows = sub_windows(t, mass, t_from, t_to, times, fills)
        count, change, error = fill_dependence(windows, width) if width is not None else (None, None, None)
        filled = dict(fill=(times, fills), windows=windows, silo_width=width, above_windows=count,
                      above_change=change, above_change_error=error,
                      **{key: float(np.interp(time, times, fills)) if times[0] <= time <= times[-1] else None
                         for key, time in (("fill_from", t_from), ("fill_to", t_to))})
    return Discharge(run=str(run_dir), outlet=outlet, orifice_diameter=None, rate=float(rate),
                     rate_error=float(np.sqrt(covariance[0, 0])), r_squared=float(r_squared),
                     intercept=float(intercept),
                     t_first_removal=float(t[np.argmax(removed > 0)]), t_from=float(t_from), t_to=float(t_to),
                     rows=int(window.sum()), half_ratio=float(second / first) if first > 0.0 else float("nan"),
                     removed=int(removed[-1]), removed_mass=float(mass[-1]), **filled)


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


def plate_level(scene):
    """The z of the orifice plate ``mesh.ORIFICE_MESH`` of a scene table of `run_scene` (its file
    lies in z = 0: the z of its ``translate``), or None."""
    meshes = (scene or {}).get("mesh", [])
    if not isinstance(meshes, list) or len(meshes) <= ORIFICE_MESH or not isinstance(meshes[ORIFICE_MESH], dict):
        return None
    translate = meshes[ORIFICE_MESH].get("translate", MESH_KEYS["translate"].default)
    try:
        return float(translate[2])
    except (TypeError, ValueError, IndexError):
        return None


def silo_width(scene):
    """The smaller gap between opposite ``[[walls]]`` planes of normal ±x and of normal ±y of a
    scene table of `run_scene` (the particles' side between them), or None."""
    gaps = []
    for axis in (0, 1):
        low, high = [], []
        for wall in (scene or {}).get("walls", []):
            try:
                normal, point = np.asarray(wall["normal"], float), np.asarray(wall["point"], float)
            except (KeyError, TypeError, ValueError):
                continue
            along = normal.shape == (3,) and normal[axis] != 0.0 and not np.delete(normal, axis).any()
            if along and point.shape == (3,):
                (low if normal[axis] > 0.0 else high).append(point[axis])
        if low and high and min(high) > max(low):
            gaps.append(min(high) - max(low))
    return float(min(gaps)) if gaps else None


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
    line = linregress(x, y)
    a, b = line.slope, line.intercept
    var_a, var_b = line.stderr ** 2, line.intercept_stderr ** 2
    cov_ab = -x.mean() * var_a
    c = a ** 2.5 / (bulk_density * np.sqrt(g))
    k = -b / (a * particle_diameter)
    dk_da, dk_db = b / (a ** 2 * particle_diameter), -1.0 / (a * particle_diameter)
    k_variance = dk_da ** 2 * var_a + dk_db ** 2 * var_b + 2.0 * dk_da * dk_db * cov_ab
    return BeverlooFit(c=float(c), k=float(k), c_error=float(2.5 * c * np.sqrt(var_a) / a),
                       k_error=float(np.sqrt(max(k_variance, 0.0))),
                       r_squared=float(line.rvalue ** 2),
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


def write_discharge(paths, out=None, outlet=0, bulk_density=None, width=None):
    """Measure the runs of ``paths`` (`dem.runfiles.run_folders`) through ``outlet``, with their
    fill heights where the orifice plate's level is known (`plate_level`) and the silo's width
    ``width`` (default: `silo_width`), write ``discharge.csv``, ``discharge.png`` and (with a
    Beverloo fit) ``beverloo.png`` into ``out`` (default: the sweep folder, or the first run's
    folder); returns ``(discharges, fit, notes, out)``, ``fit`` None and ``notes`` saying why
    where there is none."""
    folders = run_folders(paths, "flow.csv")
    scenes = [run_scene(folder) for folder in folders]
    discharges, fill_notes = [], []
    for folder, scene in zip(folders, scenes):
        level = plate_level(scene)
        if level is not None and not (Path(folder) / "particles.pvd").is_file():
            fill_notes.append(f"fill height unknown (no particles.pvd with snapshots): {folder}")
            level = None
        elif level is None:
            fill_notes.append(f"fill height unknown (no checkpoint.npz with a [[mesh]] {ORIFICE_MESH}, the orifice "
                              f"plate): {folder}")
        discharge = steady_discharge(folder, outlet, level, width if width is not None else silo_width(scene))
        if level is not None and discharge.silo_width is None:
            fill_notes.append(f"silo width unknown (no opposite [[walls]] planes of normal ±x or ±y): give "
                              f"--silo-width: {folder}")
        discharges.append(replace(discharge, orifice_diameter=orifice_diameter(scene)))
    out = Path(out) if out is not None else (Path(paths[0]) if (Path(paths[0]) / "sweep.csv").is_file()
                                              else folders[0])
    out.mkdir(parents=True, exist_ok=True)
    fit, notes = _beverloo(discharges, folders, scenes, bulk_density)
    notes = fill_notes + notes
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
    filled = any(d.fill is not None for d in discharges)
    figure, axes = plt.subplots(3 if filled else 1, 1, figsize=(6, 10 if filled else 4), squeeze=False)
    top = axes[0, 0]
    for discharge, log in zip(discharges, logs):
        label = Path(discharge.run).name + (f" (D = {discharge.orifice_diameter:g})"
                                            if discharge.orifice_diameter is not None else "")
        (drawn,) = top.plot(log["t"], log[f"mass_{discharge.outlet}"], label=label)
        span = np.array([discharge.t_from, discharge.t_to])
        top.plot(span, discharge.intercept + discharge.rate * span, "k--", lw=1.0)
        if discharge.fill is not None:
            color = drawn.get_color()
            axes[1, 0].plot(*discharge.fill, ".-", color=color)
            axes[1, 0].axvspan(discharge.t_from, discharge.t_to, color=color, alpha=0.1)
            if discharge.windows:
                _, _, fill, rate = np.array(discharge.windows).T
                axes[2, 0].plot(fill, rate, "o-", color=color)
            if discharge.silo_width is not None:
                axes[1, 0].axhline(discharge.silo_width, color=color, ls=":", lw=1.0)
                axes[2, 0].axvline(discharge.silo_width, color=color, ls=":", lw=1.0)
    top.set_ylabel(f"mass removed (outlet {discharges[0].outlet})")
    top.set_title(f"dashed: steady fit, {WINDOW[0]:.0%} to {WINDOW[1]:.0%} of the mass after the first removals",
                  fontsize=9)
    top.legend(fontsize=8)
    top.set_xlabel("t")
    if filled:
        axes[1, 0].set_xlabel("t")
        axes[1, 0].set_ylabel("fill height above the plate")
        axes[1, 0].set_title("shaded: the steady window; dotted: one silo width", fontsize=9)
        axes[2, 0].set_xlabel("fill height above the plate")
        axes[2, 0].set_ylabel("rate in the steady window's sub-windows")
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


def fill_verdict(discharge):
    """Whether the rate of a `Discharge` depends on the fill above one silo width, in words (None
    without a silo width)."""
    d = discharge
    if d.silo_width is None or d.fill is None:
        return None
    name = Path(d.run).name
    if d.above_change is None:
        return (f"{name}: {d.above_windows} sub-window(s) of the steady window with the fill at or above one silo "
                f"width (L = {d.silo_width:.4g}): too few (< {MIN_ABOVE}) to tell whether the rate depends on the fill")
    fills = [fill for _, _, fill, _ in d.windows if fill >= d.silo_width]
    if abs(d.above_change) + 2.0 * d.above_change_error <= FILL_TOLERANCE:
        verdict = f"the rate does not depend on the fill (within {FILL_TOLERANCE:.0%}, two standard errors included)"
    elif abs(d.above_change) > max(FILL_TOLERANCE, 2.0 * d.above_change_error):
        verdict = "the rate depends on the fill"
    else:
        verdict = (f"the data do not tell (the change is neither within {FILL_TOLERANCE:.0%} with two standard errors "
                   f"added nor beyond {FILL_TOLERANCE:.0%} and two standard errors)")
    span = (max(fills) - min(fills)) / d.silo_width
    return (f"{name}: fill above one silo width (L = {d.silo_width:.4g}) over {d.above_windows} sub-windows, H = "
            f"{max(fills):.3g} to {min(fills):.3g} ({span:.0%} of L): the rate changes by {d.above_change:+.1%} ± "
            f"{d.above_change_error:.1%} over it: {verdict}")


def summary(discharges, fit, notes):
    """Lines for the terminal."""
    lines = ["D        W           ± err      R2       2nd/1st  removed  (t window)  fill H (from-to)  run"]
    lines += [f"{'-' if d.orifice_diameter is None else format(d.orifice_diameter, '.4g'):<8} {d.rate:<11.5g} "
              f"{d.rate_error:<10.3g} {d.r_squared:<8.5f} {d.half_ratio:<8.3f} {d.removed:<8} "
              f"({d.t_from:.3g}-{d.t_to:.3g})  "
              f"{'-' if d.fill_from is None or d.fill_to is None else f'{d.fill_from:.3g}-{d.fill_to:.3g}':<17} {d.run}"
              for d in discharges]
    lines += [line for line in map(fill_verdict, discharges) if line]
    if fit is not None:
        lines.append(f"fit W = C rho_b sqrt(g) (D - k d)^(5/2): C = {fit.c:.3f} ± {fit.c_error:.3f}, "
                     f"k = {fit.k:.2f} ± {fit.k_error:.2f} (R² of W^(2/5) against D {fit.r_squared:.4f}; "
                     f"d = {fit.particle_diameter:.4g}, rho_b = {fit.bulk_density:.4g}, g = {fit.gravity:.4g})")
        lines.append(f"  Beverloo et al. 1961, as usually quoted: C = {BEVERLOO_1961[0]}, k = {BEVERLOO_1961[1]}; "
                     f"later work typically C 0.55-0.65, k 1-3")
    return lines + notes
