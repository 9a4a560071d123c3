"""ParaView output (docs/theory.md §7): VTK XML PolyData snapshots and ``.pvd`` collections.

Layout under the run's output folder::

    particles.pvd  bonds.pvd  walls.pvd  meshes.pvd   collections, one ``<DataSet>`` per snapshot
    vtk/particles_000000100.vtp                 bodies as vertices (point data below)
    vtk/bonds_000000100.vtp                     binders as lines between the bodies (if any)
    vtk/walls_000000100.vtp                     walls as finite squares, where they are now (if any)
    vtk/meshes_000000100.vtp                    mesh walls as their triangles, where they are now (if any)
    sites.pvd, vtk/sites_000000100.vtp          rigid clusters' interaction sites (if any)
    contacts.pvd, vtk/contacts_000000100.vtp    touching particle pairs as lines (``[output] contacts``)

Walls that do not move are written once, at the run's first snapshot, and every entry of their
``.pvd`` names that file (a restart's entries too). Each plane is drawn as a square centred at
the projection of the bodies' centroid in the scene's initial state, of edge ``size`` (or 1.2 ×
the particles' extent then): `wall_square`. A series' VTK objects and writer are built at its
first snapshot and refilled at the next ones (`_Reused`).

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
site as a vertex at ``x + R·offset`` (``offset`` in the body frame, from the body's point ``x``,
in a periodic cell the point moved into the cell: a body's sites stay together),
and a line between every pair of sites of the same body for bodies of at most
`MAX_SITES_JOINED` sites (a tetrahedron's six edges; larger clusters get their sites only). Point
data: ``id`` (the body's index, as ``id`` in the particles), ``body`` (its group, as ``body`` in
the particles), ``site`` (index among the body's sites), ``velocity`` (``v + Ω × R·offset``),
``speed``; for clumps (`dem.clumps`, whose sites are their member spheres) also ``diameter``
(of each member; 0 for a point site), ``angular_velocity`` and ``orientation`` (the clump's), so
that ParaView draws each member as a sphere glyph scaled by ``diameter`` and the clump shapes
appear. Cell data (vertices first, then lines): ``id``.

Contacts (only when asked for, ``contacts``: the scene's ``[output] contacts``): every touching
particle–particle pair ``i < j`` as a line between the two centres (the points are the bodies'
positions, as for bonds), with the cell data of `dem.network.contact_network`: ``force`` (on
``i``), ``normal_force`` (positive in compression), ``tangential_force``, ``overlap``, ``sliding``
(uint8), ``i`` and ``j``. With clumps every touching member pair is a line between the two member
centres, ``i`` and ``j`` its bodies, with ``member_i``, ``member_j`` (the members' indices in their
bodies) and ``moment_i``, ``moment_j`` (the moments on the members about their centres) too.
"""

import functools
import os
import re
import sys
import time
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
from vtkmodules.util import numpy_support
from vtkmodules.vtkCommonCore import vtkPoints, vtkSMPTools
from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
from vtkmodules.vtkIOXML import vtkXMLPolyDataWriter

from ..cell import cell_image, wrapped
from ..interactions.bonds import COMMON, PARALLEL_ONLY, bond_measures, broken_codes, fragment_labels
from ..interactions.insertion import in_play
from ..interactions.walls import FIXED
from ..network import contact_network
from ..rotations import quat_matrix

