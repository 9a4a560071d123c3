"""Triangle-mesh walls: reading a surface (meshio), its topology, a uniform grid over its
triangles, and the sphere–mesh contacts (the geometry; the contact laws are the particle–wall
interactions', `dem.interactions.hertz`).

A mesh is rigid: its vertices are stored once in its own frame (relative to its centre ``c``,
unrotated), and its pose ``(c(t), R(t))`` lives in the walls' state. A particle at ``x`` is
taken into the mesh frame, ``x̂ = Rᵀ(x − c)``, and everything below happens there; so the grid
over the triangles is built once and never rebuilt, however the mesh moves.

Contacts (closest features, each contact counted once per mesh). A sphere of radius ``r``
touches the mesh where the distance from its centre to the surface has a *local minimum*
closer than ``r``; such a minimum lies on one feature — the interior of a face, of an edge, or
a vertex — whose region holds ``x̂``:

* face ``f`` (unit normal ``n_f``): ``x̂`` projects inside ``f``: ``s_{f,e} > 0`` for its three
  edges, with ``s_{f,e} = (x̂ − a_e)·m_{f,e}``, ``a_e`` the edge's first vertex and ``m_{f,e}``
  the unit normal of ``e`` in the plane of ``f`` pointing into ``f``. Distance ``|(x̂ − a)·n_f|``,
  normal ``± n_f`` (the side ``x̂`` is on: meshes are two-sided).
* edge ``e = (a, b)``: ``x̂`` projects inside the segment (``(x̂ − a)·(b − a) > 0`` and
  ``(x̂ − b)·(a − b) > 0``) and onto none of its faces: ``s_{f,e} ≤ 0`` for every face ``f`` of
  ``e`` (moving from the edge into a face would bring the sphere closer otherwise).
  Distance and normal from the closest point of the edge.
* vertex ``v``: ``(x̂ − v)·(w − v) ≤ 0`` for every edge ``(v, w)`` (no edge leads closer).

Edges and vertices are visited once per mesh, from their *owner* face (the lowest-numbered face
that holds them). Concave corners give one contact per face (a sphere in a V touches both
planes); convex edges and corners one rounded contact; over a triangulated plane there is one
contact wherever the sphere is — on the plane's normal, at the plane's distance — so it feels
exactly what it feels from the plane. On the boundary between two regions (a sphere exactly over
an edge of a flat floor) the tests tie, and round-off may decide either way; so each test
accepts up to `TOLERANCE` radii beyond its region (no sphere falls between two regions), and a
contact whose contact point ``x − gap·n`` is within `SAME_POINT` radii of one already found on
the same mesh is the same contact and is dropped (no sphere is counted twice).

Each particle's contacts are written into fixed slots of the walls' state (`MAX_CONTACTS` per
particle: mesh ``wall`` index, ``feature``, ``gap``, unit ``normal`` from the mesh to the
particle, world frame), in a pass over the particles before the forces; a contact law reads them
as it reads a plane's gap and normal. ``feature`` is ``f`` for face ``f``, ``n_faces + e`` for
edge ``e`` and ``n_faces + n_edges + v`` for vertex ``v`` (numbered over all meshes together).
The member spheres of clumps find theirs the same way (`sphere_contacts`), into slots of their
clump interaction's own (`dem.interactions.clump_walls`).

Grid: cubic cells in the mesh frame, of edge the larger of the largest particle diameter and
the median triangle edge (raised if the grid would pass `MAX_CELLS`); a triangle is listed in
every cell whose centre lies within ``r_max`` + half the cell diagonal of it, so a particle finds
every triangle it can touch in the one cell that holds ``x̂`` (and the owner face of every
feature it can touch).
"""

from collections import namedtuple
from pathlib import Path

import numpy as np
from numba import njit

from .rotations import quat_from_rotvec, quat_matrix, quat_rotate_inverse_one, quat_rotate_one
from .schema import SceneError

#: contact slots per particle (a sphere touching more mesh features at once is an error)
MAX_CONTACTS = 8
#: most grid cells of one mesh
MAX_CELLS = 2_000_000
#: a feature accepts a sphere this many radii outside its region (so that round-off leaves no gap
#: between neighbouring regions) …
TOLERANCE = 1e-10
#: … and contacts of one mesh whose contact points agree to this many radii are one contact
SAME_POINT = 1e-8

