"""Sphere packings inside a shape and binder bonds between near neighbours: the algorithms behind
the ``[[assembly]]`` builder (`dem.builders.assembly`, docs/theory.md §5).

Shapes (`Shape`, made by `make_shape`), all centred at ``center``:

* ``box`` — edges ``size = [Lx, Ly, Lz]`` along x, y, z;
* ``sphere`` — ``diameter``;
* ``cylinder`` — ``diameter`` and ``height``, axis along z;
* ``torus`` — a solid torus in the x–y plane: ``diameter`` D of the centre-line circle (major
  diameter) and ``tube_diameter`` d ≤ D; volume ``π² D d²/4``.

A sphere is *inside* a shape when all of it is (its centre is at least its radius from the
boundary).

Packings return ``(positions (n, 3), diameters (n,))``:

* `lattice_packing` — simple cubic, face-centred cubic or hexagonal close-packed lattice of
  touching spheres (nearest-neighbour distance = diameter), axes along x, y, z (HCP: close-packed
  planes normal to z, ABAB stacking), clipped to the shape. Along the flat walls of a box (and the
  end caps of a cylinder) the lattice starts one radius from a wall and is then centred, so that as
  many layers fit as possible; across curved walls a lattice site sits at the centre.
* `random_packing` — a random dense packing of polydisperse spheres (see its docstring for the
  method, the packing fractions it reaches and the residual overlap).
* `dense_clump_packing` — the same method for rigid clumps of one template in a box (the
  ``[[clump]]`` builder's ``packing = "dense"``): FIRE on the clumps' positions and rotations,
  the members' overlap forces summed on each clump as a force and a torque.

`bond_pairs` finds the pairs whose surface gap is below a tolerance relative to the pair's mean
diameter.

scipy is imported inside the functions that use it: importing it costs about a second, which
every run would pay for the ``[[assembly]]`` builder's keys alone.
"""

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .cell import box_cell, minimum_image, minimum_image_array
from .clumps import clump_reach
from .rotations import quat_from_rotvec_one, quat_multiply_one, quat_normalize_one, quat_rotate_one

SHAPES = ("box", "sphere", "cylinder", "torus")
LATTICES = ("sc", "fcc", "hcp")
DISTRIBUTIONS = ("mono", "uniform", "lognormal")
_BOX, _SPHERE, _CYLINDER, _TORUS = range(4)

#: Which dimension keys each shape takes.
SHAPE_DIMENSIONS = {
    "box": ("size",),
    "sphere": ("diameter",),
    "cylinder": ("diameter", "height"),
    "torus": ("diameter", "tube_diameter"),
}

#: Highest packing fraction `random_packing` is asked for (monodisperse random close packing is
#: ≈ 0.64; with the walls the method jams lower: 0.61 monodisperse, 0.62 polydisperse for
#: 2·10⁴ spheres, see `random_packing`).
RANDOM_FRACTION_LIMIT = 0.64


