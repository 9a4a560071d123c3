"""The neighbour list built on the GPU (`dem.gpu`): the same rows, cells and carried histories as
`dem.neighbors.build_kernel` with `dem.contacts.compact_history`/`spread_history`, bit for bit,
with the same compiled per-particle functions (`cell_of`, `scan_row`).

1. The bounds of the particles and the grid: on the host (`bounds`, `grid_of_bounds`; the
   positions go down, the grid's few numbers up).
2. Counting sort into cells: each particle adds one to its cell's count (integer atomics: the
   counts do not depend on the order), a prefix sum gives the cells' starts, each particle takes
   a place in its cell (in any order) and each cell then sorts its particles: ascending, as the
   CPU's serial sort leaves them.
3. Rows: each particle counts its neighbours (`scan_row`), a prefix sum gives the rows'
   starts, each particle writes its row and sorts it (insertion sort: rows are short).
4. The owner offsets (entries ``j > i`` per row, a prefix sum), then each history: every new
   owner slot ``(i, j)`` looks its pair up in the old row ``i`` (bisection: rows are sorted) and
   takes the old slot's values where its history is not all zero (the CPU's compaction and
   spreading keep exactly those), else zero.

Prefix sums run in tiles of `TILE` entries, one thread per tile (serial within it, in order):
integer sums, exact whatever the layout. Periodic cells are binned as on the CPU; a sheared
cell's rows (`dem.neighbors._scan_row_tilted`) are not built here (`dem.gpu.problem`).
"""

import numpy as np

from .cell import record_build
from .contacts import pair_slot
from .device import cuda as _cuda, simulated, to_device, to_host
from .neighbors import (
    N_BUILDS, N_ENTRIES, bounds, cell_of, grid_of_bounds, scan_row, sort_row, takes_part, whole_grid,
)

cuda = _cuda()
TILE = 1024
THREADS = 128


def _blocks(n):
    return (max(n, 1) + THREADS - 1) // THREADS, THREADS


@cuda.jit(cache=True)
def _zero(values_):
    values = values_[0]
    k = cuda.grid(1)
    if k < values.shape[0]:
        values[k] = 0


@cuda.jit(cache=True)
def _count_cells(bodies, grid, cell_start_):
    (position, diameter), cell_start = bodies, cell_start_[0]
    i = cuda.grid(1)
    if i < position.shape[0] and takes_part(position, diameter, i):
        dims = grid[4]
        a, b, c = cell_of(position, i, grid)
        cuda.atomic.add(cell_start, (a * dims[1] + b) * dims[2] + c + 1, 1)


@cuda.jit(cache=True)
def _tile_sums(values_, sums_):
    values, sums = values_[0], sums_[0]
    t = cuda.grid(1)
    if t < sums.shape[0]:
        total = 0
        for k in range(t * TILE, min(values.shape[0], (t + 1) * TILE)):
            total += values[k]
        sums[t] = total


@cuda.jit(cache=True)
def _scan_sums(sums_):
    sums = sums_[0]
    if cuda.grid(1) == 0:
        running = 0
        for t in range(sums.shape[0]):
            tile = sums[t]
            sums[t] = running
            running += tile


@cuda.jit(cache=True)
def _scan_tiles(values_, sums_):
    values, sums = values_[0], sums_[0]
    t = cuda.grid(1)
    if t < sums.shape[0]:
        running = sums[t]
        for k in range(t * TILE, min(values.shape[0], (t + 1) * TILE)):
            running += values[k]
            values[k] = running


def inclusive_scan(values):
    """``values[k] ← values[0] + … + values[k]`` (integers), in place."""
    tiles = (values.shape[0] + TILE - 1) // TILE
    sums = _empty(tiles, values.dtype)
    _tile_sums[_blocks(tiles)]((values,), (sums,))
    _scan_sums[1, 1]((sums,))
    _scan_tiles[_blocks(tiles)]((values,), (sums,))


