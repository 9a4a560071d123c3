"""The ``[[particles]]`` builder: a packing made elsewhere, read from a file.

Formats (``format = "auto"`` picks by the file's extension):

* ``csv`` (``.csv``, ``.txt``): a header row naming the columns, then one sphere per row,
  comma-separated. Columns ``x``, ``y``, ``z`` and ``diameter`` (or ``radius``) are required,
  ``vx``, ``vy``, ``vz`` (velocity) optional; other columns are ignored; names are not
  case-sensitive.
* ``vtk``: any point cloud `meshio` reads (``.vtk``, ``.vtu``, …) and VTK XML PolyData (``.vtp``,
  e.g. a ``particles_*.vtp`` snapshot of a `dem` run), with the sphere centres as points and
  point data ``diameter`` (or ``radius``) and optionally ``velocity`` (3 components).

The file is read and checked when the scene is validated: a missing file or column, a value that
is not a finite number, a non-positive diameter, or two spheres overlapping by more than
``overlap_tolerance`` is an error that names the scene, the key and the problem; nothing is
built or written.
"""

import contextlib
import io
import warnings
from pathlib import Path

import numpy as np

from ..schema import REQUIRED, Key, non_negative, positive, too_many

KEYS = {
    "file": Key("path", REQUIRED, "the packing file: CSV with columns x, y, z, diameter (or radius) and optionally "
                "vx, vy, vz; or VTK point data (diameter or radius, optionally velocity), read with meshio "
                "(.vtp: the vtk reader); relative to the scene file's folder", ""),
    "format": Key("str", "auto", "file format (auto: .csv and .txt are CSV, anything else VTK)",
                  choices=("auto", "csv", "vtk")),
    "density": Key("float", 1.0, "mass density: m = ρ π D³/6, J = m D²/10 (solid spheres)", "mass/length³", positive),
    "shift": Key("vec3", (0.0, 0.0, 0.0), "added to every position of the file", "length"),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "added to every velocity of the file (zero without velocity columns)",
                    "length/time"),
    "overlap_tolerance": Key("float", 0.01, "largest overlap allowed between two spheres of the file, as a fraction "
                             "of their mean diameter", "", non_negative),
}

#: the last file read: ``(key, arrays)`` (the scene is checked, then built: one read)
_LAST = [None, None]


class PackingError(ValueError):
    """A packing file that cannot be used; the message says why."""


def read_points_csv(path):
    """``(points (n, 3), diameter (n,), velocity (n, 3), zero where not given)`` of a CSV file with
    a header row (see the module's docstring); raises `PackingError`."""
    with open(path, encoding="utf-8") as file:
        header = file.readline()
    names = [name.strip().lower() for name in header.split(",")]
    if not header.strip() or not any(names):
        raise PackingError("no header row (expected column names x, y, z, diameter, …)")
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")   # (a file of no rows: reported below)
            table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2, encoding="utf-8")
    except ValueError as error:
        raise PackingError(f"not a table of numbers ({str(error).splitlines()[0]})") from None
    if not table.size:
        table = np.zeros((0, len(names)))
    if table.shape[1] != len(names):
        raise PackingError(f"{table.shape[1]} values per row for {len(names)} column names")
    columns = {name: table[:, k] for k, name in enumerate(names) if name}
    size = columns.get("diameter")
    if size is None and "radius" in columns:
        size = 2.0 * columns["radius"]
    missing = [name for name in ("x", "y", "z") if name not in columns] + (["diameter"] if size is None else [])
    if missing:
        raise PackingError(f"no column {', '.join(repr(m) for m in missing)} (columns: {', '.join(names)})")
    position = np.stack([columns["x"], columns["y"], columns["z"]], axis=1)
    given = [name for name in ("vx", "vy", "vz") if name in columns]
    if given and len(given) < 3:
        raise PackingError(f"velocity columns {', '.join(given)} without the others (give vx, vy and vz)")
    velocity = np.stack([columns[n] for n in ("vx", "vy", "vz")], axis=1) if given else np.zeros_like(position)
    return position, size, velocity