# ---------------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    """A solid region: ``kind`` in `SHAPES`, ``params`` its half-dimensions (box: half edges;
    sphere: radius; cylinder: radius, half height; torus: major radius R, tube radius a), and
    ``center``."""

    kind: str
    params: tuple
    center: tuple = (0.0, 0.0, 0.0)

    @property
    def code(self):
        return SHAPES.index(self.kind)

    @property
    def volume(self):
        p = self.params
        if self.kind == "box":
            return 8.0 * p[0] * p[1] * p[2]
        if self.kind == "sphere":
            return 4.0 / 3.0 * math.pi * p[0] ** 3
        if self.kind == "cylinder":
            return math.pi * p[0] ** 2 * 2.0 * p[1]
        return 2.0 * math.pi ** 2 * p[0] * p[1] ** 2

    @property
    def half_extent(self):
        """Half edges of the bounding box, ``(3,)``."""
        p = self.params
        if self.kind == "box":
            return np.array(p, float)
        if self.kind == "sphere":
            return np.full(3, p[0])
        if self.kind == "cylinder":
            return np.array([p[0], p[0], p[1]])
        return np.array([p[0] + p[1], p[0] + p[1], p[1]])

    @property
    def flat_axes(self):
        """Axes bounded by a pair of flat walls (the lattice is fitted between them)."""
        return {"box": (0, 1, 2), "cylinder": (2,)}.get(self.kind, ())

    @property
    def inscribed_diameter(self):
        """Diameter of the largest sphere that fits."""
        p = self.params
        if self.kind == "box":
            return 2.0 * min(p)
        if self.kind == "cylinder":
            return 2.0 * min(p)
        return 2.0 * p[-1]

    def excess(self, relative, radius):
        """How far each sphere sticks out of the shape (≤ 0: inside), ``(n,)``; ``relative`` are
        centres minus ``center``."""
        relative = np.asarray(relative, float)
        p = self.params
        if self.kind == "box":
            return np.max(np.abs(relative) - np.asarray(p), axis=1) + radius
        if self.kind == "sphere":
            return np.linalg.norm(relative, axis=1) + radius - p[0]
        rho = np.hypot(relative[:, 0], relative[:, 1])
        if self.kind == "cylinder":
            return np.maximum(rho - p[0], np.abs(relative[:, 2]) - p[1]) + radius
        return np.hypot(rho - p[0], relative[:, 2]) + radius - p[1]

    def contains(self, positions, diameters, tolerance=1e-9):
        """Whether each sphere lies entirely inside (up to ``tolerance`` × its diameter)."""
        diameters = np.broadcast_to(np.asarray(diameters, float), (len(positions),))
        excess = self.excess(np.asarray(positions) - np.asarray(self.center), 0.5 * diameters)
        return excess <= tolerance * diameters


def make_shape(kind, *, size=None, diameter=None, height=None, tube_diameter=None, center=(0.0, 0.0, 0.0)):
    """A `Shape` from the scene's dimensions; raises ValueError naming a missing, unused or
    non-physical dimension."""
    if kind not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {kind!r}")
    given = {"size": size, "diameter": diameter, "height": height, "tube_diameter": tube_diameter}
    problem = shape_problem(kind, given)
    if problem:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    if kind == "box":
        params = tuple(0.5 * float(c) for c in size)
    elif kind == "sphere":
        params = (0.5 * diameter,)
    elif kind == "cylinder":
        params = (0.5 * diameter, 0.5 * height)
    else:
        params = (0.5 * diameter, 0.5 * tube_diameter)
    return Shape(kind, params, tuple(float(c) for c in center))


def shape_problem(kind, given):
    """``(key, problem)`` for the dimensions of a shape, or None."""
    needed = SHAPE_DIMENSIONS[kind]
    for name, value in given.items():
        if name in needed and value is None:
            return name, f"is required for shape = {kind!r}"
        if name not in needed and value is not None:
            return name, f"is not used by shape = {kind!r} (it takes {', '.join(needed)})"
    if kind == "box" and min(given["size"]) <= 0:
        return "size", f"edges must be positive, got {list(given['size'])}"
    for name in needed:
        if name != "size" and given[name] <= 0:
            return name, f"must be positive, got {given[name]!r}"
    if kind == "torus" and given["tube_diameter"] > given["diameter"]:
        return "tube_diameter", (f"must not exceed the major diameter {given['diameter']:g} (the tube would "
                                 f"cross the axis), got {given['tube_diameter']:g}")
    return None


def _as_shape(shape, dimensions):
    if isinstance(shape, Shape):
        if any(v is not None for k, v in dimensions.items() if k != "center"):
            raise ValueError("give either a Shape or a shape name with its dimensions, not both")
        return shape
    return make_shape(shape, **{k: v for k, v in dimensions.items() if v is not None})


def packing_fraction(positions, diameters, volume):
    """Volume of the spheres over ``volume`` (a number or a `Shape`). ``positions`` is accepted
    for symmetry with the packers and not used."""
    if isinstance(volume, Shape):
        volume = volume.volume
    return float(np.sum(np.pi / 6.0 * np.asarray(diameters, float) ** 3) / volume)


# ---------------------------------------------------------------------------------------------
# Lattices
# ---------------------------------------------------------------------------------------------

def lattice_cell(lattice, diameter):
    """``(cell edges (3,), basis (k, 3))`` of an orthorhombic cell of the lattice of touching
    spheres of ``diameter``."""
    d = float(diameter)
    if lattice == "sc":
        return np.full(3, d), np.zeros((1, 3))
    if lattice == "fcc":
        a = math.sqrt(2.0) * d
        return np.full(3, a), a * np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    if lattice == "hcp":
        layer = d * math.sqrt(2.0 / 3.0)
        row = d * math.sqrt(3.0)
        basis = np.array([[0, 0, 0], [0.5 * d, 0.5 * row, 0],
                          [0.5 * d, d / (2 * math.sqrt(3.0)), layer], [0, 2 * d / math.sqrt(3.0), layer]])
        return np.array([d, row, 2 * layer]), basis
    raise ValueError(f"lattice must be one of {', '.join(LATTICES)}, got {lattice!r}")


def _lattice_sites(cell, basis, origin, low, high):
    """All sites ``origin + cell·k + basis`` with ``low ≤ site ≤ high`` (per axis)."""
    ranges = [np.arange(math.floor((low[c] - origin[c]) / cell[c]) - 1,
                        math.ceil((high[c] - origin[c]) / cell[c]) + 1) for c in range(3)]
    corners = np.stack(np.meshgrid(*ranges, indexing="ij"), axis=-1).reshape(-1, 1, 3) * cell + origin
    sites = (corners + basis[None]).reshape(-1, 3)
    keep = np.all((sites >= low) & (sites <= high), axis=1)
    return sites[keep]


def lattice_packing(lattice, diameter, shape, *, size=None, shape_diameter=None, height=None, tube_diameter=None,
                    center=None, periodic=(False, False, False)):
    """Spheres of ``diameter`` on an ``sc``, ``fcc`` or ``hcp`` lattice (touching neighbours)
    clipped to ``shape`` (a `Shape`, or a name with its dimensions: ``size`` for a box,
    ``shape_diameter`` [, ``height`` | ``tube_diameter``] otherwise) centred at ``center``.

    Returns ``(positions (n, 3), diameters (n,))``, sites ordered by cell. Example::

        >>> x, d = lattice_packing("fcc", 1.0, "box", size=(4, 4, 4))
        >>> len(x)    # 2 × 2 × 2 conventional cells with their faces: 3³ + 3·2²·3
        63

    A box may be ``periodic`` along some axes (three flags): there its edge must be a whole
    number of lattice cells, which it holds from face to face (the sites on the far face are the
    images of those on the near one and are left out).
    """
    shape = _as_shape(shape, dict(size=size, diameter=shape_diameter, height=height, tube_diameter=tube_diameter,
                                  center=center))
    if center is not None:
        shape = Shape(shape.kind, shape.params, tuple(float(c) for c in center))
    if not diameter > 0:
        raise ValueError(f"diameter must be positive, got {diameter!r}")
    radius = 0.5 * diameter
    cell, basis = lattice_cell(lattice, diameter)
    half = shape.half_extent
    period = _box_period(shape, periodic)
    on = period > 0.0
    for axis in np.flatnonzero(on):
        cells = period[axis] / cell[axis]
        if abs(cells - round(cells)) > 1e-9 * cells or round(cells) < 1:
            raise ValueError(f"a box periodic along {'xyz'[axis]} must hold a whole number of {lattice} cells of edge "
                             f"{cell[axis]:.12g} there, got an edge of {period[axis]:g} ({cells:.6g} cells)")
    slack = 1e-9 * diameter
    low, high = -(half - radius), half - radius
    low[on], high[on] = -half[on], half[on] - 2.0 * slack  # (the far face's sites are images of the near one's)
    if np.any(low > high + 1e-12 * diameter):
        return np.zeros((0, 3)), np.zeros(0)
    origin = np.zeros(3)
    for axis in shape.flat_axes:
        origin[axis] = low[axis]
    sites = _lattice_sites(cell, basis, origin, low - slack, high + slack)
    test_shape = Shape(shape.kind, tuple(np.where(on, np.inf, shape.params)), shape.center) if on.any() else shape
    sites = sites[test_shape.excess(sites, radius) <= slack]
    for axis in shape.flat_axes:
        if len(sites) and not on[axis]:
            sites[:, axis] += 0.5 * (high[axis] - sites[:, axis].max() - (sites[:, axis].min() - low[axis]))
    return sites + np.asarray(shape.center), np.full(len(sites), float(diameter))


def fcc_block(n_target, diameter=1.0):
    """Positions ``(4m³, 3)`` of an FCC block of ``m³`` conventional cells, ``m = round((n/4)^⅓)``
    (about ``n_target`` spheres, roughly cubic), touching spheres of ``diameter``, centred at
    the origin. For benchmarks: bond every touching pair with ``bond_pairs(x, d, 1e-6)``."""
    m = max(1, int(round((n_target / 4.0) ** (1.0 / 3.0))))
    cell, basis = lattice_cell("fcc", diameter)
    k = np.arange(m)
    corners = np.stack(np.meshgrid(k, k, k, indexing="ij"), axis=-1).reshape(-1, 1, 3) * cell
    positions = (corners + basis[None]).reshape(-1, 3)
    return positions - 0.5 * (positions.min(axis=0) + positions.max(axis=0))


# ---------------------------------------------------------------------------------------------
# Random packings
# ---------------------------------------------------------------------------------------------

def distribution_problem(distribution, particle_diameter, diameter_min, diameter_max, diameter_sigma):
    """``(key, problem)`` for the diameter distribution parameters, or None."""
    if distribution not in DISTRIBUTIONS:
        return "distribution", f"must be one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}"
    needed = {"mono": ("particle_diameter",), "uniform": ("diameter_min", "diameter_max"),
              "lognormal": ("particle_diameter", "diameter_sigma", "diameter_min", "diameter_max")}[distribution]
    given = {"particle_diameter": particle_diameter, "diameter_min": diameter_min, "diameter_max": diameter_max,
             "diameter_sigma": diameter_sigma}
    for name, value in given.items():
        if name in needed and value is None:
            return name, f"is required for distribution = {distribution!r}"
        if name not in needed and value is not None:
            return name, f"is not used by distribution = {distribution!r} (it takes {', '.join(needed)})"
        if value is not None and not value > 0:
            return name, f"must be positive, got {value!r}"
    if diameter_min is not None and diameter_max <= diameter_min:
        return "diameter_max", f"must exceed diameter_min = {diameter_min:g}, got {diameter_max:g}"
    if distribution == "lognormal" and not diameter_min <= particle_diameter <= diameter_max:
        return "particle_diameter", (f"the median must lie in [diameter_min, diameter_max] = "
                                     f"[{diameter_min:g}, {diameter_max:g}], got {particle_diameter:g}")
    return None


def _lognormal_bounds(median, sigma, low, high):
    """Standardised truncation bounds ``(α, β)`` of ``ln D``."""
    return (math.log(low) - math.log(median)) / sigma, (math.log(high) - math.log(median)) / sigma


def sample_diameters(n, distribution, rng, *, particle_diameter=None, diameter_min=None, diameter_max=None,
                     diameter_sigma=None):
    """``n`` diameters: ``mono`` (all ``particle_diameter``), ``uniform`` on [min, max] (number
    weighted), or ``lognormal`` (``ln D`` normal with median ``particle_diameter`` and standard
    deviation ``diameter_sigma``) truncated to [min, max] (sampled by inverse CDF)."""
    from scipy.special import ndtr, ndtri

    problem = distribution_problem(distribution, particle_diameter, diameter_min, diameter_max, diameter_sigma)
    if problem:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    if distribution == "mono":
        return np.full(n, float(particle_diameter))
    if distribution == "uniform":
        return rng.uniform(diameter_min, diameter_max, n)
    alpha, beta = _lognormal_bounds(particle_diameter, diameter_sigma, diameter_min, diameter_max)
    u = rng.uniform(ndtr(alpha), ndtr(beta), n)
    return np.clip(particle_diameter * np.exp(diameter_sigma * ndtri(u)), diameter_min, diameter_max)


def mean_sphere_volume(distribution, *, particle_diameter=None, diameter_min=None, diameter_max=None,
                       diameter_sigma=None):
    """Expected ``π D³/6`` of `sample_diameters` (exact)."""
    from scipy.special import ndtr

    if distribution == "mono":
        third = particle_diameter ** 3
    elif distribution == "uniform":
        third = (diameter_max ** 4 - diameter_min ** 4) / (4.0 * (diameter_max - diameter_min))
    else:
        alpha, beta = _lognormal_bounds(particle_diameter, diameter_sigma, diameter_min, diameter_max)
        t = 3.0 * diameter_sigma
        third = (particle_diameter ** 3 * math.exp(0.5 * t * t)
                 * (ndtr(beta - t) - ndtr(alpha - t)) / (ndtr(beta) - ndtr(alpha)))
    return math.pi / 6.0 * third


def _random_points_inside(shape, radius, rng, test_shape=None):
    """Uniform random centres (relative to the shape's centre) in the shape's bounding box, of
    spheres sticking out of ``test_shape`` (default the shape) by at most half their radius (the
    relaxation pushes them in; a sphere exactly as wide as the shape still finds room)."""
    out = np.empty((len(radius), 3))
    todo = np.arange(len(radius))
    half = shape.half_extent
    test_shape = shape if test_shape is None else test_shape
    while len(todo):
        trial = rng.uniform(-half, half, size=(len(todo), 3))
        inside = test_shape.excess(trial, 0.5 * radius[todo]) <= 0.0
        out[todo[inside]] = trial[inside]
        todo = todo[~inside]
    return out


@njit(cache=True)
def _wall_push(code, params, x, y, z, r):
    """``(fx, fy, fz, excess)``: the push ``−∂/∂x`` of ``½ Σ excess²`` of one sphere that sticks
    out of the shape (relative centre ``x, y, z``) and its largest excess (≤ 0: inside)."""
    fx = fy = fz = 0.0
    if code == _BOX:
        worst = -np.inf
        for c, value in enumerate((x, y, z)):
            excess = abs(value) - params[c] + r
            worst = max(worst, excess)
            if excess > 0.0:
                push = -excess if value > 0.0 else excess
                if c == 0:
                    fx = push
                elif c == 1:
                    fy = push
                else:
                    fz = push
        return fx, fy, fz, worst
    if code == _SPHERE:
        distance = math.sqrt(x * x + y * y + z * z)
        excess = distance + r - params[0]
        if excess > 0.0 and distance > 0.0:
            fx, fy, fz = -excess * x / distance, -excess * y / distance, -excess * z / distance
        return fx, fy, fz, excess
    rho = math.sqrt(x * x + y * y)
    if code == _CYLINDER:
        radial = rho + r - params[0]
        axial = abs(z) - params[1] + r
        if radial > 0.0 and rho > 0.0:
            fx, fy = -radial * x / rho, -radial * y / rho
        if axial > 0.0:
            fz = -axial if z > 0.0 else axial
        return fx, fy, fz, max(radial, axial)
    # torus: distance from the centre-line circle
    u = rho - params[0]
    distance = math.sqrt(u * u + z * z)
    excess = distance + r - params[1]
    if excess > 0.0 and distance > 0.0 and rho > 0.0:
        radial = -excess * u / distance
        fx, fy, fz = radial * x / rho, radial * y / rho, -excess * z / distance
    return fx, fy, fz, excess


@njit(inline="always")
def _pair_overlap(dx, dy, dz, reach):
    """``(touching, overlap, n)`` of two spheres ``d = x_i − x_j`` apart whose radii sum to
    ``reach``: the overlap ``reach − |d|`` and the unit normal ``n = d/|d|`` (along x for
    coincident centres: any direction separates them); not touching when ``|d| ≥ reach``."""
    d2 = dx * dx + dy * dy + dz * dz
    if d2 >= reach * reach:
        return False, 0.0, 0.0, 0.0, 0.0
    d = math.sqrt(d2)
    if d > 1e-12 * reach:
        return True, reach - d, dx / d, dy / d, dz / d
    return True, reach - d, 1.0, 0.0, 0.0


@njit(cache=True)
def _overlap_forces_kernel(position, radius, pair_i, pair_j, code, params, force, cell):
    """Forces ``−∂E/∂x`` of ``E = ½ Σ_pairs [r_i + r_j − |x_i − x_j|]₊² + ½ Σ_i excess_i²``
    into ``force`` (``x_i − x_j`` the nearest image's along the periodic axes of ``cell``, `dem.cell`);
    returns the largest overlap over the pair's mean diameter (walls: excess over the sphere's
    diameter)."""
    force[:] = 0.0
    worst = 0.0
    for k in range(pair_i.shape[0]):
        i = pair_i[k]
        j = pair_j[k]
        dx, dy, dz = minimum_image(position[i, 0] - position[j, 0], position[i, 1] - position[j, 1],
                                   position[i, 2] - position[j, 2], cell)
        reach = radius[i] + radius[j]
        touching, overlap, nx, ny, nz = _pair_overlap(dx, dy, dz, reach)
        if not touching:
            continue
        force[i, 0] += overlap * nx
        force[i, 1] += overlap * ny
        force[i, 2] += overlap * nz
        force[j, 0] -= overlap * nx
        force[j, 1] -= overlap * ny
        force[j, 2] -= overlap * nz
        worst = max(worst, overlap / reach)
    for i in range(position.shape[0]):
        fx, fy, fz, excess = _wall_push(code, params, position[i, 0], position[i, 1], position[i, 2], radius[i])
        force[i, 0] += fx
        force[i, 1] += fy
        force[i, 2] += fz
        worst = max(worst, excess / (2.0 * radius[i]))
    return worst


# FIRE (Bitzek et al., PRL 97, 170201, 2006; with the half-step back-off of Guénolé et al., Comput.
# Mater. Sci. 175, 109584, 2020), unit masses and unit contact stiffness.
FIRE_N_MIN, FIRE_F_INC, FIRE_F_DEC, FIRE_ALPHA, FIRE_F_ALPHA = 5, 1.1, 0.5, 0.1, 0.99
FIRE_DT, FIRE_DT_MAX, FIRE_DT_MIN = 0.05, 0.5, 1e-4
CONVERGED, REBUILD, EXHAUSTED = range(3)


@njit(cache=True)
def _fire_mix(velocity, force, fire):
    """FIRE's update of the velocities ``(n, k)`` (any number ``k`` of coordinates a body) and of
    ``fire = [dt, α, n_positive]`` before a step: while the power ``F·v`` is positive the velocity
    turns toward the force by α (and after `FIRE_N_MIN` such steps the step grows and α shrinks);
    otherwise the step shrinks, α resets and ``uphill`` is true: the caller then moves back half
    a step along the velocities and zeroes them. Returns ``(dt, uphill)``."""
    n, k = velocity.shape
    dt, alpha, n_positive = fire[0], fire[1], fire[2]
    power = 0.0
    v2 = 0.0
    f2 = 0.0
    for i in range(n):
        for c in range(k):
            power += force[i, c] * velocity[i, c]
            v2 += velocity[i, c] * velocity[i, c]
            f2 += force[i, c] * force[i, c]
    uphill = not power > 0.0
    if not uphill:
        if f2 > 0.0:
            mix = alpha * math.sqrt(v2 / f2)
            for i in range(n):
                for c in range(k):
                    velocity[i, c] = (1.0 - alpha) * velocity[i, c] + mix * force[i, c]
        if n_positive > FIRE_N_MIN:
            dt = min(dt * FIRE_F_INC, FIRE_DT_MAX)
            alpha *= FIRE_F_ALPHA
        n_positive += 1
    else:
        n_positive = 0
        dt = max(dt * FIRE_F_DEC, FIRE_DT_MIN)
        alpha = FIRE_ALPHA
    fire[0], fire[1], fire[2] = dt, alpha, n_positive
    return dt, uphill


@njit(cache=True)
def _fire_kernel(position, velocity, force, radius, pair_i, pair_j, code, params, reference, half_skin, fire,
                 tolerance, max_steps, cell):
    """FIRE steps minimising the overlap energy of `_overlap_forces_kernel` until the largest
    relative overlap is below ``tolerance`` (returns ``CONVERGED``), a sphere has moved more than
    ``half_skin`` from ``reference`` (``REBUILD``: the pair list is stale) or ``max_steps``
    (``EXHAUSTED``). ``fire = [dt, α, n_positive]`` carries over between calls. Returns
    ``(steps, status, largest overlap)``."""
    n = position.shape[0]
    worst = np.inf
    for step in range(max_steps):
        dt, uphill = _fire_mix(velocity, force, fire)
        if uphill:
            for i in range(n):
                for c in range(3):
                    position[i, c] -= 0.5 * dt * velocity[i, c]
                    velocity[i, c] = 0.0
        moved = 0.0
        for i in range(n):
            d2 = 0.0
            for c in range(3):
                velocity[i, c] += dt * force[i, c]
                position[i, c] += dt * velocity[i, c]
                delta = position[i, c] - reference[i, c]
                d2 += delta * delta
            moved = max(moved, d2)
        worst = _overlap_forces_kernel(position, radius, pair_i, pair_j, code, params, force, cell)
        if moved > half_skin * half_skin:
            return step + 1, REBUILD, worst
        if worst < tolerance:
            return step + 1, CONVERGED, worst
    return max_steps, EXHAUSTED, worst


def _close_pairs(position, reach, period):
    """Pairs ``i < j`` of centres closer than ``reach``, by `scipy.spatial.cKDTree` (on a torus
    along the axes where ``period (3,)`` > 0: nearest images)."""
    from scipy.spatial import cKDTree

    on = period > 0.0
    if not on.any():
        return cKDTree(position).query_pairs(reach, output_type="ndarray")
    data = np.array(position, float)
    data[:, on] = np.mod(data[:, on], period[on])
    data[:, on] = np.where(data[:, on] < period[on], data[:, on], 0.0)  # (x mod L may round up to L)
    return cKDTree(data, boxsize=period).query_pairs(reach, output_type="ndarray")


def _candidate_pairs(position, radius, skin, period):
    """Pairs ``i < j`` (sorted) closer than ``r_i + r_j + skin`` (nearest images along the axes
    where ``period`` > 0): the FIRE pair list."""
    pairs = _close_pairs(position, 2.0 * radius.max() + skin, period)
    if len(pairs):
        d = np.linalg.norm(minimum_image_array(position[pairs[:, 0]] - position[pairs[:, 1]], period), axis=1)
        pairs = pairs[d < radius[pairs[:, 0]] + radius[pairs[:, 1]] + skin]
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    return np.ascontiguousarray(pairs[:, 0]).astype(np.int64), np.ascontiguousarray(pairs[:, 1]).astype(np.int64)


def relax_overlaps(position, radius, shape, tolerance=1e-4, max_steps=20_000, period=None):
    """Move spheres (centres relative to the shape's centre, modified in place) until no two
    overlap and none sticks out by more than ``tolerance`` × diameter: FIRE minimisation of the
    harmonic overlap energy (`_overlap_forces_kernel`) on a Verlet pair list with a skin of a
    third of the mean diameter. Along the axes where ``period (3,)`` > 0 the spheres overlap their
    neighbours' nearest images and no wall pushes (the shape's half edge there is ignored).
    Returns ``(steps, largest relative overlap)``; raises ValueError when it does not get there
    in ``max_steps`` (the packing is jammed)."""
    period = np.zeros(3) if period is None else np.asarray(period, float)
    skin = 2.0 / 3.0 * radius.mean()
    velocity = np.zeros_like(position)
    force = np.zeros_like(position)
    fire = np.array([FIRE_DT, FIRE_ALPHA, 0.0])
    params = np.asarray(shape.params, float)
    if shape.kind == "box":
        params = np.where(period > 0.0, np.inf, params)
    cell = box_cell(period)
    steps = 0
    while True:
        pair_i, pair_j = _candidate_pairs(position, radius, skin, period)
        worst = _overlap_forces_kernel(position, radius, pair_i, pair_j, shape.code, params, force, cell)
        if worst < tolerance:
            return steps, worst
        if steps >= max_steps:
            raise ValueError(f"random packing jammed: the largest overlap is still {worst:.2e} of a diameter after "
                             f"{steps} relaxation steps; ask for a lower packing fraction or fewer particles")
        done, status, worst = _fire_kernel(position, velocity, force, radius, pair_i, pair_j, shape.code, params,
                                           position.copy(), 0.5 * skin, fire, tolerance, max_steps - steps, cell)
        steps += done
        if status == CONVERGED:
            return steps, worst


def _box_period(shape, periodic):
    """The period ``(3,)`` of a packing of ``shape`` periodic along the axes ``periodic`` (its box
    edges there, 0 elsewhere); only a box can be periodic."""
    periodic = np.asarray(periodic, bool)
    if periodic.any() and shape.kind != "box":
        raise ValueError(f"only a box can be periodic, not a {shape.kind}")
    return np.where(periodic, 2.0 * shape.half_extent, 0.0)


def _spatial_order(position, spacing):
    """Indices sorting centres by cell of edge ``spacing`` (z, then y, then x): neighbours end
    up close in memory."""
    cell = np.floor((position - position.min(axis=0)) / spacing).astype(np.int64)
    return np.lexsort((position[:, 0], cell[:, 0], cell[:, 1], cell[:, 2]))


def random_packing(shape, *, size=None, shape_diameter=None, height=None, tube_diameter=None, center=None,
                   n_particles=None, packing_fraction=None, distribution="mono", particle_diameter=None,
                   diameter_min=None, diameter_max=None, diameter_sigma=None, seed=0, overlap_tolerance=1e-4,
                   max_steps=20_000, periodic=(False, False, False)):
    """A random dense packing of polydisperse spheres inside ``shape`` (a `Shape`, or a name with
    its dimensions as for `lattice_packing`). Returns ``(positions (n, 3), diameters (n,))``,
    ordered by cell.

    Count: ``n_particles``, or ``packing_fraction`` φ giving ``n = round(φ V / E[π D³/6])``
    (the realised fraction differs from φ by the sampling of the diameters). Diameters: see
    `sample_diameters` (``mono``, ``uniform``, truncated ``lognormal``); the same ``seed`` gives
    the same packing.

    Method ("quench from random", O'Hern et al., PRE 68, 011306, 2003): centres are drawn
    uniformly inside the shape (each sphere sticking out by at most half its radius, overlaps
    allowed), then the harmonic overlap energy ``½ Σ [r_i + r_j − d_ij]₊²`` (plus ``½ excess²``
    for spheres sticking out of the walls) is minimised by FIRE on a Verlet pair list from
    `scipy.spatial.cKDTree`, until every overlap is below ``overlap_tolerance`` (default 1e-4) ×
    the pair's mean diameter and every wall excess below ``overlap_tolerance`` × the sphere's
    diameter. Diameters are left as sampled and the residual overlaps (< 1e-4 D) as they are.
    Each step is O(N) (a compiled loop over the pair list), each list rebuild O(N log N). Below
    jamming the energy reaches zero; near and above it the minimisation stalls, and after
    ``max_steps`` a ValueError says so (≈ 50 s CPU for 2·10⁴ spheres).

    A box may be ``periodic`` along some axes (three flags): there the spheres fill the whole
    edge, overlap their neighbours' nearest images across the faces, and the centres are
    returned wrapped into the box (a packing for a periodic cell, `dem.cell`).

    Measured (seed 0, 2·10⁴ spheres, CPU time on the 2-core development machine; φ is the
    spheres' volume over the shape's, "bulk" the fraction ≥ 2 D from the walls):

    =====================================  ===========  ======  ======  ======================
    case                                   φ reached    bulk    CPU     not reached
    =====================================  ===========  ======  ======  ======================
    mono, box (edge 25.9 D)                0.600        0.630   3 s
    mono, box                              0.610        0.641   8 s     0.62 (jammed)
    mono, sphere                           0.600        0.626   2.5 s
    mono, sphere                           0.610        0.636   4.5 s   0.62 (jammed)
    lognormal σ = 0.25 on [0.5, 2], box    0.622        0.643   8 s     0.63
    lognormal σ = 0.25 on [0.5, 2], sphere 0.632        0.647   15 s
    uniform [0.5, 1], box                  0.623        0.640   18 s    0.63
    uniform [0.5, 1], sphere               0.623        0.638   7 s     0.63
    =====================================  ===========  ======  ======  ======================

    So: up to 0.61 monodisperse and 0.62 polydisperse (less for small shapes, where the loose
    layer along the walls weighs more). Bonds in the 0.60 monodisperse box (`bond_pairs`), mean
    per sphere: 5.1 (tolerance 1e-4), 5.4 (1e-3), 5.9 (1e-2; 3 spheres of 2·10⁴ unbonded),
    7.1 (0.05).
    """
    shape = _as_shape(shape, dict(size=size, diameter=shape_diameter, height=height, tube_diameter=tube_diameter,
                                  center=center))
    if center is not None:
        shape = Shape(shape.kind, shape.params, tuple(float(c) for c in center))
    spec = dict(particle_diameter=particle_diameter, diameter_min=diameter_min, diameter_max=diameter_max,
                diameter_sigma=diameter_sigma)
    problem = distribution_problem(distribution, **spec)
    if problem:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    if (n_particles is None) == (packing_fraction is None):
        raise ValueError("give n_particles or packing_fraction, one of them")
    if n_particles is None:
        if not 0 < packing_fraction <= RANDOM_FRACTION_LIMIT:
            raise ValueError(f"packing_fraction must be in (0, {RANDOM_FRACTION_LIMIT}], got {packing_fraction!r}")
        n_particles = int(round(packing_fraction * shape.volume / mean_sphere_volume(distribution, **spec)))
    largest = particle_diameter if distribution == "mono" else diameter_max
    if largest > shape.inscribed_diameter:
        raise ValueError(f"spheres of diameter {largest:g} do not fit in the {shape.kind} "
                         f"(largest inscribed sphere {shape.inscribed_diameter:g})")
    rng = np.random.default_rng(seed)
    diameters = sample_diameters(n_particles, distribution, rng, **spec)
    if n_particles == 0:
        return np.zeros((0, 3)), diameters
    radius = 0.5 * diameters
    period = _box_period(shape, periodic)
    open_shape = Shape(shape.kind, tuple(np.where(period > 0.0, np.inf, shape.params)), shape.center) \
        if period.any() else shape
    position = _random_points_inside(shape, radius, rng, open_shape)
    relax_overlaps(position, radius, shape, overlap_tolerance, max_steps, period)
    on = period > 0.0
    position[:, on] = np.mod(position[:, on] + 0.5 * period[on], period[on]) - 0.5 * period[on]
    order = _spatial_order(position, diameters.mean())
    return position[order] + np.asarray(shape.center), diameters[order]


# ---------------------------------------------------------------------------------------------
# Random packings of clumps
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def _member_arms(orientation, arms, out):
    """``out (n, m, 3)``: the members' centres from each clump's centre of mass in the world frame,
    the template arms ``arms (m, 3)`` turned by each clump's unit quaternion ``orientation (n, 4)``."""
    for i in range(orientation.shape[0]):
        q = (orientation[i, 0], orientation[i, 1], orientation[i, 2], orientation[i, 3])
        for a in range(arms.shape[0]):
            out[i, a, 0], out[i, a, 1], out[i, a, 2] = quat_rotate_one(q, (arms[a, 0], arms[a, 1], arms[a, 2]))


@njit(cache=True)
def _clump_forces_kernel(position, offset, radius, pair_i, pair_j, code, params, force, cell, lever):
    """Generalised forces of `_overlap_forces_kernel`'s energy summed over the clumps' members:
    ``½ Σ [r_a + r_b − |x_a − x_b|]₊²`` over the members ``a``, ``b`` of the listed pairs of
    clumps (the members of one clump never), plus ``½ excess²`` of each member sticking out of the
    shape. ``position (n, 3)``: centres of mass (relative to the shape's centre); ``offset (n, m,
    3)``: the members' arms (`_member_arms`); ``radius (m,)``. Into ``force (n, 6)``: the force
    on each clump and its torque about the centre of mass (arm × force) over ``lever`` (the torque
    conjugate to the rotation in units of length, ``lever × angle``). The image of clump ``j`` is
    taken once per pair, from the centres of mass (its members placed about it). Returns the
    largest member overlap over the pair's mean diameter (walls: excess over the member's
    diameter)."""
    force[:] = 0.0
    worst = 0.0
    m = radius.shape[0]
    for k in range(pair_i.shape[0]):
        i = pair_i[k]
        j = pair_j[k]
        dx, dy, dz = minimum_image(position[i, 0] - position[j, 0], position[i, 1] - position[j, 1],
                                   position[i, 2] - position[j, 2], cell)
        for a in range(m):
            for b in range(m):
                rx = dx + offset[i, a, 0] - offset[j, b, 0]
                ry = dy + offset[i, a, 1] - offset[j, b, 1]
                rz = dz + offset[i, a, 2] - offset[j, b, 2]
                reach = radius[a] + radius[b]
                touching, overlap, nx, ny, nz = _pair_overlap(rx, ry, rz, reach)
                if not touching:
                    continue
                fx, fy, fz = overlap * nx, overlap * ny, overlap * nz
                force[i, 0] += fx
                force[i, 1] += fy
                force[i, 2] += fz
                force[j, 0] -= fx
                force[j, 1] -= fy
                force[j, 2] -= fz
                ax, ay, az = offset[i, a, 0], offset[i, a, 1], offset[i, a, 2]
                force[i, 3] += (ay * fz - az * fy) / lever
                force[i, 4] += (az * fx - ax * fz) / lever
                force[i, 5] += (ax * fy - ay * fx) / lever
                ax, ay, az = offset[j, b, 0], offset[j, b, 1], offset[j, b, 2]
                force[j, 3] -= (ay * fz - az * fy) / lever
                force[j, 4] -= (az * fx - ax * fz) / lever
                force[j, 5] -= (ax * fy - ay * fx) / lever
                worst = max(worst, overlap / reach)
    for i in range(position.shape[0]):
        for a in range(m):
            ax, ay, az = offset[i, a, 0], offset[i, a, 1], offset[i, a, 2]
            fx, fy, fz, excess = _wall_push(code, params, position[i, 0] + ax, position[i, 1] + ay,
                                            position[i, 2] + az, radius[a])
            if excess > 0.0:
                force[i, 0] += fx
                force[i, 1] += fy
                force[i, 2] += fz
                force[i, 3] += (ay * fz - az * fy) / lever
                force[i, 4] += (az * fx - ax * fz) / lever
                force[i, 5] += (ax * fy - ay * fx) / lever
            worst = max(worst, excess / (2.0 * radius[a]))
    return worst


@njit(cache=True)
def _turn_and_move(position, orientation, velocity, h, lever):
    """Move each clump by ``h`` times its velocity: the centre of mass by ``h v``, the orientation
    by the rotation vector ``h u / lever`` (``u``, the last three velocity components, is the
    angular velocity times ``lever``), turning in the world frame, renormalised."""
    for i in range(position.shape[0]):
        for c in range(3):
            position[i, c] += h * velocity[i, c]
        turn = quat_from_rotvec_one((h * velocity[i, 3] / lever, h * velocity[i, 4] / lever,
                                     h * velocity[i, 5] / lever))
        q = quat_normalize_one(quat_multiply_one(turn, (orientation[i, 0], orientation[i, 1], orientation[i, 2],
                                                        orientation[i, 3])))
        orientation[i, 0], orientation[i, 1], orientation[i, 2], orientation[i, 3] = q


@njit(cache=True)
def _clump_fire_kernel(position, orientation, arms, offset, velocity, force, radius, pair_i, pair_j, code, params,
                       reference, half_skin, fire, tolerance, max_steps, cell, lever):
    """FIRE steps on the clumps' six coordinates (centre of mass, and rotation times ``lever``)
    minimising the energy of `_clump_forces_kernel`, as `_fire_kernel` does for spheres: until the
    largest relative member overlap is below ``tolerance`` (``CONVERGED``), a centre of mass has
    moved more than ``half_skin`` from ``reference`` (``REBUILD``: the list of clump pairs, made
    with the clumps' enclosing spheres, which turning leaves in place, is stale) or ``max_steps``
    (``EXHAUSTED``). Returns ``(steps, status, largest overlap)``."""
    n = position.shape[0]
    worst = np.inf
    for step in range(max_steps):
        dt, uphill = _fire_mix(velocity, force, fire)
        if uphill:
            _turn_and_move(position, orientation, velocity, -0.5 * dt, lever)
            velocity[:] = 0.0
        for i in range(n):
            for c in range(6):
                velocity[i, c] += dt * force[i, c]
        _turn_and_move(position, orientation, velocity, dt, lever)
        moved = 0.0
        for i in range(n):
            d2 = 0.0
            for c in range(3):
                delta = position[i, c] - reference[i, c]
                d2 += delta * delta
            moved = max(moved, d2)
        _member_arms(orientation, arms, offset)
        worst = _clump_forces_kernel(position, offset, radius, pair_i, pair_j, code, params, force, cell, lever)
        if moved > half_skin * half_skin:
            return step + 1, REBUILD, worst
        if worst < tolerance:
            return step + 1, CONVERGED, worst
    return max_steps, EXHAUSTED, worst


def relax_clump_overlaps(position, orientation, arms, radius, shape, tolerance=1e-4, max_steps=20_000, period=None):
    """Move and turn rigid clumps (centres of mass ``position (n, 3)`` relative to the shape's
    centre and unit quaternions ``orientation (n, 4)`` of the template frame, modified in place;
    members at ``arms (m, 3)`` from the centre of mass in the template frame, ``radius (m,)``)
    until no member of one clump overlaps a member of another, nor sticks out of the shape, by
    more than ``tolerance`` × the pair's mean diameter (the member's diameter): FIRE on the
    clumps' positions and rotations (`_clump_fire_kernel`), the harmonic overlap forces of the
    members summed on each clump as a force and a torque, on a Verlet list of clump pairs whose
    enclosing spheres (about the centre of mass, of radius the clump's reach) are within a skin
    of a third of the mean member diameter (`_candidate_pairs`). The rotation's coordinate is the
    angle times the reach, so that a contact turning a clump is no stiffer than one pushing it
    and FIRE's steps suit both. Along the axes where ``period (3,)`` > 0 the clumps overlap their
    neighbours' nearest images and no wall pushes. Returns ``(steps, largest relative overlap)``;
    raises ValueError when it does not get there in ``max_steps`` (the packing is jammed)."""
    period = np.zeros(3) if period is None else np.asarray(period, float)
    arms = np.ascontiguousarray(arms, float)
    radius = np.ascontiguousarray(radius, float)
    reach = clump_reach(arms, radius)
    enclosing = np.full(len(position), reach)
    skin = 2.0 / 3.0 * radius.mean()
    velocity = np.zeros((len(position), 6))
    force = np.zeros((len(position), 6))
    offset = np.zeros((len(position), len(radius), 3))
    fire = np.array([FIRE_DT, FIRE_ALPHA, 0.0])
    params = np.asarray(shape.params, float)
    if shape.kind == "box":
        params = np.where(period > 0.0, np.inf, params)
    cell = box_cell(period)
    _member_arms(orientation, arms, offset)
    steps = 0
    while True:
        pair_i, pair_j = _candidate_pairs(position, enclosing, skin, period)
        worst = _clump_forces_kernel(position, offset, radius, pair_i, pair_j, shape.code, params, force, cell, reach)
        if worst < tolerance:
            return steps, worst
        if steps >= max_steps:
            raise ValueError(f"the dense packing jammed: the largest overlap is still {worst:.2e} of a member "
                             f"diameter after {steps} relaxation steps")
        done, status, worst = _clump_fire_kernel(position, orientation, arms, offset, velocity, force, radius, pair_i,
                                                 pair_j, shape.code, params, position.copy(), 0.5 * skin, fire,
                                                 tolerance, max_steps - steps, cell, reach)
        steps += done
        if status == CONVERGED:
            return steps, worst


def dense_clump_packing(shape, arms, radius, count, rng, tolerance=1e-4, max_steps=20_000, periodic=(False,) * 3):
    """``(position (count, 3), orientation (count, 4))`` of ``count`` rigid clumps (members at
    ``arms (m, 3)`` from the centre of mass in the template frame, ``radius (m,)``) packed in the
    box ``shape`` (a `Shape`), ordered by cell: centres of mass drawn uniformly in the box shrunk
    by half the clump's reach (the whole edge along the ``periodic`` axes), uniform random
    orientations (normalised Gaussian quaternions, scalar part ≥ 0), overlaps allowed; then
    `relax_clump_overlaps` pushes them apart until every member overlap (and excess over the
    walls) is below ``tolerance`` × the mean diameter, or raises ValueError after ``max_steps``.
    Along the periodic axes the centres are returned wrapped into the box. The same ``rng`` state
    gives the same bits."""
    period = _box_period(shape, periodic)
    on = period > 0.0
    arms = np.asarray(arms, float)
    radius = np.asarray(radius, float)
    reach = clump_reach(arms, radius)
    half = np.where(on, shape.half_extent, np.maximum(shape.half_extent - 0.5 * reach, 0.0))
    position = rng.uniform(-half, half, size=(count, 3))
    orientation = rng.standard_normal((count, 4))
    orientation /= np.linalg.norm(orientation, axis=1)[:, None]
    orientation *= np.where(orientation[:, :1] >= 0.0, 1.0, -1.0)
    relax_clump_overlaps(position, orientation, arms, radius, shape, tolerance, max_steps, period)
    position[:, on] = np.mod(position[:, on] + 0.5 * period[on], period[on]) - 0.5 * period[on]
    order = _spatial_order(position, 2.0 * reach)
    return position[order] + np.asarray(shape.center), orientation[order]


# ---------------------------------------------------------------------------------------------
# Bonds
# ---------------------------------------------------------------------------------------------

def bond_pairs(positions, diameters, gap_tolerance, period=None):
    """Pairs ``(m, 2)`` (int64, ``i < j``, sorted) whose surface gap
    ``|x_i − x_j| − (D_i + D_j)/2`` is at most ``gap_tolerance × (D_i + D_j)/2`` (relative to the
    pair's mean diameter; overlapping pairs are included; ``x_i − x_j`` the nearest image's along
    the axes where ``period (3,)`` > 0). O(N log N): `cKDTree.query_pairs` with the largest reach
    ``D_max (1 + tol)``, then the per-pair test. Touching lattice spheres need a tolerance above
    round-off, e.g. 1e-6."""
    positions = np.ascontiguousarray(positions, dtype=np.float64)
    diameters = np.broadcast_to(np.asarray(diameters, float), (len(positions),))
    period = np.zeros(3) if period is None else np.asarray(period, float)
    if len(positions) < 2:
        return np.zeros((0, 2), np.int64)
    reach = diameters.max() * (1.0 + gap_tolerance)
    pairs = _close_pairs(positions, reach, period).astype(np.int64)
    if not len(pairs):
        return np.zeros((0, 2), np.int64)
    keep = np.empty(len(pairs), bool)
    for start in range(0, len(pairs), 1 << 20):   # chunks keep the temporaries small
        i, j = pairs[start:start + (1 << 20)].T
        distance = np.linalg.norm(minimum_image_array(positions[i] - positions[j], period), axis=1)
        keep[start:start + len(i)] = distance <= 0.5 * (diameters[i] + diameters[j]) * (1.0 + gap_tolerance)
    pairs = pairs[keep]
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
