"""Uniform gravity (SPEC §3): ``U = −m g·(x + R ρ)`` with ``ρ`` the centre of mass in the body
frame relative to the body's reference point (zero for free bodies, the pivot arm for pinned
ones). Force ``m g``; spatial moment ``(R ρ) × m g``."""

from numba import njit

from ..rotations import _cross, _quat_rotate


@njit(inline="always")
def _gravity_particle(i, orientation, mass, com_offset, gravity):
    """Weight ``m g`` and moment ``(R ρ) × m g`` of body ``i``: ``(F, τ)``."""
    m = mass[i]
    weight = (m * gravity[0], m * gravity[1], m * gravity[2])
    return weight, _cross(_quat_rotate(orientation[i], com_offset[i]), weight)


@njit(cache=True)
def _gravity_energy(position, orientation, mass, com_offset, gravity):
    energy = 0.0
    for i in range(position.shape[0]):
        arm = _quat_rotate(orientation[i], com_offset[i])
        energy -= mass[i] * (gravity[0] * (position[i, 0] + arm[0]) + gravity[1] * (position[i, 1] + arm[1])
                             + gravity[2] * (position[i, 2] + arm[2]))
    return energy
