"""The ``[[assembly]]`` builder (`dem.builders.assembly`): its checks, arrays and stiffness
formulas."""

import math

import numpy as np
import pytest

from dem.builders.assembly import (
    ASSEMBLY_KEYS, assembly_arrays, build_assembly, check_assembly, material_stiffness,
)
from dem.schema import SceneError, validate_table
from dem.system import SystemBuilder


def assembly(**table):
    """An ``[[assembly]]`` table validated against `ASSEMBLY_KEYS` (defaults filled in)."""
    def fail(key, problem):
        raise SceneError(f"{key}: {problem}")

    table = {k: list(v) if isinstance(v, tuple) else v for k, v in table.items() if v is not None}
    return validate_table(table, ASSEMBLY_KEYS, "assembly.0", fail)


@pytest.mark.parametrize("table, key", [
    (dict(size=(4, 4, 4), particle_diameter=1.0, k_axial=1.0, binder_modulus=2.0, binder_shear_modulus=1.0),
     "k_axial"),
    (dict(size=(4, 4, 4), particle_diameter=1.0, k_bending=1.0, binder_radius_ratio=0.5), "k_bending"),
    (dict(size=(4, 4, 4), particle_diameter=1.0, binder_modulus=2.0), "binder_shear_modulus"),
    (dict(size=(4, 4, 4), particle_diameter=1.0, binder_shear_modulus=2.0), "binder_modulus"),
    (dict(particle_diameter=1.0), "size"),
    (dict(shape="sphere", size=(4, 4, 4), diameter=4.0, particle_diameter=1.0), "size"),
    (dict(shape="cylinder", diameter=4.0, particle_diameter=1.0), "height"),
    (dict(shape="torus", diameter=4.0, tube_diameter=5.0, particle_diameter=1.0), "tube_diameter"),
    (dict(size=(4, 4, 4)), "particle_diameter"),
    (dict(size=(4, 4, 4), particle_diameter=5.0), "particle_diameter"),
    (dict(size=(4, 4, 4), particle_diameter=1.0, n_particles=10), "n_particles"),
    (dict(size=(4, 4, 4), particle_diameter=1.0, distribution="uniform"), "distribution"),
    (dict(size=(4, 4, 4), lattice="random", particle_diameter=1.0), "n_particles"),
    (dict(size=(4, 4, 4), lattice="random", particle_diameter=1.0, n_particles=10, packing_fraction=0.5),
     "n_particles"),
    (dict(size=(4, 4, 4), lattice="random", particle_diameter=1.0, n_particles=100), "n_particles"),
    (dict(size=(4, 4, 4), lattice="random", particle_diameter=1.0, packing_fraction=0.7), "packing_fraction"),
    (dict(size=(4, 4, 4), lattice="random", distribution="uniform", diameter_min=0.5, n_particles=10),
     "diameter_max"),
    (dict(size=(4, 4, 4), lattice="random", distribution="uniform", diameter_min=0.5, diameter_max=1.0,
          particle_diameter=1.0, n_particles=10), "particle_diameter"),
    (dict(size=(4, 4, 4), lattice="random", distribution="lognormal", particle_diameter=3.0, diameter_sigma=0.2,
          diameter_min=0.5, diameter_max=1.0, n_particles=10), "particle_diameter"),
])
def test_check_assembly_names_the_offending_key(table, key):
    problem = check_assembly(assembly(**table))
    assert problem is not None and problem[0] == key, problem


def test_check_assembly_accepts_both_stiffness_modes():
    base = dict(size=(4, 4, 4), particle_diameter=1.0)
    assert check_assembly(assembly(**base)) is None
    assert check_assembly(assembly(**base, k_axial=1.0, k_shear=2.0, k_bending=0.5)) is None
    assert check_assembly(assembly(**base, binder_modulus=1e3, binder_shear_modulus=4e2)) is None
    assert check_assembly(assembly(shape="torus", diameter=10.0, tube_diameter=3.0, lattice="random",
                                   distribution="lognormal", particle_diameter=0.8, diameter_sigma=0.2,
                                   diameter_min=0.5, diameter_max=1.2, packing_fraction=0.5)) is None
    with pytest.raises(SceneError, match="shape"):
        assembly(shape="cube")


