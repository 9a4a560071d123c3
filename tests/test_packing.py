"""Sphere packings (`dem.packing`): lattice geometry and coordination, containment in every shape,
random packings (no overlap, packing fraction, seeds, diameter bounds), bonds against a brute-force
search."""

import math

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

from dem.packing import (
    bond_pairs, fcc_block, lattice_packing, make_shape, mean_sphere_volume, packing_fraction, random_packing,
    sample_diameters,
)

COORDINATION = {"sc": 6, "fcc": 12, "hcp": 12}
NUMBER_DENSITY = {"sc": 1.0, "fcc": math.sqrt(2.0), "hcp": math.sqrt(2.0)}  # spheres per D³

SHAPES = {
    "box": dict(size=(7.0, 5.5, 6.3)),
    "sphere": dict(diameter=7.3),
    "cylinder": dict(diameter=6.2, height=5.1),
    "torus": dict(diameter=9.0, tube_diameter=3.4),
}


def inside(kind, dims, center, positions, diameters):
    """Containment written out per shape (independent of `Shape.excess`)."""
    x = positions - np.asarray(center)
    r = 0.5 * diameters - 1e-9
    if kind == "box":
        return np.all(np.abs(x) + r[:, None] <= 0.5 * np.asarray(dims["size"]), axis=1)
    if kind == "sphere":
        return np.linalg.norm(x, axis=1) + r <= 0.5 * dims["diameter"]
    rho = np.hypot(x[:, 0], x[:, 1])
    if kind == "cylinder":
        return (rho + r <= 0.5 * dims["diameter"]) & (np.abs(x[:, 2]) + r <= 0.5 * dims["height"])
    return np.hypot(rho - 0.5 * dims["diameter"], x[:, 2]) + r <= 0.5 * dims["tube_diameter"]


def coordination(positions, diameters, tolerance=1e-6):
    pairs = bond_pairs(positions, diameters, tolerance)
    return np.bincount(pairs.ravel(), minlength=len(positions)), pairs


# --- lattices -----------------------------------------------------------------------------------

@pytest.mark.parametrize("lattice", ["sc", "fcc", "hcp"])
def test_lattice_touches_neighbours_with_the_right_coordination(lattice):
    diameter = 0.7
    x, d = lattice_packing(lattice, diameter, "box", size=(6.0, 6.0, 6.0), center=(1.0, -2.0, 0.5))
    assert np.allclose(d, diameter)
    assert pdist(x).min() == pytest.approx(diameter, rel=1e-12)
    count, pairs = coordination(x, d)
    assert np.allclose(np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1), diameter, rtol=1e-12)
    interior = make_shape("box", size=(6.0, 6.0, 6.0), center=(1.0, -2.0, 0.5)).contains(x, 3 * diameter + d)
    assert interior.sum() > 20
    assert np.all(count[interior] == COORDINATION[lattice])
    assert count.max() == COORDINATION[lattice]
    # number density of the bulk (sites per D³), and FCC against HCP: the third shell of HCP
    # holds 2 spheres at √(8/3) D, FCC has none there
    x, d = lattice_packing(lattice, 1.0, "box", size=(14.0, 14.0, 14.0))
    core = np.linalg.norm(x, axis=1) < 6.0
    assert core.sum() / (4 / 3 * math.pi * 6.0 ** 3) == pytest.approx(NUMBER_DENSITY[lattice], rel=0.03)
    inner = np.linalg.norm(x, axis=1) < 4.5
    distance = np.linalg.norm(x[inner][:, None] - x[None], axis=2)
    third = np.sum(np.abs(distance - math.sqrt(8 / 3)) < 1e-9, axis=1)
    assert np.all(third == (2 if lattice == "hcp" else 0))


def test_lattice_counts_in_a_box_fill_it_from_wall_to_wall():
    x, _ = lattice_packing("sc", 1.0, "box", size=(4.0, 4.5, 4.0))
    assert len(x) == 64
    assert np.allclose(x.min(axis=0), [-1.5, -1.5, -1.5]) and np.allclose(x.max(axis=0), [1.5, 1.5, 1.5])
    for m in (1, 2, 3):
        a = math.sqrt(2.0)
        x, _ = lattice_packing("fcc", 1.0, "box", size=(m * a + 1.0,) * 3)
        assert len(x) == (m + 1) ** 3 + 3 * m * m * (m + 1)   # cube corners + face centres
    assert len(lattice_packing("sc", 1.0, "box", size=(0.9, 5, 5))[0]) == 0


