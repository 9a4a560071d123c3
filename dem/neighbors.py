"""Neighbour list for sphere contacts: a cell list with a Verlet skin, O(N) in time and memory.

The list is *full* and stored row by row (CSR): the neighbours of particle ``i`` are
``index[start[i]:start[i+1]]`` (int32: fewer than 2³¹ bodies), in ascending order, every ``j ≠ i``
whose centre is closer than ``(D_i + D_j)/2 + skin``. A kernel looping over a particle's row
writes only that particle's force, so rows can be processed in parallel with no atomics and the
same result for any number of threads; a serial kernel may visit each pair once instead (``i <
j``, adding to both), and with ascending rows each particle then receives its pairs' terms in
its row's order, the same sums to the last bit (`dem.interactions.hertz.hertz_pp_fast_pairs`).
The list stays valid while no particle has moved more than ``skin/2`` since the last build.
Bodies with zero diameter take no part. Along the periodic axes of the cell (`dem.cell`) the
cells tile the box, particles are binned by their wrapped positions, the neighbour cells wrap
around (in a sheared cell: the cells around each image of the particle near the box), and
distances are those of the nearest image.

Cell arrays are allocated once (at most ``2N + 8`` cells); the row storage has a capacity and a
build that needs more grows it (rarely, inside compiled code), so callers take the arrays back
from every update. Its capacity leaves room after the rows for half as many entries again: the
contact table keeps there, for each pair's entry in its higher row, the pair's history slot
(`dem.contacts.owner_offsets`). ``counters`` holds ``[n_entries, n_builds]``.
"""

import numpy as np
from numba import njit, prange

from .cell import (
    INVERSE, MOTION, OPEN, ORIGIN, PERIOD, TILT, TILTED, box_cell, image_kind, minimum_image, record_build,
)

N_ENTRIES, N_BUILDS = 0, 1
CHUNK = 4096


@njit(cache=True)
def takes_part(position, diameter, i):
    """Whether body ``i`` takes part: it has a diameter and a sane position (a run that blew up,
    with NaN or astronomically far bodies, must not index cells with them; the integrator reports
    the blow-up after the chunk)."""
    return diameter[i] > 0.0 and abs(position[i, 0]) < 1e100 and abs(position[i, 1]) < 1e100 \
        and abs(position[i, 2]) < 1e100


@njit(cache=True)
def bounds(position, diameter):
    """``(lo, hi, largest)``: the corners of the box of the active particles and their largest
    diameter."""
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    largest = 0.0
    for i in range(position.shape[0]):
        if not takes_part(position, diameter, i):
            continue
        largest = max(largest, diameter[i])
        for c in range(3):
            lo[c] = min(lo[c], position[i, c])
            hi[c] = max(hi[c], position[i, c])
    return lo, hi, largest


@njit(cache=True)
def grid_of_bounds(lo, hi, largest, skin, max_cells, cell):
    """Origin, cell sizes (3) and dimensions covering the box ``lo``–``hi`` with at most
    ``max_cells`` cells; along a periodic axis of ``cell`` the grid tiles the cell's edge
    (``lo`` its origin, a whole number of cells of at least ``largest + skin``)."""
    size = largest + skin
    dims = np.ones(3, np.int64)
    sizes = np.full(3, size)
    lo = lo.copy()
    for c in range(3):
        if cell[PERIOD, c] > 0.0:
            lo[c] = cell[ORIGIN, c]
    if largest == 0.0:
        return lo, sizes, dims
    while True:
        count = 1.0  # in floating point: an integer product could overflow
        for c in range(3):
            if cell[PERIOD, c] > 0.0:
                dims[c] = max(int(cell[PERIOD, c] / size), 1)
                sizes[c] = cell[PERIOD, c] / dims[c]
                count *= dims[c]
            else:
                count *= (hi[c] - lo[c]) / size + 1.0
        if count <= max_cells:
            break
        size *= 1.25
    for c in range(3):
        if cell[PERIOD, c] == 0.0:
            sizes[c] = size
            dims[c] = int((hi[c] - lo[c]) / size) + 1
    return lo, sizes, dims


