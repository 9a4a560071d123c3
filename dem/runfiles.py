"""Reading a run's outputs back, for the analyses of a finished (or stopped, or still going) run:
``python -m dem fragments`` (`dem.fragments`) and ``python -m dem rig`` (`dem.rig`).

* `snapshot_entries` and `read_snapshot`: the VTK snapshots indexed in ``RUN/particles.pvd``
  (particle positions, velocities, masses, diameters) with the bonds of the same step from
  ``RUN/bonds.pvd`` (their end particles, ``broken`` state and ``force`` on the first end);
  `snapshot_spheres`: a snapshot's spheres, the clumps' members (``RUN/sites.pvd``) among them;
* `read_walls`: ``RUN/walls.csv``, the walls' points and the forces the particles exert on them
  (columns ``step, t``, then ``w<k>_x, w<k>_y, w<k>_z, w<k>_fx, w<k>_fy, w<k>_fz`` for wall ``k``);
* `read_cell_log`: ``RUN/cell.csv``, a periodic cell's edges, strains and stress
  (`dem.observers.csv_log.CELL_COLUMNS`).

Problems with the folder raise `RunFolderError`, whose message names the file and what is wrong.
"""

import csv
from pathlib import Path

import numpy as np
from vtkmodules.util import numpy_support
from vtkmodules.vtkIOXML import vtkXMLPolyDataReader

from .observers.vtk import read_collection


class RunFolderError(ValueError):
    """A run folder whose outputs cannot be read; the message says why."""


def _read(path):
    if not path.is_file():
        raise RunFolderError(f"{path}: the snapshot listed in the .pvd file is missing")
    reader = vtkXMLPolyDataReader()
    reader.SetFileName(str(path))
    reader.Update()
    return reader.GetOutput()


def _array(data, name, path):
    array = data.GetArray(name)
    if array is None:
        raise RunFolderError(f"{path}: no '{name}' array (a snapshot written by an older dem: rerun the scene)")
    return numpy_support.vtk_to_numpy(array)


def snapshot_entries(run_dir):
    """``[(step, time, file)]`` of the particle snapshots of ``run_dir``, in order."""
    run_dir = Path(run_dir)
    entries = read_collection(run_dir / "particles.pvd")
    if not entries:
        raise RunFolderError(f"{run_dir}: no particles.pvd with snapshots (not a run folder, or a run that wrote "
                             f"no VTK output)")
    return entries


def read_snapshot(run_dir, time=None, entry=None):
    """The snapshot ``entry`` of `snapshot_entries` (default: the one nearest to ``time``; default:
    the last) as a dict: ``time``, ``step``, ``position (n, 3)``, ``velocity (n, 3)``,
    ``mass (n,)``, ``diameter (n,)``, ``bonds (m, 2)``, ``broken (m,)``, ``bond_force (m, 3)``."""
    run_dir = Path(run_dir)
    if entry is None:
        entries = snapshot_entries(run_dir)
        entry = entries[-1] if time is None else min(entries, key=lambda e: abs(e[1] - time))
    step, found_time, name = entry
    particles = _read(run_dir / name)
    data = particles.GetPointData()
    out = dict(time=found_time, step=step, position=numpy_support.vtk_to_numpy(particles.GetPoints().GetData()),
               velocity=_array(data, "velocity", run_dir / name), mass=_array(data, "mass", run_dir / name),
               diameter=_array(data, "diameter", run_dir / name), bonds=np.zeros((0, 2), np.int64),
               broken=np.zeros(0, np.uint8), bond_force=np.zeros((0, 3)))
    bonds = {entry[0]: entry[2] for entry in read_collection(run_dir / "bonds.pvd")}
    if step in bonds:
        polydata = _read(run_dir / bonds[step])
        lines = numpy_support.vtk_to_numpy(polydata.GetLines().GetConnectivityArray())
        out["bonds"] = lines.reshape(-1, 2).astype(np.int64)
        out["broken"] = _array(polydata.GetCellData(), "broken", run_dir / bonds[step])
        out["bond_force"] = _array(polydata.GetCellData(), "force", run_dir / bonds[step]).reshape(-1, 3)
    return out