@pytest.mark.parametrize("kind", list(SHAPES))
@pytest.mark.parametrize("lattice", ["sc", "fcc", "hcp"])
def test_every_lattice_sphere_lies_inside_its_shape(kind, lattice):
    center = (0.3, -1.0, 2.0)
    x, d = lattice_packing(lattice, 0.8, kind, center=center,
                           **{("shape_diameter" if k == "diameter" else k): v for k, v in SHAPES[kind].items()})
    assert len(x) > 10
    assert np.all(inside(kind, SHAPES[kind], center, x, d))
    assert pdist(x).min() >= 0.8 * (1 - 1e-12)
    # a denser fill is not possible by much: a sphere of the lattice fits in nearly every free cell
    shape = make_shape(kind, center=center, **SHAPES[kind])
    assert 0.2 < packing_fraction(x, d, shape) < math.pi / (3 * math.sqrt(2.0))


def test_shape_volumes():
    assert make_shape("box", size=(1, 2, 3)).volume == pytest.approx(6.0)
    assert make_shape("sphere", diameter=2).volume == pytest.approx(4 / 3 * math.pi)
    assert make_shape("cylinder", diameter=2, height=3).volume == pytest.approx(3 * math.pi)
    assert make_shape("torus", diameter=4, tube_diameter=2).volume == pytest.approx(math.pi ** 2 * 4 * 4 / 4)
    # Monte-Carlo check of the torus containment
    shape = make_shape("torus", diameter=4, tube_diameter=2)
    points = np.random.default_rng(1).uniform(-3, 3, (200_000, 3)) * [1, 1, 1 / 3]
    fraction = shape.contains(points, 0.0).mean()
    assert fraction * 6 * 6 * 2 == pytest.approx(shape.volume, rel=0.02)


def test_fcc_block_for_the_benchmark():
    x = fcc_block(4000)
    assert len(x) == 4 * 10 ** 3
    assert np.allclose(x.mean(axis=0), 0.0, atol=1e-12)
    count, _ = coordination(x, 1.0)
    assert count.max() == 12 and np.all(count >= 3)
    interior = np.all(np.abs(x) < x.max(axis=0) - 1.0, axis=1)
    assert np.all(count[interior] == 12)


# --- random packings ----------------------------------------------------------------------------

def largest_overlap(x, d):
    """Largest overlap over the pair's mean diameter, brute force."""
    gap = squareform(pdist(x)) - 0.5 * (d[:, None] + d[None, :])
    np.fill_diagonal(gap, np.inf)
    return max(0.0, float(np.max(-gap / (0.5 * (d[:, None] + d[None, :])))))


@pytest.mark.parametrize("kind", list(SHAPES))
def test_random_packing_is_dense_inside_its_shape_without_overlap(kind):
    center = (1.0, 2.0, -0.5)
    dims = {k: 2 * v for k, v in SHAPES[kind].items() if k != "size"} | (
        {"size": (14.0, 11.0, 12.6)} if kind == "box" else {})
    shape = make_shape(kind, center=center, **dims)
    x, d = random_packing(shape, packing_fraction=0.55, particle_diameter=1.0, seed=3)
    assert len(x) == round(0.55 * shape.volume / (math.pi / 6))
    assert packing_fraction(x, d, shape) == pytest.approx(0.55, abs=1e-3)
    assert np.all(inside(kind, dims, center, x, d - 2e-4))   # walls: excess ≤ 1e-4 D
    assert largest_overlap(x, d) < 1e-4