#: Constant mesh data of every mesh of a system, concatenated (see the module's docstring).
#: Per face: ``face (nf, 3)`` vertex indices, ``face_normal``, ``face_edge (nf, 3)`` (edge ``k``
#: joins vertices ``k`` and ``k+1``), ``face_side (nf, 3)`` its row in the edge's incidence list.
#: Per edge: ``edge_vertex (ne, 2)``, incidence CSR ``edge_face_start``/``edge_face`` with the
#: in-plane normals ``edge_inward (n_incidences, 3)``. Per vertex: incident edges (CSR
#: ``vertex_edge_start``/``vertex_edge``), ``vertex_owner``. Per mesh ``m``: ``wall[m]`` its
#: index among the walls, its grid (``grid_origin``, ``grid_cell``, ``grid_shape``,
#: ``grid_offset`` into ``cell_start``/``cell_face``).
MeshArrays = namedtuple("MeshArrays", "vertex face face_normal face_edge face_side edge_vertex edge_face_start "
                        "edge_face edge_inward vertex_edge_start vertex_edge vertex_owner wall grid_origin "
                        "grid_cell grid_shape grid_offset cell_start cell_face")


class MeshError(ValueError):
    """A mesh that cannot be used; the message says what is wrong (not where: the caller knows)."""


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------


def read_surface(path):
    """``(vertices (nv, 3), faces (nf, 3))`` of the triangles (quadrilaterals split in two) of
    a surface file meshio reads (STL, OBJ, PLY, VTU, VTK, …), duplicate points merged. Raises
    `MeshError`."""
    import meshio

    if not path.is_file():
        raise MeshError(f"no such mesh file {path}")
    try:
        mesh = meshio.read(path)
    except Exception as error:  # meshio raises anything from ReadError to KeyError on bad input
        reason = " ".join(str(error).split()) or type(error).__name__
        raise MeshError(f"cannot read {path} as a mesh ({reason[:200]})") from None
    blocks = []
    for block in mesh.cells:
        if block.type == "triangle":
            blocks.append(np.asarray(block.data, np.int64))
        elif block.type == "quad":
            quads = np.asarray(block.data, np.int64)
            blocks += [quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]
    if not blocks:
        found = ", ".join(sorted({block.type for block in mesh.cells})) or "none"
        raise MeshError(f"{path} holds no triangles (cells: {found})")
    points = np.asarray(mesh.points, float)
    if points.ndim != 2 or points.shape[1] < 2:
        raise MeshError(f"{path}: points are not 2-D or 3-D coordinates")
    if points.shape[1] == 2:
        points = np.column_stack((points, np.zeros(len(points))))
    return merge_points(points[:, :3], np.concatenate(blocks))


def merge_points(points, faces):
    """Points that are equal merged (STL repeats every corner), unused points dropped."""
    used, compact = np.unique(faces.reshape(-1), return_inverse=True)
    unique, inverse = np.unique(points[used], axis=0, return_inverse=True)
    faces = inverse.reshape(-1)[compact.reshape(-1)].reshape(-1, 3)
    return np.ascontiguousarray(unique), np.ascontiguousarray(faces, dtype=np.int64)


def surface_problem(vertices, faces):
    """What makes a surface unusable (no triangles, non-finite points, a degenerate triangle),
    or None."""
    if len(faces) == 0:
        return "has no triangles"
    if not np.isfinite(vertices).all():
        return "has non-finite vertex coordinates (values too large or too small)"
    if faces.min() < 0 or faces.max() >= len(vertices):
        return "has triangles with vertex indices out of range"
    corners = vertices[faces]
    edges = np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=2)
    area2 = np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    bad = np.flatnonzero(~(area2 > 1e-12 * edges.max(axis=1) ** 2))
    if len(bad):
        f = int(bad[0])
        return (f"has {len(bad)} degenerate triangle(s) (zero area or repeated corners), the first is triangle {f} "
                f"with corners {np.array2string(corners[f], separator=', ').replace(chr(10), '')}")
    return None


