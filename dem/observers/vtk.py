"""ParaView output (SPEC §7): VTK XML PolyData snapshots and ``.pvd`` collections.

Layout under the run's output folder::

    particles.pvd  bonds.pvd  walls.pvd  meshes.pvd   collections, one ``<DataSet>`` per snapshot
    vtk/particles_000000100.vtp                 bodies as vertices (point data below)
    vtk/bonds_000000100.vtp                     binders as lines between the bodies (if any)
    vtk/walls_000000100.vtp                     walls as finite squares, where they are now (if any)
    vtk/meshes_000000100.vtp                    mesh walls as their triangles, where they are now (if any)
    sites.pvd, vtk/sites_000000100.vtp          rigid clusters' interaction sites (if any)

Files are binary (raw appended data), LZ4-compressed (three times faster to write than zlib,
files 10 % larger; read by VTK 8.1 and later, so ParaView 5.5 and later: checked with 5.11).
Each ``.pvd`` is rewritten atomically (``*.pvd.tmp``, then ``os.replace``) after a snapshot, so
it is valid and lists only complete files whenever the run stops. Rewrites are at least
``collection_interval`` seconds (wall clock) apart, and always at the first snapshot and at
``close``: replacing a file costs about a millisecond on ext4, as much as a snapshot itself, so
a run that snapshots faster than that would spend its time rewriting indexes. A killed run
(SIGKILL) may miss the index entries of its last ``collection_interval`` seconds; the ``.vtp``
files are there.

Particle point data: ``id``, ``body`` (group), ``diameter``, ``velocity``, ``speed``,
``angular_velocity`` (spatial Ω), ``orientation`` (unit quaternion, scalar first), ``axis_1``,
``axis_2``, ``axis_3`` (body axes in the inertial frame: the columns of ``R``, for glyphs),
``force``, ``moment``, ``center_of_mass`` (``x + R·com_offset``: the point itself for a free body,
the bob of a body on a pivot, whose point is the pivot), ``mass`` and ``fragment`` (connected
components of the intact bonds, `dem.interactions.bonds.fragment_labels`: the ids of
``python -m dem fragments``). Bond cell data (`dem.interactions.bonds.bond_measures`):
``axial_strain`` (r/r0 − 1), ``shear``, ``bending_angle`` (rad), ``axial_force`` (positive in
tension), ``force`` (the bond's force on its first body, a vector; 0 once broken), ``broken`` (0 intact, else the code of the criterion that broke it), ``law`` (0 seed
binder, 1 parallel bond) and, when there are parallel bonds, their ``twist_angle``,
``shear_force``, ``bending_moment``, ``twisting_moment``, ``tensile_stress`` and
``shear_stress``. Wall cell data: ``wall`` (index), ``normal``. Mesh cell data: ``mesh``
(index of the ``[[mesh]]`` table), ``normal`` (of each triangle).

Sites (only for a model with rigid clusters, ``model.site_start``/``model.site_offset``): every
site as a vertex at ``x + R·offset`` (``offset`` in the body frame, from the body's point ``x``),
and a line between every pair of sites of the same body for bodies of at most
`MAX_SITES_JOINED` sites (a tetrahedron's six edges; larger clusters get their sites only). Point
data: ``id`` (the body's index, as ``id`` in the particles), ``body`` (its group, as ``body`` in
the particles), ``site`` (index among the body's sites), ``velocity`` (``v + Ω × R·offset``),
``speed``. Cell data (vertices first, then lines): ``id``.
"""

import os
import re
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
from vtkmodules.util import numpy_support
from vtkmodules.vtkCommonCore import vtkPoints
from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
from vtkmodules.vtkIOXML import vtkXMLPolyDataWriter

from ..interactions.bonds import COMMON, PARALLEL_ONLY, bond_measures, broken_codes, fragment_labels
from ..rotations import quat_matrix

SERIES = ("particles", "bonds", "walls", "meshes", "sites")
_FILE_NAME = re.compile(r"(particles|bonds|walls|meshes|sites)_(\d{9})\.vtp")
#: bodies with at most this many sites get a line between every pair of them in ``sites``
MAX_SITES_JOINED = 8


