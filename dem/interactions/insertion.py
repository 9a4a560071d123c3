"""Particles that enter and leave during a run (`dem.feeding`): the energy they bring in and take out.

A scene with ``[[insert]]`` sources or ``[[outlet]]`` regions has this interaction. It applies no
force: `dem.feeding.Feeder` inserts and removes particles between steps, and books in its state
the energy each change brought in (the ``inserted`` column, negative: energy put in, as the
walls' work) or took out (``removed``, positive), measured as the change of the budget's total
across the change, so that ``total`` stays what it was; and the momentum likewise (the log's
``Px_in`` … ``Pz_out`` columns: ``P − P_in + P_out`` is the momentum the particles in play would
have had). Its state also holds which of the sources' bodies are in play, and the counts that
``flow.csv`` logs.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .contract import GLOBAL, Interaction

#: ``bodies (m,)``: the body of each of the sources' slots, source by source; ``slot (n,)``: each
#: body's slot (−1: not a source's); ``source_start (k + 1,)``: each source's slots; ``cumulative
#: (m,)``: the mass of a source's bodies up to each slot
InsertionParams = namedtuple("InsertionParams", "bodies slot source_start cumulative")
#: ``alive (m,)``: whether each slot's body is in play; per source ``inserted_count (k,)`` and
#: ``shortfall (k,)`` (due but without a place at the last try); per outlet ``removed_count (o,)``,
#: ``removed_mass (o,)``, ``logged_mass (o,)`` and ``logged_time (1,)`` (at the last row of
#: flow.csv); ``booked (2,)``: minus the energy brought in, and the energy taken out; ``momentum
#: (2, 6)``: the momentum and angular momentum brought in and taken out
InsertionState = namedtuple("InsertionState", "alive inserted_count shortfall removed_count removed_mass logged_mass "
                                              "logged_time booked momentum")


@njit(cache=True)
def insertion_forces(h, st, bodies, p, own):
    """No force: `dem.feeding.Feeder` acts between steps."""


@njit(cache=True)
def insertion_energy(st, bodies, contacts, p, own):
    """``(inserted, removed)``: the energy booked for the particles that entered (minus it) and left."""
    return own.booked[0], own.booked[1]


def setup(model):
    given = model.inputs.get("insertion")
    if not given:
        return None
    sources = given.get("sources", [])
    bodies = np.concatenate([np.asarray(s["bodies"], np.int64) for s in sources]) if sources \
        else np.zeros(0, np.int64)
    slot = np.full(model.n_bodies, -1, np.int64)
    slot[bodies] = np.arange(len(bodies))
    start = np.concatenate([[0], np.cumsum([len(s["bodies"]) for s in sources])]).astype(np.int64)
    cumulative = np.concatenate([np.cumsum(model.mass[np.asarray(s["bodies"], np.int64)]) for s in sources]) \
        if sources else np.zeros(0)
    return InsertionParams(bodies, slot, start, cumulative)


def initial_state(model, p):
    k, o = len(p.source_start) - 1, len(model.inputs["insertion"].get("outlets", []))
    return InsertionState(np.zeros(len(p.bodies), np.bool_), np.zeros(k, np.int64), np.zeros(k, np.int64),
                          np.zeros(o, np.int64), np.zeros(o), np.zeros(o), np.zeros(1), np.zeros(2), np.zeros((2, 6)))


def extra_columns(model, p):
    """The particles in play and the momentum brought in and taken out."""
    columns = {"particles": lambda model, state: int(np.count_nonzero(in_play(model, state)))}
    for row, way in enumerate(("in", "out")):
        for c, name in enumerate("xyz"):
            columns[f"P{name}_{way}"] = (lambda r, c: lambda model, state:
                                         float(state.interactions["insertion"].momentum[r, c]))(row, c)
    return columns


def in_play(model, state):
    """Whether each body is in play: not one of a source's parked bodies."""
    p = model.interactions["insertion"]
    playing = np.ones(model.n_bodies, np.bool_)
    playing[p.bodies] = state.interactions["insertion"].alive
    return playing


INSERTION = Interaction(
    name="insertion", doc=__doc__, kind=GLOBAL, columns=("inserted", "removed"), internal=False, keys={},
    setup=setup, state=initial_state, forces=insertion_forces, energy=insertion_energy, extra_columns=extra_columns,
    # under MPI (`dem.distributed`) every rank holds the whole state and the parameters (no kernel
    # reads them); the Feeder acts on rank 0's gathered view, and the ranks take what it changed
    localize=lambda p, part: p, shared_bodies=lambda p: np.zeros(0, np.int64), shared_state=InsertionState._fields,
)
