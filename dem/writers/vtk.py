"""ParaView output (SPEC §7): VTK XML PolyData snapshots and ``.pvd`` collections.

Layout under the run's output folder::

    particles.pvd  bonds.pvd  walls.pvd          collections, one ``<DataSet>`` per snapshot
    vtk/particles_000000100.vtp                 bodies as vertices (point data below)
    vtk/bonds_000000100.vtp                     binders as lines between the bodies (if any)
    vtk/walls_000000100.vtp                     walls as finite squares (if any)

Files are binary (raw appended data), zlib-compressed. Each ``.pvd`` is rewritten atomically after
every snapshot, so it is valid (and lists only complete files) whenever the run stops.

Particle point data: ``id``, ``body`` (group), ``diameter``, ``velocity``, ``speed``,
``angular_velocity`` (spatial Ω), ``orientation`` (unit quaternion, scalar first), ``axis_1``,
``axis_2``, ``axis_3`` (body axes in the inertial frame: the columns of ``R``, for glyphs),
``force``, ``moment``. Bond cell data: ``axial_strain`` (r/r0 − 1), ``shear`` (max of 1 − s),
``bending_angle`` (|θ|, rad), ``axial_force`` (positive in tension), ``broken`` (0/1)
(`dem.interactions.binder.bond_measures`). Wall cell data: ``wall`` (index), ``normal``.
"""

import os
import re
import sys
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
from vtkmodules.util import numpy_support
from vtkmodules.vtkCommonCore import vtkPoints
from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
from vtkmodules.vtkIOXML import vtkXMLPolyDataWriter

from ..interactions.binder import bond_measures

SERIES = ("particles", "bonds", "walls")
_FILE_NAME = re.compile(r"(particles|bonds|walls)_(\d{9})\.vtp")


class VTKWriter:
    """Observer that writes a snapshot every ``every`` steps (and at the start and end of a run)
    into ``directory/vtk/`` and indexes it in ``directory/<series>.pvd``.

    A run that starts at step 0 replaces the snapshots of an earlier run in the same folder; a run
    that starts later (a restart) keeps the earlier run's snapshots before its first step.
    """

    def __init__(self, directory, every):
        self.directory = Path(directory)
        self.every = every
        self._entries = None  # series -> [(step, time, relative file name)]
        self._last_step = None
        self._writer = vtkXMLPolyDataWriter()
        self._writer.SetDataModeToAppended()
        self._writer.EncodeAppendedDataOff()
        self._writer.SetCompressorTypeToZLib()
        self._writer.SetHeaderTypeToUInt64()

    def report(self, sim):
        model, state = sim.model, sim.state
        step = int(state.step)
        if step == self._last_step:
            return
        if self._entries is None:
            self._start(step)
        written = {"particles": _particles(model, state)}
        if len(model.bonds):
            written["bonds"] = _bonds(model, state)
        if len(model.wall_point):
            written["walls"] = _walls(model, state)
        for series, polydata in written.items():
            name = f"vtk/{series}_{step:09d}.vtp"
            self._write(polydata, self.directory / name)
            self._entries[series].append((step, float(state.time), name))
        for series in written:
            _write_collection(self.directory / f"{series}.pvd", self._entries[series])
        self._last_step = step

    def close(self, sim):
        pass

    def _write(self, polydata, path):
        self._writer.SetFileName(str(path))
        self._writer.SetInputData(polydata)
        if self._writer.Write() != 1:
            raise OSError(f"could not write {path}")

    def _start(self, step):
        """Drop the snapshots at or after ``step`` left by an earlier run; keep earlier ones."""
        vtk_dir = self.directory / "vtk"
        vtk_dir.mkdir(parents=True, exist_ok=True)
        for path in vtk_dir.iterdir():
            match = _FILE_NAME.fullmatch(path.name)
            if match and int(match.group(2)) >= step:
                path.unlink()
        self._entries = {}
        for series in SERIES:
            pvd = self.directory / f"{series}.pvd"
            kept = [entry for entry in _read_collection(pvd) if entry[0] < step and (self.directory / entry[2]).exists()]
            self._entries[series] = kept
            if not kept and pvd.exists():
                pvd.unlink()


# ---------------------------------------------------------------------------------------------
# snapshots
# ---------------------------------------------------------------------------------------------


def _array(values, name, dtype=np.float64):
    array = numpy_support.numpy_to_vtk(np.ascontiguousarray(values, dtype=dtype), deep=True)
    array.SetName(name)
    return array


def _cells(offsets, connectivity):
    cells = vtkCellArray()
    cells.SetData(numpy_support.numpy_to_vtkIdTypeArray(np.ascontiguousarray(offsets, dtype=np.int64), deep=True),
                  numpy_support.numpy_to_vtkIdTypeArray(np.ascontiguousarray(connectivity, dtype=np.int64), deep=True))
    return cells


