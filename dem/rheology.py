"""The effective friction of sheared granular matter against its inertial number
(``python -m dem rheology RUN… | SWEEP_DIR``): the μ(I) rheology from runs of a Lees–Edwards cell
(`dem.cell`, ``scenes/simple_shear.toml``).

For each run, from its ``cell.csv`` (`dem.observers.csv_log.CellLog`), over the steady part of
the run (the rows whose shear strain is at least ``skip`` times the run's last, the second half
by default):

* the shear stress ``τ = −s_xy`` (``s`` positive in compression: with ``v_x = γ̇ y`` the grains
  resist the shear with ``s_xy < 0``), the normal stress ``p = s_yy`` on the shear planes (the
  servoed one at constant pressure), their means and ``μ = τ̄ / p̄``, with a standard error from
  five consecutive blocks of the rows;
* the inertial number ``I = γ̇ d / √(p̄/ρ)``, ``d`` the particles' mean diameter and ``ρ`` their
  density (from the run's last particle snapshot; with clumps, `dem.clumps`, the diameter of the
  sphere of a body's mean solid volume and the mass over the solid volume, that volume from
  cell.csv's last solid fraction), and the mean solid fraction ``φ``.

With three runs or more it fits ``μ(I) = μ_s + (μ₂ − μ_s) / (I₀/I + 1)`` (Jop, Forterre &
Pouliquen 2006, scipy's least squares, weighted by the standard errors) and compares it with
their glass-bead values ``μ_s = 0.38``, ``μ₂ = 0.64``, ``I₀ = 0.279``. It writes
``rheology.csv`` (one row per run) and ``rheology.png`` (μ and φ against I).
"""

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .runfiles import RunFolderError, read_cell_log, read_snapshot, run_folders

#: Jop, Forterre & Pouliquen (2006), glass beads: μ_s, μ₂, I₀
JOP_2006 = (0.38, 0.64, 0.279)
COLUMNS = ("run", "shear_rate", "inertial_number", "mu", "mu_error", "shear_stress", "pressure", "solid_fraction",
           "strain_from", "strain_to", "rows")
BLOCKS = 5


@dataclass
class Flow:
    run: str
    shear_rate: float
    inertial_number: float
    mu: float
    mu_error: float
    shear_stress: float
    pressure: float
    solid_fraction: float
    strain_from: float
    strain_to: float
    rows: int


def mu_of_i(inertial, mu_s, mu_2, i_0):
    """``μ(I) = μ_s + (μ₂ − μ_s) / (I₀/I + 1)``."""
    return mu_s + (mu_2 - mu_s) / (i_0 / inertial + 1.0)


def steady_flow(run_dir, skip=0.5):
    """The `Flow` of one run (module docstring)."""
    log = read_cell_log(run_dir)
    strain = np.abs(log["shear_strain_xy"])
    if not strain[-1] > 0.0:
        raise RunFolderError(f"{run_dir}: the cell was not sheared along xy (shear_strain_xy is 0 in cell.csv)")
    steady = strain >= skip * strain[-1]
    if steady.sum() < BLOCKS:
        raise RunFolderError(f"{run_dir}: fewer than {BLOCKS} rows of cell.csv beyond {skip:g} of the final shear "
                             f"strain: log more often or run longer")
    tau, p = -log["s_xy"][steady], log["s_yy"][steady]
    blocks = [tau_b.mean() / p_b.mean() for tau_b, p_b in zip(np.array_split(tau, BLOCKS), np.array_split(p, BLOCKS))]
    particles = read_snapshot(run_dir)
    if (particles["diameter"] > 0).all():
        diameter = float(particles["diameter"].mean())
        density = float(np.mean(particles["mass"] / (np.pi / 6.0 * particles["diameter"] ** 3)))
    else:  # clumps: the volume-equivalent sphere's diameter and the solid's density, from cell.csv's solid volume
        solid = float(log["solid_fraction"][-1] * log["volume"][-1])
        diameter = float(np.cbrt(6.0 * solid / (np.pi * len(particles["mass"]))))
        density = float(np.sum(particles["mass"]) / solid)
    rate = float(np.mean(np.abs(log["rate_xy"][steady])))
    pressure = float(p.mean())
    inertial = float(rate * diameter / np.sqrt(pressure / density))
    return Flow(run=str(run_dir), shear_rate=rate, inertial_number=inertial,
                mu=float(tau.mean() / pressure), mu_error=float(np.std(blocks, ddof=1) / np.sqrt(BLOCKS)),
                shear_stress=float(tau.mean()), pressure=pressure,
                solid_fraction=float(log["solid_fraction"][steady].mean()), strain_from=float(strain[steady][0]),
                strain_to=float(strain[-1]), rows=int(steady.sum()))