@njit(inline="always")
def _offsets(position, i, grid):
    """Particle ``i``'s offsets from the grid's origin, shifted along x and y by the tilts for
    each period of z, and along x for each period of y, that wraps it into the cell (the images
    across the z and y faces of a sheared cell, `dem.cell`); without a branch (a test here, in
    every build's innermost calls, cost more than the arithmetic: ``0 · ⌊u · 0⌋ = 0`` where an
    axis is not periodic, and zero tilts, leave the offsets as they are)."""
    lo, inverse, tilt = grid[0], grid[6], grid[7]
    z = position[i, 2] - lo[2]
    kz = np.floor(z * inverse[2])
    y = position[i, 1] - lo[1] - tilt[2] * kz
    return position[i, 0] - lo[0] - tilt[1] * kz - tilt[0] * np.floor(y * inverse[1]), y, z


@njit(inline="always")
def _wrapped(u, c, grid):
    """The offset ``u`` along axis ``c`` wrapped into the cell along a periodic axis (as it is
    along the others)."""
    period, inverse = grid[5], grid[6]
    return u - period[c] * np.floor(u * inverse[c])


@njit(inline="always")
def _bin(u, c, grid):
    """The cell along axis ``c`` of the offset ``u`` from the grid's origin, wrapped into the
    cell along a periodic axis (`cell_of`)."""
    size, top, first = grid[1], grid[2], grid[3]
    return min(int(_wrapped(u, c, grid) / size[c]), top[c]) - first[c]


@njit(inline="always")
def cell_of(position, i, grid):
    """Cell coordinates of particle ``i`` in ``grid = (lo, size, top, first, dims, period,
    inverse, tilt)``: the cell of the whole grid (origin ``lo``, cell sizes ``size``, last cell
    ``top``) less ``first``, the first cell of the part of it that ``dims`` spans (all of it,
    ``first = 0``, except on an MPI rank: `build_on_grid`); ``period``: the cell's periodic edges
    (0: not periodic), ``inverse`` their inverses (0 where not periodic), ``tilt`` the cell's
    tilts ``[s_xy, s_xz, s_yz]`` (`dem.cell`)."""
    x, y, z = _offsets(position, i, grid)
    return _bin(x, 0, grid), _bin(y, 1, grid), _bin(z, 2, grid)


@njit(inline="always")
def _span(centre, dims, periodic):
    """``(first, count)`` of the neighbour cells along one axis around cell ``centre``: the cells
    ``first … first + count − 1`` (wrapped around along a periodic axis, `_wrap`, where all of
    them are neighbours when there are fewer than three)."""
    if periodic:
        return (centre - 1, 3) if dims >= 3 else (0, dims)
    first = max(centre - 1, 0)
    return first, min(centre + 2, dims) - first


@njit(inline="always")
def _wrap(k, dims):
    """Cell ``k`` of ``dims`` along an axis, where ``−1`` and ``dims`` wrap around (an integer
    ``%`` costs more than the two tests, in the innermost loops of every build)."""
    if k < 0:
        return k + dims
    if k >= dims:
        return k - dims
    return k


@njit(inline="always")
def _scan_cells(i, first_cell, end_cell, position, diameter, skin, cell_start, cell_particles, index, offset, limit,
                cell, kind, count):
    """`scan_row`'s search of the cells ``first_cell … end_cell − 1`` (consecutive cells, whose
    particles `cell_particles` holds one after the other: one loop over them all) for the
    neighbours of ``i`` (the nearest images of ``kind``, `dem.cell.image_kind`: `dem.cell.OPEN`
    where the grid is not periodic); returns ``count`` plus those found (written from ``offset +
    count``, those that fall below ``limit``)."""
    for k in range(cell_start[first_cell], cell_start[end_cell]):
        j = cell_particles[k]  # active by construction
        if j == i:
            continue
        dx = position[i, 0] - position[j, 0]
        dy = position[i, 1] - position[j, 1]
        dz = position[i, 2] - position[j, 2]
        dx, dy, dz = minimum_image(dx, dy, dz, cell, kind)
        reach = 0.5 * (diameter[i] + diameter[j]) + skin
        if dx * dx + dy * dy + dz * dz < reach * reach:
            if offset + count < limit:
                index[offset + count] = j
            count += 1
    return count