def load_mesh(folder, key, table):
    """The mesh of a validated ``[[mesh]]`` table (`dem.interactions.walls.MESH_KEYS`), its file
    relative to ``folder``, as `place_mesh` takes it: scaled, rotated, translated. Raises
    `SceneError` naming ``key`` (``mesh.<k>``) and the key at fault."""
    path = Path(folder) / table["file"]
    try:
        vertices, faces = read_surface(path)
    except MeshError as error:
        raise SceneError(f"{key}.file: {error}") from None
    problem = surface_problem(vertices, faces)
    if problem:
        raise SceneError(f"{key}.file: {path} {problem}")
    if table["rotate_axis"] is not None:
        axis = np.asarray(table["rotate_axis"], float)
        rotation = quat_from_rotvec(axis / np.linalg.norm(axis) * table["rotate_angle"])
    else:
        rotation = quat_from_rotvec(np.asarray(table["rotate"], float))
    with np.errstate(all="ignore"):
        vertices = (table["scale"] * vertices) @ quat_matrix(rotation).T + np.asarray(table["translate"], float)
    problem = surface_problem(vertices, faces)
    if problem:
        raise SceneError(f"{key}.scale: the transformed mesh {problem}")
    return dict(vertices=vertices, faces=faces, velocity=table["velocity"], angular_velocity=table["angular_velocity"],
                start=table["start"], center=table["center"], name=str(table["file"]), friction=table["friction"],
                rolling_friction=table["rolling_friction"], twisting_friction=table["twisting_friction"])


def place_mesh(vertices, faces, velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0), start=0.0, center=None,
               name="", friction=None, rolling_friction=None, twisting_friction=None):
    """A mesh wall as the walls interaction keeps it: ``vertices`` (world frame at t = 0) taken
    relative to ``center`` (default: the centre of their bounding box), ``faces``, the prescribed
    ``velocity`` and ``angular_velocity`` (from time ``start`` on), ``name``, and its own
    ``coefficients`` (friction, rolling, twisting; NaN: the ``[contact]`` value). Raises
    ValueError for an unusable surface."""
    vertices = np.asarray(vertices, float).reshape(-1, 3)
    faces = np.asarray(faces, np.int64).reshape(-1, 3)
    problem = surface_problem(vertices, faces)
    if problem:
        raise ValueError(f"mesh {name}: {problem}".replace("  ", " "))
    center = 0.5 * (vertices.min(axis=0) + vertices.max(axis=0)) if center is None else np.asarray(center, float)
    return dict(vertices=np.ascontiguousarray(vertices - center), faces=np.ascontiguousarray(faces),
                center=center, velocity=np.asarray(velocity, float), angular_velocity=np.asarray(angular_velocity, float),
                start=float(start), name=name, coefficients=np.array([np.nan if c is None else c
                                                  for c in (friction, rolling_friction, twisting_friction)], float))


# ---------------------------------------------------------------------------------------------
# topology and grid (set-up)
# ---------------------------------------------------------------------------------------------


def _unit(vectors):
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def _csr(keys, n):
    """``(start (n+1,), order)``: the rows of ``keys`` grouped by key, stable."""
    order = np.argsort(keys, kind="stable")
    return np.searchsorted(keys[order], np.arange(n + 1)).astype(np.int64), order