def fit_mu_of_i(flows):
    """``(μ_s, μ₂, I₀)`` and their standard errors fitted to ``flows`` (at least three)."""
    from scipy.optimize import curve_fit

    inertial = np.array([f.inertial_number for f in flows])
    mu = np.array([f.mu for f in flows])
    sigma = np.array([max(f.mu_error, 1e-3) for f in flows])
    values, covariance = curve_fit(mu_of_i, inertial, mu, p0=JOP_2006, sigma=sigma, absolute_sigma=True,
                                   bounds=([0.0, 0.0, 1e-4], [2.0, 5.0, 10.0]))
    return values, np.sqrt(np.diag(covariance))


def write_rheology(paths, out=None, skip=0.5):
    """Measure the runs of ``paths`` (`dem.runfiles.run_folders`), write ``rheology.csv`` and ``rheology.png``
    into ``out`` (default: the sweep folder, or the first run's folder); returns ``(flows, fit,
    out)`` with ``fit`` None for fewer than three runs."""
    folders = run_folders(paths, "cell.csv")
    flows = sorted((steady_flow(folder, skip) for folder in folders), key=lambda f: f.inertial_number)
    out = Path(out) if out is not None else (Path(paths[0]) if (Path(paths[0]) / "sweep.csv").is_file()
                                              else folders[0])
    fit = fit_mu_of_i(flows) if len(flows) >= 3 else None
    with open(out / "rheology.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(COLUMNS)
        for flow in flows:
            writer.writerow([getattr(flow, c) if c == "run" or c == "rows" else repr(getattr(flow, c))
                             for c in COLUMNS])
    _plot(flows, fit, out / "rheology.png")
    return flows, fit, out


def _plot(flows, fit, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    inertial = np.array([f.inertial_number for f in flows])
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(6, 7), sharex=True)
    top.errorbar(inertial, [f.mu for f in flows], yerr=[f.mu_error for f in flows], fmt="o", label="dem")
    grid = np.geomspace(min(inertial.min(), 1e-3), max(inertial.max(), 1.0), 200)
    if fit is not None:
        (mu_s, mu_2, i_0), _ = fit
        top.plot(grid, mu_of_i(grid, mu_s, mu_2, i_0), label=f"fit: μs={mu_s:.3f}, μ2={mu_2:.3f}, I0={i_0:.3f}")
    top.plot(grid, mu_of_i(grid, *JOP_2006), "--", label="Jop et al. 2006 (glass beads)")
    top.set_xscale("log")
    top.set_ylabel("μ = τ/p")
    top.legend(fontsize=8)
    bottom.plot(inertial, [f.solid_fraction for f in flows], "s")
    bottom.set_xlabel("inertial number I = γ̇ d / √(p/ρ)")
    bottom.set_ylabel("solid fraction φ")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def summary(flows, fit):
    """Lines for the terminal."""
    lines = ["I          mu       ± err    p        phi     (strain)"]
    lines += [f"{f.inertial_number:<10.4g} {f.mu:<8.4f} {f.mu_error:<8.4f} {f.pressure:<8.4g} {f.solid_fraction:<7.4f} "
              f"({f.strain_from:.3g}-{f.strain_to:.3g})  {f.run}" for f in flows]
    if fit is not None:
        (mu_s, mu_2, i_0), (e_s, e_2, e_0) = fit
        lines.append(f"fit mu(I) = mu_s + (mu_2 - mu_s)/(I0/I + 1): mu_s = {mu_s:.3f} ± {e_s:.3f}, "
                     f"mu_2 = {mu_2:.3f} ± {e_2:.3f}, I0 = {i_0:.3f} ± {e_0:.3f} "
                     f"(Jop et al. 2006, glass beads: {JOP_2006[0]}, {JOP_2006[1]}, {JOP_2006[2]})")
    return lines
