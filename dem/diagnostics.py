"""Kinetic energies and momenta (SPEC §4): ``P = Σ m v``, ``L = Σ x × m v + Σ R J Rᵀ Ω`` about
the origin (for a body on a pivot at the origin, ``v = 0`` and ``J`` is about the pivot)."""

import numpy as np
from numba import njit

from .rotations import _cross, _quat_rotate, _quat_rotate_inverse
from .state import ENERGY_COMPONENTS, KINETIC_ROTATIONAL, KINETIC_TRANSLATIONAL


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


def energy_budget(model, state, neighbors=None, model_arrays=None):
    """The full row of `ENERGY_COMPONENTS` plus ``total``, ``P`` and ``L`` as a dict. Contact
    energies need a current neighbour list: pass the simulation's (`Simulation.energy_budget`
    does), or one is built here."""
    from .interactions import potential_energies
    from .neighbors import NeighborList

    ke_t, ke_r, momentum, angular = _diagnostics_kernel(
        model.mass, model.inertia, state.position, state.velocity, state.orientation, state.angular_velocity
    )
    if neighbors is None:
        neighbors = NeighborList(model.n_bodies)
        neighbors.update(state.position, model.diameter, model.skin)
    energy = potential_energies(model, state, neighbors, model_arrays)
    energy[KINETIC_TRANSLATIONAL] = ke_t
    energy[KINETIC_ROTATIONAL] = ke_r
    row = dict(zip(ENERGY_COMPONENTS, energy.tolist()))
    row["total"] = float(energy.sum())
    for c, axis in enumerate("xyz"):
        row["P" + axis] = float(momentum[c])
    for c, axis in enumerate("xyz"):
        row["L" + axis] = float(angular[c])
    return row