def test_assembly_arrays_masses_velocities_and_per_bond_stiffness():
    omega = np.array([0.2, -0.4, 1.0])
    p = assembly(lattice="hcp", shape="cylinder", diameter=5.0, height=4.0, particle_diameter=0.9, density=2.5,
                 velocity=(1.0, 0.0, -1.0), angular_velocity=tuple(omega), k_axial=200.0, k_shear=150.0,
                 k_bending=10.0, bond_gap_tolerance=1e-6, center=(3, 3, 3))
    assert check_assembly(p) is None
    a = assembly_arrays(p)
    n, m = len(a["position"]), len(a["bonds"])
    mass = 2.5 * math.pi / 6 * 0.9 ** 3
    assert np.allclose(a["mass"], mass) and np.allclose(a["inertia"], 0.1 * mass * 0.81)
    centre = a["position"].mean(axis=0)
    assert np.allclose(a["velocity"], [1.0, 0.0, -1.0] + np.cross(omega, a["position"] - centre))
    assert np.allclose(a["angular_velocity"], omega) and a["angular_velocity"].shape == (n, 3)
    assert m > 3 * n
    stiffness = a["bond_properties"]
    assert np.all(stiffness["k_axial"] == 200.0) and np.all(stiffness["k_shear"] == 150.0)
    assert np.all(stiffness["k_bending"] == 10.0) and len(stiffness["k_axial"]) == m
    assert len(assembly_arrays(assembly(**{**p, "bonded": False}))["bonds"]) == 0
    unstiff = assembly_arrays(assembly(size=(3, 3, 3), particle_diameter=1.0))
    assert len(unstiff["bonds"]) and not unstiff["bond_properties"]["k_axial"].any()


def test_material_stiffness_formulas():
    p = assembly(lattice="random", shape="box", size=(6, 6, 6), n_particles=400, distribution="uniform",
                 diameter_min=0.5, diameter_max=1.0, bond_gap_tolerance=0.1, binder_modulus=1e4,
                 binder_shear_modulus=3e3, binder_radius_ratio=0.4, seed=1)
    assert check_assembly(p) is None
    a = assembly_arrays(p)
    i, j = a["bonds"].T
    assert len(i) > 400
    r0 = np.linalg.norm(a["position"][i] - a["position"][j], axis=1)
    radius = 0.4 * 0.5 * np.minimum(a["diameter"][i], a["diameter"][j])
    assert np.allclose(a["bond_properties"]["k_axial"], 1e4 * math.pi * radius ** 2 * r0)
    assert np.allclose(a["bond_properties"]["k_shear"], 3e3 * math.pi * radius ** 2 * r0)
    assert np.allclose(a["bond_properties"]["k_bending"], 1e4 * math.pi * radius ** 4 / 4 / r0)
    # the axial law reproduces a linear bar E A / L for a small stretch: U = ½ (E A / r0) Δr²
    k_a, _, _ = material_stiffness(2.0, 2.0, 2.0, 5.0, 1.0, 0.5)
    stretch = 1e-3
    assert 0.5 * k_a * (stretch / 2.0) ** 2 == pytest.approx(0.5 * 5.0 * math.pi * 0.25 / 2.0 * stretch ** 2)
    # default binder radius ratio 0.5
    a = assembly_arrays(assembly(size=(3, 3, 3), particle_diameter=1.0, binder_modulus=1.0,
                                 binder_shear_modulus=1.0))
    assert np.allclose(a["bond_properties"]["k_axial"], math.pi * 0.25 ** 2 * 1.0)


def test_build_assembly_adds_bodies_and_bonds():
    system = SystemBuilder()
    system.add_body((100.0, 0, 0), mass=1.0, inertia=1.0, diameter=1.0)
    p = assembly(lattice="fcc", shape="sphere", diameter=4.0, particle_diameter=1.0, k_axial=5.0, k_shear=4.0,
                 k_bending=1.0, bond_gap_tolerance=1e-6)
    arrays = assembly_arrays(p)
    build_assembly(system, p)
    model, state = system.finish()
    n = len(arrays["position"])
    assert model.n_bodies == n + 1 and len(model.bonds) == len(arrays["bonds"])
    assert np.all(model.group[1:] == 1)
    built = np.sort(np.column_stack([model.bonds.i, model.bonds.j]), axis=1)   # any order
    assert np.array_equal(built[np.lexsort(built.T[::-1])], arrays["bonds"] + 1)
    assert np.allclose(model.bonds.rest_length, 1.0)
    assert np.allclose(state.position[1:], arrays["position"])
    assert np.allclose(model.diameter[1:], 1.0)