def topology(vertices, faces):
    """Edges, incidences and in-plane normals of one surface (indices local to it); see
    `MeshArrays` for the names."""
    nv, nf = len(vertices), len(faces)
    normal = _unit(np.cross(vertices[faces[:, 1]] - vertices[faces[:, 0]], vertices[faces[:, 2]] - vertices[faces[:, 0]]))
    start, end = faces, np.roll(faces, -1, axis=1)
    keys = np.minimum(start, end) * nv + np.maximum(start, end)
    unique, face_edge = np.unique(keys.reshape(-1), return_inverse=True)
    face_edge = face_edge.reshape(nf, 3)
    edge_vertex = np.column_stack((unique // nv, unique % nv)).astype(np.int64)
    ne = len(unique)
    # incidences (face, local edge k), grouped by edge and, within an edge, by face
    incidence_edge = face_edge.reshape(-1)
    edge_face_start, order = _csr(incidence_edge, ne)
    incidence_face = np.repeat(np.arange(nf), 3)[order]
    incidence_local = np.tile(np.arange(3), nf)[order]
    face_side = np.empty(3 * nf, np.int64)
    face_side[order] = np.arange(3 * nf)
    a = vertices[edge_vertex[incidence_edge[order], 0]]
    b = vertices[edge_vertex[incidence_edge[order], 1]]
    inward = _unit(np.cross(normal[incidence_face], b - a))
    third = vertices[faces[incidence_face, (incidence_local + 2) % 3]]
    inward *= np.where(np.sum((third - a) * inward, axis=1) < 0, -1.0, 1.0)[:, None]
    vertex_edge_start, vertex_order = _csr(edge_vertex.reshape(-1), nv)
    vertex_edge = vertex_order // 2
    vertex_owner = np.full(nv, nf, np.int64)
    np.minimum.at(vertex_owner, faces.reshape(-1), np.repeat(np.arange(nf), 3))
    return dict(face=faces, face_normal=normal, face_edge=face_edge, face_side=face_side.reshape(nf, 3),
                edge_vertex=edge_vertex, edge_face_start=edge_face_start, edge_face=incidence_face,
                edge_inward=np.ascontiguousarray(inward), vertex_edge_start=vertex_edge_start,
                vertex_edge=vertex_edge.astype(np.int64), vertex_owner=vertex_owner)


@njit(inline="always")
def _closest_point(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """The point ``(x, y, z)`` of triangle ``abc`` closest to ``p`` (Ericson, Real-Time Collision
    Detection §5.1.5), in scalars: no arrays, so that the grid's registration (`_register`), which
    calls it for every cell near every face, allocates nothing."""
    abx, aby, abz, acx, acy, acz = bx - ax, by - ay, bz - az, cx - ax, cy - ay, cz - az
    apx, apy, apz = px - ax, py - ay, pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az
    bpx, bpy, bpz = px - bx, py - by, pz - bz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return bx, by, bz
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        return ax + t * abx, ay + t * aby, az + t * abz
    cpx, cpy, cpz = px - cx, py - cy, pz - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return cx, cy, cz
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        return ax + t * acx, ay + t * acy, az + t * acz
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return bx + t * (cx - bx), by + t * (cy - by), bz + t * (cz - bz)
    denominator = 1.0 / (va + vb + vc)
    v, w = vb * denominator, vc * denominator
    return ax + abx * v + acx * w, ay + aby * v + acy * w, az + abz * v + acz * w


@njit(cache=True)
def surface_distance(p, vertex, face, faces):
    """The distance from ``p`` to the nearest of the triangles ``faces`` (indices into ``face``,
    whose corners are rows of ``vertex``; all in one frame)."""
    best = np.inf
    for f in faces:
        a, b, c = vertex[face[f, 0]], vertex[face[f, 1]], vertex[face[f, 2]]
        x, y, z = _closest_point(p[0], p[1], p[2], a[0], a[1], a[2], b[0], b[1], b[2], c[0], c[1], c[2])
        best = min(best, np.sqrt((p[0] - x) ** 2 + (p[1] - y) ** 2 + (p[2] - z) ** 2))
    return best


@njit(cache=True)
def _register(vertices, faces, origin, cell, shape, reach, fill, cell_start, cell_face):
    """Count (``fill`` False: into ``cell_start[1:]``) or list (``fill``: at ``cell_start``) the
    cells whose centre is within ``reach`` of each face."""
    cursor = cell_start[:-1].copy()
    first, last = np.empty(3, np.int64), np.empty(3, np.int64)
    for f in range(faces.shape[0]):
        a, b, c = vertices[faces[f, 0]], vertices[faces[f, 1]], vertices[faces[f, 2]]
        for axis in range(3):
            lo = min(min(a[axis], b[axis]), c[axis]) - reach
            hi = max(max(a[axis], b[axis]), c[axis]) + reach
            first[axis] = max(int(np.floor((lo - origin[axis]) / cell)), 0)
            last[axis] = min(int(np.floor((hi - origin[axis]) / cell)), shape[axis] - 1)
        for iz in range(first[2], last[2] + 1):
            z = origin[2] + (iz + 0.5) * cell
            for iy in range(first[1], last[1] + 1):
                y = origin[1] + (iy + 0.5) * cell
                for ix in range(first[0], last[0] + 1):
                    x = origin[0] + (ix + 0.5) * cell
                    qx, qy, qz = _closest_point(x, y, z, a[0], a[1], a[2], b[0], b[1], b[2], c[0], c[1], c[2])
                    if (x - qx) ** 2 + (y - qy) ** 2 + (z - qz) ** 2 > reach * reach:
                        continue
                    k = ix + shape[0] * (iy + shape[1] * iz)
                    if fill:
                        cell_face[cursor[k]] = f
                        cursor[k] += 1
                    else:
                        cell_start[k + 1] += 1


def grid(vertices, faces, radius):
    """``(origin, cell, shape, cell_start, cell_face)`` of one surface for particles of radius at
    most ``radius`` (see the module's docstring)."""
    corners = vertices[faces]
    edge = np.median(np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=2))
    cell = max(2.0 * radius, float(edge), 1e-300)
    lo = vertices.min(axis=0) - radius
    extent = vertices.max(axis=0) + radius - lo
    while np.prod(np.floor(extent / cell) + 1) > MAX_CELLS:
        cell *= 1.25
    shape = (np.floor(extent / cell) + 1).astype(np.int64)
    reach = radius + 0.5 * np.sqrt(3.0) * cell
    cell_start = np.zeros(int(np.prod(shape)) + 1, np.int64)
    _register(vertices, faces, lo, cell, shape, reach, False, cell_start, np.zeros(0, np.int64))
    np.cumsum(cell_start, out=cell_start)
    cell_face = np.empty(cell_start[-1], np.int64)
    _register(vertices, faces, lo, cell, shape, reach, True, cell_start, cell_face)
    return lo, cell, shape, cell_start, cell_face


def mesh_arrays(surfaces, walls, radius):
    """`MeshArrays` of the surfaces ``[(vertices, faces)]`` (in their own frames) that are walls
    ``walls[m]``, for particles of radius at most ``radius``."""
    parts, grids = [], []
    offsets = np.zeros(4, np.int64)  # vertices, faces, edges, incidences before this surface
    for vertices, faces in surfaces:
        part = topology(vertices, faces)
        origin, cell, shape, cell_start, cell_face = grid(vertices, faces, radius)
        grids.append((origin, cell, shape, cell_start, cell_face + offsets[1]))
        nv, nf, ne = len(vertices), len(faces), len(part["edge_vertex"])
        for key in ("face", "edge_vertex", "vertex_owner"):
            part[key] = part[key] + (offsets[0] if key != "vertex_owner" else offsets[1])
        part["face_edge"] = part["face_edge"] + offsets[2]
        part["face_side"] = part["face_side"] + offsets[3]
        part["edge_face"] = part["edge_face"] + offsets[1]
        part["edge_face_start"] = part["edge_face_start"][1:] + offsets[3]
        part["vertex_edge"] = part["vertex_edge"] + offsets[2]
        part["vertex_edge_start"] = part["vertex_edge_start"][1:] + 2 * offsets[2]
        part["vertex"] = vertices
        parts.append(part)
        offsets += (nv, nf, ne, 3 * nf)

    def joined(key, empty):
        return np.ascontiguousarray(np.concatenate([p[key] for p in parts]) if parts else empty)

    start = lambda key: np.concatenate(([0], joined(key, np.zeros(0, np.int64)))).astype(np.int64)  # noqa: E731
    cell_counts = [len(g[3]) - 1 for g in grids]
    cell_start = np.zeros(1, np.int64)
    for g in grids:
        cell_start = np.concatenate((cell_start, g[3][1:] + cell_start[-1]))
    return MeshArrays(
        vertex=joined("vertex", np.zeros((0, 3))), face=joined("face", np.zeros((0, 3), np.int64)),
        face_normal=joined("face_normal", np.zeros((0, 3))), face_edge=joined("face_edge", np.zeros((0, 3), np.int64)),
        face_side=joined("face_side", np.zeros((0, 3), np.int64)),
        edge_vertex=joined("edge_vertex", np.zeros((0, 2), np.int64)), edge_face_start=start("edge_face_start"),
        edge_face=joined("edge_face", np.zeros(0, np.int64)), edge_inward=joined("edge_inward", np.zeros((0, 3))),
        vertex_edge_start=start("vertex_edge_start"), vertex_edge=joined("vertex_edge", np.zeros(0, np.int64)),
        vertex_owner=joined("vertex_owner", np.zeros(0, np.int64)), wall=np.asarray(walls, np.int64),
        grid_origin=np.array([g[0] for g in grids], float).reshape(-1, 3),
        grid_cell=np.array([g[1] for g in grids], float),
        grid_shape=np.array([g[2] for g in grids], np.int64).reshape(-1, 3),
        grid_offset=np.concatenate(([0], np.cumsum(cell_counts))).astype(np.int64),
        cell_start=cell_start, cell_face=np.ascontiguousarray(np.concatenate([g[4] for g in grids]) if grids
                                                               else np.zeros(0, np.int64)),
    )


# ---------------------------------------------------------------------------------------------
# contacts (compiled)
# ---------------------------------------------------------------------------------------------


@njit(inline="always")
def _side(x, e, incidence, mesh):
    """``s = (x̂ − a_e)·m``: where ``x̂`` lies across edge ``e`` from the face of ``incidence``
    (> 0: on the face's side)."""
    a = mesh.vertex[mesh.edge_vertex[e, 0]]
    m = mesh.edge_inward[incidence]
    return (x[0] - a[0]) * m[0] + (x[1] - a[1]) * m[1] + (x[2] - a[2]) * m[2]


@njit(inline="always")
def _projections(x, e, mesh):
    """``((x̂ − a)·(b − a), (x̂ − b)·(a − b), |b − a|)`` of edge ``e = (a, b)``: the first two
    are > 0 when ``x̂`` projects inside the segment."""
    a = mesh.vertex[mesh.edge_vertex[e, 0]]
    b = mesh.vertex[mesh.edge_vertex[e, 1]]
    dx, dy, dz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    return ((x[0] - a[0]) * dx + (x[1] - a[1]) * dy + (x[2] - a[2]) * dz,
            -((x[0] - b[0]) * dx + (x[1] - b[1]) * dy + (x[2] - b[2]) * dz), np.sqrt(dx * dx + dy * dy + dz * dz))


@njit(inline="always")
def _edge_contact(x, e, radius, mesh):
    """``(distance, q)`` of ``x̂`` from the interior of edge ``e`` when that is a contact (see the
    module's docstring), else ``(-1, x̂)``."""
    tolerance = TOLERANCE * radius
    ua, ub, length = _projections(x, e, mesh)
    if not (ua > -tolerance * length and ub > -tolerance * length):
        return -1.0, (x[0], x[1], x[2])
    for k in range(mesh.edge_face_start[e], mesh.edge_face_start[e + 1]):
        if _side(x, e, k, mesh) > tolerance:
            return -1.0, (x[0], x[1], x[2])
    a = mesh.vertex[mesh.edge_vertex[e, 0]]
    b = mesh.vertex[mesh.edge_vertex[e, 1]]
    t = min(max(ua / (ua + ub), 0.0), 1.0)
    q = (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2]))
    d = (x[0] - q[0], x[1] - q[1], x[2] - q[2])
    distance = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    return (distance, q) if distance < radius else (-1.0, q)


