"""Fragments of a run: ``python -m dem fragments RUN [--time T]``.

A fragment is a connected component of the graph of intact bonds (`dem.interactions.bonds.
fragment_labels`; a particle with no intact bond is a fragment of its own). `write_fragments`
reads the run's VTK snapshots at one time (`dem.runfiles.read_snapshot`) — ``RUN/particles.pvd``
for the particles (``mass``, positions, ``velocity``) and ``RUN/bonds.pvd`` for the bonds (their
lines and ``broken`` state) — the snapshot nearest to ``T`` (default: the last), so it works on
any run that wrote them, also one still going or stopped. It writes

* ``RUN/fragments.csv``: one row per fragment, ``id, particles, mass, center_x, center_y,
  center_z, velocity_x, velocity_y, velocity_z`` (centre of mass and mass-weighted velocity),
  ids 0, 1, … in the order of the fragments' smallest particle index;
* ``RUN/fragments.png``: the cumulative mass distribution, the fraction of the total mass in
  fragments of mass ≤ m against m.

The ids are those of the ``fragment`` point array that the VTK writer adds to every particle
snapshot during the run (same function, same bonds), so ParaView colours fragments by it
directly (Color by ``fragment``; a "Threshold" on it picks one).
"""

import csv
from pathlib import Path

import numpy as np

from .interactions.bonds import fragment_labels
from .runfiles import read_snapshot

COLUMNS = ("id", "particles", "mass", "center_x", "center_y", "center_z", "velocity_x", "velocity_y", "velocity_z")


def fragment_table(labels, mass, position, velocity):
    """``(k, 9)`` rows of `COLUMNS` for the fragments ``labels`` (0 … k−1) of the particles."""
    count = labels.max() + 1
    total = np.bincount(labels, weights=mass, minlength=count)
    rows = np.zeros((count, len(COLUMNS)))
    rows[:, 0] = np.arange(count)
    rows[:, 1] = np.bincount(labels, minlength=count)
    rows[:, 2] = total
    for c in range(3):
        rows[:, 3 + c] = np.bincount(labels, weights=mass * position[:, c], minlength=count) / total
        rows[:, 6 + c] = np.bincount(labels, weights=mass * velocity[:, c], minlength=count) / total
    return rows


def plot_mass_distribution(masses, path, title):
    """Cumulative mass distribution of fragments of ``masses``: the fraction of the total mass in
    fragments of mass ≤ m, against m (logarithmic)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = np.sort(masses)
    fraction = np.cumsum(ordered) / ordered.sum()
    figure, axes = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
    axes.step(np.concatenate(([ordered[0]], ordered)), np.concatenate(([0.0], fraction)), where="post")
    axes.set_xscale("log")
    axes.set_ylim(0.0, 1.02)
    axes.set_xlabel("fragment mass m [scene units]")
    axes.set_ylabel("mass fraction in fragments ≤ m")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def write_fragments(run_dir, time=None):
    """Find the fragments of ``run_dir`` at the snapshot nearest ``time`` (module docstring);
    write ``fragments.csv`` and ``fragments.png`` there. Returns ``(snapshot, rows)``."""
    run_dir = Path(run_dir)
    snapshot = read_snapshot(run_dir, time)
    bonds = snapshot["bonds"]
    labels = fragment_labels(len(snapshot["mass"]), bonds[:, 0], bonds[:, 1], snapshot["broken"] == 0)
    rows = fragment_table(labels, snapshot["mass"], snapshot["position"], snapshot["velocity"])
    with open(run_dir / "fragments.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(COLUMNS)
        for row in rows:
            writer.writerow([int(row[0]), int(row[1])] + [repr(float(value)) for value in row[2:]])
    plot_mass_distribution(rows[:, 2], run_dir / "fragments.png",
                           f"{run_dir.name}: {len(rows)} fragment{'s' * (len(rows) != 1)} at t = {snapshot['time']:.6g}")
    return snapshot, rows
