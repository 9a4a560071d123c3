"""The ``[[assembly]]`` builder (docs/theory.md §5): spheres packed in a shape on a lattice or randomly
(`dem.packing`), bonded to their near neighbours. `assembly_arrays` turns the parameters into
arrays (bodies and bonds) with no Python loop over particles or bonds; `build_assembly` adds them
to a `dem.system.SystemBuilder`.
"""

import math

import numpy as np

from .. import schema
from ..packing import (
    DISTRIBUTIONS, LATTICES, RANDOM_FRACTION_LIMIT, SHAPE_DIMENSIONS, SHAPES, bond_pairs, distribution_problem,
    lattice_cell, lattice_packing, make_shape, mean_sphere_volume, random_packing, shape_problem,
)
from ..schema import Key, non_negative, positive
from .binders import KEYS as BINDER_KEYS, bond_properties, check_binder, material_stiffness  # noqa: F401 (re-exported)


ASSEMBLY_KEYS = {
    "shape": Key("str", "box", "region filled with spheres", choices=SHAPES),
    "size": Key("vec3", None, "box edges [Lx, Ly, Lz] (shape = box)", "length"),
    "diameter": Key("float", None, "diameter of the sphere or cylinder; major (centre-line) diameter D of the "
                    "torus", "length", positive),
    "height": Key("float", None, "height of the cylinder (along z)", "length", positive),
    "tube_diameter": Key("float", None, "tube diameter d ≤ D of the solid torus (in the x–y plane)", "length",
                         positive),
    "center": Key("vec3", (0.0, 0.0, 0.0), "centre of the shape", "length"),
    "lattice": Key("str", "fcc", "sphere arrangement: a lattice of touching spheres, or a random dense packing",
                   choices=LATTICES + ("random",)),
    "particle_diameter": Key("float", None, "sphere diameter (lattice, random mono) or median diameter "
                             "(random lognormal)", "length", positive),
    "distribution": Key("str", "mono", "diameter distribution of a random packing", choices=DISTRIBUTIONS),
    "diameter_min": Key("float", None, "smallest diameter (uniform, lognormal truncation)", "length", positive),
    "diameter_max": Key("float", None, "largest diameter (uniform, lognormal truncation)", "length", positive),
    "diameter_sigma": Key("float", None, "standard deviation of ln D (lognormal)", "", positive),
    "n_particles": Key("int", None, "number of spheres of a random packing", "", positive),
    "packing_fraction": Key("float", None, f"target packing fraction of a random packing (≤ "
                            f"{RANDOM_FRACTION_LIMIT}; reached: 0.61 monodisperse, 0.62 polydisperse)", "", positive),
    "seed": Key("int", 0, "random seed of a random packing and of velocity_spread", "", non_negative),
    "periodic": Key("bool3", (False, False, False), "axes [x, y, z] along which the box is packed and bonded across "
                    "its faces, for a periodic [cell] (shape = box; along these axes the box must span the cell, "
                    "and a lattice must fit a whole number of cells)"),
    "density": Key("float", 1.0, "mass density: m = ρ π D³/6, J = m D²/10 (solid spheres)", "mass/length³",
                   positive),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "initial velocity of the assembly", "length/time"),
    "velocity_spread": Key("float", 0.0, "standard deviation of random Gaussian velocity components added to the "
                           "spheres' (seeded by seed; their mean is removed, so that the assembly moves at velocity): "
                           "a granular gas's temperature m σ²", "length/time", non_negative),
    "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial rigid spin ω about the centre of mass (each "
                            "particle also spins at ω)", "1/time"),
    "bonded": Key("bool", True, "bond neighbours with binder"),
    "bond_gap_tolerance": Key("float", 0.01, "bond pairs whose surface gap is at most this × their mean diameter",
                              "", non_negative),
    **BINDER_KEYS,
}

#: Largest ``bond_gap_tolerance``: bonds reach at most one mean diameter across the gap (beyond,
#: the number of bonds grows as the cube of the reach, up to every pair).
MAX_BOND_GAP_TOLERANCE = 1.0