@njit(inline="always")
def _vertex_contact(x, v, radius, mesh):
    """Distance of ``x̂`` from vertex ``v`` when that is a contact, else −1."""
    tolerance = TOLERANCE * radius
    for k in range(mesh.vertex_edge_start[v], mesh.vertex_edge_start[v + 1]):
        e = mesh.vertex_edge[k]
        ua, ub, length = _projections(x, e, mesh)
        if (ua if mesh.edge_vertex[e, 0] == v else ub) > tolerance * length:
            return -1.0
    p = mesh.vertex[v]
    d = (x[0] - p[0], x[1] - p[1], x[2] - p[2])
    distance = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    return distance if distance < radius else -1.0


@njit(cache=True)
def _record(i, count, w, feature, distance, nx, ny, nz, rotation, radius, walls):
    """Store a contact (normal in the mesh frame, turned to the world's) in row ``i`` of the
    ``mesh_*`` arrays of ``walls`` unless this mesh already has one at the same point; returns the
    new count."""
    n = quat_rotate_one(rotation, (nx, ny, nz))
    same = (SAME_POINT * radius) ** 2
    for k in range(min(count, walls.mesh_gap.shape[1])):
        if walls.mesh_wall[i, k] != w:
            continue
        g = walls.mesh_gap[i, k]
        d = (distance * n[0] - g * walls.mesh_normal[i, k, 0], distance * n[1] - g * walls.mesh_normal[i, k, 1],
             distance * n[2] - g * walls.mesh_normal[i, k, 2])
        if d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= same:
            return count  # the same contact, met from a neighbouring feature
    if count < walls.mesh_gap.shape[1]:
        walls.mesh_wall[i, count] = w
        walls.mesh_feature[i, count] = feature
        walls.mesh_gap[i, count] = distance
        for c in range(3):
            walls.mesh_normal[i, count, c] = n[c]
    return count + 1


