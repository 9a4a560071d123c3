"""Write the triangle mesh of a closed rotating drum with lifters (an STL, through meshio), the
mesh wall of ``scenes/rotating_drum.toml``, or (``--open --lifters 0``) of an open tube, the
lifted cylinder of ``scenes/column_collapse.toml``.

The drum's axis is y, through the origin: a cylindrical shell of radius ``R`` and length ``L``
(``n_around`` × ``n_along`` quadrilaterals, each split in two), two end caps (fans of
``n_around`` triangles round a centre vertex, sharing the shell's rim vertices; none with
``--open``) and ``lifters`` radial fins along the shell (two sides and a top, open at the ends,
reaching from radius ``R − lifter_height`` to just outside the shell, evenly spaced round the
axis).

    python tools/make_drum_mesh.py                       # scenes/meshes/drum.stl (the scene's)
    python tools/make_drum_mesh.py out.stl --radius 10 --lifters 4
    python tools/make_drum_mesh.py scenes/meshes/tube.stl --radius 8.2 --length 10 --n-along 10 --lifters 0 --open
"""

import argparse
from pathlib import Path

import meshio
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "scenes" / "meshes" / "drum.stl"


def ring_strips(rings, n_around):
    """The triangles joining ``rings`` consecutive closed rings of ``n_around`` points each
    (numbered ring by ring): each quadrilateral between two rings split in two."""
    triangles = []
    for j in range(rings - 1):
        for k in range(n_around):
            a, b = j * n_around + k, j * n_around + (k + 1) % n_around
            c, d = a + n_around, b + n_around
            triangles += [(a, b, d), (a, d, c)]
    return triangles


def drum(radius=12.0, length=8.0, n_around=96, n_along=16, lifters=6, lifter_height=1.5, lifter_width=0.5, caps=True):
    """``(points (n, 3), triangles (m, 3))`` of the drum described in the module's docstring
    (``caps`` False: an open tube, no end caps)."""
    angle = 2.0 * np.pi * np.arange(n_around) / n_around
    ys = np.linspace(-0.5 * length, 0.5 * length, n_along + 1)
    ring = np.column_stack((radius * np.cos(angle), np.zeros(n_around), radius * np.sin(angle)))
    points = [ring + (0.0, y, 0.0) for y in ys]
    triangles = ring_strips(n_along + 1, n_around)
    for end, rim in ((-0.5 * length, 0), (0.5 * length, n_along * n_around)) if caps else ():
        centre = len(np.concatenate(points))
        points.append(np.array([[0.0, end, 0.0]]))
        triangles += [(centre, rim + k, rim + (k + 1) % n_around) for k in range(n_around)]
    for k in range(lifters):
        phi = 2.0 * np.pi * (k + 0.5) / lifters
        radial = np.array((np.cos(phi), 0.0, np.sin(phi)))
        tangent = np.array((-np.sin(phi), 0.0, np.cos(phi)))
        first = len(np.concatenate(points))
        corners = [r * radial + t * tangent + (0.0, y, 0.0)
                   for y in (-0.5 * length, 0.5 * length)
                   for r, t in ((radius + 0.05, -0.5 * lifter_width), (radius - lifter_height, -0.5 * lifter_width),
                                (radius - lifter_height, 0.5 * lifter_width), (radius + 0.05, 0.5 * lifter_width))]
        points.append(np.array(corners))
        for s in range(3):  # the two sides and the top, as quads (s, s+1) along the fin's profile
            a, b, c, d = first + s, first + s + 1, first + 4 + s + 1, first + 4 + s
            triangles += [(a, b, c), (a, c, d)]
    return np.concatenate(points), np.array(triangles, dtype=np.int64)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT, help=f"STL file to write (default {DEFAULT})")
    parser.add_argument("--radius", type=float, default=12.0)
    parser.add_argument("--length", type=float, default=8.0)
    parser.add_argument("--n-around", type=int, default=96)
    parser.add_argument("--n-along", type=int, default=16)
    parser.add_argument("--lifters", type=int, default=6)
    parser.add_argument("--lifter-height", type=float, default=1.5)
    parser.add_argument("--open", action="store_true", help="no end caps: an open tube")
    args = parser.parse_args(argv)
    points, triangles = drum(args.radius, args.length, args.n_around, args.n_along, args.lifters, args.lifter_height,
                             caps=not args.open)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meshio.write_points_cells(args.out, points, [("triangle", triangles)], file_format="stl", binary=True)
    print(f"{args.out}: {len(triangles)} triangles, {len(points)} points")


if __name__ == "__main__":
    main()
