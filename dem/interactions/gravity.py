"""Uniform gravity (SPEC §3): ``U = −m g·(x + R ρ)`` with ``ρ`` the centre of mass in the body
frame relative to the body's reference point (zero for free bodies, the pivot arm for pinned
ones). Force ``m g``; spatial moment ``(R ρ) × m g``."""

from numba import njit

from ..rotations import _cross, _quat_rotate


@njit(cache=True)
def _gravity_range(lo, hi, orientation, mass, com_offset, gravity, force, moment):
    """Add weight ``m g`` and moment ``(R ρ) × m g`` to bodies ``lo ≤ i < hi``."""
    if gravity[0] == 0.0 and gravity[1] == 0.0 and gravity[2] == 0.0:
        return
    for i in range(lo, hi):
        m = mass[i]
        weight = (m * gravity[0], m * gravity[1], m * gravity[2])
        tau = _cross(_quat_rotate(orientation[i], com_offset[i]), weight)
        for c in range(3):
            force[i, c] += weight[c]
            moment[i, c] += tau[c]


@njit(cache=True)
def _gravity_energy(position, orientation, mass, com_offset, gravity):
    energy = 0.0
    for i in range(position.shape[0]):
        arm = _quat_rotate(orientation[i], com_offset[i])
        energy -= mass[i] * (gravity[0] * (position[i, 0] + arm[0]) + gravity[1] * (position[i, 1] + arm[1])
                             + gravity[2] * (position[i, 2] + arm[2]))
    return energy