def _polydata(points):
    vtk_points = vtkPoints()
    vtk_points.SetData(_array(points, "points"))
    polydata = vtkPolyData()
    polydata.SetPoints(vtk_points)
    return polydata


def rotation_matrices(orientation):
    """``R`` of each unit quaternion (scalar first), ``(n, 4) -> (n, 3, 3)``; vectorised numpy
    (the same matrix as `dem.rotations.quat_matrix`, without its per-process compile)."""
    w, x, y, z = np.asarray(orientation, dtype=np.float64).T
    return np.stack((
        np.stack((1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)), axis=-1),
        np.stack((2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)), axis=-1),
        np.stack((2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)), axis=-1),
    ), axis=-2)


def _particles(model, state):
    n = model.n_bodies
    polydata = _polydata(state.position)
    polydata.SetVerts(_cells(np.arange(n + 1), np.arange(n)))
    rotation = rotation_matrices(state.orientation)
    data = polydata.GetPointData()
    data.AddArray(_array(np.arange(n), "id", np.int32))
    data.AddArray(_array(model.group, "body", np.int32))
    data.AddArray(_array(model.diameter, "diameter"))
    data.AddArray(_array(state.velocity, "velocity"))
    data.AddArray(_array(np.linalg.norm(state.velocity, axis=1), "speed"))
    data.AddArray(_array(state.angular_velocity, "angular_velocity"))
    data.AddArray(_array(state.orientation, "orientation"))
    for k in range(3):
        data.AddArray(_array(rotation[:, :, k], f"axis_{k + 1}"))
    data.AddArray(_array(state.force, "force"))
    data.AddArray(_array(state.moment, "moment"))
    data.SetActiveVectors("velocity")
    return polydata


def _bonds(model, state):
    bonds = model.bonds
    polydata = _polydata(state.position)
    polydata.SetLines(_cells(np.arange(0, 2 * len(bonds) + 1, 2), np.column_stack((bonds.i, bonds.j)).ravel()))
    measures = bond_measures(model, state)
    data = polydata.GetCellData()
    for name in ("axial_strain", "shear", "bending_angle", "axial_force"):
        data.AddArray(_array(measures[name], name))
    data.AddArray(_array(measures["broken"], "broken", np.uint8))
    data.SetActiveScalars("axial_strain")
    return polydata


def _walls(model, state):
    """Each wall as a square of edge ``wall_size`` (or 1.2 × the particles' extent when 0) in its
    plane, centred at the projection of the bodies' centroid, corners counter-clockwise about
    the normal."""
    normal = model.wall_normal
    point = model.wall_point
    position = state.position
    radius = 0.5 * model.diameter[:, None]
    extent = max(np.max((position + radius).max(axis=0) - (position - radius).min(axis=0)), model.diameter.max(initial=0.0))
    if extent <= 0.0:
        extent = 1.0
    edge = np.where(model.wall_size > 0.0, model.wall_size, 1.2 * extent)
    centroid = position.mean(axis=0)
    center = centroid - np.sum((centroid - point) * normal, axis=1)[:, None] * normal
    helper = np.eye(3)[np.argmin(np.abs(normal), axis=1)]
    u = np.cross(normal, helper)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = np.cross(normal, u)
    half = 0.5 * edge[:, None]
    corners = np.stack((center - half * u - half * v, center + half * u - half * v,
                        center + half * u + half * v, center - half * u + half * v), axis=1)
    n_walls = len(point)
    polydata = _polydata(corners.reshape(-1, 3))
    polydata.SetPolys(_cells(np.arange(0, 4 * n_walls + 1, 4), np.arange(4 * n_walls)))
    data = polydata.GetCellData()
    data.AddArray(_array(np.arange(n_walls), "wall", np.int32))
    data.AddArray(_array(normal, "normal"))
    return polydata


# ---------------------------------------------------------------------------------------------
# .pvd collections
# ---------------------------------------------------------------------------------------------


def _write_collection(path, entries):
    """Write the collection to ``path.tmp`` and move it over ``path`` (atomic)."""
    byte_order = "LittleEndian" if sys.byteorder == "little" else "BigEndian"
    lines = ['<?xml version="1.0"?>',
             f'<VTKFile type="Collection" version="0.1" byte_order="{byte_order}">',
             "  <Collection>"]
    lines += [f'    <DataSet timestep="{time!r}" group="" part="0" file="{name}"/>' for _, time, name in entries]
    lines += ["  </Collection>", "</VTKFile>", ""]
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text("\n".join(lines), encoding="utf-8")
    os.replace(temporary, path)


def _read_collection(path):
    """``[(step, time, file)]`` of an existing collection; empty when absent or unreadable."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return []
    entries = []
    for dataset in root.iter("DataSet"):
        name = dataset.get("file", "")
        match = _FILE_NAME.fullmatch(Path(name).name)
        if match:
            entries.append((int(match.group(2)), float(dataset.get("timestep", "nan")), name))
    return entries
