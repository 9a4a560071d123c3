"""Elastic constants of bonded simple-cubic blocks against lattice theory, from the static
response to a small affine strain (no time integration): positions (and, for simple shear, the
orientations) are moved as the continuum moves, the compiled loads evaluated, and the stress is
the virial ``σ = −(1/V) Σ_bonds f ⊗ d`` (``f`` the bond's force on ``i``, ``d = x_i − x_j``;
tension positive). For pairwise loads ``Σ_bonds f ⊗ d = Σ_bodies F ⊗ x``, so the virial comes from
the bodies' total forces (`dem.rig.virial_stress`, which the rig analysis applies to a run's bond
forces). ``V = m D³/3``: a simple-cubic cell of edge ``D`` holds three bonds, so
the block's ``m`` bonds stand for ``m/3`` cells of an infinite lattice, whose stress this is (the
block's surface layers, with fewer bonds, then do not bias it). That the affine state is the
static response is checked too: the interior spheres carry no net force or moment.

Theory (spheres of diameter ``D`` touching, bonds to the six neighbours; cubic symmetry, so
``E = C11 − 2 C12²/(C11 + C12)`` and ``ν = C12/(C11 + C12)``):

* three-spring binder, axial springs only (``U = ½ K_a (r/r0 − 1)²``, i.e. a spring ``k = K_a/r0²`` in
  force per length): a strain ε_xx stretches the x bonds only, ``σ_xx = k ε D / D² ``, so
  ``C11 = E = k/D`` and ``C12 = 0``, ``ν = 0`` (and ``C44 = 0``: the lattice has no shear
  stiffness without bending or shear springs);
* parallel bond (modulus ``E_b``, shear modulus ``G_b``, ``R̄ = λ D/2``): the x bonds carry the
  normal force ``E_b A ε`` over a cell face ``D²``: ``E = C11 = E_b π λ²/4``, ``ν = 0`` (π/4 E_b
  for λ = 1). Under simple shear γ the spheres turn with the material, ``φ = −γ/2``; each x and y
  bond's disc is sheared by ``Dγ/2`` and ``C44 = K_s/(2D) = G_b π λ²/8``, with no relative
  rotation and so no bending."""

import math

import numpy as np
import pytest

from dem import SystemBuilder
from dem.engine import compute_forces
from dem.packing import bond_pairs, lattice_packing
from dem.rig import virial_stress
from dem.rotations import quat_from_rotvec

D = 1.0
N = 4   # spheres per edge


def block(**bond):
    """A 4 × 4 × 4 simple-cubic block of touching spheres bonded to their neighbours."""
    position, diameter = lattice_packing("sc", D, "box", size=(N * D, N * D, N * D))
    system = SystemBuilder()
    system.add_bodies(position, mass=1.0, inertia=0.1, diameter=0.0)   # no contacts: bonds alone
    pairs = bond_pairs(position, diameter, 1e-6)
    system.add_bonds(pairs[:, 0], pairs[:, 1], **bond)
    model, state = system.finish()
    assert model.n_bodies == N ** 3 and len(model.bonds) == 3 * N * N * (N - 1)
    return model, state


def strained(model, state, strain, turn=0.0):
    """``(stress (3, 3), interior forces, interior moments)`` at the affine displacement gradient
    ``strain`` about the block's centre, every sphere turned by ``turn`` about z."""
    centre = state.position.mean(axis=0)
    rest = state.position.copy()
    state.position[:] = centre + (rest - centre) @ (np.eye(3) + strain).T
    state.orientation[:] = quat_from_rotvec([0.0, 0.0, turn])
    compute_forces(model, state)
    volume = len(model.bonds) * D ** 3 / 3
    stress = virial_stress(state.force, state.position, volume)
    interior = np.all(np.abs(rest - centre) < 0.5 * (N - 1) * D - 0.1, axis=1)
    assert interior.sum() == (N - 2) ** 3
    return stress, state.force[interior], state.moment[interior]


def uniaxial(model, state, epsilon=1e-7):
    """``(C11, C12, stress)`` from ε_xx = ``epsilon`` (the affine state must be the static one)."""
    strain = np.zeros((3, 3))
    strain[0, 0] = epsilon
    stress, force, moment = strained(model, state, strain)
    scale = np.abs(stress).max() * D ** 2
    assert np.abs(force).max() < 1e-8 * scale and np.abs(moment).max() < 1e-8 * scale * D
    return stress[0, 0] / epsilon, stress[1, 1] / epsilon, stress


def young_and_poisson(c11, c12):
    return c11 - 2 * c12 ** 2 / (c11 + c12), c12 / (c11 + c12)


def test_axial_springs_give_e_equal_k_over_d_and_no_poisson_effect():
    k_axial = 200.0
    c11, c12, stress = uniaxial(*block(k_axial=k_axial))
    young, poisson = young_and_poisson(c11, c12)
    k = k_axial / D ** 2   # F = K_a (r/r0 − 1)/r0: a spring of K_a/r0² in force per length
    assert young == pytest.approx(k / D, rel=1e-5)
    assert abs(poisson) < 1e-9 and abs(stress[2, 2]) < 1e-9 * stress[0, 0]
    assert np.abs(stress - np.diag(np.diag(stress))).max() < 1e-9 * stress[0, 0]


@pytest.mark.parametrize("ratio", [1.0, 0.5])
def test_parallel_bonds_give_e_equal_pi_over_4_lambda_squared_e_bond(ratio):
    modulus, shear_modulus = 1e4, 4e3
    model, state = block(law="parallel_bond", modulus=modulus, shear_modulus=shear_modulus, radius=ratio * D / 2,
                         tensile_strength=0.0, shear_strength=0.0)
    c11, c12, stress = uniaxial(model, state)
    young, poisson = young_and_poisson(c11, c12)
    assert young == pytest.approx(math.pi / 4 * ratio ** 2 * modulus, rel=1e-5)
    assert abs(poisson) < 1e-9 and abs(stress[2, 2]) < 1e-9 * stress[0, 0]


def test_parallel_bonds_shear_modulus_and_rigid_rotation():
    """Simple shear γ with the spheres turned by the material rotation −γ/2: σ_xy = σ_yx =
    G_b π λ²/8 γ, the interior in equilibrium; a rigid rotation of the block loads nothing."""
    modulus, shear_modulus, gamma = 1e4, 4e3, 1e-7
    model, state = block(law="parallel_bond", modulus=modulus, shear_modulus=shear_modulus, radius=D / 2,
                         tensile_strength=0.0, shear_strength=0.0)
    rest = state.position.copy()
    strain = np.zeros((3, 3))
    strain[0, 1] = gamma    # u_x = γ y
    stress, force, moment = strained(model, state, strain, turn=-gamma / 2)
    c44 = math.pi / 8 * shear_modulus
    assert stress[0, 1] == pytest.approx(c44 * gamma, rel=1e-5)
    assert stress[1, 0] == pytest.approx(c44 * gamma, rel=1e-5)
    assert np.abs(force).max() < 1e-8 * c44 * gamma * D ** 2 and np.abs(moment).max() < 1e-8 * c44 * gamma * D ** 3
    state.position[:] = rest
    angle = 0.3
    rotation = np.array([[math.cos(angle), -math.sin(angle), 0], [math.sin(angle), math.cos(angle), 0], [0, 0, 1]])
    stress, force, moment = strained(model, state, rotation - np.eye(3), turn=angle)
    assert np.abs(state.force).max() < 1e-9 * modulus * D ** 2 and np.abs(state.moment).max() < 1e-9 * modulus * D ** 3
