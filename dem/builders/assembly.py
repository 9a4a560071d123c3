"""The ``[[assembly]]`` builder (SPEC §5): spheres packed in a shape on a lattice or randomly
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


def material_stiffness(rest_length, diameter_i, diameter_j, binder_modulus, binder_shear_modulus,
                       binder_radius_ratio):
    """Bond stiffnesses ``(K_a, K_s, K_m)`` (energies, SPEC §3) of a cylindrical binder of
    radius ``a = λ min(D_i, D_j)/2`` and length ``r0`` (the rest centre distance), moduli E_b and
    G_b:

    * axial: a bar of stiffness ``E_b A / r0`` stores ``½ (E_b A/r0)(r − r0)² = ½ K_a (r/r0 − 1)²``
      with ``K_a = E_b A r0``, ``A = π a²`` (modulus × binder volume);
    * shear: ``K_s = G_b A r0`` by the same rule with ``1 − s`` in place of the strain. This is
      nominal: ``1 − s = 1 − cos γ ≈ γ²/2`` for a shear angle γ, so ``½ K_s (1 − s)²`` is quartic
      in γ and no small-strain match with a linear shear spring exists;
    * bending and torsion: a beam of length ``r0`` bent through θ stores ``½ (E_b I/r0) θ²``, so
      ``K_m = E_b I / r0``, ``I = π a⁴/4`` (torsion then has ``E_b I/r0`` too, where an elastic
      rod has ``G_b J/r0 = 2 G_b I/r0``; equal when ``G_b = E_b/2``)."""
    a = 0.5 * binder_radius_ratio * np.minimum(diameter_i, diameter_j)
    area = np.pi * a * a
    second_moment = 0.25 * np.pi * a ** 4
    return (binder_modulus * area * rest_length, binder_shear_modulus * area * rest_length,
            binder_modulus * second_moment / rest_length)


def _at_most_one(value):
    return None if 0 < value <= 1 else "must be in (0, 1]"


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
    "seed": Key("int", 0, "random seed of a random packing", "", non_negative),
    "density": Key("float", 1.0, "mass density: m = ρ π D³/6, J = m D²/10 (solid spheres)", "mass/length³",
                   positive),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "initial velocity of the assembly", "length/time"),
    "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial rigid spin ω about the centre of mass (each "
                            "particle also spins at ω)", "1/time"),
    "bonded": Key("bool", True, "bond neighbours with binder"),
    "bond_gap_tolerance": Key("float", 0.01, "bond pairs whose surface gap is at most this × their mean diameter",
                              "", non_negative),
    "k_axial": Key("float", None, "binder axial stiffness K_a of every bond (per-bond mode; default 0)", "energy",
                   non_negative),
    "k_shear": Key("float", None, "binder shear stiffness K_s of every bond (per-bond mode; default 0)", "energy",
                   non_negative),
    "k_bending": Key("float", None, "binder bending/torsion stiffness K_m of every bond (per-bond mode; default 0)",
                     "energy", non_negative),
    "binder_modulus": Key("float", None, "binder Young's modulus E_b (material mode): K_a = E_b A r0, K_m = E_b I/r0, "
                          "A = π a², I = π a⁴/4, a = λ min(D_i, D_j)/2, r0 the rest centre distance",
                          "energy/length³", positive),
    "binder_shear_modulus": Key("float", None, "binder shear modulus G_b (material mode): K_s = G_b A r0",
                                "energy/length³", positive),
    "binder_radius_ratio": Key("float", None, "binder radius over the smaller particle radius, λ (material mode; "
                               "default 0.5)", "", _at_most_one),
}

PER_BOND_KEYS = ("k_axial", "k_shear", "k_bending")
MATERIAL_KEYS = ("binder_modulus", "binder_shear_modulus", "binder_radius_ratio")
DEFAULT_BINDER_RADIUS_RATIO = 0.5


def stiffness_mode(p):
    """``"material"`` when a binder modulus is given, else ``"per_bond"``."""
    return "material" if any(p.get(k) is not None for k in MATERIAL_KEYS) else "per_bond"


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
    if stiffness_mode(p) == "material":
        for name in PER_BOND_KEYS:
            if p[name] is not None:
                return name, ("give per-bond stiffnesses (k_axial, k_shear, k_bending) or binder material "
                              "parameters (binder_modulus, binder_shear_modulus, binder_radius_ratio), not both")
        for name in ("binder_modulus", "binder_shear_modulus"):
            if p[name] is None:
                return name, "is required with the binder material parameters (material stiffness mode)"
    return None


def assembly_positions(p):
    """``(positions, diameters)`` of an ``[[assembly]]`` table (validated)."""
    dims = {k: p[k] for k in ("size", "diameter", "height", "tube_diameter") if p[k] is not None}
    shape = make_shape(p["shape"], center=p["center"], **dims)
    if p["lattice"] == "random":
        return random_packing(shape, n_particles=p["n_particles"], packing_fraction=p["packing_fraction"],
                              distribution=p["distribution"], particle_diameter=p["particle_diameter"],
                              diameter_min=p["diameter_min"], diameter_max=p["diameter_max"],
                              diameter_sigma=p["diameter_sigma"], seed=p["seed"])
    return lattice_packing(p["lattice"], p["particle_diameter"], shape)


def assembly_arrays(p):
    """Bodies and bonds of an ``[[assembly]]`` table (validated by `check_assembly`) as arrays,
    indices local to the assembly:

    ``position (n, 3)``, ``diameter (n,)``, ``mass (n,) = ρ π D³/6``, ``inertia (n,) = m D²/10``,
    ``velocity (n, 3) = v0 + ω × (x − x_cm)``, ``angular_velocity (n, 3) = ω``, ``bonds (m, 2)``
    (`bond_pairs` with ``bond_gap_tolerance``; none when ``bonded`` is false), ``k_axial``,
    ``k_shear``, ``k_bending`` ``(m,)``: the given per-bond values (default 0), or from the binder
    material by `material_stiffness` with ``r0 = |x_i − x_j|`` at t = 0 and λ
    ``binder_radius_ratio`` (default 0.5)."""
    position, diameter = assembly_positions(p)
    n = len(position)
    if n == 0:
        raise ValueError(f"no sphere of diameter {p['particle_diameter']:g} fits in the {p['shape']}")
    mass = p["density"] * np.pi / 6.0 * diameter ** 3
    inertia = 0.1 * mass * diameter ** 2
    omega = np.asarray(p["angular_velocity"], float)
    centre_of_mass = mass @ position / mass.sum()
    velocity = np.asarray(p["velocity"], float) + np.cross(omega, position - centre_of_mass)
    angular_velocity = np.repeat(omega[None], n, axis=0)
    bonds = bond_pairs(position, diameter, p["bond_gap_tolerance"]) if p["bonded"] else np.zeros((0, 2), np.int64)
    i, j = bonds[:, 0], bonds[:, 1]
    if stiffness_mode(p) == "material":
        rest_length = np.linalg.norm(position[i] - position[j], axis=1)
        ratio = p["binder_radius_ratio"] if p["binder_radius_ratio"] is not None else DEFAULT_BINDER_RADIUS_RATIO
        k_axial, k_shear, k_bending = material_stiffness(rest_length, diameter[i], diameter[j], p["binder_modulus"],
                                                         p["binder_shear_modulus"], ratio)
    else:
        k_axial, k_shear, k_bending = (np.full(len(bonds), p[k] if p[k] is not None else 0.0) for k in PER_BOND_KEYS)
    return dict(position=position, diameter=diameter, mass=mass, inertia=inertia, velocity=velocity,
                angular_velocity=angular_velocity, bonds=bonds, k_axial=k_axial, k_shear=k_shear,
                k_bending=k_bending)


def build_assembly(system, p):
    """Spheres packed in a shape (box, sphere, cylinder, solid torus) on a lattice or randomly,
    bonded to neighbours whose surface gap is at most ``bond_gap_tolerance`` × their mean
    diameter (SPEC §5); arrays from `assembly_arrays`. Solid spheres of ``density``: ``m = ρ π
    D³/6``, ``J = m D²/10``. ``angular_velocity`` ω spins the assembly rigidly about its centre
    of mass and each particle at ω. Bond stiffnesses: ``k_axial``, ``k_shear``, ``k_bending`` for
    every bond, or from the binder material (``binder_modulus`` E_b, ``binder_shear_modulus``
    G_b, ``binder_radius_ratio`` λ): ``K_a = E_b A r0``, ``K_s = G_b A r0``, ``K_m = E_b I/r0``
    with ``A = π a²``, ``I = π a⁴/4``, ``a = λ min(D_i, D_j)/2``, ``r0`` the rest centre
    distance (`material_stiffness`)."""
    arrays = assembly_arrays(p)
    first = system.n_bodies
    system.add_bodies(arrays["position"], mass=arrays["mass"], inertia=arrays["inertia"], diameter=arrays["diameter"],
                      velocity=arrays["velocity"], angular_velocity=arrays["angular_velocity"], group=first)
    bonds = arrays["bonds"] + first
    system.add_bonds(bonds[:, 0], bonds[:, 1], k_axial=arrays["k_axial"], k_shear=arrays["k_shear"],
                     k_bending=arrays["k_bending"])


KEYS = ASSEMBLY_KEYS
build = build_assembly
check = check_assembly
