"""The cell list with Verlet skin against brute force on random polydisperse systems."""

import numpy as np
import pytest

from dem.neighbors import NeighborList


def brute_force_close(position, diameter, extra):
    """Whether bodies i < j take part in contacts and are closer than (D_i + D_j)/2 + extra, an
    upper-triangular (N, N) mask, O(N²)."""
    distance2 = np.sum((position[:, None, :] - position[None, :, :]) ** 2, axis=2)
    reach = 0.5 * (diameter[:, None] + diameter[None, :]) + extra
    close = (distance2 < reach * reach) & (diameter[:, None] > 0) & (diameter[None, :] > 0)
    return np.triu(close, k=1)


def brute_force_pairs(position, diameter, extra):
    """All pairs i < j of contact bodies closer than (D_i + D_j)/2 + extra."""
    i, j = np.nonzero(brute_force_close(position, diameter, extra))
    return set(zip(i.tolist(), j.tolist()))


def listed(neighbors):
    return set(map(tuple, neighbors.pairs().tolist()))


def listed_mask(neighbors, n):
    """The listed pairs i < j as an upper-triangular (N, N) mask."""
    mask = np.zeros((n, n), bool)
    i, j = neighbors.pairs().T
    mask[i, j] = True
    return mask


@pytest.mark.parametrize("seed", range(4))
def test_build_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 400
    diameter = rng.uniform(0.3, 1.5, n)
    diameter[rng.random(n) < 0.05] = 0.0  # bodies without contact take no part
    position = rng.uniform(0, 8.0, size=(n, 3)) * [1.0, 1.0, 0.3]  # a flattened box
    skin = 0.2
    neighbors = NeighborList(n, capacity=4)  # far too small: the build must grow it
    neighbors.update(position, diameter, skin)
    assert listed(neighbors) == brute_force_pairs(position, diameter, skin)
    assert neighbors.n_builds == 1 and neighbors.index.shape[0] >= neighbors.start[-1]
    # rows are full: j in row i exactly when i in row j; and in ascending order
    rows = [neighbors.index[neighbors.start[i]:neighbors.start[i + 1]] for i in range(n)]
    assert all(i in rows[j] for i in range(n) for j in rows[i])
    assert all((np.diff(row) > 0).all() for row in rows)


def test_parallel_build_equals_serial_build():
    rng = np.random.default_rng(11)
    n = 20_000
    diameter = rng.uniform(0.5, 1.0, n)
    position = rng.uniform(0, 25.0, size=(n, 3))
    lists = []
    for parallel in (False, True):
        neighbors = NeighborList(n)
        neighbors.update(position, diameter, 0.1, parallel=parallel)
        lists.append(neighbors)
    assert np.array_equal(lists[0].start, lists[1].start)
    assert np.array_equal(lists[0].index[: lists[0].start[-1]], lists[1].index[: lists[1].start[-1]])


def test_list_stays_complete_over_many_rebuilds():
    rng = np.random.default_rng(7)
    n = 300
    diameter = rng.uniform(0.5, 1.0, n)
    position = rng.uniform(0, 6.0, size=(n, 3))
    velocity = rng.normal(size=(n, 3))
    skin = 0.1
    neighbors = NeighborList(n)
    for _ in range(400):
        position += 0.01 * velocity
        neighbors.update(position, diameter, skin)
        pairs = listed_mask(neighbors, n)
        # every pair in contact is listed; every listed pair was within reach + skin at the build
        assert not (brute_force_close(position, diameter, 0.0) & ~pairs).any()
        assert np.array_equal(pairs, brute_force_close(neighbors.reference_position, diameter, skin))
    assert 10 < neighbors.n_builds < 400


def test_scattered_particles_do_not_blow_up_the_grid():
    position = np.array([[0.0, 0, 0], [1e6, 0, 0], [0, 1e6, 1e6], [0.5, 0, 0]])
    neighbors = NeighborList(4)
    neighbors.update(position, np.ones(4), 0.1)
    assert neighbors.pairs().tolist() == [[0, 3]]
    assert len(neighbors.cell_start) == 2 * 4 + 9
