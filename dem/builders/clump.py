"""The ``[[clump]]`` builder: rigid clumps of member spheres (`dem.clumps`; docs/guide.md, Clumps).

A table names one template: a built-in shape (``dimer``, ``trimer``, ``tetrahedron``, ``rod``),
member spheres given in the scene (``spheres``: ``centers`` and ``radii``) or read from a CSV file
(``file``: columns ``x``, ``y``, ``z`` and ``radius`` or ``diameter``). Mass, centre of mass and
inertia come from the union of the members at ``density``; the body frame is the principal frame.

Its clumps are placed one of three ways: one clump at ``position``; ``count`` clumps at random
places and orientations in the box ``min``–``max`` (whole, without overlapping one another); or
one clump per row of a CSV file (``rows``: columns ``x``, ``y``, ``z`` of the centre of mass and
optionally ``qw``, ``qx``, ``qy``, ``qz``, the orientation of the template frame, and ``vx``,
``vy``, ``vz``). A template with no sphere, a radius that is not positive, or members that are
not all connected is an error naming the table and the key; nothing is built or written.

The box is filled one of two ways (``packing``). ``random`` (the default) adds the clumps one
after another, each at the first of ``attempts`` random places where it overlaps none placed
before it (random sequential addition, `random_placement`): the box is full at a solid fraction
of about 0.2. ``dense`` draws them all at once, overlapping, and pushes them apart
(`dem.packing.dense_clump_packing`: FIRE on the clumps' positions and rotations until every
member overlap is below `OVERLAP_TOLERANCE` of a member diameter): ``count`` clumps, or the
``packing_fraction`` φ of the box, ``count = round(φ V_box / V)`` with ``V`` the volume of the
union of the members, up to about 0.65 between walls and 0.68 periodic (`DENSE_MEASURED`; more
than `DENSE_FRACTION_LIMIT` is refused when the scene is read). Along
the ``periodic`` axes the box spans a periodic ``[cell]`` and the clumps fill it across its
faces. A packing that cannot be relaxed within `MAX_STEPS` is an error naming
``packing_fraction`` (or ``count``).

With ``bonded = true`` the table's clumps whose members touch are bonded, a bonded aggregate of
shaped grains: two clumps get one bond when a member of one and a member of the other are within
``bond_gap_tolerance`` × their mean diameter of touching (`dem.packing.bond_pairs`, without
periodic images), under the bond law of `dem.builders.binders` between the clumps' centres of
mass (the law's rest length ``r0`` is that distance; its ``min(D_i, D_j)`` is taken over the
closest such member pair, whose diameters size the binder's cross-section).
"""

import warnings
from pathlib import Path

import numpy as np
from numba import njit

from ..clumps import Template, body_frame, built_in, built_in_problem, clump_reach, template_problem
from ..packing import Shape, bond_pairs, dense_clump_packing
from ..rotations import quat_from_rotvec, quat_matrix
from ..schema import REQUIRED, Key, TableError, at_least, non_negative, positive, too_many
from .assembly import MAX_BOND_GAP_TOLERANCE
from .binders import KEYS as BINDER_KEYS, bond_properties, check_binder
from .particles import PackingError, read_points_csv

SHAPES = ("dimer", "trimer", "tetrahedron", "rod")
PLACEMENTS = ("position", "count", "rows")
PACKINGS = ("random", "dense")
#: Largest member overlap a dense packing leaves, over the pair's mean diameter (and excess over
#: a wall, over the member's diameter): `dem.packing.random_packing`'s default (the key texts
#: quote it).
OVERLAP_TOLERANCE = 1e-4
#: Most relaxation steps of a dense packing before it counts as jammed.
MAX_STEPS = 20_000
#: Highest solid fractions a dense packing reached (2000 clumps of the built-in shapes at their
#: default distance in a cube, seed 0, steps of 0.01; walls, or periodic along x, y and z): the
#: key texts quote them (docs/guide.md, Clumps, has the table).
DENSE_MEASURED = ("0.65 of the box between walls (0.62 with 300 clumps) and 0.68 in a periodic cell, for dimers, "
                  "trimers and tetrahedra")
#: the densest solid fraction a dense packing may ask for (above what it reaches, `DENSE_MEASURED`)
DENSE_FRACTION_LIMIT = 0.7


def _fraction(value):
    return None if 0.0 < value < 1.0 else "must be in (0, 1)"