def check_assembly(p):
    """``(key, problem)`` for an inconsistent ``[[assembly]]`` table, or None. Also refuses
    what would not build: a shape of no or infinite volume, more spheres than
    `dem.schema.MAX_BODIES`, a random packing with no sphere, a bond reach beyond
    `MAX_BOND_GAP_TOLERANCE`."""
    problem = shape_problem(p["shape"], {k: p[k] for k in ("size", "diameter", "height", "tube_diameter")})
    if problem:
        return problem
    if any(p["periodic"]) and p["shape"] != "box":
        return "periodic", f"only a box can be packed periodically, not a {p['shape']}"
    shape = make_shape(p["shape"], **{k: p[k] for k in ("size", "diameter", "height", "tube_diameter", "center")
                                      if p[k] is not None})
    try:
        volume = shape.volume
    except OverflowError:
        volume = math.inf
    if not 0.0 < volume < math.inf:
        return SHAPE_DIMENSIONS[p["shape"]][0], (f"the {p['shape']} is too large or too small: its volume {volume:g} "
                                                 f"is not a usable number")
    if p["bond_gap_tolerance"] > MAX_BOND_GAP_TOLERANCE:
        return "bond_gap_tolerance", (f"must be at most {MAX_BOND_GAP_TOLERANCE:g} (a gap of one mean diameter), "
                                      f"got {p['bond_gap_tolerance']:g}")
    if p["lattice"] == "random":
        problem = distribution_problem(p["distribution"], p["particle_diameter"], p["diameter_min"],
                                        p["diameter_max"], p["diameter_sigma"])
        if problem:
            return problem
        if (p["n_particles"] is None) == (p["packing_fraction"] is None):
            return "n_particles", "a random packing needs n_particles or packing_fraction, one of them"
        spec = {k: p[k] for k in ("particle_diameter", "diameter_min", "diameter_max", "diameter_sigma")}
        try:
            with np.errstate(all="ignore"):
                mean_volume = float(mean_sphere_volume(p["distribution"], **spec))
        except (ArithmeticError, ValueError):
            mean_volume = math.nan
        if not 0.0 < mean_volume < math.inf:
            key = {"mono": "particle_diameter", "uniform": "diameter_min"}.get(p["distribution"], "diameter_sigma")
            return key, f"the mean sphere volume of the {p['distribution']} distribution is not a usable number"
        fraction = p["packing_fraction"]
        key = "packing_fraction"
        if fraction is None:
            fraction = p["n_particles"] * mean_volume / volume
            key = "n_particles"
        if fraction > RANDOM_FRACTION_LIMIT:
            return key, (f"asks for a packing fraction of {fraction:.3f}; a random packing reaches at most "
                         f"{RANDOM_FRACTION_LIMIT} (0.61 monodisperse, 0.62 polydisperse in practice)")
        count = p["n_particles"] if p["n_particles"] is not None else fraction * volume / mean_volume
        if not count <= schema.MAX_BODIES:
            return key, (f"asks for {count:.3g} spheres, more than the {schema.MAX_BODIES} a builder table may "
                         f"make")
        if round(count) < 1:
            return key, (f"gives no sphere (packing fraction × volume / mean sphere volume = {count:.3g}); "
                         f"ask for more")
        largest = p["particle_diameter"] if p["distribution"] == "mono" else p["diameter_max"]
        largest_key = "particle_diameter" if p["distribution"] == "mono" else "diameter_max"
    else:
        if p["particle_diameter"] is None:
            return "particle_diameter", f"is required for lattice = {p['lattice']!r}"
        for name in ("n_particles", "packing_fraction", "diameter_min", "diameter_max", "diameter_sigma"):
            if p[name] is not None:
                return name, f"is not used by lattice = {p['lattice']!r} (only by lattice = 'random')"
        if p["distribution"] != "mono":
            return "distribution", f"a lattice has one diameter: must be 'mono' for lattice = {p['lattice']!r}"
        largest, largest_key = p["particle_diameter"], "particle_diameter"
        # the lattice is laid over the shape's bounding box, then clipped: count its sites
        with np.errstate(all="ignore"):
            cell, basis = lattice_cell(p["lattice"], largest)
            sites = len(basis) * float(np.prod(np.maximum(2.0 * shape.half_extent - largest, 0.0) / cell + 3.0))
        if not sites <= schema.MAX_BODIES:
            return "particle_diameter", (f"spheres of diameter {largest:g} in this {p['shape']} make about "
                                         f"{sites:.3g} lattice sites, more than the {schema.MAX_BODIES} a builder "
                                         f"table may make")
    if largest > shape.inscribed_diameter * (1 + 1e-9):
        return largest_key, (f"spheres of diameter {largest:g} do not fit in the {p['shape']} (largest inscribed "
                             f"sphere {shape.inscribed_diameter:g})")
    return check_binder(p)