def snapshot_spheres(run_dir, snapshot):
    """``(position (k, 3), diameter (k,))`` of every sphere of ``snapshot`` (`read_snapshot`): its
    particles of positive diameter and, in a run with clumps (`dem.clumps`, whose bodies have no
    diameter of their own), their member spheres, from ``RUN/sites.pvd`` at the same step."""
    run_dir = Path(run_dir)
    keep = snapshot["diameter"] > 0
    position, diameter = [snapshot["position"][keep]], [snapshot["diameter"][keep]]
    sites = {entry[0]: entry[2] for entry in read_collection(run_dir / "sites.pvd")}
    if snapshot["step"] in sites:
        polydata = _read(run_dir / sites[snapshot["step"]])
        members = polydata.GetPointData().GetArray("diameter")
        if members is not None:   # clumps (point sites have none)
            members = numpy_support.vtk_to_numpy(members)
            points = numpy_support.vtk_to_numpy(polydata.GetPoints().GetData())
            position.append(points[members > 0])
            diameter.append(members[members > 0])
    return np.concatenate(position), np.concatenate(diameter)


def read_cell_log(run_dir):
    """``RUN/cell.csv`` as ``{column: array}``."""
    return read_log(run_dir, "cell.csv", "a run in a cell periodic along x, y and z writes it")


def read_log(run_dir, name, written_by):
    """The CSV log ``RUN/name`` as ``{column: array}`` (``written_by``: which runs write it, for
    the message when it is missing)."""
    path = Path(run_dir) / name
    if not path.is_file():
        raise RunFolderError(f"{path}: no such file ({written_by})")
    with open(path, newline="") as file:
        rows = list(csv.DictReader(file))
    if not rows:
        raise RunFolderError(f"{path}: no rows yet")
    return {key: np.array([float(row[key]) for row in rows]) for key in rows[0]}


def read_walls(run_dir):
    """``RUN/walls.csv`` as a dict: ``step (k,)``, ``t (k,)``, ``point (k, W, 3)`` and
    ``force (k, W, 3)`` (the force the particles exert on each wall), for the ``W`` walls in
    scene order."""
    path = Path(run_dir) / "walls.csv"
    if not path.is_file():
        raise RunFolderError(f"{path}: no such file (a run with walls writes it; give a rig's output folder)")
    table = np.genfromtxt(path, delimiter=",", names=True, ndmin=1)
    names = table.dtype.names or ()
    count = 0
    while f"w{count}_fz" in names:
        count += 1
    if not {"step", "t"} <= set(names) or count == 0 or len(table) == 0:
        raise RunFolderError(f"{path}: expected the columns step, t, w0_x, w0_y, w0_z, w0_fx, w0_fy, w0_fz, … "
                             f"and at least one row")
    return dict(step=table["step"].astype(np.int64), t=table["t"],
                point=np.stack([np.column_stack([table[f"w{k}_{c}"] for c in "xyz"]) for k in range(count)], 1),
                force=np.stack([np.column_stack([table[f"w{k}_f{c}"] for c in "xyz"]) for k in range(count)], 1))


def run_folders(paths, log):
    """The run folders of ``paths``: a sweep folder (with ``sweep.csv``) stands for its points'
    folders that have the CSV ``log`` (a run that failed before writing it is left out)."""
    out = []
    for path in map(Path, paths):
        if (path / "sweep.csv").is_file():
            with open(path / "sweep.csv", newline="") as file:
                folders = [path / row["folder"] for row in csv.DictReader(file)]
            out += [folder for folder in folders if (folder / log).is_file()]
        else:
            out.append(path)
    if not out:
        raise RunFolderError(f"{', '.join(map(str, paths))}: no run folders with a {log}")
    return out