KEYS = {
    "template": Key("str", REQUIRED, "the clump's member spheres: a built-in shape (dimer: two members distance apart; "
                    "trimer: three at the corners of an equilateral triangle of side distance; tetrahedron: four at "
                    "the corners of a regular tetrahedron of edge distance; rod: spheres members along a line, the "
                    "rod aspect times as long as wide), spheres (centers and radii given here) or file (a CSV file "
                    "of members)", choices=SHAPES + ("spheres", "file")),
    "radius": Key("float", 0.5, "member radius of a built-in shape", "length", positive),
    "distance": Key("float", None, "distance between member centres of a dimer, trimer or tetrahedron (default: "
                    "radius, members overlapping by half a diameter)", "length", positive),
    "spheres": Key("int", 3, "number of member spheres of a rod", "", at_least(1)),
    "aspect": Key("float", 2.0, "a rod's length over its diameter (at most spheres: touching members)", "",
                  positive),
    "centers": Key("vec3_list", None, "member centres (template = spheres), in the template frame", "length"),
    "radii": Key("float_list", None, "member radii (template = spheres)", "length"),
    "template_file": Key("path", None, "members (template = file): CSV with a header row, columns x, y, z and "
                         "radius (or diameter), in the template frame; relative to the scene file's folder", ""),
    "density": Key("float", 1.0, "mass density of the union of the members", "mass/length³", positive),
    "position": Key("vec3", None, "centre of mass of one clump", "length"),
    "rotation_vector": Key("vec3", (0.0, 0.0, 0.0), "orientation of one clump's template frame, a rotation vector θ",
                           ""),
    "count": Key("int", None, "number of clumps placed at random places and orientations in the box min–max, "
                 "without overlapping one another", "", at_least(1)),
    "packing": Key("str", "random", "how the clumps fill the box min–max: random (count clumps one after another, "
                   "each at a free random place; the box is full at a solid fraction of about 0.2) or dense (count "
                   "clumps, or packing_fraction of the box, all at once at random, then pushed apart until no member "
                   f"overlap exceeds 1e-4 of a diameter; reached: {DENSE_MEASURED})", choices=PACKINGS),
    "packing_fraction": Key("float", None, "instead of count, the target solid fraction φ of a dense packing: "
                            f"round(φ V_box / V) clumps, V the volume of the union of the members (≤ "
                            f"{DENSE_FRACTION_LIMIT}; reached: {DENSE_MEASURED}; a packing that jams below it is "
                            "refused at build naming this key)", "", _fraction),
    "periodic": Key("bool3", (False, False, False), "axes [x, y, z] along which a dense packing fills the box across "
                    "its faces, for a periodic [cell] (packing = dense; along these axes the box must span the "
                    "cell)"),
    "min": Key("vec3", None, "the box's lowest corner (count, packing_fraction)", "length"),
    "max": Key("vec3", None, "the box's highest corner (count, packing_fraction)", "length"),
    "rows": Key("path", None, "one clump per row: CSV with a header row, columns x, y, z (centre of mass) and "
                "optionally qw, qx, qy, qz (orientation of the template frame, a quaternion, scalar first) and vx, "
                "vy, vz (velocity); relative to the scene file's folder", ""),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "initial velocity (added to the rows' velocities)", "length/time"),
    "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial angular velocity Ω", "1/time"),
    "seed": Key("int", 0, "seed of the random places and orientations (count, packing_fraction)", ""),
    "attempts": Key("int", 100, "random places tried for each clump before the box counts as full (count, "
                    "packing = random)", "", at_least(1)),
    "bonded": Key("bool", False, "bond the table's clumps whose members touch (within bond_gap_tolerance), one bond "
                  "per pair of clumps between their centres of mass, under the bond law binder"),
    "bond_gap_tolerance": Key("float", 0.01, "bond clumps with a member pair whose surface gap is at most this × "
                              "the pair's mean diameter (bonded)", "", non_negative),
    **BINDER_KEYS,
}


class TemplateError(TableError):
    """A template that makes no clump; ``key`` names the key at fault."""


def template(p):
    """The `dem.clumps.Template` of a table; raises `TemplateError`."""
    kind = p["template"]
    if kind in SHAPES:
        problem = built_in_problem(kind, p["radius"], p["distance"], p["spheres"], p["aspect"])
        if problem:
            raise TemplateError(*problem)
        return built_in(kind, p["radius"], p["distance"], p["spheres"], p["aspect"])
    if kind == "spheres":
        for key in ("centers", "radii"):
            if p[key] is None:
                raise TemplateError(key, "is required with template = spheres")
        centres, radii, key = np.array(p["centers"], float).reshape(-1, 3), np.array(p["radii"], float), "radii"
        if len(centres) != len(radii):
            raise TemplateError("radii", f"{len(radii)} radii for {len(centres)} centers")
    else:
        if p["template_file"] is None:
            raise TemplateError("template_file", "is required with template = file")
        try:
            path = Path(p["template_file"])
            centres, diameter, _ = read_points_csv(path) if path.is_file() else (None, None, None)
        except PackingError as error:
            raise TemplateError("template_file", f"{p['template_file']}: {error}") from None
        except (OSError, UnicodeDecodeError) as error:
            raise TemplateError("template_file", f"{p['template_file']}: cannot read it ({error})") from None
        if centres is None:
            raise TemplateError("template_file", f"{p['template_file']}: no such file")
        radii, key = 0.5 * diameter, "template_file"
    problem = template_problem(centres, radii)
    if problem:
        prefix = f"{p['template_file']}: " if key == "template_file" else ""
        raise TemplateError(key, prefix + problem)
    return Template(centres, radii)


