"""A test interaction with per-contact history (registered by the tests that use it): for every
touching particle pair it keeps ``(age, Σδ)`` — steps in contact and the accumulated overlap —
in the contact table, and for every particle–wall contact the age in keyed wall slots of its own
state. It pushes touching pairs apart with ``c · age · δ`` along the line of centres, so the
force rows read the history from both sides of each pair (a wrong slot breaks ΣF = 0).

It proves the contract of `dem.contacts`: new contacts start at zero, contacts that end are
dropped, histories are matched by key across neighbour rebuilds and restarts.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from dem.contacts import free_wall_slot, pair_slot, wall_slot
from dem.interactions import ROW, Interaction

ProbeParams = namedtuple("ProbeParams", "strength wall_point wall_normal")
ProbeState = namedtuple("ProbeState", "wall_key wall_age")
WIDTH = 2
WALL_SLOTS = 3


@njit(inline="always")
def _overlap(i, j, position, diameter):
    dx = position[i, 0] - position[j, 0]
    dy = position[i, 1] - position[j, 1]
    dz = position[i, 2] - position[j, 2]
    r = np.sqrt(dx * dx + dy * dy + dz * dz)
    return 1.0 - r / (0.5 * (diameter[i] + diameter[j])), dx / r, dy / r, dz / r


@njit(cache=True)
def probe_update(lo, hi, h, st, bodies, contacts, p, own, history):
    """Owner slots of rows ``lo ≤ i < hi``: ``(age + 1, Σδ + δ)`` while touching, else zero."""
    for i in range(lo, hi):
        slot = contacts.owner_start[i]
        for k in range(contacts.start[i], contacts.start[i + 1]):
            j = contacts.neighbors[k]
            if j < i:
                continue
            delta = _overlap(i, j, st.position, bodies.diameter)[0]
            if delta > 0.0:
                history[slot, 0] += 1.0
                history[slot, 1] += delta
            else:
                history[slot, 0] = 0.0
                history[slot, 1] = 0.0
            slot += 1


@njit(inline="always")
def probe_forces(i, h, st, bodies, contacts, p, own, history):
    fx = fy = fz = 0.0
    for k in range(contacts.start[i], contacts.start[i + 1]):
        j = contacts.neighbors[k]
        delta, nx, ny, nz = _overlap(i, j, st.position, bodies.diameter)
        if delta > 0.0:
            slot = pair_slot(contacts.start, contacts.neighbors, contacts.owner_start, min(i, j), max(i, j))
            push = p.strength * history[slot, 0] * delta
            fx += push * nx
            fy += push * ny
            fz += push * nz
    radius = 0.5 * bodies.diameter[i]
    for w in range(p.wall_point.shape[0]):
        gap = ((st.position[i, 0] - p.wall_point[w, 0]) * p.wall_normal[w, 0]
               + (st.position[i, 1] - p.wall_point[w, 1]) * p.wall_normal[w, 1]
               + (st.position[i, 2] - p.wall_point[w, 2]) * p.wall_normal[w, 2])
        if gap < radius:
            slot = wall_slot(own.wall_key, i, w)
            if slot >= 0:
                own.wall_age[i, slot] += 1.0
        else:
            free_wall_slot(own.wall_key, own.wall_age, i, w)
    return fx, fy, fz, 0.0, 0.0, 0.0


@njit(cache=True)
def probe_energy(st, bodies, contacts, p, own, history):
    return ()


def setup(model):
    if not (model.diameter > 0).any():
        return None
    return ProbeParams(1e-3, model.wall_point, model.wall_normal)


def initial_state(model, params):
    return ProbeState(np.full((model.n_bodies, WALL_SLOTS), -1, np.int32), np.zeros((model.n_bodies, WALL_SLOTS)))


PROBE = Interaction(
    name="history_probe", doc=__doc__, kind=ROW, columns=(), internal=False, keys={}, setup=setup,
    state=initial_state, forces=probe_forces, energy=probe_energy, neighbors=True, history=WIDTH,
    update=probe_update,
)