def read_vtk_points(path):
    """``(points (n, 3), diameter (n,), velocity (n, 3))`` of a VTK point cloud (see the module's
    docstring); raises `PackingError`."""
    if path.suffix.lower() == ".vtp":
        from vtkmodules.util.numpy_support import vtk_to_numpy
        from vtkmodules.vtkIOXML import vtkXMLPolyDataReader

        reader = vtkXMLPolyDataReader()
        reader.SetFileName(str(path))
        reader.Update()
        data = reader.GetOutput()
        if data is None or data.GetPoints() is None:
            raise PackingError("not a readable VTK XML PolyData file with points")
        points = vtk_to_numpy(data.GetPoints().GetData())
        arrays = data.GetPointData()
        point_data = {arrays.GetArrayName(k): vtk_to_numpy(arrays.GetArray(k)) for k in range(arrays.GetNumberOfArrays())}
    else:
        import meshio

        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                mesh = meshio.read(path)
        except (Exception, SystemExit) as error:   # meshio raises many kinds (and exits on some files)
            text = f": {error}" if str(error) and not isinstance(error, SystemExit) else ""
            raise PackingError(f"meshio cannot read it ({type(error).__name__}{text})") from None
        points, point_data = mesh.points, mesh.point_data
    point_data = {name.lower(): np.asarray(value, float) for name, value in point_data.items()}
    points = np.asarray(points, float)
    if points.ndim != 2 or points.shape[1] != 3:
        raise PackingError(f"points must have 3 coordinates, got shape {points.shape}")
    size = point_data.get("diameter")
    if size is None and "radius" in point_data:
        size = 2.0 * point_data["radius"]
    if size is None:
        raise PackingError(f"no point data 'diameter' or 'radius' (point data: {', '.join(point_data) or 'none'})")
    velocity = point_data.get("velocity", np.zeros_like(points))
    if velocity.shape != points.shape:
        raise PackingError(f"point data 'velocity' must have 3 components per point, got shape {velocity.shape}")
    return points, size.reshape(-1), velocity


def read_packing(path, kind="auto", overlap_tolerance=0.01):
    """``(position (n, 3), diameter (n,), velocity (n, 3))`` of a packing file (see the module's
    docstring); raises `PackingError` saying what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise PackingError("no such file")
    if kind == "auto":
        kind = "csv" if path.suffix.lower() in (".csv", ".txt") else "vtk"
    try:
        position, diameter, velocity = (read_points_csv if kind == "csv" else read_vtk_points)(path)
    except (OSError, UnicodeDecodeError) as error:
        raise PackingError(f"cannot read it ({getattr(error, 'strerror', None) or error})") from None
    if len(position) == 0:
        raise PackingError("holds no sphere")
    problem = too_many(len(position))
    if problem:
        raise PackingError(problem)
    for name, values in (("position", position), ("diameter", diameter), ("velocity", velocity)):
        bad = np.flatnonzero(~np.isfinite(values).reshape(len(values), -1).all(axis=1))
        if len(bad):
            raise PackingError(f"sphere {bad[0]} (row {bad[0] + 1}): {name} is not a finite number")
    bad = np.flatnonzero(diameter <= 0)
    if len(bad):
        raise PackingError(f"sphere {bad[0]} (row {bad[0] + 1}): diameter must be positive, got {diameter[bad[0]]:g}")
    overlap = worst_overlap(position, diameter)
    if overlap is not None and overlap[2] > overlap_tolerance:
        i, j, depth = overlap
        raise PackingError(f"spheres {i} and {j} (rows {i + 1} and {j + 1}) overlap by {depth:.3g} of their mean "
                           f"diameter, more than overlap_tolerance = {overlap_tolerance:g}")
    return position, diameter, velocity


def worst_overlap(position, diameter):
    """``(i, j, depth)`` of the most overlapping pair, ``depth = 1 − r/((D_i + D_j)/2)``, or None
    when no two spheres touch."""
    from scipy.spatial import cKDTree  # imported here: scipy costs a second (dem/packing.py)

    pairs = cKDTree(position).query_pairs(float(diameter.max()), output_type="ndarray")
    if not len(pairs):
        return None
    i, j = pairs[:, 0], pairs[:, 1]
    depth = 1.0 - np.linalg.norm(position[i] - position[j], axis=1) / (0.5 * (diameter[i] + diameter[j]))
    k = int(np.argmax(depth))
    return (int(i[k]), int(j[k]), float(depth[k])) if depth[k] > 0 else None


def _packing(p):
    path = Path(p["file"])
    try:
        stamp = path.stat()
        key = (str(path), stamp.st_mtime_ns, stamp.st_size, p["format"], p["overlap_tolerance"])
    except OSError:
        key = None
    if key is None or _LAST[0] != key:
        _LAST[:] = [None, None]
        _LAST[:] = [key, read_packing(path, p["format"], p["overlap_tolerance"])]
    return _LAST[1]


def check(p):
    try:
        _packing(p)
    except PackingError as error:
        return "file", f"{p['file']}: {error}"
    return None


def build(system, p):
    """Spheres read from ``file`` (CSV or VTK point data, see the module's docstring): centres
    ``+ shift``, diameters, velocities ``+ velocity``; solid spheres of ``density``
    (``m = ρ π D³/6``, ``J = m D²/10``), unbonded."""
    position, diameter, velocity = _packing(p)
    _LAST[:] = [None, None]
    mass = p["density"] * np.pi / 6.0 * diameter ** 3
    system.add_bodies(position + np.asarray(p["shift"]), mass=mass, inertia=0.1 * mass * diameter ** 2,
                      diameter=diameter, velocity=velocity + np.asarray(p["velocity"]), group=system.n_bodies)
