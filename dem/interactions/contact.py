"""Hertzian contact (SPEC §3; seed 001 eqs. 56–57): particle–particle and particle–wall, with
optional viscous normal damping.

Consistent energy ``U = (2/5) K δ^{5/2}`` for the force ``(K/R_s) δ^{3/2}`` (the paper's 5/2
prefactor does not match its force; see SPEC). Particle–particle pairs come from the full
neighbour list, bonded pairs included (a binder compressed shut is a contact); each particle
sums the forces on itself only, so rows are independent.

Damping (off when ``damping = 0``): a normal force ``−γ √(m* k_n) v_n`` with the contact
stiffness ``k_n = dF/dr``, the effective mass ``m*`` and the normal approach speed ``v_n``,
where ``γ = −2 √(5/6) ln e / √(ln² e + π²)`` for a coefficient of restitution ``e``
(`damping_from_restitution`, the usual Hertz–Tsuji form). Its power is booked as dissipated.
"""

import math

import numpy as np
from numba import njit


def damping_from_restitution(restitution):
    """``γ`` for a coefficient of restitution ``0 < e ≤ 1`` (``e = 1``: no damping)."""
    if restitution >= 1.0:
        return 0.0
    log_e = math.log(restitution)
    return -2.0 * math.sqrt(5.0 / 6.0) * log_e / math.sqrt(log_e * log_e + math.pi * math.pi)


@njit(inline="always")
def hertz(delta, stiffness, length):
    """Scalar Hertz law: ``(U, |F|)`` for the dimensionless overlap ``δ ≥ 0`` and the contact
    length scale (``R_s = (D_i + D_j)/2`` or ``D/2``)."""
    root = np.sqrt(delta)
    return 0.4 * stiffness * delta * delta * root, stiffness / length * delta * root


@njit(inline="always")
def _damping_force(delta, stiffness, length, inverse_mass, approach_speed, damping):
    """Normal damping force (along the contact normal) for the Hertz law above."""
    if damping == 0.0 or inverse_mass == 0.0:
        return 0.0
    contact_stiffness = 1.5 * stiffness / (length * length) * np.sqrt(delta)
    return -damping * np.sqrt(contact_stiffness / inverse_mass) * approach_speed


@njit(inline="always")
def _hertz_pair_particle(i, position, velocity, diameter, inverse_mass, k_pp, damping, start, index):
    """Hertz force on particle ``i`` from its neighbours, ``(fx, fy, fz, power, energy)`` with
    ``power`` and ``energy`` half the damping power and elastic energy of its contacts (the other
    halves belong to the partners)."""
    fx = 0.0
    fy = 0.0
    fz = 0.0
    power = 0.0
    energy = 0.0
    radius = 0.5 * diameter[i]
    for k in range(start[i], start[i + 1]):
        j = index[k]
        dx = position[i, 0] - position[j, 0]
        dy = position[i, 1] - position[j, 1]
        dz = position[i, 2] - position[j, 2]
        r2 = dx * dx + dy * dy + dz * dz
        reach = radius + 0.5 * diameter[j]
        if r2 >= reach * reach:
            continue
        r = np.sqrt(r2)
        delta = 1.0 - r / reach
        u, f = hertz(delta, k_pp, reach)
        energy += 0.5 * u
        if damping != 0.0:
            speed = ((velocity[i, 0] - velocity[j, 0]) * dx + (velocity[i, 1] - velocity[j, 1]) * dy
                     + (velocity[i, 2] - velocity[j, 2]) * dz) / r
            f_d = _damping_force(delta, k_pp, reach, inverse_mass[i] + inverse_mass[j], speed, damping)
            f += f_d
            power -= 0.5 * f_d * speed
        f /= r
        fx += f * dx
        fy += f * dy
        fz += f * dz
    return fx, fy, fz, power, energy


@njit(inline="always")
def _hertz_wall_particle(i, position, velocity, diameter, inverse_mass, k_pw, damping, wall_point, wall_normal):
    """Hertz force of all walls on particle ``i``, ``(fx, fy, fz, power, energy)``. Wall ``w`` is
    the plane through ``wall_point[w]`` with unit normal ``wall_normal[w]`` pointing to the
    particles' side."""
    fx = 0.0
    fy = 0.0
    fz = 0.0
    power = 0.0
    energy = 0.0
    radius = 0.5 * diameter[i]
    for w in range(wall_point.shape[0]):
        nx, ny, nz = wall_normal[w, 0], wall_normal[w, 1], wall_normal[w, 2]
        gap = ((position[i, 0] - wall_point[w, 0]) * nx + (position[i, 1] - wall_point[w, 1]) * ny
               + (position[i, 2] - wall_point[w, 2]) * nz)
        if gap >= radius:
            continue
        delta = 1.0 - gap / radius
        u, f = hertz(delta, k_pw, radius)
        energy += u
        if damping != 0.0:
            speed = velocity[i, 0] * nx + velocity[i, 1] * ny + velocity[i, 2] * nz
            f_d = _damping_force(delta, k_pw, radius, inverse_mass[i], speed, damping)
            f += f_d
            power -= f_d * speed
        fx += f * nx
        fy += f * ny
        fz += f * nz
    return fx, fy, fz, power, energy