def assembly_positions(p):
    """``(positions, diameters)`` of an ``[[assembly]]`` table (validated)."""
    dims = {k: p[k] for k in ("size", "diameter", "height", "tube_diameter") if p[k] is not None}
    shape = make_shape(p["shape"], center=p["center"], **dims)
    if p["lattice"] == "random":
        return random_packing(shape, n_particles=p["n_particles"], packing_fraction=p["packing_fraction"],
                              distribution=p["distribution"], particle_diameter=p["particle_diameter"],
                              diameter_min=p["diameter_min"], diameter_max=p["diameter_max"],
                              diameter_sigma=p["diameter_sigma"], seed=p["seed"], periodic=p["periodic"])
    return lattice_packing(p["lattice"], p["particle_diameter"], shape, periodic=p["periodic"])


def assembly_arrays(p):
    """Bodies and bonds of an ``[[assembly]]`` table (validated by `check_assembly`) as arrays,
    indices local to the assembly:

    ``position (n, 3)``, ``diameter (n,)``, ``mass (n,) = ρ π D³/6``, ``inertia (n,) = m D²/10``,
    ``velocity (n, 3) = v0 + ω × (x − x_cm)`` (plus the random ``velocity_spread``),
    ``angular_velocity (n, 3) = ω``, ``bonds (m, 2)`` (`bond_pairs` with ``bond_gap_tolerance``,
    across the faces along ``periodic`` axes; none when ``bonded`` is false) and
    ``bond_properties``, what `dem.system.SystemBuilder.add_bonds` takes for them under the
    table's bond law (`dem.builders.binders.bond_properties`: the three-spring binder's ``k_axial``,
    ``k_shear``, ``k_bending`` ``(m,)``, given or from the binder material, or the parallel
    bond's parameters)."""
    position, diameter = assembly_positions(p)
    n = len(position)
    if n == 0:
        raise ValueError(f"no sphere of diameter {p['particle_diameter']:g} fits in the {p['shape']}")
    mass = p["density"] * np.pi / 6.0 * diameter ** 3
    inertia = 0.1 * mass * diameter ** 2
    omega = np.asarray(p["angular_velocity"], float)
    centre_of_mass = mass @ position / mass.sum()
    velocity = np.asarray(p["velocity"], float) + np.cross(omega, position - centre_of_mass)
    if p["velocity_spread"] > 0.0:
        spread = np.random.default_rng((p["seed"], 1)).normal(scale=p["velocity_spread"], size=(n, 3))
        velocity += spread - mass @ spread / mass.sum()
    angular_velocity = np.repeat(omega[None], n, axis=0)
    period = np.where(p["periodic"], np.asarray(p["size"] or (0.0, 0.0, 0.0), float), 0.0)
    bonds = bond_pairs(position, diameter, p["bond_gap_tolerance"], period) if p["bonded"] \
        else np.zeros((0, 2), np.int64)
    return dict(position=position, diameter=diameter, mass=mass, inertia=inertia, velocity=velocity,
                angular_velocity=angular_velocity, bonds=bonds,
                bond_properties=bond_properties(p, bonds[:, 0], bonds[:, 1], position, diameter, period))


def build_assembly(system, p):
    """Spheres packed in a shape (box, sphere, cylinder, solid torus) on a lattice or randomly,
    bonded to neighbours whose surface gap is at most ``bond_gap_tolerance`` × their mean
    diameter (docs/theory.md §5); arrays from `assembly_arrays`. Solid spheres of ``density``: ``m = ρ π
    D³/6``, ``J = m D²/10``. ``angular_velocity`` ω spins the assembly rigidly about its centre
    of mass and each particle at ω. The bond law (`dem.builders.binders`): ``binder = "three_spring"``
    with ``k_axial``, ``k_shear``, ``k_bending`` for every bond, or from the binder material
    (``binder_modulus`` E_b, ``binder_shear_modulus`` G_b, ``binder_radius_ratio`` λ): ``K_a = E_b
    A r0``, ``K_s = G_b A r0``, ``K_m = E_b I/r0`` with ``A = π a²``, ``I = π a⁴/4``, ``a = λ
    min(D_i, D_j)/2``, ``r0`` the rest centre distance; or ``binder = "parallel_bond"``, the
    Potyondy–Cundall parallel bond of moduli E, G, disc radius ``λ min(D_i, D_j)/2`` and
    strengths ``binder_tensile_strength``, ``binder_shear_strength``."""
    arrays = assembly_arrays(p)
    first = system.n_bodies
    system.add_bodies(arrays["position"], mass=arrays["mass"], inertia=arrays["inertia"], diameter=arrays["diameter"],
                      velocity=arrays["velocity"], angular_velocity=arrays["angular_velocity"], group=first)
    bonds = arrays["bonds"] + first
    system.add_bonds(bonds[:, 0], bonds[:, 1], **arrays["bond_properties"])


KEYS = ASSEMBLY_KEYS
build = build_assembly
check = check_assembly