@njit(inline="always")
def _mesh_contacts_of(i, x, radius, m, walls, mesh, count, found):
    """Record sphere ``i``'s contacts (centre ``x``, radius ``radius``) with mesh ``m`` (its pose:
    the walls' state ``walls``) in row ``i`` of ``found`` (`_record`)."""
    w = mesh.wall[m]
    rotation = walls.rotation[w]
    xl = quat_rotate_inverse_one(rotation, (x[0] - walls.point[w, 0], x[1] - walls.point[w, 1],
                                            x[2] - walls.point[w, 2]))
    cell = mesh.grid_cell[m]
    k = 0
    stride = 1
    for c in range(3):
        index = np.floor((xl[c] - mesh.grid_origin[m, c]) / cell)
        if not (0.0 <= index < mesh.grid_shape[m, c]):
            return count
        k += int(index) * stride
        stride *= mesh.grid_shape[m, c]
    k += mesh.grid_offset[m]
    n_faces = mesh.face.shape[0]
    n_edges = mesh.edge_vertex.shape[0]
    tolerance = TOLERANCE * radius
    for slot in range(mesh.cell_start[k], mesh.cell_start[k + 1]):
        f = mesh.cell_face[slot]
        a = mesh.vertex[mesh.face[f, 0]]
        n = mesh.face_normal[f]
        s0 = (xl[0] - a[0]) * n[0] + (xl[1] - a[1]) * n[1] + (xl[2] - a[2]) * n[2]
        if abs(s0) >= radius:
            continue  # the whole triangle, edges and corners too, is out of reach
        inside = True
        for e in range(3):
            if not _side(xl, mesh.face_edge[f, e], mesh.face_side[f, e], mesh) > -tolerance:
                inside = False
        if inside:
            sign = 1.0 if s0 >= 0.0 else -1.0
            count = _record(i, count, w, f, abs(s0), sign * n[0], sign * n[1], sign * n[2], rotation, radius, found)
        for e in range(3):
            edge = mesh.face_edge[f, e]
            if mesh.edge_face[mesh.edge_face_start[edge]] != f:
                continue  # visited from its owner face
            distance, q = _edge_contact(xl, edge, radius, mesh)
            if distance > 0.0:
                scale = 1.0 / distance
                count = _record(i, count, w, n_faces + edge, distance, (xl[0] - q[0]) * scale,
                                (xl[1] - q[1]) * scale, (xl[2] - q[2]) * scale, rotation, radius, found)
        for corner in range(3):
            v = mesh.face[f, corner]
            if mesh.vertex_owner[v] != f:
                continue
            distance = _vertex_contact(xl, v, radius, mesh)
            if distance > 0.0:
                p = mesh.vertex[v]
                scale = 1.0 / distance
                count = _record(i, count, w, n_faces + n_edges + v, distance, (xl[0] - p[0]) * scale,
                                (xl[1] - p[1]) * scale, (xl[2] - p[2]) * scale, rotation, radius, found)
    return count


@njit(inline="always")
def sphere_contacts(i, x, radius, mesh, walls, found):
    """Write the mesh contacts of the sphere ``i`` (centre ``x``, radius ``radius``; none for
    radius 0) into row ``i`` of ``found``'s ``mesh_*`` arrays (the walls' state for a particle,
    `mesh_contacts`; a clump's own rows for its members, `dem.interactions.clump_walls`), the
    meshes posed as ``walls`` (the walls' state) has them: its slots, ``mesh_count[i]`` (which may
    exceed the slots) and ``mesh_most[i]``, the most it has been (the caller reports that)."""
    count = 0
    if radius > 0.0:
        for m in range(mesh.wall.shape[0]):
            count = _mesh_contacts_of(i, x, radius, m, walls, mesh, count, found)
    found.mesh_count[i] = count
    found.mesh_most[i] = max(found.mesh_most[i], count)


@njit(inline="always")
def mesh_contacts(lo, hi, st, bodies, mesh, walls):
    """Write the mesh contacts of particles ``lo ≤ i < hi`` into ``walls`` (`sphere_contacts`)."""
    for i in range(lo, hi):
        sphere_contacts(i, st.position[i], 0.5 * bodies.diameter[i], mesh, walls, walls)
