"""Hertzian contact (SPEC §3; seed 001 eqs. 56–57): particle–particle and particle–wall.

Consistent energy ``U = (2/5) K δ^{5/2}`` for the force ``(K/R_s) δ^{3/2}`` (the paper's 5/2
prefactor does not match its force; see SPEC). Particle–particle pairs come from the neighbour
list, bonded pairs included (a binder compressed shut is a contact).
"""

import numpy as np
from numba import njit

from ..state import HERTZ_PP, HERTZ_PW


@njit(cache=True)
def hertz(delta, stiffness, length):
    """Scalar Hertz law: ``(U, |F|)`` for the dimensionless overlap ``δ ≥ 0`` and the contact
    length scale (``R_s = (D_i + D_j)/2`` or ``D/2``)."""
    root = np.sqrt(delta)
    return 0.4 * stiffness * delta * delta * root, stiffness / length * delta * root


@njit(cache=True)
def _hertz_pair_kernel(position, diameter, k_pp, pair_i, pair_j, n_pairs, force, energy):
    """Hertz particle–particle over the candidate pairs of the neighbour list."""
    for p in range(n_pairs):
        i = pair_i[p]
        j = pair_j[p]
        dx = position[i, 0] - position[j, 0]
        dy = position[i, 1] - position[j, 1]
        dz = position[i, 2] - position[j, 2]
        r2 = dx * dx + dy * dy + dz * dz
        reach = 0.5 * (diameter[i] + diameter[j])
        if r2 >= reach * reach:
            continue
        r = np.sqrt(r2)
        u, f = hertz(1.0 - r / reach, k_pp, reach)
        energy[HERTZ_PP] += u
        f /= r
        force[i, 0] += f * dx
        force[i, 1] += f * dy
        force[i, 2] += f * dz
        force[j, 0] -= f * dx
        force[j, 1] -= f * dy
        force[j, 2] -= f * dz


@njit(cache=True)
def _hertz_wall_kernel(position, diameter, k_pw, wall_point, wall_normal, force, energy):
    """Hertz particle–wall: wall ``w`` is the plane through ``wall_point[w]`` with unit normal
    ``wall_normal[w]`` pointing into the half-space where particles live."""
    for w in range(wall_point.shape[0]):
        p = wall_point[w]
        nw = wall_normal[w]
        for i in range(position.shape[0]):
            radius = 0.5 * diameter[i]
            if radius <= 0.0:
                continue
            gap = (position[i, 0] - p[0]) * nw[0] + (position[i, 1] - p[1]) * nw[1] + (position[i, 2] - p[2]) * nw[2]
            if gap >= radius:
                continue
            u, f = hertz(1.0 - gap / radius, k_pw, radius)
            energy[HERTZ_PW] += u
            force[i, 0] += f * nw[0]
            force[i, 1] += f * nw[1]
            force[i, 2] += f * nw[2]