@cuda.jit(cache=True)
def _place(bodies, grid, cell_start_, cursor_, cell_particles_):
    (position, diameter), cell_start, cursor, cell_particles = bodies, cell_start_[0], cursor_[0], cell_particles_[0]
    i = cuda.grid(1)
    if i < position.shape[0] and takes_part(position, diameter, i):
        dims = grid[4]
        a, b, c = cell_of(position, i, grid)
        k = (a * dims[1] + b) * dims[2] + c
        cell_particles[cell_start[k] + cuda.atomic.add(cursor, k, 1)] = i


@cuda.jit(cache=True)
def _sort_cells(n_cells, cell_start_, cell_particles_):
    cell_start, cell_particles = cell_start_[0], cell_particles_[0]
    k = cuda.grid(1)
    if k < n_cells:
        sort_row(cell_particles, cell_start[k], cell_start[k + 1])


@cuda.jit(cache=True)
def _count_rows(bodies, skin, grid, cell_start_, cell_particles_, start_, index_, cell_):
    (position, diameter), cell = bodies, cell_[0]
    cell_start, cell_particles, start, index = cell_start_[0], cell_particles_[0], start_[0], index_[0]
    i = cuda.grid(1)
    if i < position.shape[0]:
        if i == 0:
            start[0] = 0
        count = 0
        if takes_part(position, diameter, i):
            count = scan_row(i, position, diameter, skin, grid, cell_start, cell_particles, index, 0, False, cell)
        start[i + 1] = count


@cuda.jit(cache=True)
def _fill_rows(bodies, skin, grid, cell_start_, cell_particles_, start_, index_, cell_, reference_):
    (position, diameter), cell, reference = bodies, cell_[0], reference_[0]
    cell_start, cell_particles, start, index = cell_start_[0], cell_particles_[0], start_[0], index_[0]
    i = cuda.grid(1)
    if i < position.shape[0]:
        if takes_part(position, diameter, i):
            scan_row(i, position, diameter, skin, grid, cell_start, cell_particles, index, start[i], True, cell)
            sort_row(index, start[i], start[i + 1])
        for c in range(3):
            reference[i, c] = position[i, c]


@cuda.jit(cache=True)
def _owner_counts(start_, index_, owner_start_):
    start, index, owner_start = start_[0], index_[0], owner_start_[0]
    i = cuda.grid(1)
    if i < start.shape[0] - 1:
        if i == 0:
            owner_start[0] = 0
        count = 0
        for k in range(start[i], start[i + 1]):
            if index[k] > i:
                count += 1
        owner_start[i + 1] = count


@cuda.jit(cache=True)
def _lower_owners(start_, index_, owner_start_):
    """After the rows, each lower entry's owner slot (as `dem.contacts.owner_offsets` leaves
    it): row ``j`` finds each of its partners ``i < j`` in ``i``'s row (`dem.contacts.pair_slot`)."""
    start, index, owner_start = start_[0], index_[0], owner_start_[0]
    j = cuda.grid(1)
    n = start.shape[0] - 1
    if j < n:
        tail = start[n]
        for k in range(start[j], start[j + 1] - (owner_start[j + 1] - owner_start[j])):  # the entries i < j
            index[tail + k - owner_start[j]] = pair_slot(start, index, owner_start, index[k], j)


@cuda.jit(cache=True)
def _carry(width, start_, index_, owner_start_, old_start_, old_index_, old_owner_start_, old_, new_):
    start, index, owner_start = start_[0], index_[0], owner_start_[0]
    old_start, old_index, old_owner_start, old, new = (old_start_[0], old_index_[0], old_owner_start_[0], old_[0],
                                                       new_[0])
    i = cuda.grid(1)
    if i < start.shape[0] - 1:
        slot = owner_start[i]
        upper = old_start[i + 1] - (old_owner_start[i + 1] - old_owner_start[i])  # old row's entries j > i
        for k in range(start[i + 1] - (owner_start[i + 1] - owner_start[i]), start[i + 1]):
            j = index[k]
            lo, hi = upper, old_start[i + 1]  # bisection for j among them
            while lo < hi:
                middle = (lo + hi) // 2
                if old_index[middle] < j:
                    lo = middle + 1
                else:
                    hi = middle
            live = False
            if lo < old_start[i + 1] and old_index[lo] == j and old_start[i + 1] > old_start[i]:
                source = old_owner_start[i] + lo - upper
                for c in range(width):
                    if old[source, c] != 0.0:
                        live = True
                if live:
                    for c in range(new.shape[1]):
                        new[slot, c] = old[source, c]
            if not live:
                for c in range(new.shape[1]):
                    new[slot, c] = 0.0
            slot += 1


