"""Neighbour list for sphere contacts: a cell list with a Verlet skin, O(N) in time and memory.

Pairs ``(i, j)``, ``i < j``, whose centres are closer than ``(D_i + D_j)/2 + skin`` are stored
in ``pair_i, pair_j``. The list stays valid while no particle has moved more than ``skin/2``
since the last build (then no pair can have come into contact unseen). Bodies with zero
diameter take no part. The pair arrays have a capacity; a build that needs more grows them
(inside compiled code, and rarely), so callers take the arrays back from every update.

``counters`` holds ``[n_pairs, n_builds]``.
"""

import numpy as np
from numba import njit

N_PAIRS, N_BUILDS = 0, 1


@njit(cache=True)
def _cell_grid(position, diameter, skin):
    """Cell size and grid (origin, dimensions) covering the particles; at most ~2 cells per
    particle, so a scattered system cannot blow the memory up."""
    n = position.shape[0]
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    largest = 0.0
    active = 0
    for i in range(n):
        if diameter[i] <= 0.0:
            continue
        active += 1
        largest = max(largest, diameter[i])
        for c in range(3):
            lo[c] = min(lo[c], position[i, c])
            hi[c] = max(hi[c], position[i, c])
    size = largest + skin
    dims = np.ones(3, np.int64)
    if active == 0:
        return lo, size, dims
    while True:
        for c in range(3):
            dims[c] = int((hi[c] - lo[c]) / size) + 1
        if dims[0] * dims[1] * dims[2] <= 2 * active + 8:
            return lo, size, dims
        size *= 1.25


@njit(cache=True)
def _build_kernel(position, diameter, skin, reference_position, pair_i, pair_j, counters):
    """Rebuild the pair list; returns the pair arrays (new ones if the old were too small)."""
    n = position.shape[0]
    lo, size, dims = _cell_grid(position, diameter, skin)
    head = np.full(dims[0] * dims[1] * dims[2], -1, np.int64)
    following = np.full(n, -1, np.int64)
    cell_of = np.zeros((n, 3), np.int64)
    for i in range(n - 1, -1, -1):
        if diameter[i] <= 0.0:
            continue
        for c in range(3):
            cell_of[i, c] = min(int((position[i, c] - lo[c]) / size), dims[c] - 1)
        cell = (cell_of[i, 0] * dims[1] + cell_of[i, 1]) * dims[2] + cell_of[i, 2]
        following[i] = head[cell]
        head[cell] = i
    while True:
        count = 0
        capacity = pair_i.shape[0]
        for i in range(n):
            if diameter[i] <= 0.0:
                continue
            for a in range(max(cell_of[i, 0] - 1, 0), min(cell_of[i, 0] + 2, dims[0])):
                for b in range(max(cell_of[i, 1] - 1, 0), min(cell_of[i, 1] + 2, dims[1])):
                    for c in range(max(cell_of[i, 2] - 1, 0), min(cell_of[i, 2] + 2, dims[2])):
                        j = head[(a * dims[1] + b) * dims[2] + c]
                        while j >= 0:
                            if j > i:
                                dx = position[i, 0] - position[j, 0]
                                dy = position[i, 1] - position[j, 1]
                                dz = position[i, 2] - position[j, 2]
                                reach = 0.5 * (diameter[i] + diameter[j]) + skin
                                if dx * dx + dy * dy + dz * dz < reach * reach:
                                    if count < capacity:
                                        pair_i[count] = i
                                        pair_j[count] = j
                                    count += 1
                            j = following[j]
        if count <= capacity:
            break
        pair_i = np.empty(count + count // 2 + 16, np.int64)
        pair_j = np.empty(count + count // 2 + 16, np.int64)
    counters[N_PAIRS] = count
    counters[N_BUILDS] += 1
    reference_position[:] = position
    return pair_i, pair_j


@njit(cache=True)
def _needs_rebuild(position, diameter, skin, reference_position):
    """True once a particle has moved more than ``skin/2`` since the last build."""
    limit = 0.25 * skin * skin
    for i in range(position.shape[0]):
        if diameter[i] <= 0.0:
            continue
        dx = position[i, 0] - reference_position[i, 0]
        dy = position[i, 1] - reference_position[i, 1]
        dz = position[i, 2] - reference_position[i, 2]
        if dx * dx + dy * dy + dz * dz > limit:
            return True
    return False


@njit(cache=True)
def _update_kernel(position, diameter, skin, reference_position, pair_i, pair_j, counters):
    """Rebuild if needed; returns the (possibly new) pair arrays."""
    if counters[N_BUILDS] == 0 or _needs_rebuild(position, diameter, skin, reference_position):
        return _build_kernel(position, diameter, skin, reference_position, pair_i, pair_j, counters)
    return pair_i, pair_j


class NeighborList:
    """Owns the pair arrays and the reference positions of the last build."""

    def __init__(self, n_bodies, capacity=None):
        capacity = 8 * n_bodies + 16 if capacity is None else capacity
        self.reference_position = np.zeros((n_bodies, 3))
        self.pair_i = np.empty(capacity, np.int64)
        self.pair_j = np.empty(capacity, np.int64)
        self.counters = np.zeros(2, np.int64)

    @property
    def n_pairs(self):
        return int(self.counters[N_PAIRS])

    @property
    def n_builds(self):
        return int(self.counters[N_BUILDS])

    def pairs(self):
        """The current candidate pairs as an ``(n_pairs, 2)`` array."""
        return np.stack((self.pair_i[: self.n_pairs], self.pair_j[: self.n_pairs]), axis=1)

    def update(self, position, diameter, skin):
        self.pair_i, self.pair_j = _update_kernel(
            position, diameter, float(skin), self.reference_position, self.pair_i, self.pair_j, self.counters
        )