@njit(cache=True)
def scan_row(i, position, diameter, skin, grid, cell_start, cell_particles, index, offset, fill, cell):
    """Count (``fill`` False) or write (True, from ``offset``) the neighbours of ``i``."""
    return scan_within(i, position, diameter, skin, grid, cell_start, cell_particles, index, offset,
                       index.shape[0] if fill else offset, cell)


@njit(inline="always")
def scan_within(i, position, diameter, skin, grid, cell_start, cell_particles, index, offset, limit, cell):
    """Count the neighbours of ``i`` and write them from ``offset``, those that fall below
    ``limit`` (the periodic steps only where the cell is periodic: its tests are
    loop-invariant)."""
    count = 0
    dims, period = grid[4], grid[5]
    periodic = period[0] > 0.0 or period[1] > 0.0 or period[2] > 0.0
    kind = image_kind(cell) if periodic else OPEN
    ca, cb, cc = cell_of(position, i, grid)
    first_a, count_a = _span(ca, dims[0], period[0] > 0.0)
    first_b, count_b = _span(cb, dims[1], period[1] > 0.0)
    first_c, count_c = _span(cc, dims[2], period[2] > 0.0)
    # along z the cells of a column (a, b) follow one another: one loop over the column's cells,
    # unless they wrap around a periodic z (a loop over the particles of a few cells costs less
    # than one per cell: each short loop's end is a branch the processor mispredicts)
    column = first_c >= 0 and first_c + count_c <= dims[2]
    for ta in range(count_a):
        a = _wrap(first_a + ta, dims[0]) if periodic else first_a + ta
        for tb in range(count_b):
            b = _wrap(first_b + tb, dims[1]) if periodic else first_b + tb
            base = (a * dims[1] + b) * dims[2]
            if column:
                count = _scan_cells(i, base + first_c, base + first_c + count_c, position, diameter, skin,
                                    cell_start, cell_particles, index, offset, limit, cell, kind, count)
                continue
            for tc in range(count_c):
                c = base + _wrap(first_c + tc, dims[2])
                count = _scan_cells(i, c, c + 1, position, diameter, skin, cell_start, cell_particles, index,
                                    offset, limit, cell, kind, count)
    return count


@njit(inline="always")
def _stencil(q, c, grid):
    """``(first, last)`` of the cells of the whole grid along axis ``c`` within a cell's size of
    the offset ``q`` (``first > last``: none)."""
    size, top = grid[1], grid[2]
    k = int(np.floor(q / size[c]))
    return max(k - 1, 0), min(k + 1, top[c])


@njit(cache=True)
def _scan_row_tilted(i, position, diameter, skin, grid, cell_start, cell_particles, index, offset, limit, cell):
    """`scan_row` in a sheared cell (`dem.cell`: the images across the z and y faces shifted by
    the tilts): the neighbours of ``i`` are the particles binned within reach of one of the
    points ``u_i − H m`` (``u_i`` its wrapped offset, ``H m`` a lattice vector), so the cells
    around each such point that lies within a cell's size of the box are gathered (``m`` within
    the few periods the tilts can shift it by), once each, and searched."""
    first, dims, period, tilt = grid[3], grid[4], grid[5], grid[7]
    x, y, z = _offsets(position, i, grid)
    ux, uy, uz = _wrapped(x, 0, grid), _wrapped(y, 1, grid), _wrapped(z, 2, grid)
    found = np.empty(1024, np.int64)
    n = 0
    for mc in range(-1 if period[2] > 0.0 else 0, 2 if period[2] > 0.0 else 1):
        qz = uz - mc * period[2]
        c0, c1 = _stencil(qz, 2, grid)
        if c0 > c1:
            continue
        for mb in range(-2 if period[1] > 0.0 else 0, 3 if period[1] > 0.0 else 1):
            qy = uy - mc * tilt[2] - mb * period[1]
            b0, b1 = _stencil(qy, 1, grid)
            if b0 > b1:
                continue
            for ma in range(-3 if period[0] > 0.0 else 0, 4 if period[0] > 0.0 else 1):
                a0, a1 = _stencil(ux - mc * tilt[1] - mb * tilt[0] - ma * period[0], 0, grid)
                for a in range(max(a0, first[0]), min(a1, first[0] + dims[0] - 1) + 1):
                    for b in range(max(b0, first[1]), min(b1, first[1] + dims[1] - 1) + 1):
                        for c in range(max(c0, first[2]), min(c1, first[2] + dims[2] - 1) + 1):
                            if n == found.shape[0]:
                                grown = np.empty(2 * n, np.int64)
                                grown[:n] = found
                                found = grown
                            found[n] = ((a - first[0]) * dims[1] + b - first[1]) * dims[2] + c - first[2]
                            n += 1
    found = np.sort(found[:n])
    count = 0
    for k in range(n):
        if k == 0 or found[k] != found[k - 1]:
            count = _scan_cells(i, found[k], found[k] + 1, position, diameter, skin, cell_start, cell_particles, index,
                                offset, limit, cell, TILTED, count)
    return count