def read_rows(path):
    """``(position (n, 3), orientation (n, 4), velocity (n, 3))`` of a rows file (see the module's
    docstring); raises ValueError saying what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise ValueError("no such file")
    try:
        with open(path, encoding="utf-8") as file:
            names = [name.strip().lower() for name in file.readline().split(",")]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")   # (a file of no rows: reported below)
            table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read it ({getattr(error, 'strerror', None) or error})") from None
    except ValueError as error:
        raise ValueError(f"not a table of numbers ({str(error).splitlines()[0]})") from None
    if table.size and table.shape[1] != len(names):
        raise ValueError(f"{table.shape[1]} values per row for {len(names)} column names")
    if not table.size:
        raise ValueError("holds no row")
    problem = too_many(len(table))
    if problem:
        raise ValueError(problem)
    columns = {name: table[:, k] for k, name in enumerate(names)}

    def group(keys, default):
        given = [key for key in keys if key in columns]
        if given and len(given) < len(keys):
            raise ValueError(f"columns {', '.join(given)} without the others (give {', '.join(keys)})")
        return np.stack([columns[key] for key in keys], axis=1) if given else np.broadcast_to(default, (len(table),
                                                                                                         len(keys)))

    missing = [key for key in ("x", "y", "z") if key not in columns]
    if missing:
        raise ValueError(f"no column {', '.join(repr(m) for m in missing)} (columns: {', '.join(names)})")
    position = group(("x", "y", "z"), 0.0)
    orientation = group(("qw", "qx", "qy", "qz"), np.array([1.0, 0.0, 0.0, 0.0]))
    velocity = group(("vx", "vy", "vz"), 0.0)
    for name, values in (("position", position), ("orientation", orientation), ("velocity", velocity)):
        bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
        if len(bad):
            raise ValueError(f"row {bad[0] + 1}: {name} is not a finite number")
    length = np.linalg.norm(orientation, axis=1)
    bad = np.flatnonzero(~(length > 0) | ~np.isfinite(length))
    if len(bad):
        raise ValueError(f"row {bad[0] + 1}: the quaternion qw, qx, qy, qz is zero")
    return position.copy(), orientation / length[:, None], velocity.copy()


def check(p):
    if p["count"] is not None and p["packing_fraction"] is not None:
        return "packing_fraction", "give count or packing_fraction, one of them"
    given = [key for key in PLACEMENTS + ("packing_fraction",) if p[key] is not None]
    if len(given) != 1:
        return "position", f"give one of {', '.join(PLACEMENTS)} (got {', '.join(given) or 'none'})"
    filled = p["count"] is not None or p["packing_fraction"] is not None
    if p["packing"] == "dense" and not filled:
        return "packing", (f"'dense' fills the box min–max with count clumps or packing_fraction: give one of them, "
                           f"not {given[0]}")
    if p["packing"] != "dense":
        for key in ("packing_fraction", "periodic"):
            if p[key] is not None and p[key] != KEYS[key].default:
                return key, "is a key of packing = 'dense': set it to pack the clumps densely"
    try:
        members = template(p)
    except TemplateError as error:
        return error.key, str(error)
    if filled:
        for key in ("min", "max"):
            if p[key] is None:
                return key, f"is required with {given[0]}"
        problem = too_many(p["count"]) if p["count"] is not None else None
        if problem:
            return "count", problem
        mass, _, centre, _, _ = body_frame(members, p["density"])
        reach = clump_reach(members.centres - centre, members.radii)
        if not all(hi - lo >= 2.0 * reach for lo, hi in zip(p["min"], p["max"])):
            return "max", (f"the box must be at least the clump's span, {2 * reach:g}, along every axis (min "
                           f"{list(p['min'])})")
        count, fraction = dense_count(p, mass / p["density"])
        if not count >= 0.5:
            return "packing_fraction", (f"gives no clump (packing_fraction × box volume / clump volume = "
                                        f"{count:.3g}): ask for more or enlarge the box")
        problem = too_many(count)
        if problem:
            return "packing_fraction", problem
        if p["packing"] == "dense" and fraction > DENSE_FRACTION_LIMIT:
            return ("count" if p["count"] is not None else "packing_fraction"), (
                f"asks for a solid fraction of {fraction:.3f}; a dense packing of clumps reaches at most "
                f"{DENSE_FRACTION_LIMIT} (in practice {DENSE_MEASURED})")
        if not fraction < 1.0:
            return "count", (f"{count} clumps of volume {mass / p['density']:.4g} fill {fraction:.3g} of the box: "
                             f"lower count or enlarge the box")
    if p["rows"] is not None:
        try:
            read_rows(p["rows"])
        except ValueError as error:
            return "rows", f"{p['rows']}: {error}"
    if not p["bonded"]:
        given = [key for key in BINDER_KEYS if key != "binder" and p[key] is not None]
        if given:
            return given[0], "is a bond-law key: set bonded = true to bond the clumps"
        return None
    if p["bond_gap_tolerance"] > MAX_BOND_GAP_TOLERANCE:
        return "bond_gap_tolerance", (f"must be at most {MAX_BOND_GAP_TOLERANCE:g} (a gap of one mean diameter), got "
                                      f"{p['bond_gap_tolerance']:g}")
    return check_binder(p)


def dense_count(p, volume):
    """``(count, solid fraction)`` of a table filling its box with clumps of ``volume``: the count
    given and the fraction it makes, or ``round(packing_fraction × box volume / volume)`` and the
    target (the count a float while it may be too large to round)."""
    box = float(np.prod(np.subtract(p["max"], p["min"])))
    if p["count"] is not None:
        return p["count"], p["count"] * volume / box
    count = p["packing_fraction"] * box / volume
    return (int(round(count)) if count <= 2 ** 62 else count), p["packing_fraction"]


def random_placement(arms, radii, count, low, high, rng, attempts):
    """``(position (count, 3), orientation (count, 4))`` of clumps whose members are at ``arms``
    from the centre of mass (template frame) with ``radii``: random places (centres of mass in the
    box shrunk by the clump's reach) and uniform random orientations of the template frame, each
    tried against the members of the clumps placed before it whose centres of mass are within two
    reaches (`_overlaps`: a grid of cells of that edge, the cost grows with the count, not its
    square); raises ValueError when a clump finds no free place."""
    reach = clump_reach(arms, radii)
    low, high = np.asarray(low) + reach, np.asarray(high) - reach
    edge = 2.0 * reach
    radii = np.ascontiguousarray(radii, float)
    buckets = 1 << max(4, int(2 * count).bit_length())
    head, link = np.full(buckets, -1, np.int64), np.full(count, -1, np.int64)
    placed = np.empty((count, len(radii), 3))
    position, orientation = np.empty((count, 3)), np.empty((count, 4))
    for k in range(count):
        for _ in range(attempts):
            centre = rng.uniform(low, high)
            q = rng.standard_normal(4)
            q /= np.linalg.norm(q)
            q *= 1.0 if q[0] >= 0 else -1.0
            members = centre + arms @ quat_matrix(q).T
            cell = np.floor(centre / edge).astype(np.int64)
            if not _overlaps(members, radii, placed, head, link, cell):
                break
        else:
            raise ValueError(f"placed {k} of {count} clumps without overlaps, then found no free place in "
                             f"{attempts} attempts: enlarge the box or lower count")
        position[k], orientation[k], placed[k] = centre, q, members
        bucket = _bucket(cell[0], cell[1], cell[2], buckets)
        link[k], head[bucket] = head[bucket], k
    return position, orientation


@njit(inline="always")
def _bucket(x, y, z, buckets):
    """The bucket of the grid cell ``(x, y, z)`` among ``buckets`` (a power of two): a spatial hash;
    the cells that share a bucket share its chain."""
    return ((x * 73856093) ^ (y * 19349663) ^ (z * 83492791)) & (buckets - 1)


@njit(cache=True)
def _overlaps(members, radii, placed, head, link, cell):
    """Whether a member (``members (m, 3)``, ``radii (m,)``) overlaps a member of a clump placed
    before (``placed (n, m, 3)``) whose centre of mass is in one of the 27 grid cells about
    ``cell``: the chains of their buckets (``head``, ``link``; a chain may hold clumps of other
    cells too, which are farther and cannot overlap). A gap is ``|x_a − x_b| − r_a − r_b``, in the
    order numpy's ``norm`` sums the squares."""
    m = radii.shape[0]
    for a in range(-1, 2):
        for b in range(-1, 2):
            for c in range(-1, 2):
                k = head[_bucket(cell[0] + a, cell[1] + b, cell[2] + c, head.shape[0])]
                while k >= 0:
                    for s in range(m):
                        for t in range(m):
                            dx = members[s, 0] - placed[k, t, 0]
                            dy = members[s, 1] - placed[k, t, 1]
                            dz = members[s, 2] - placed[k, t, 2]
                            if np.sqrt(dx * dx + dy * dy + dz * dz) - radii[s] - radii[t] < 0.0:
                                return True
                    k = link[k]
    return False


def build(system, p):
    """Clumps of one template (see the module's docstring): rigid bodies of the union of the
    members at ``density``, body frame the principal frame, the members their sites. ``position``
    and ``rows`` give the centre of mass and the orientation of the template frame; ``count`` (or
    ``packing_fraction``) places clumps at random in the box ``min``–``max`` (seeded by ``seed``), by
    random sequential addition or, with ``packing = "dense"``, packed densely."""
    members = template(p)
    frame = body_frame(members, p["density"])
    velocity = np.asarray(p["velocity"], float)
    if p["position"] is not None:
        position = np.asarray(p["position"], float)[None]
        orientation = quat_from_rotvec(np.asarray(p["rotation_vector"], float))[None]
    elif p["rows"] is not None:
        position, orientation, rows_velocity = read_rows(p["rows"])
        velocity = velocity + rows_velocity
    elif p["packing"] == "dense":
        rng = np.random.default_rng([p["seed"], 0xC1C1])
        count, _ = dense_count(p, frame[0] / p["density"])
        low, high = np.asarray(p["min"], float), np.asarray(p["max"], float)
        box = Shape("box", tuple(0.5 * (high - low)), tuple(0.5 * (low + high)))
        try:
            position, orientation = dense_clump_packing(box, members.centres - frame[2], members.radii, count, rng,
                                                        OVERLAP_TOLERANCE, MAX_STEPS, p["periodic"])
        except ValueError as error:
            key = "count" if p["count"] is not None else "packing_fraction"
            raise TableError(key, f"{error}: lower {key} (reached: {DENSE_MEASURED})") from None
    else:
        rng = np.random.default_rng([p["seed"], 0xC1C1])
        position, orientation = random_placement(members.centres - frame[2], members.radii, p["count"], p["min"],
                                                 p["max"], rng, p["attempts"])
    bodies = system.add_clumps(members, position, density=p["density"], orientation=orientation, velocity=velocity,
                               angular_velocity=p["angular_velocity"], frame=frame, group=system.n_bodies)
    if p["bonded"]:
        first, second, diameters = touching_clumps(position, orientation, members.centres - frame[2], members.radii,
                                                   p["bond_gap_tolerance"])
        m = len(first)
        system.add_bonds(bodies[first], bodies[second],
                         **bond_properties(p, np.arange(m), m + np.arange(m), np.concatenate([position[first],
                                                                                              position[second]]),
                                           diameters.T.reshape(-1)))


def touching_clumps(position, orientation, arms, radii, gap_tolerance):
    """``(first (m,), second (m,), diameters (m, 2))`` of the pairs of clumps ``first < second``
    (their centres of mass at ``position``, template frames turned by ``orientation``, members at
    ``arms`` from the centre of mass with ``radii``) of which a member of one and a member of the
    other have a surface gap of at most ``gap_tolerance`` × their mean diameter (the module's
    docstring), in order, with the diameters of each pair's closest such members (the smallest
    gap; the lowest member numbers of equal gaps)."""
    count, size = len(position), len(radii)
    centres = (position[:, None] + np.einsum("njk,mk->nmj", quat_matrix(orientation), arms)).reshape(-1, 3)
    diameter = np.tile(2.0 * radii, count)
    pairs = bond_pairs(centres, diameter, gap_tolerance)
    pairs = pairs[pairs[:, 0] // size != pairs[:, 1] // size]   # (members of one clump are not bonded)
    i, j = pairs.T
    gap = np.linalg.norm(centres[i] - centres[j], axis=1) - 0.5 * (diameter[i] + diameter[j])
    first, second = i // size, j // size
    order = np.lexsort((j, i, gap, second, first))   # each pair of clumps, its closest members first
    first, second, i, j = first[order], second[order], i[order], j[order]
    keep = np.ones(len(order), bool)
    keep[1:] = (first[1:] != first[:-1]) | (second[1:] != second[:-1])
    return first[keep], second[keep], np.stack([diameter[i[keep]], diameter[j[keep]]], axis=1)
