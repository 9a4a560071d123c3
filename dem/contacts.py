"""Per-contact state: the particle neighbour list (`dem.neighbors`) and, for every interaction
that keeps one (``Interaction.history > 0``), a fixed-width history vector per particle pair
that survives neighbour rebuilds, and for an interaction with ``Interaction.loads > 0`` an array
of as many scratch values per pair slot (what its ``update`` leaves for the force rows, written
anew at every force evaluation, neither saved nor carried across a rebuild). The scratch lives
apart from the history: the force rows gather it from scattered slots, and a narrow array keeps
that gather in cache (the pair loads of a frictional pile: 6 of a slot's 13 values).

Storage, O(N): the list is full (each pair appears in both rows, so force rows stay
independent), but a pair ``(a, b)`` with ``a < b`` is *owned* by row ``a`` and its history is
stored once, in slot ``owner_start[a] + m`` where ``m`` counts the entries of row ``a`` that are
greater than ``a`` and come before ``b`` (`pair_slot`). The same pair is a *lower* entry of row
``b``; after the rows, the index array keeps for each lower entry the owner slot of its pair
(`owner_offsets`, `owner_slot`), so that row ``b`` finds what its pairs' owners left for it
without a search. Rows are never reordered, so scenes without history sum their contacts
exactly as before.

Rules (what an interaction's ``update`` kernel and the rebuild guarantee):

* an update pass over the rows writes only the owner slots of its rows, before any force is
  computed, and the force rows then only read — so the result is the same for any number of
  threads;
* a contact that ends is dropped: its interaction zeroes its slot;
* particle–wall contacts (no partner row) keep their history in the interaction's own state, in
  per-particle slots keyed by the wall (`wall_slot`, `free_wall_slot`): each particle's row
  owns its slots.
* at a rebuild every slot that is not all zero is saved with its key ``(a, b)``, the list is
  rebuilt, and the saved vectors are put back at their pairs' new slots (matched by key); new
  pairs start at zero. A pair in contact is always in the new list (it is closer than the list's
  reach), so no live history is lost.

Checkpoints store the reference positions of the last build and the keyed histories
(`ContactTable.export`), which restart on any rank or thread count.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .cell import lattice_at_build
from .neighbors import N_BUILDS, NeighborList, update_serial
from .schema import Key, non_negative

KEYS = {"contact": {
    "skin": Key("float", 0.0, "Verlet skin of the neighbour list (0: a quarter of the mean diameter)", "length",
                non_negative),
}}

#: What the force kernels see of the list (rows ``start``/``neighbors``, owner offsets; not
#: ``index``, which names a tuple method on the GPU).
Contacts = namedtuple("Contacts", "start neighbors owner_start")
#: The table's fixed arrays, for the compiled loop (``index`` and the histories travel apart:
#: a rebuild may replace them).
ContactArrays = namedtuple("ContactArrays",
                           "skin reference_position start cell_start cell_particles counters owner_start")


def contact_skin(skin, diameter):
    """The Verlet skin: ``skin``, or a quarter of the mean contact diameter when it is 0."""
    if skin > 0.0:
        return float(skin)
    contact = diameter[diameter > 0]
    return 0.25 * float(contact.mean()) if len(contact) else 0.0


@njit(cache=True)
def owner_offsets(start, index, owner_start, cursor):
    """``owner_start[i]``: owner entries (``j > i``) in the rows before ``i``; and after the rows
    in ``index`` (`dem.neighbors` leaves room there), the owner slot of each *lower* entry (an
    entry ``i`` in row ``j``, ``i < j``, numbered as the owner slots are: ``k − owner_start[j]``
    for its position ``k`` in ``index``; `owner_slot`). The rows are sorted and the list is full,
    so row ``j``'s lower entries are the rows ``i < j`` that list ``j``, in ascending order: one
    sweep of the owner entries in slot order fills them, each row's from its first, ``cursor``
    (n integers of scratch: the cell list's ``cell_particles``, free once the list is built)
    counting those of each row placed so far."""
    n = start.shape[0] - 1
    owner_start[0] = 0
    for i in range(n):
        count = 0
        for k in range(start[i], start[i + 1]):
            if index[k] > i:
                count += 1
        owner_start[i + 1] = owner_start[i] + count
    tail = start[n]
    if 2 * owner_start[n] != tail or tail + owner_start[n] > index.shape[0]:
        raise ValueError("neighbour list: not full, or no room after the rows for the owner slots")
    for j in range(n):
        cursor[j] = 0
    slot = 0
    for i in range(n):
        for k in range(start[i], start[i + 1]):
            j = index[k]
            if j > i:
                index[tail + start[j] - owner_start[j] + cursor[j]] = slot
                cursor[j] += 1
                slot += 1


@njit(inline="always")
def owner_slot(contacts, lower):
    """The owner slot (history row) of the pair at lower slot ``lower`` (`owner_offsets`), from
    `Contacts`."""
    return contacts.neighbors[contacts.start[contacts.start.shape[0] - 1] + lower]


@njit(inline="always")
def pair_slot(start, index, owner_start, a, b):
    """History slot of the pair ``(a, b)``, ``a < b`` (−1 if ``b`` is not in row ``a``); the
    arrays are those of `Contacts`."""
    m = 0
    for k in range(start[a], start[a + 1]):
        j = index[k]
        if j == b:
            return owner_start[a] + m
        if j > a:
            m += 1
    return -1


@njit(inline="always")
def wall_slot(keys, i, w):
    """Slot of wall ``w`` in particle ``i``'s wall-contact slots ``keys (n, k)`` (−1: free):
    its slot if it has one, else a free slot (claimed), else −1 (all taken)."""
    free = -1
    for s in range(keys.shape[1]):
        if keys[i, s] == w:
            return s
        if keys[i, s] < 0 and free < 0:
            free = s
    if free >= 0:
        keys[i, free] = w
    return free


@njit(inline="always")
def free_wall_slot(keys, values, i, w):
    """Drop the contact of particle ``i`` with wall ``w``: its slot's key and values."""
    for s in range(keys.shape[1]):
        if keys[i, s] == w:
            keys[i, s] = -1
            values[i, s] = 0.0


@njit(inline="always")
def _room(rows):
    """The rows of an array grown to hold ``rows`` slots: 1/16 and 16 spare, so that a list that
    grows slowly is rarely reallocated."""
    return rows + rows // 16 + 16


@njit(inline="always")
def _live_slots(owner_start, history, width):
    """The number of owner slots whose history (the first ``width`` columns of ``history``) is
    not all zero."""
    live = 0
    for slot in range(owner_start[-1]):
        for c in range(width):
            if history[slot, c] != 0.0:
                live += 1
                break
    return live


@njit(inline="always")
def _gather_history(start, index, owner_start, history, width, keys, values):
    """Fill ``keys (m, 2)`` with the pairs of the owner slots whose history (the first ``width``
    columns of ``history``) is not all zero and ``values[:m]`` with their values (as many columns
    as ``values`` has), in slot order (``values`` may be ``history`` itself: ``m`` never passes
    the slot it copies from, so the slots before it are done)."""
    m = 0
    for i in range(start.shape[0] - 1):
        slot = owner_start[i]
        for k in range(start[i], start[i + 1]):
            j = index[k]
            if j <= i:
                continue
            for c in range(width):
                if history[slot, c] != 0.0:
                    keys[m, 0] = i
                    keys[m, 1] = j
                    for d in range(values.shape[1]):
                        values[m, d] = history[slot, d]
                    m += 1
                    break
            slot += 1


@njit(cache=True)
def save_history(start, index, owner_start, history, width):
    """``(keys (m, 2), values (m, width))`` of the owner slots whose history (the first ``width``
    columns of ``history``) is not all zero (a copy: the history is left as it is)."""
    live = _live_slots(owner_start, history, width)
    keys, values = np.empty((live, 2), np.int32), np.empty((live, width))
    _gather_history(start, index, owner_start, history, width, keys, values)
    return keys, values


@njit(cache=True)
def restore_history(start, index, owner_start, keys, values, history):
    """Zero the slots of the rebuilt list and put ``values`` back at their keys' slots (in its first
    columns: the history without scratch columns); returns the history array (``history``
    reused, or a larger one)."""
    rows = owner_start[-1]
    if rows > history.shape[0]:
        history = np.zeros((_room(rows), history.shape[1]))
    else:
        history[:rows] = 0.0
    for m in range(keys.shape[0]):
        slot = pair_slot(start, index, owner_start, keys[m, 0], keys[m, 1])
        if slot >= 0:
            for c in range(values.shape[1]):
                history[slot, c] = values[m, c]
    return history


@njit(cache=True)
def fit_loads(owner_start, loads):
    """``loads``, or a larger array (zeros) when the list's owner slots outgrew it."""
    rows = owner_start[-1]
    if rows > loads.shape[0]:
        return np.zeros((_room(rows), loads.shape[1]))
    return loads


@njit(cache=True)
def compact_history(start, index, owner_start, history, width):
    """Before a rebuild: move the owner slots whose history (the first ``width`` columns) is not
    all zero to the front of ``history`` (in slot order) and return their keys ``(m, 2)``, for
    `spread_history` after it. Unlike `save_history` nothing is copied out: a rebuild's memory
    stays that of the list."""
    keys = np.empty((_live_slots(owner_start, history, width), 2), np.int32)
    _gather_history(start, index, owner_start, history, width, keys, history)
    return keys


@njit(cache=True)
def spread_history(start, index, owner_start, keys, history):
    """After a rebuild: the values `compact_history` left at the front of ``history`` go to
    their keys' slots in the rebuilt list, every other slot zero (a key whose pair left the list
    is dropped); returns the history array (``history``, or a larger one). In place: first the
    kept values close up (moving only to lower slots), then rows are filled from the last: a
    row's values then lie below the end of its new slots and above every earlier row's (no row
    keeps more pairs than it has owner entries), and pass through a small buffer."""
    rows, width = owner_start[-1], history.shape[1]
    slots = np.empty(keys.shape[0], np.int64)
    kept = 0
    for m in range(keys.shape[0]):
        slot = pair_slot(start, index, owner_start, keys[m, 0], keys[m, 1])
        if slot >= 0:
            slots[kept] = slot
            keys[kept, 0] = keys[m, 0]
            for c in range(width):
                history[kept, c] = history[m, c]
            kept += 1
    if rows > history.shape[0]:
        grown = np.zeros((_room(rows), width))
        grown[:kept] = history[:kept]
        history = grown
    longest = 0
    for i in range(start.shape[0] - 1):
        longest = max(longest, start[i + 1] - start[i])
    buffer = np.empty((longest, width))
    last = kept  # the kept values of row i are history[first:last]
    for i in range(start.shape[0] - 2, -1, -1):
        first = last
        while first > 0 and keys[first - 1, 0] == i:
            first -= 1
        for m in range(first, last):
            for c in range(width):
                buffer[m - first, c] = history[m, c]
        for slot in range(owner_start[i], owner_start[i + 1]):
            for c in range(width):
                history[slot, c] = 0.0
        for m in range(first, last):
            for c in range(width):
                history[slots[m], c] = buffer[m - first, c]
        last = first
    return history


class ContactTable(NeighborList):
    """The neighbour list of the particles (``skin``: its Verlet skin) with the per-contact
    histories of the interactions named in ``history_widths`` (``{name: width}``) and the scratch
    of those in ``scratch_widths`` (``{name: loads}``, loads > 0); ``histories`` maps each name to
    its array ``(≥ owner entries, width)``, ``loads`` to its ``(≥ owner entries, loads)``."""

    def __init__(self, n_bodies, skin, history_widths=None, scratch_widths=None):
        super().__init__(n_bodies)
        self.skin = float(skin)
        self.owner_start = np.zeros(n_bodies + 1, np.int64)
        self.widths = dict(history_widths or {})
        self.histories = {name: np.zeros((16, width)) for name, width in self.widths.items()}
        self.loads = {name: np.zeros((16, width)) for name, width in (scratch_widths or {}).items() if width > 0}

    def pair_scratch(self, name):
        """The pair scratch of ``name``, at least as long as the list's owner slots (a rebuild outside
        the compiled loop leaves it as it was)."""
        self.loads[name] = fit_loads(self.owner_start, self.loads[name])
        return self.loads[name]

    def carried(self):
        """The arrays the compiled functions take and return after ``index``: each history, then its
        pair scratch if it has one (`dem.engine`'s ``hist_<name>, load_<name>``)."""
        return [a for name, history in self.histories.items()
                for a in ((history, self.pair_scratch(name)) if name in self.loads else (history,))]

    def keep(self, carried):
        """Keep the arrays a compiled function returned in `carried`'s order (a rebuild may have
        replaced them)."""
        carried = iter(carried)
        for name in self.histories:
            self.histories[name] = next(carried)
            if name in self.loads:
                self.loads[name] = next(carried)

    def arrays(self):
        return ContactArrays(self.skin, self.reference_position, self.start, self.cell_start, self.cell_particles,
                             self.counters, self.owner_start)

    def contacts(self):
        return Contacts(self.start, self.index, self.owner_start)

    def rebuild(self, position, diameter, cell):
        """Build the list at ``position`` (outside a run; ``cell``: `dem.state.State.cell`),
        carrying the histories over."""
        keys = {name: compact_history(self.start, self.index, self.owner_start, h, self.widths[name])
                for name, h in self.histories.items()}
        self.counters[N_BUILDS] = 0
        self.index = update_serial(position, diameter, self.skin, self.reference_position, self.start, self.index,
                                   self.cell_start, self.cell_particles, self.counters, cell.copy())
        owner_offsets(self.start, self.index, self.owner_start, self.cell_particles)
        for name, live in keys.items():
            self.histories[name] = spread_history(self.start, self.index, self.owner_start, live, self.histories[name])

    def export(self):
        """The table as a checkpoint holds it: the reference positions of the last build, the
        number of builds, and each history's live entries by key."""
        out = {"reference_position": self.reference_position.copy(), "builds": int(self.counters[N_BUILDS])}
        for name, history in self.histories.items():
            out[f"history_keys.{name}"], out[f"history_values.{name}"] = save_history(
                self.start, self.index, self.owner_start, history, self.widths[name])
        return out

    def restore(self, saved, diameter, cell):
        """Rebuild the list where the exported table was last built, then put its histories back
        by key (so contact sums keep their order and the run continues bit for bit)."""
        builds = int(saved["builds"])
        if builds > 0:
            self.counters[N_BUILDS] = 0
            self.index = update_serial(saved["reference_position"], diameter, self.skin, self.reference_position,
                                       self.start, self.index, self.cell_start, self.cell_particles, self.counters,
                                       lattice_at_build(cell))
            owner_offsets(self.start, self.index, self.owner_start, self.cell_particles)
        self.counters[N_BUILDS] = builds
        for name in self.histories:
            self.histories[name] = restore_history(
                self.start, self.index, self.owner_start, np.ascontiguousarray(saved[f"history_keys.{name}"]),
                np.ascontiguousarray(saved[f"history_values.{name}"]), self.histories[name])