@njit(inline="always")
def sort_row(values, first, end):
    """Sort ``values[first:end]`` ascending in place by insertion: a neighbour row (or, on the
    GPU, a cell's particles) is short and comes as a few ascending runs (cells bin their
    particles in ascending order), where a general sort's set-up costs more than the sorting."""
    for k in range(first + 1, end):
        value = values[k]
        m = k
        while m > first and values[m - 1] > value:
            values[m] = values[m - 1]
            m -= 1
        values[m] = value


@njit(inline="always")
def _scan(i, position, diameter, skin, grid, cell_start, cell_particles, index, offset, limit, cell):
    """Row ``i``'s neighbours (`scan_within`, in a sheared cell `_scan_row_tilted`): their count,
    those below ``limit`` written from ``offset``."""
    tilt = grid[7]
    if tilt[0] != 0.0 or tilt[1] != 0.0 or tilt[2] != 0.0:
        return _scan_row_tilted(i, position, diameter, skin, grid, cell_start, cell_particles, index, offset, limit,
                                cell)
    return scan_within(i, position, diameter, skin, grid, cell_start, cell_particles, index, offset, limit, cell)


@njit(cache=True)
def _rows(lo_row, hi_row, position, diameter, skin, grid, cell_start, cell_particles, start, index, fill, cell):
    """Rows ``lo_row ≤ i < hi_row``: their lengths into ``start[i+1]`` (``fill`` False) or their
    entries into ``index`` from ``start[i]`` (``fill`` True)."""
    for i in range(lo_row, hi_row):
        if not takes_part(position, diameter, i):
            if not fill:
                start[i + 1] = 0
            continue
        count = _scan(i, position, diameter, skin, grid, cell_start, cell_particles, index, start[i],
                      index.shape[0] if fill else start[i], cell)
        if fill:
            sort_row(index, start[i], start[i] + count)
        else:
            start[i + 1] = count


@njit(cache=True)
def _rows_within(lo_row, hi_row, position, diameter, skin, grid, cell_start, cell_particles, start, index, first,
                 limit, cell):
    """Rows ``lo_row ≤ i < hi_row`` in one sweep: their lengths into ``start[i+1]`` and their
    entries, sorted, one row after the other into ``index`` from ``first`` while they fit below
    ``limit``; returns the entries written, or −1 if they did not all fit."""
    used = 0
    for i in range(lo_row, hi_row):
        count = 0
        if takes_part(position, diameter, i):
            at = first + used if used >= 0 else limit
            count = _scan(i, position, diameter, skin, grid, cell_start, cell_particles, index, at, limit, cell)
            if used >= 0:
                if at + count <= limit:
                    sort_row(index, at, at + count)
                    used += count
                else:
                    used = -1
        start[i + 1] = count
    return used


@njit(cache=True)
def _rooms(start, index, counters, n):
    """For the one-sweep build (`_rows_within`): where each chunk of ``CHUNK`` rows may write its
    rows in ``index`` (``chunks + 1`` offsets): as many entries as the chunk had at the last build,
    a quarter more and 64; or none (an empty array) before a first build, when ``start`` no longer
    holds the last build's rows (another ``n``) or the room would not fit in ``index``."""
    chunks = (n + CHUNK - 1) // CHUNK
    none = np.empty(0, np.int64)
    if counters[N_BUILDS] == 0 or start[0] != 0 or start[n] != counters[N_ENTRIES]:
        return none
    room = np.empty(chunks + 1, np.int64)
    room[0] = 0
    for chunk in range(chunks):
        before = start[min(n, (chunk + 1) * CHUNK)] - start[chunk * CHUNK]
        if before < 0:
            return none
        room[chunk + 1] = room[chunk] + before + before // 4 + 64
    return room if room[chunks] <= index.shape[0] else none