class VTKWriter:
    """Observer that writes a snapshot every ``every`` steps (and at the start and end of a run)
    into ``directory/vtk/`` and indexes it in ``directory/<series>.pvd`` (see the module's
    docstring for the contents and ``collection_interval``).

    A run that starts at step 0 replaces the snapshots of an earlier run in the same folder; a run
    that starts later (a restart) keeps the earlier run's snapshots before its first step. Files
    of an earlier run are overwritten as the run goes, and those it did not overwrite are removed
    at `close` (unlinking is slow on some file systems, so a rerun into the same folder should not
    start by deleting everything).
    """

    def __init__(self, directory, every, collection_interval=0.5):
        self.directory = Path(directory)
        self.every = every
        self.collection_interval = collection_interval
        self._entries = None  # series -> [(step, time, relative file name)]
        self._first_step = None  # step of the first snapshot of this run
        self._pending = set()  # series whose .pvd lags behind the snapshots
        self._last_collection = None  # time.monotonic() of the last .pvd rewrite
        self._last_step = None
        self._fragments = (-1, None)  # (intact bonds, fragment of each body) at the last snapshot
        self._writer = vtkXMLPolyDataWriter()
        self._writer.SetDataModeToAppended()
        self._writer.EncodeAppendedDataOff()
        self._writer.SetCompressorTypeToLZ4()
        self._writer.SetHeaderTypeToUInt64()
        self._writer.WriteToOutputStringOn()

    def report(self, sim):
        model, state = sim.model, sim.state
        step = int(state.step)
        if step == self._last_step:
            return
        if self._entries is None:
            self._start(step)
        intact = broken_codes(model, state) == 0
        count = int(np.count_nonzero(intact))
        if self._fragments[0] != count:  # bonds only break: the count tells whether any did
            self._fragments = (count, fragment_labels(model.n_bodies, model.bonds.i, model.bonds.j, intact))
        written = {"particles": _particles(model, state, self._fragments[1])}
        if len(model.bonds):
            written["bonds"] = _bonds(model, state)
        if len(model.wall_point):
            written["walls"] = _walls(model, state)
        if "walls" in model.inputs and model.inputs["walls"]["meshes"]:
            written["meshes"] = _meshes(model, state)
        if model.n_sites:
            written["sites"] = _sites(model, state)
        for series, polydata in written.items():
            name = f"vtk/{series}_{step:09d}.vtp"
            self._write(polydata, self.directory / name)
            self._entries[series].append((step, float(state.time), name))
            self._pending.add(series)
        self._last_step = step
        now = time.monotonic()
        if self._last_collection is None or now - self._last_collection >= self.collection_interval:
            self._write_collections()
            self._last_collection = now

    def close(self, sim):
        self._write_collections()
        if self._entries is not None:
            self._remove_stale()

    def _write_collections(self):
        for series in sorted(self._pending):
            _write_collection(self.directory / f"{series}.pvd", self._entries[series])
        self._pending.clear()

    def _write(self, polydata, path):
        # serialising to memory and writing the bytes at once is twice as fast as letting VTK
        # write the file (its file stream writes in many small pieces)
        self._writer.SetInputData(polydata)
        if self._writer.Write() != 1:
            raise OSError(f"could not serialise {path.name}")
        data = self._writer.GetOutputString()  # bytes, or str when it happens to be valid UTF-8
        _write_in_place(path, data if isinstance(data, bytes) else data.encode("utf-8"))

    def _start(self, step):
        """Index the snapshots before ``step`` left by an earlier run (a restart); the ``.pvd`` of
        a series this run does not write is removed unless it keeps some."""
        (self.directory / "vtk").mkdir(parents=True, exist_ok=True)
        self._first_step = step
        self._entries = {}
        for series in SERIES:
            pvd = self.directory / f"{series}.pvd"
            kept = [entry for entry in read_collection(pvd) if entry[0] < step and (self.directory / entry[2]).exists()]
            self._entries[series] = kept
            if not kept and pvd.exists():
                pvd.unlink()

    def _remove_stale(self):
        """Remove the snapshots at or after this run's first step that this run did not write."""
        written = {Path(name).name for entries in self._entries.values() for _, _, name in entries}
        for path in (self.directory / "vtk").iterdir():
            match = _FILE_NAME.fullmatch(path.name)
            if match and int(match.group(2)) >= self._first_step and path.name not in written:
                path.unlink()


# ---------------------------------------------------------------------------------------------
# snapshots
# ---------------------------------------------------------------------------------------------


