"""The energy budget and momenta of a state (SPEC §4): the kinetic energies, every active
interaction's energy columns (`dem.interactions`), their ``total``, ``P = Σ m v`` and
``L = Σ x × m v + Σ R J Rᵀ Ω`` about the origin (for a body on a pivot at the origin, ``v = 0``
and ``J`` is about the pivot)."""

import numpy as np
from numba import njit

from .engine import new_contacts
from .interactions import CORE_COLUMNS, INTERACTIONS, KINETIC_COLUMNS, energy_columns
from .rotations import _cross, _quat_rotate, _quat_rotate_inverse


@njit(cache=True)
def _diagnostics_kernel(mass, inertia, position, velocity, orientation, angular_velocity):
    """Returns ``(kinetic_translational, kinetic_rotational, P (3,), L (3,))``."""
    ke_t = 0.0
    ke_r = 0.0
    momentum = np.zeros(3)
    angular = np.zeros(3)
    for i in range(mass.shape[0]):
        v = velocity[i]
        m = mass[i]
        ke_t += 0.5 * m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
        w = _quat_rotate_inverse(orientation[i], angular_velocity[i])  # body frame ω
        jw = (inertia[i, 0] * w[0], inertia[i, 1] * w[1], inertia[i, 2] * w[2])
        ke_r += 0.5 * (w[0] * jw[0] + w[1] * jw[1] + w[2] * jw[2])
        spin = _quat_rotate(orientation[i], jw)
        orbital = _cross(position[i], v)
        for c in range(3):
            momentum[c] += m * v[c]
            angular[c] += m * orbital[c] + spin[c]
    return ke_t, ke_r, momentum, angular


def interaction_energies(model, state, contacts, bodies=None):
    """``{column: energy}`` of the active interactions (columns shared by several are summed in
    registry order); ``contacts`` a `dem.contacts.ContactTable` current for ``state``."""
    bodies = model.body_arrays() if bodies is None else bodies
    values = dict.fromkeys(energy_columns(), 0.0)
    st = state.arrays()
    rows = contacts.contacts()
    for name, params in model.interactions.items():
        interaction = INTERACTIONS[name]
        history = (contacts.histories[name],) if interaction.history else ()
        history += (state.interactions["walls"],) if interaction.walls else ()
        energies = interaction.energy(st, bodies, rows, params, state.interactions.get(name, ()), *history)
        for column, value in zip(interaction.columns, energies):
            values[column] += value
    return values


def energy_budget(model, state, contacts=None, bodies=None):
    """The log row: every column of `dem.interactions.energy_columns` plus ``total``, ``P`` and
    ``L``, as a dict. Contact energies need a neighbour list current for ``state``: pass the
    simulation's (`dem.simulation.Simulation.energy_budget` does), or one is built here."""
    if contacts is None:  # (per-contact histories then start from zero)
        contacts = new_contacts(model)
        contacts.rebuild(state.position, model.diameter)
    ke_t, ke_r, momentum, angular = _diagnostics_kernel(
        model.mass, model.inertia, state.position, state.velocity, state.orientation, state.angular_velocity
    )
    row = interaction_energies(model, state, contacts, bodies)
    row["kinetic_translational"] = ke_t
    row["kinetic_rotational"] = ke_r
    total = float(np.array([row[name] for name in KINETIC_COLUMNS + CORE_COLUMNS]).sum())
    for name in row:
        if name not in KINETIC_COLUMNS + CORE_COLUMNS:
            total += row[name]
    row["total"] = total
    for c, axis in enumerate("xyz"):
        row["P" + axis] = float(momentum[c])
    for c, axis in enumerate("xyz"):
        row["L" + axis] = float(angular[c])
    return row