@cuda.jit(cache=True)
def _finish(counters_, start_):
    counters, start = counters_[0], start_[0]
    if cuda.grid(1) == 0:
        counters[N_ENTRIES] = start[start.shape[0] - 1]
        counters[N_BUILDS] += 1


def _empty(shape, dtype):
    return np.empty(shape, dtype) if simulated() else cuda.device_array(shape, dtype)


def _copy(values):
    """A copy of a device array, on the device."""
    if simulated():
        return values.copy()
    copy = cuda.device_array_like(values)
    copy.copy_to_device(values)
    return copy


def _first(values, k):
    """``values[k]``, read back from the device."""
    return int(to_host(values[k:k + 1])[0])


def build(position, diameter, table, index, histories, widths, cell):
    """Rebuild the list on the device: returns ``(index, histories, cell)`` (new ``index`` and
    history arrays, ``cell`` with the build's record); ``table``'s arrays are rewritten in place."""
    n = position.shape[0]
    bodies = (position, diameter)
    host_cell = to_host(cell)
    lo, hi, largest = bounds(to_host(position), to_host(diameter))
    origin, size, dims = grid_of_bounds(lo, hi, largest, table.skin, table.cell_start.shape[0] - 1, host_cell)
    grid = to_device(whole_grid(origin, size, dims, host_cell))
    n_cells = int(dims[0] * dims[1] * dims[2])
    cell_start, cell_particles = table.cell_start, table.cell_particles
    _zero[_blocks(n_cells + 1)]((cell_start,))
    _count_cells[_blocks(n)](bodies, grid, (cell_start,))
    inclusive_scan(cell_start[:n_cells + 1])
    cursor = _empty(n_cells, np.int64)
    _zero[_blocks(n_cells)]((cursor,))
    _place[_blocks(n)](bodies, grid, (cell_start,), (cursor,), (cell_particles,))
    _sort_cells[_blocks(n_cells)](n_cells, (cell_start,), (cell_particles,))
    old_start, old_owner_start = _copy(table.start), _copy(table.owner_start)
    _count_rows[_blocks(n)](bodies, table.skin, grid, (cell_start,), (cell_particles,), (table.start,), (index,),
                            (cell,))
    inclusive_scan(table.start)
    entries = _first(table.start, n)
    need = entries + entries // 2  # the rows, then room for the owner slots (`dem.contacts.owner_offsets`)
    fresh = _empty(index.shape[0] if need <= index.shape[0] else need + need // 16 + 16, np.int32)
    _fill_rows[_blocks(n)](bodies, table.skin, grid, (cell_start,), (cell_particles,), (table.start,), (fresh,),
                           (cell,), (table.reference_position,))
    _finish[1, 1]((table.counters,), (table.start,))
    carried = {}
    if histories:  # (the owner offsets are the histories' slots)
        _owner_counts[_blocks(n)]((table.start,), (fresh,), (table.owner_start,))
        inclusive_scan(table.owner_start)
        slots = _first(table.owner_start, n)
        _lower_owners[_blocks(n)]((table.start,), (fresh,), (table.owner_start,))
    for name, history in histories.items():
        rows = history.shape[0] if slots <= history.shape[0] else slots + slots // 16 + 16
        carried[name] = _empty((rows, history.shape[1]), np.float64)
        _carry[_blocks(n)](widths[name], (table.start,), (fresh,), (table.owner_start,), (old_start,), (index,),
                           (old_owner_start,), (history,), (carried[name],))
    record_build(host_cell, lo, hi, largest + table.skin)
    return fresh, carried, to_device(host_cell)