def _write_in_place(path, data):
    """Write ``data`` to ``path`` over the old file's blocks (no truncation first): on a file
    system mounted with ``discard`` (ext4 here) freeing blocks costs milliseconds, so a rerun that
    replaced its snapshots spent its time in truncation, 3 ms a file against 0.1 ms."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view):]
        os.ftruncate(descriptor, len(data))
    finally:
        os.close(descriptor)


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


def _particles(model, state, fragments):
    n = model.n_bodies
    polydata = _polydata(state.position)
    polydata.SetVerts(_cells(np.arange(n + 1), np.arange(n)))
    rotation = quat_matrix(state.orientation)
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
    data.AddArray(_array(state.position + np.einsum("nij,nj->ni", rotation, model.com_offset), "center_of_mass"))
    data.AddArray(_array(model.mass, "mass"))
    data.AddArray(_array(fragments, "fragment", np.int32))
    data.SetActiveVectors("velocity")
    return polydata


def _sites(model, state):
    """Rigid clusters' sites at ``x + R·offset`` with lines joining each small cluster's sites."""
    start = np.asarray(model.site_start, dtype=np.int64)
    counts = np.diff(start)
    owner = np.repeat(np.arange(model.n_bodies), counts)  # body of each site
    rotation = quat_matrix(state.orientation[owner])
    arm = np.einsum("nij,nj->ni", rotation, model.site_offset)
    points = state.position[owner] + arm
    velocity = state.velocity[owner] + np.cross(state.angular_velocity[owner], arm)
    n_sites = len(points)
    edges = [np.zeros((0, 2), np.int64)]
    for k in np.unique(counts[(counts >= 2) & (counts <= MAX_SITES_JOINED)]):
        first, second = np.triu_indices(k, 1)
        starts = start[:-1][counts == k][:, None]
        edges.append(np.stack(((starts + first).ravel(), (starts + second).ravel()), axis=1))
    edges = np.concatenate(edges)
    polydata = _polydata(points)
    polydata.SetVerts(_cells(np.arange(n_sites + 1), np.arange(n_sites)))
    polydata.SetLines(_cells(np.arange(0, 2 * len(edges) + 1, 2), edges.ravel()))
    data = polydata.GetPointData()
    data.AddArray(_array(owner, "id", np.int32))
    data.AddArray(_array(model.group[owner], "body", np.int32))
    data.AddArray(_array(np.arange(n_sites) - start[owner], "site", np.int32))
    data.AddArray(_array(velocity, "velocity"))
    data.AddArray(_array(np.linalg.norm(velocity, axis=1), "speed"))
    data.SetActiveVectors("velocity")
    polydata.GetCellData().AddArray(_array(np.concatenate((owner, owner[edges[:, 0]])), "id", np.int32))
    return polydata


def _bonds(model, state):
    bonds = model.bonds
    polydata = _polydata(state.position)
    polydata.SetLines(_cells(np.arange(0, 2 * len(bonds) + 1, 2), np.column_stack((bonds.i, bonds.j)).ravel()))
    measures = bond_measures(model, state)
    data = polydata.GetCellData()
    for name in COMMON:
        data.AddArray(_array(measures[name], name))
    data.AddArray(_array(measures["force"], "force"))
    data.AddArray(_array(measures["broken"], "broken", np.uint8))
    data.AddArray(_array(measures["law"], "law", np.uint8))
    if bonds.law.any():   # parallel bonds: their forces, moments and stresses
        for name in PARALLEL_ONLY:
            data.AddArray(_array(measures[name], name))
    data.SetActiveScalars("axial_strain")
    return polydata


def _walls(model, state):
    """Each wall as a square of edge ``wall_size`` (or 1.2 × the particles' extent when 0) in its
    plane, centred at the projection of the bodies' centroid, corners counter-clockwise about
    the normal."""
    normal = model.wall_normal
    point = state.interactions["walls"].point[:len(normal)]
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


def _meshes(model, state):
    """Every mesh's triangles at the mesh's pose now (``x = c + R x̂``)."""
    walls = state.interactions["walls"]
    meshes = model.inputs["walls"]["meshes"]
    first = len(model.wall_point)
    points, faces, index, offset = [], [], [], 0
    for m, mesh in enumerate(meshes):
        rotation = quat_matrix(walls.rotation[first + m])
        points.append(mesh["vertices"] @ rotation.T + walls.point[first + m])
        faces.append(mesh["faces"] + offset)
        index.append(np.full(len(mesh["faces"]), m))
        offset += len(mesh["vertices"])
    points, faces = np.concatenate(points), np.concatenate(faces)
    normal = np.cross(points[faces[:, 1]] - points[faces[:, 0]], points[faces[:, 2]] - points[faces[:, 0]])
    polydata = _polydata(points)
    polydata.SetPolys(_cells(np.arange(0, 3 * len(faces) + 1, 3), faces.ravel()))
    data = polydata.GetCellData()
    data.AddArray(_array(np.concatenate(index), "mesh", np.int32))
    data.AddArray(_array(normal / np.linalg.norm(normal, axis=1, keepdims=True), "normal"))
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


def read_collection(path):
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