@njit(inline="always")
def _with_owner_room(index, entries, kept):
    """``index``, or a larger array holding its first ``kept`` values, with room for ``entries``
    row entries and then the owner slots (`dem.contacts`: half as many again)."""
    need = entries + entries // 2
    if need <= index.shape[0]:
        return index
    grown = np.empty(need + need // 16 + 16, np.int32)  # np.empty: no parallel fill
    for k in range(kept):
        grown[k] = index[k]
    return grown


@njit(inline="always")
def build_kernel(position, diameter, skin, parallel, reference_position, start, index, cell_start, cell_particles,
                 counters, cell):
    """Rebuild the list; returns ``index`` (a new, larger array if the old one was too small)."""
    lo, hi, largest = bounds(position, diameter)
    origin, size, dims = grid_of_bounds(lo, hi, largest, skin, cell_start.shape[0] - 1, cell)
    index = _build_on_grid(position, diameter, skin, parallel, whole_grid(origin, size, dims, cell),
                           reference_position, start, index, cell_start, cell_particles, counters, cell)
    record_build(cell, lo, hi, largest + skin)
    return index


@njit(cache=True)
def build_serial(position, diameter, skin, reference_position, start, index, cell_start, cell_particles, counters,
                 cell):
    """`build_kernel` on one thread, compiled once per machine and called by every serial loop's
    ``_refresh`` (`dem.engine`): inlined, the build was copied, typed and compiled again in each."""
    return build_kernel(position, diameter, skin, False, reference_position, start, index, cell_start,
                        cell_particles, counters, cell)


@njit(cache=True, parallel=True)
def build_parallel(position, diameter, skin, reference_position, start, index, cell_start, cell_particles, counters,
                   cell):
    """`build_kernel` on the threads, as `build_serial` for the parallel loops."""
    return build_kernel(position, diameter, skin, True, reference_position, start, index, cell_start,
                        cell_particles, counters, cell)


@njit(cache=True)
def whole_grid(lo, size, dims, cell):
    """The grid of `cell_of` that spans all of ``dims``."""
    return lo, size, dims - 1, np.zeros(3, np.int64), dims, cell[PERIOD].copy(), cell[INVERSE].copy(), cell[TILT].copy()


@njit(cache=True)
def _part_grid(position, diameter, lo, size, dims, cell):
    """The part of the grid ``lo, size, dims`` (of all particles, on every MPI rank) that spans
    the cells of the active particles among ``position`` (a rank's): same cells, so each cell
    holds the same particles, in the same order, as in the whole grid."""
    whole = whole_grid(lo, size, dims, cell)
    first = dims.copy()
    last = np.full(3, -1, np.int64)
    for i in range(position.shape[0]):
        if takes_part(position, diameter, i):
            where = cell_of(position, i, whole)
            for c in range(3):
                first[c] = min(first[c], where[c])
                last[c] = max(last[c], where[c])
    if last[0] < 0:  # no active particle
        first[:] = 0
        last[:] = 0
    return lo, size, dims - 1, first, last - first + 1, whole[5], whole[6], whole[7]


@njit(cache=True)
def _build_part(position, diameter, skin, grid, extent, reference_position, start, index, cell_start, cell_particles,
                counters, cell):
    index = _build_on_grid(position, diameter, skin, False, grid, reference_position, start, index, cell_start,
                           cell_particles, counters, cell)
    record_build(cell, extent[0], extent[1], extent[2] + skin)
    return index


@njit(inline="always")
def _build_on_grid(position, diameter, skin, parallel, grid, reference_position, start, index, cell_start,
                   cell_particles, counters, cell):
    """Rebuild the list on the cells of ``grid`` (`cell_of`); returns ``index``."""
    n = position.shape[0]
    dims = grid[4]
    n_cells = dims[0] * dims[1] * dims[2]
    # counting sort of the particles into cells (serial, O(N)); particles keep ascending order.
    # (Explicit loops here: in a parallel function numba would turn array expressions into
    # thread launches.)
    for k in range(n_cells + 1):
        cell_start[k] = 0
    for i in range(n):
        if takes_part(position, diameter, i):
            a, b, c = cell_of(position, i, grid)
            cell_start[(a * dims[1] + b) * dims[2] + c + 1] += 1
    for k in range(n_cells):
        cell_start[k + 1] += cell_start[k]
    for i in range(n):
        if takes_part(position, diameter, i):
            a, b, c = cell_of(position, i, grid)
            k = (a * dims[1] + b) * dims[2] + c
            cell_particles[cell_start[k]] = i
            cell_start[k] += 1
    for k in range(n_cells, 0, -1):
        cell_start[k] = cell_start[k - 1]
    cell_start[0] = 0
    # rows (independent: parallel): one sweep into the room the last build's rows leave
    # (`_rooms`), then closed up; or, without such room or where a chunk outgrew it, a counting
    # sweep, the prefix sum and a filling sweep
    chunks = (n + CHUNK - 1) // CHUNK
    room = _rooms(start, index, counters, n)
    written = np.empty(chunks, np.int64)
    whole = room.shape[0] > 0
    if whole:
        if parallel:
            for chunk in prange(chunks):
                written[chunk] = _rows_within(chunk * CHUNK, min(n, (chunk + 1) * CHUNK), position, diameter, skin,
                                              grid, cell_start, cell_particles, start, index, room[chunk],
                                              room[chunk + 1], cell)
        else:
            for chunk in range(chunks):
                written[chunk] = _rows_within(chunk * CHUNK, min(n, (chunk + 1) * CHUNK), position, diameter, skin,
                                              grid, cell_start, cell_particles, start, index, room[chunk],
                                              room[chunk + 1], cell)
        for chunk in range(chunks):
            whole = whole and written[chunk] >= 0
    start[0] = 0
    for sweep in range(0 if whole else 2):  # (the filling sweep comes after the prefix sum)
        if sweep == 1:
            for i in range(n):
                start[i + 1] += start[i]
            index = _with_owner_room(index, start[n], 0)
        if parallel:
            for chunk in prange(chunks):
                _rows(chunk * CHUNK, min(n, (chunk + 1) * CHUNK), position, diameter, skin, grid, cell_start,
                      cell_particles, start, index, sweep == 1, cell)
        else:  # (an int64 0: a literal would compile a second copy of `_rows`, `dem.engine.FIRST`)
            _rows(np.int64(0), n, position, diameter, skin, grid, cell_start, cell_particles, start, index, sweep == 1,
                  cell)
    if whole:
        for i in range(n):
            start[i + 1] += start[i]
        for chunk in range(chunks):  # to lower places, chunk by chunk: no chunk's rows overwritten unread
            to = start[chunk * CHUNK]
            for k in range(written[chunk]):
                index[to + k] = index[room[chunk] + k]
        index = _with_owner_room(index, start[n], start[n])
    counters[N_ENTRIES] = start[n]
    counters[N_BUILDS] += 1
    for i in range(n):
        for c in range(3):
            reference_position[i, c] = position[i, c]
    return index


@njit(inline="always")
def moved_far(position, diameter, reference_position, i, limit):
    """Whether particle ``i`` has moved more than ``√limit`` since the last build."""
    if diameter[i] <= 0.0:
        return False
    dx = position[i, 0] - reference_position[i, 0]
    dy = position[i, 1] - reference_position[i, 1]
    dz = position[i, 2] - reference_position[i, 2]
    return dx * dx + dy * dy + dz * dz > limit


@njit(cache=True)
def needs_rebuild(position, diameter, skin, reference_position):
    """True once a particle has moved more than ``skin/2`` since the last build."""
    limit = 0.25 * skin * skin
    for i in range(position.shape[0]):
        if moved_far(position, diameter, reference_position, i, limit):
            return True
    return False


@njit(inline="always")
def rebuild_test(skin, counters, cell):
    """``(forced, kept)``: whether the list must be (re)built whatever the particles did (never
    built, or the images moved by the skin), and the skin that the motion ``m`` of the images
    relative to their particles since the last build leaves (a deforming cell, `dem.cell`: a pair
    closes in by at most ``2 × moved + m``; ``m`` is 0 otherwise)."""
    moved = cell[MOTION, 0] - cell[MOTION, 1]
    return counters[N_BUILDS] == 0 or moved >= skin, skin - moved


@njit(inline="always")
def rebuild_due(position, diameter, skin, reference_position, counters, cell):
    """Whether the list must be (re)built (`rebuild_test`): forced, or a particle moved more than
    half of the skin that is left."""
    forced, kept = rebuild_test(skin, counters, cell)
    return forced or needs_rebuild(position, diameter, kept, reference_position)


@njit(cache=True)
def build_due(position, diameter, skin, reference_position, counters, cell):
    """`rebuild_due`, called from Python (`dem.distributed`)."""
    return rebuild_due(position, diameter, skin, reference_position, counters, cell)


@njit(cache=True)
def _update_parallel(position, diameter, skin, reference_position, start, index, cell_start, cell_particles, counters,
                     cell):
    """Rebuild on the threads if due (`rebuild_due`, `build_parallel`); returns the (possibly new)
    ``index`` array."""
    if rebuild_due(position, diameter, skin, reference_position, counters, cell):
        return build_parallel(position, diameter, skin, reference_position, start, index, cell_start, cell_particles,
                              counters, cell)
    return index


@njit(cache=True)
def update_serial(position, diameter, skin, reference_position, start, index, cell_start, cell_particles, counters,
                  cell):
    """`_update_parallel` on one thread (`build_serial`)."""
    if rebuild_due(position, diameter, skin, reference_position, counters, cell):
        return build_serial(position, diameter, skin, reference_position, start, index, cell_start, cell_particles,
                            counters, cell)
    return index


class NeighborList:
    """Owns the row storage, the cell arrays and the reference positions of the last build."""

    def __init__(self, n_bodies, capacity=16):
        self.reference_position = np.zeros((n_bodies, 3))
        self.start = np.zeros(n_bodies + 1, np.int64)
        self.index = np.empty(capacity, np.int32)  # grown to 1.25× the need at the first build
        self.cell_start = np.zeros(2 * n_bodies + 9, np.int64)
        self.cell_particles = np.zeros(n_bodies, np.int32)
        self.counters = np.zeros(2, np.int64)

    @property
    def n_builds(self):
        return int(self.counters[N_BUILDS])

    def arrays(self):
        return self.reference_position, self.start, self.index, self.cell_start, self.cell_particles, self.counters

    def pairs(self):
        """The candidate pairs ``i < j`` as an ``(n_pairs, 2)`` array."""
        rows = np.repeat(np.arange(len(self.start) - 1), np.diff(self.start))
        columns = self.index[: self.start[-1]]
        keep = rows < columns
        return np.stack((rows[keep], columns[keep]), axis=1)

    def update(self, position, diameter, skin, parallel=False, cell=None):
        """Rebuild the list if it is due (``cell``: `dem.state.State.cell`; None: not periodic)."""
        update = _update_parallel if parallel else update_serial
        # (a copy of the cell: a build records the lattice's motion in it, which only the run's
        # own list may do, `rebuild_due`)
        cell = box_cell() if cell is None else cell.copy()
        self.index = update(position, diameter, float(skin), *self.arrays(), cell)

    def build_part(self, position, diameter, skin, grid, extent, cell):
        """Build the list of a part of the particles (an MPI rank's, `dem.distributed`) on the
        cells ``grid = (lo, size, dims)`` of the whole system (`grid_of_bounds` of its ``extent
        = (lo, hi, largest)``, `bounds`)."""
        part = _part_grid(position, diameter, *grid, cell)
        cells = int(np.prod(part[4]))
        if cells + 1 > len(self.cell_start):
            self.cell_start = np.zeros(cells + cells // 4 + 9, np.int64)
        self.index = _build_part(position, diameter, float(skin), part, extent, *NeighborList.arrays(self), cell)