SERIES = ("particles", "bonds", "walls", "meshes", "sites", "contacts")
_FILE_NAME = re.compile(rf"({'|'.join(SERIES)})_(\d{{9}})\.vtp")
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
    start by deleting everything). ``square``: how to draw the planes (`wall_square`; by default
    that of the first snapshot). ``contacts``: write the contact network too (the reporting
    simulation's ``contacts`` is its contact table).

    ``background``: a thread of the writer's own serialises and writes each snapshot while the run
    steps on (the compiled loop releases Python's lock); the snapshot keeps copies of what the run
    changes (the state's arrays, and views), and the next ``report`` waits for its write before it
    makes another, so a run holds one snapshot's arrays at a time, as it does without. The files
    are the same bytes. An error there is raised by the next ``report`` or by ``close``, which
    waits for the thread and ends it. The command line's runs write so (`dem.runner`); without it
    ``report`` returns once the files are written.
    """

    def __init__(self, directory, every, collection_interval=0.5, square=None, contacts=False, background=False):
        self.directory = Path(directory)
        self.every = every
        self.contacts = contacts
        self.collection_interval = collection_interval
        self._entries = None  # series -> [(step, time, relative file name)]
        self._first_step = None  # step of the first snapshot of this run
        self._pending = set()  # series whose .pvd lags behind the snapshots
        self._last_collection = None  # time.monotonic() of the last .pvd rewrite
        self._last_step = None
        self._fragments = (-1, None)  # (intact bonds, fragment of each body) at the last snapshot
        self._series = {}  # series -> _Reused: its VTK objects and writer, refilled at every snapshot
        self._static = {}  # series of walls that do not move -> the file of the run's first snapshot
        self._square = square  # (centroid, edge) of the planes' squares (`wall_square`)
        self.background = background
        self._thread = None  # the thread that writes in the background (made at the first snapshot)
        self._last = None  # the future of the snapshot it was last given
        self._failed = False  # a snapshot written in the background failed

    def report(self, sim):
        model, state = sim.model, sim.state
        step = int(state.step)
        if step == self._last_step:
            return
        self._wait()
        if self._entries is None:
            self._start(step, model)
        intact = broken_codes(model, state) == 0
        count = int(np.count_nonzero(intact))
        if self._fragments[0] != count:  # bonds only break: the count tells whether any did
            self._fragments = (count, fragment_labels(model.n_bodies, model.bonds.i, model.bonds.j, intact))
        written = {"particles": lambda: _particles(model, state, self._fragments[1])}
        if len(model.bonds):
            written["bonds"] = lambda: _bonds(model, state)
        if len(model.wall_point):
            if self._square is None:
                self._square = wall_square(model, state)
            written["walls"] = lambda: _walls(model, state, self._square)
        if "walls" in model.inputs and model.inputs["walls"]["meshes"]:
            written["meshes"] = lambda: _meshes(model, state)
        if model.n_sites:
            written["sites"] = lambda: _sites(model, state)
        if self.contacts:
            written["contacts"] = lambda: _contacts(model, state, sim.contacts)
        frames, names = [], {}  # (series, file name, frame) to write; each series' file
        live = _live(state) if self.background else None
        for series, frame in written.items():  # (frame: makes the series' arrays, when they are written)
            names[series] = self._static.get(series)
            if names[series] is None:
                names[series] = f"vtk/{series}_{step:09d}.vtp"
                frames.append((series, names[series], _detached(frame(), live) if self.background else frame()))
        if not self.background:
            self._write(frames)
        for series, name in names.items():  # (written, or queued: a collection names it only after)
            self._entries[series].append((step, float(state.time), name))
            self._pending.add(series)
        for series, name, _ in frames:
            if series in ("walls", "meshes") and _walls_fixed(model, series):
                self._static[series] = name  # every later snapshot of the run shows this file
        self._last_step = step
        now = time.monotonic()
        collections = {}
        if self._last_collection is None or now - self._last_collection >= self.collection_interval:
            collections = self._due_collections()
            self._last_collection = now
        if not self.background:
            self._write(collections=collections)
            return
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="dem-vtk")
        self._last = self._thread.submit(self._write, frames, collections)

    def close(self, sim):
        try:
            self._wait()
        finally:
            if self._thread is not None:
                self._thread.shutdown(wait=True)
                self._thread = None
        if not self._failed:  # (a collection would name the file that failed)
            self._write(collections=self._due_collections())
        if self._entries is not None:
            self._remove_stale()

    def _write(self, frames=(), collections=None):
        """Write the snapshots ``frames`` (``(series, file name, frame)``), then the
        ``collections`` (``{series: entries}``), whose entries name only files written by then."""
        for series, name, frame in frames:
            reused = self._series.get(series)
            if reused is None:
                reused = self._series[series] = _Reused()
            reused.fill(frame)
            _write_in_place(self.directory / name, reused.serialise(name))
        for series, entries in (collections or {}).items():
            _write_collection(self.directory / f"{series}.pvd", entries)

    def _due_collections(self):
        """``{series: its entries}`` of the series whose ``.pvd`` lags behind (copies: the
        background thread writes them while the run goes on)."""
        due = {series: list(self._entries[series]) for series in sorted(self._pending)}
        self._pending.clear()
        return due

    def _wait(self):
        """Wait for the snapshot being written in the background, raising its error (the thread is
        given nothing after it: every report waits first)."""
        last, self._last = self._last, None
        if last is not None:
            self._failed = self._failed or last.exception() is not None
            last.result()

    def _start(self, step, model):
        """Index the snapshots before ``step`` left by an earlier run (a restart: walls that do
        not move go on showing the earlier run's file); the ``.pvd`` of a series this run does
        not write is removed unless it keeps some."""
        (self.directory / "vtk").mkdir(parents=True, exist_ok=True)
        self._first_step = step
        self._entries = {}
        for series in SERIES:
            pvd = self.directory / f"{series}.pvd"
            kept = [entry for entry in read_collection(pvd) if entry[0] < step and (self.directory / entry[2]).exists()]
            self._entries[series] = kept
            if kept and series in ("walls", "meshes") and _walls_fixed(model, series):
                self._static[series] = kept[-1][2]
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


#: One snapshot of a series as arrays: ``points (n, 3)``; ``verts``, ``lines``, ``polys``
#: ``(offsets, connectivity)`` or None; ``point_data`` and ``cell_data`` ``[(name, values,
#: dtype)]``; the names of the active ``vectors`` and ``scalars`` (or None).
Frame = namedtuple("Frame", "points verts lines polys point_data cell_data vectors scalars",
                   defaults=(None, None, None, (), (), None, None))


def _live(state):
    """The ids of the arrays the run changes in place: the state's and its interactions' own."""
    arrays = [*state.arrays()]
    for own in state.interactions.values():
        arrays += [value for value in (own if isinstance(own, tuple) else ()) if isinstance(value, np.ndarray)]
    return {id(array) for array in arrays}


def _detached(frame, live):
    """``frame`` sharing no memory with what the run changes while a background thread writes it:
    its views and the ``live`` arrays themselves (`_live`) copied; the arrays it made for itself kept."""
    def own(values):
        values = np.asarray(values)
        return np.array(values) if values.base is not None or id(values) in live else values

    def cells(pair):
        return None if pair is None else tuple(own(a) for a in pair)

    return frame._replace(points=own(frame.points), verts=cells(frame.verts), lines=cells(frame.lines),
                          polys=cells(frame.polys),
                          point_data=[(name, own(values), dtype) for name, values, dtype in frame.point_data],
                          cell_data=[(name, own(values), dtype) for name, values, dtype in frame.cell_data])


def _vtk_array(values, name, dtype):
    array = numpy_support.numpy_to_vtk(np.ascontiguousarray(values, dtype=dtype), deep=True)
    array.SetName(name)
    return array


def _cells(offsets, connectivity):
    cells = vtkCellArray()
    cells.SetData(numpy_support.numpy_to_vtkIdTypeArray(np.ascontiguousarray(offsets, dtype=np.int64), deep=True),
                  numpy_support.numpy_to_vtkIdTypeArray(np.ascontiguousarray(connectivity, dtype=np.int64), deep=True))
    return cells


class _Reused:
    """A series' ``vtkPolyData`` and its writer, built at its first snapshot and refilled in place
    at the next ones (new VTK objects for every array of every snapshot cost as much as
    serialising them); built again when the cells or the arrays' shapes change."""

    def __init__(self):
        self.polydata = None
        self.layout = None  # the cells and (name, shape, dtype) of every array of the last build
        self._arrays = []  # the VTK data arrays: the points', then point data, then cell data
        self.views = []  # numpy views of those arrays, in the frame's order
        _settle_thread_count()
        # one writer per series: giving a writer another input at every snapshot costs more
        self.writer = vtkXMLPolyDataWriter()
        self.writer.SetDataModeToAppended()
        self.writer.EncodeAppendedDataOff()
        self.writer.SetCompressorTypeToLZ4()
        self.writer.SetHeaderTypeToUInt64()
        self.writer.WriteToOutputStringOn()

    def fill(self, frame):
        data = [(None, frame.points, np.float64), *frame.point_data, *frame.cell_data]
        shapes = [(name, np.shape(values), dtype) for name, values, dtype in data]
        cells = [frame.verts, frame.lines, frame.polys]
        if self.polydata is None or shapes != self.layout[0] or not _same_cells(cells, self.layout[1]):
            self._build(frame, shapes, cells)
            return
        for view, (_, values, _) in zip(self.views, data):
            view[...] = values
        for array in self._arrays:
            array.Modified()  # (VTK caches the arrays' ranges)
        self.polydata.Modified()

    def serialise(self, name):
        """The file of the snapshot last filled, as bytes: serialising to memory and writing the
        bytes at once is twice as fast as letting VTK write the file (its file stream writes in
        many small pieces)."""
        if self.writer.Write() != 1:
            raise OSError(f"could not serialise {name}")
        data = self.writer.GetOutputString()  # bytes, or str when it happens to be valid UTF-8
        return data if isinstance(data, bytes) else data.encode("utf-8")

    def _build(self, frame, shapes, cells):
        points = vtkPoints()
        points.SetData(_vtk_array(frame.points, "points", np.float64))
        polydata = vtkPolyData()
        polydata.SetPoints(points)
        for setter, cell in zip((polydata.SetVerts, polydata.SetLines, polydata.SetPolys), cells):
            if cell is not None:
                setter(_cells(*cell))
        self._arrays = []
        for target, entries in ((polydata.GetPointData(), frame.point_data), (polydata.GetCellData(), frame.cell_data)):
            for name, values, dtype in entries:
                array = _vtk_array(values, name, dtype)
                target.AddArray(array)
                self._arrays.append(array)
        if frame.vectors:
            polydata.GetPointData().SetActiveVectors(frame.vectors)
        if frame.scalars:
            polydata.GetCellData().SetActiveScalars(frame.scalars)
        self.polydata = polydata
        self.writer.SetInputData(polydata)
        self.layout = (shapes, [None if c is None else tuple(np.array(a, np.int64) for a in c) for c in cells])
        self._arrays.insert(0, points.GetData())
        self.views = [numpy_support.vtk_to_numpy(a) for a in self._arrays]


@functools.cache
def _settle_thread_count():
    """Give VTK's std::thread backend the thread count it would take anyway; the backend in use
    stays as it was. A writer computes the range of every array it writes (``RangeMin``,
    ``RangeMax``), and each range builds per-thread storage for every backend, whose std::thread
    one, without a count given, asks the C library for the number of processors, which reads
    /sys/devices/system/cpu/online: 15 µs an array, two thirds of the time it takes to serialise
    a snapshot of 80 particles."""
    in_use = vtkSMPTools.GetBackend()
    if vtkSMPTools.SetBackend("STDThread"):
        vtkSMPTools.Initialize(vtkSMPTools.GetEstimatedNumberOfThreads())
        vtkSMPTools.SetBackend(in_use)


def _same_cells(cells, built):
    return all((a is None) == (b is None) and (a is None or all(np.array_equal(x, y) for x, y in zip(a, b)))
               for a, b in zip(cells, built))


def _particles(model, state, fragments):
    """The bodies in play (all but the parked ones of `dem.feeding`), each with its ``id``."""
    shown = in_play(model, state) if "insertion" in model.interactions else slice(None)
    ids = np.arange(model.n_bodies)[shown]
    n = len(ids)
    rotation = quat_matrix(state.orientation[shown])
    position, velocity = state.position[shown], state.velocity[shown]
    i32, f64 = np.int32, np.float64
    data = [("id", ids, i32), ("body", model.group[shown], i32), ("diameter", model.diameter[shown], f64),
            ("velocity", velocity, f64), ("speed", np.linalg.norm(velocity, axis=1), f64),
            ("angular_velocity", state.angular_velocity[shown], f64), ("orientation", state.orientation[shown], f64)]
    data += [(f"axis_{k + 1}", rotation[:, :, k], f64) for k in range(3)]
    data += [("force", state.force[shown], f64), ("moment", state.moment[shown], f64),
             ("center_of_mass", position + np.einsum("nij,nj->ni", rotation, model.com_offset[shown]), f64),
             ("mass", model.mass[shown], f64), ("fragment", fragments[shown], i32)]
    return Frame(wrapped(position, state.cell), verts=(np.arange(n + 1), np.arange(n)), point_data=data,
                 vectors="velocity")


def _sites(model, state):
    """Rigid clusters' sites at ``x + R·offset`` with lines joining each small cluster's sites."""
    shown = np.flatnonzero(in_play(model, state)) if "insertion" in model.interactions else \
        np.arange(model.n_bodies)   # (the bodies in play: a source's parked clumps are not drawn)
    counts = np.diff(np.asarray(model.site_start, dtype=np.int64))[shown]
    start = np.concatenate(([0], np.cumsum(counts)))   # of each shown body's sites, in the rows drawn
    owner = np.repeat(shown, counts)  # body of each site
    rows = np.arange(start[-1]) - np.repeat(start[:-1] - model.site_start[shown], counts)   # each site's row
    rotation = quat_matrix(state.orientation[owner])
    arm = np.einsum("nij,nj->ni", rotation, model.site_offset[rows])
    points = wrapped(state.position, state.cell)[owner] + arm   # (a clump whole, about its centre in the cell)
    velocity = state.velocity[owner] + np.cross(state.angular_velocity[owner], arm)
    n_sites = len(points)
    edges = [np.zeros((0, 2), np.int64)]
    for k in np.unique(counts[(counts >= 2) & (counts <= MAX_SITES_JOINED)]):
        first, second = np.triu_indices(k, 1)
        starts = start[:-1][counts == k][:, None]
        edges.append(np.stack(((starts + first).ravel(), (starts + second).ravel()), axis=1))
    edges = np.concatenate(edges)
    data = [("id", owner, np.int32), ("body", model.group[owner], np.int32),
            ("site", np.arange(n_sites) - np.repeat(start[:-1], counts), np.int32), ("velocity", velocity, np.float64),
            ("speed", np.linalg.norm(velocity, axis=1), np.float64)]
    if model.has_clumps:
        data += [("diameter", 2.0 * model.site_radius[rows], np.float64),
                 ("angular_velocity", state.angular_velocity[owner], np.float64),
                 ("orientation", state.orientation[owner], np.float64)]
    return Frame(points, verts=(np.arange(n_sites + 1), np.arange(n_sites)),
                 lines=(np.arange(0, 2 * len(edges) + 1, 2), edges.ravel()), point_data=data,
                 cell_data=[("id", np.concatenate((owner, owner[edges[:, 0]])), np.int32)], vectors="velocity")


def _bonds(model, state):
    bonds = model.bonds
    measures = bond_measures(model, state)
    data = [(name, measures[name], np.float64) for name in COMMON + ("force",)]
    data += [("broken", measures["broken"], np.uint8), ("law", measures["law"], np.uint8)]
    if bonds.law.any():  # parallel bonds: their forces, moments and stresses
        data += [(name, measures[name], np.float64) for name in PARALLEL_ONLY]
    points, ends = _pair_lines(state, bonds.i, bonds.j)
    return Frame(points, lines=(np.arange(0, 2 * len(bonds) + 1, 2), ends), cell_data=data, scalars="axial_strain")


def _contacts(model, state, table):
    """The touching particle pairs (`dem.network.contact_network`) as lines between their centres;
    with clumps the touching member pairs, between the member centres."""
    network = contact_network(model, state, table)
    f64 = np.float64
    data = [("force", network.force, f64), ("normal_force", network.normal_force, f64),
            ("tangential_force", network.tangential_force, f64), ("overlap", network.overlap, f64),
            ("sliding", network.sliding, np.uint8), ("i", network.i, np.int32), ("j", network.j, np.int32)]
    if network.moment_i is None:
        points, ends = _pair_lines(state, network.i, network.j)
    else:  # member pairs (clumps are not in periodic cells)
        m = len(network.i)
        points, ends = np.concatenate((network.centre_i, network.centre_j)), \
            np.column_stack((np.arange(m), m + np.arange(m))).ravel()
        data += [("member_i", network.member_i, np.int32), ("member_j", network.member_j, np.int32),
                 ("moment_i", network.moment_i, f64), ("moment_j", network.moment_j, f64)]
    return Frame(points, lines=(np.arange(0, len(ends) + 1, 2), ends), cell_data=data, scalars="normal_force")


def _pair_lines(state, first, second):
    """``(points, ends)`` of lines joining pairs of bodies: between their centres, or in a
    periodic cell (`dem.cell`) from the first body's wrapped centre to the nearest image of the
    second beside it (a pair across a face is drawn sticking out of it, not across the cell)."""
    if not state.cell.any():
        return state.position, np.column_stack((first, second)).ravel()
    start = wrapped(state.position[first], state.cell)
    end = start - cell_image(state.position[first] - state.position[second], state.cell)
    m = len(first)
    return np.concatenate((start, end)), np.column_stack((np.arange(m), m + np.arange(m))).ravel()


def wall_square(model, state):
    """``(centroid, edge)`` of ``state``: the planes' squares are centred at the projection of
    the bodies' centroid and have the edge ``wall_size`` (or 1.2 × the particles' extent when
    0). The runner takes them from the scene's initial state (a restart draws the walls as the
    run it continues did), a writer without them from its first snapshot."""
    position = state.position
    radius = 0.5 * model.diameter[:, None]
    extent = max(np.max((position + radius).max(axis=0) - (position - radius).min(axis=0)), model.diameter.max(initial=0.0))
    if extent <= 0.0:
        extent = 1.0
    return position.mean(axis=0), np.where(model.wall_size > 0.0, model.wall_size, 1.2 * extent)


def _walls_fixed(model, series):
    """Whether none of the planes (``series`` "walls") or none of the meshes ("meshes") moves."""
    motion = model.interactions["walls"].motion
    planes = len(model.wall_point)
    return bool(np.all((motion[:planes] if series == "walls" else motion[planes:]) == FIXED))


def _walls(model, state, square):
    """Each plane as a square (`wall_square`) in its plane where it is now, corners
    counter-clockwise about the normal."""
    centroid, edge = square
    normal = model.wall_normal
    point = state.interactions["walls"].point[:len(normal)]
    center = centroid - np.sum((centroid - point) * normal, axis=1)[:, None] * normal
    helper = np.eye(3)[np.argmin(np.abs(normal), axis=1)]
    u = np.cross(normal, helper)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = np.cross(normal, u)
    half = 0.5 * edge[:, None]
    corners = np.stack((center - half * u - half * v, center + half * u - half * v,
                        center + half * u + half * v, center - half * u + half * v), axis=1)
    n_walls = len(point)
    return Frame(corners.reshape(-1, 3), polys=(np.arange(0, 4 * n_walls + 1, 4), np.arange(4 * n_walls)),
                 cell_data=[("wall", np.arange(n_walls), np.int32), ("normal", normal, np.float64)])


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
    return Frame(points, polys=(np.arange(0, 3 * len(faces) + 1, 3), faces.ravel()),
                 cell_data=[("mesh", np.concatenate(index), np.int32),
                            ("normal", normal / np.linalg.norm(normal, axis=1, keepdims=True), np.float64)])


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
