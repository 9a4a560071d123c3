"""The energy budget and momenta of a state (docs/theory.md §4): the kinetic energies, every active
interaction's energy columns (`dem.interactions`), their ``total``, ``P = Σ m v`` and
``L = Σ x × m v + Σ R J Rᵀ Ω`` about the origin (for a body on a pivot at the origin, ``v = 0``
and ``J`` is about the pivot) — read from a row that the generated `sample` writes in compiled
code (`dem.engine`), inside the stepping loop during a run."""

from collections import namedtuple

import numpy as np

from .engine import MOTION, PER_WALL, arguments, new_contacts, sample_module, sample_width
from .interactions import CORE_COLUMNS, KINETIC_COLUMNS, energy_columns, list_diameters

#: What the logs record of a state: ``budget`` the log row (`energy_budget`), ``walls`` each
#: wall's point and load ``(w, 9)`` (`dem.interactions.walls.WallState`: ``point``, then the
#: first six of ``load``), ``fastest`` ``(body, |v|)`` (body −1 when there are none).
Sample = namedtuple("Sample", "budget walls fastest")


def sample(model, state, contacts=None, bodies=None):
    """The `Sample` of ``state``. Contact energies need a neighbour list current for ``state``:
    pass the simulation's (`dem.simulation.Simulation.sample` does), or one is built here (its
    per-contact histories then start from zero)."""
    bodies = model.body_arrays() if bodies is None else bodies
    if contacts is None:
        contacts = new_contacts(model)
        contacts.rebuild(state.position, list_diameters(model, bodies), state.cell)
    walls = state.interactions["walls"].point.shape[0] if "walls" in model.interactions else 0
    row = np.empty(sample_width(walls))
    histories, parameters = arguments(model, state, contacts)
    sample_module(tuple(model.interactions)).sample(state.arrays(), bodies, contacts.arrays(), contacts.index,
                                                    *histories, *parameters, row)
    return read_sample(row)


def read_sample(row):
    """The `Sample` of a row written by the generated ``sample`` (`dem.engine`)."""
    names = energy_columns()
    n = len(names)
    values = row.tolist()
    budget = dict(zip(names, values))
    total = float(row[:len(KINETIC_COLUMNS + CORE_COLUMNS)].sum())
    for value in values[len(KINETIC_COLUMNS + CORE_COLUMNS):n]:
        total += value
    budget["total"] = total
    budget.update(zip(("Px", "Py", "Pz", "Lx", "Ly", "Lz"), values[n:n + 6]))
    return Sample(budget, row[n + MOTION:].reshape(-1, PER_WALL), (int(values[n + 6]), values[n + 7]))


def energy_budget(model, state, contacts=None, bodies=None):
    """The log row: every column of `dem.interactions.energy_columns` plus ``total``, ``P`` and
    ``L``, as a dict (see `sample`)."""
    return sample(model, state, contacts, bodies).budget


def interaction_energies(model, state, contacts, bodies=None):
    """``{column: energy}`` of the active interactions (columns shared by several are summed in
    registry order); ``contacts`` a `dem.contacts.ContactTable` current for ``state``."""
    budget = energy_budget(model, state, contacts, bodies)
    return {name: budget[name] for name in energy_columns()[2:]}