def test_random_packing_reaches_the_documented_fraction():
    shape = make_shape("box", size=(12.0, 12.0, 12.0))
    x, d = random_packing(shape, packing_fraction=0.59, particle_diameter=1.0, seed=0)
    assert packing_fraction(x, d, shape) >= 0.589
    assert largest_overlap(x, d) < 1e-4
    # the bulk is denser than the layers along the walls
    core = np.all(np.abs(x) < 4.0, axis=1)
    assert core.sum() * math.pi / 6 / 8.0 ** 3 > 0.6


def test_random_packing_is_reproducible_with_a_seed():
    kwargs = dict(shape_diameter=8.0, packing_fraction=0.5, distribution="uniform", diameter_min=0.6,
                  diameter_max=1.2)
    x1, d1 = random_packing("sphere", seed=7, **kwargs)
    x2, d2 = random_packing("sphere", seed=7, **kwargs)
    x3, d3 = random_packing("sphere", seed=8, **kwargs)
    assert np.array_equal(x1, x2) and np.array_equal(d1, d2)
    assert len(x1) == len(x3) and not np.allclose(np.sort(d1), np.sort(d3))
    assert not np.allclose(x1, x3)


@pytest.mark.parametrize("distribution, spec", [
    ("uniform", dict(diameter_min=0.5, diameter_max=1.5)),
    ("lognormal", dict(particle_diameter=1.0, diameter_sigma=0.3, diameter_min=0.6, diameter_max=2.0)),
])
def test_polydisperse_diameters_follow_the_distribution(distribution, spec):
    d = sample_diameters(200_000, distribution, np.random.default_rng(0), **spec)
    assert d.min() >= spec["diameter_min"] and d.max() <= spec["diameter_max"]
    assert np.mean(np.pi / 6 * d ** 3) == pytest.approx(mean_sphere_volume(distribution, **spec), rel=0.01)
    if distribution == "uniform":
        assert d.mean() == pytest.approx(1.0, rel=0.01)
    else:
        # median of the truncated law: Φ⁻¹ of the middle of [Φ(α), Φ(β)]
        assert np.median(np.log(d)) == pytest.approx(np.log(1.0), abs=0.02)
        assert np.std(np.log(d)) < 0.3
    x, dp = random_packing("box", size=(9.0, 9.0, 9.0), n_particles=400, distribution=distribution, seed=2, **spec)
    assert dp.min() >= spec["diameter_min"] and dp.max() <= spec["diameter_max"]
    assert largest_overlap(x, dp) < 1e-4


def test_random_packing_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="one of them"):
        random_packing("box", size=(5, 5, 5), particle_diameter=1.0)
    with pytest.raises(ValueError, match="do not fit"):
        random_packing("sphere", shape_diameter=1.0, n_particles=3, particle_diameter=1.5)
    with pytest.raises(ValueError, match="diameter_max"):
        random_packing("box", size=(5, 5, 5), n_particles=3, distribution="uniform", diameter_min=1.0,
                       diameter_max=0.5)
    with pytest.raises(ValueError, match="jammed"):
        random_packing("box", size=(4, 4, 4), n_particles=60, particle_diameter=1.0, max_steps=300)


# --- bonds --------------------------------------------------------------------------------------

@pytest.mark.parametrize("tolerance", [0.0, 0.02, 0.2])
def test_bond_pairs_match_a_brute_force_search(tolerance):
    x, d = random_packing("sphere", shape_diameter=7.0, n_particles=150, distribution="uniform", diameter_min=0.5,
                          diameter_max=1.0, seed=4)
    pairs = bond_pairs(x, d, tolerance)
    mean = 0.5 * (d[:, None] + d[None, :])
    gap = squareform(pdist(x)) - mean
    i, j = np.nonzero(np.triu(gap <= tolerance * mean, k=1))
    assert np.array_equal(pairs, np.column_stack([i, j]))
    assert pairs.dtype == np.int64 and np.all(pairs[:, 0] < pairs[:, 1])


def test_bond_pairs_of_few_spheres():
    assert bond_pairs(np.zeros((1, 3)), [1.0], 0.1).shape == (0, 2)
    assert bond_pairs(np.array([[0, 0, 0], [5.0, 0, 0]]), [1.0, 1.0], 0.1).shape == (0, 2)


# --- the [[assembly]] builder -------------------------------------------------------------------
