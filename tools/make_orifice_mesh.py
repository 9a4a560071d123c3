"""Write the triangle mesh of a flat plate with a circular hole (an STL, through meshio): the silo
floor of ``scenes/silo_discharge.toml``, whose orifice diameter is twice the mesh's ``scale``.

The plate lies in the plane z = 0: a square of half-width ``half_width`` with a hole of radius 1
at the origin, meshed in ``n_radial`` rings of ``n_around`` quadrilaterals (each split in two)
from the hole's edge to the square's edge along rays from the centre (``n_around`` a multiple of 8,
so that the square's corners are vertices), the rings closer together near the hole.

    python tools/make_orifice_mesh.py                  # scenes/meshes/orifice_plate.stl (the scene's)
    python tools/make_orifice_mesh.py out.stl --half-width 30 --n-around 128
"""

import argparse
from pathlib import Path

import meshio
import numpy as np
from make_drum_mesh import ring_strips

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "scenes" / "meshes" / "orifice_plate.stl"


def plate(half_width=20.0, n_around=64, n_radial=12, grading=2.0):
    """``(points (n, 3), triangles (m, 3))`` of the plate described in the module's docstring."""
    angle = 2.0 * np.pi * np.arange(n_around) / n_around
    edge = half_width / np.maximum(np.abs(np.cos(angle)), np.abs(np.sin(angle)))  # the square along each ray
    fraction = (np.arange(n_radial + 1) / n_radial) ** grading
    radius = 1.0 + np.outer(fraction, edge - 1.0)  # (rings, rays)
    points = np.stack((radius * np.cos(angle), radius * np.sin(angle), np.zeros_like(radius)), axis=-1).reshape(-1, 3)
    return points, np.array(ring_strips(n_radial + 1, n_around), dtype=np.int64)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT, help=f"STL file to write (default {DEFAULT})")
    parser.add_argument("--half-width", type=float, default=20.0)
    parser.add_argument("--n-around", type=int, default=64)
    parser.add_argument("--n-radial", type=int, default=12)
    args = parser.parse_args(argv)
    if args.n_around % 8:
        parser.error("--n-around must be a multiple of 8")
    points, triangles = plate(args.half_width, args.n_around, args.n_radial)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meshio.write_points_cells(args.out, points, [("triangle", triangles)], file_format="stl", binary=True)
    print(f"{args.out}: {len(triangles)} triangles, {len(points)} points")


if __name__ == "__main__":
    main()
