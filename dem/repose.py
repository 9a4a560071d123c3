"""The slope angle of a heap of spheres (``python -m dem repose RUN``): the angle of repose of a
granular pile, from a run's last particle snapshot (a heap of clumps: of their member spheres,
`dem.runfiles.snapshot_spheres`).

Method (`heap_slope`), for a heap on a floor with ``up`` the direction against gravity:

1. heights ``h = x·up`` above the floor (the lowest sphere bottom), and the distance ``ρ`` of
   each centre from the heap's axis (the vertical line through the centroid of the centres);
2. the surface profile: rings ``ρ ∈ [k w, (k+1) w)`` of width ``w`` = one mean diameter ``d``,
   each ring's surface height ``s_k`` the top of its highest sphere (``h + D/2``);
3. the flank: the rings between the heap's summit ring (the highest ``s_k``) and its edge
   whose surface lies between 15 % and 85 % of the heap's height above its first layer,
   ``d + 0.15 (H − d) ≤ s_k ≤ d + 0.85 (H − d)`` with ``H = max s_k``: the top (where a column
   collapse may leave a rounded or flat summit) and the toe (the last, loose layers) are left
   out;
4. a least-squares line ``s = s0 − tan(α) ρ`` through the flank's ``(ρ_k mid-ring, s_k)``;
   ``α`` is the slope angle. A heap less than three layers high, or with fewer than three flank
   rings, has spread flat: its line is fitted through every ring from the summit to the edge.

It reports ``α``, the heap's height, its radius (the outermost ring with a sphere), the rings
fitted and the fit's RMS residual.
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .runfiles import read_snapshot, snapshot_spheres


class ReposeError(ValueError):
    """Particles that do not form a heap; the message says why."""


@dataclass
class HeapSlope:
    angle: float            # degrees
    height: float           # H, above the floor
    radius: float           # outermost ring with a sphere
    rings: int              # rings fitted
    residual: float         # RMS of the fit
    flank: tuple            # (ρ_min, ρ_max) of the rings fitted
    profile: np.ndarray     # (k, 2): ring middle ρ, surface height s

    def describe(self):
        return (f"slope angle {self.angle:.1f}° (heap height {self.height:.3g}, radius {self.radius:.3g}; line fitted "
                f"through {self.rings} rings of the surface at ρ = {self.flank[0]:.3g}…{self.flank[1]:.3g}, RMS "
                f"residual {self.residual:.2g})")


def heap_slope(position, diameter, up=(0.0, 0.0, 1.0)):
    """The `HeapSlope` of spheres at ``position (n, 3)`` of ``diameter (n,)`` (see the module's
    docstring for the method)."""
    up = np.asarray(up, float) / np.linalg.norm(up)
    radius = 0.5 * np.asarray(diameter, float)
    height = position @ up
    top = height + radius - (height - radius).min()
    flat = position - np.outer(height, up)
    axis = flat.mean(axis=0)
    rho = np.linalg.norm(flat - axis, axis=1)
    width = float(np.mean(diameter))
    ring = np.floor(rho / width).astype(int)
    surface = np.full(ring.max() + 1, np.nan)
    np.fmax.at(surface, ring, top)
    middle = (np.arange(len(surface)) + 0.5) * width
    filled = ~np.isnan(surface)
    summit = int(np.nanargmax(surface))
    tallest = float(np.nanmax(surface))
    after = filled & (np.arange(len(surface)) >= summit)
    low, high = width + 0.15 * (tallest - width), width + 0.85 * (tallest - width)
    flank = after & (surface >= low) & (surface <= high)
    if tallest < 3 * width or flank.sum() < 3:
        flank = after
    if flank.sum() < 2:
        raise ReposeError("the particles do not form a heap (fewer than two rings of surface)")
    x, y = middle[flank], surface[flank]
    slope, intercept = np.polyfit(x, y, 1)
    residual = float(np.sqrt(np.mean((y - (slope * x + intercept)) ** 2)))
    return HeapSlope(float(np.degrees(np.arctan(max(-slope, 0.0)))), tallest, float(middle[filled][-1] + 0.5 * width),
                     int(flank.sum()), residual, (float(x.min()), float(x.max())),
                     np.stack([middle[filled], surface[filled]], axis=1))


def run_up(run):
    """``−g/|g|`` of the run's scene (from its checkpoint), or +z."""
    checkpoint = Path(run) / "checkpoint.npz"
    try:
        with np.load(checkpoint, allow_pickle=False) as data:
            gravity = np.asarray(tomllib.loads(str(data["scene_text"])).get("fields", {}).get("gravity", [0, 0, 0]),
                                 float)
            for override in data["overrides"]:
                if str(override).startswith("fields.gravity="):
                    gravity = np.asarray(tomllib.loads("g = " + str(override).split("=", 1)[1])["g"], float)
    except (OSError, KeyError, ValueError, tomllib.TOMLDecodeError):
        return np.array([0.0, 0.0, 1.0])
    return -gravity / np.linalg.norm(gravity) if gravity.shape == (3,) and gravity.any() else np.array([0.0, 0.0, 1.0])


def measure_run(run, up=None):
    """``(HeapSlope, snapshot step, up)`` of a run folder's last snapshot; raises
    `dem.runfiles.RunFolderError`."""
    snapshot = read_snapshot(run)
    up = run_up(run) if up is None else np.asarray(up, float)
    return heap_slope(*snapshot_spheres(run, snapshot), up), snapshot["step"], up
