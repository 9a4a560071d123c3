"""Uniform gravity (SPEC §3): ``U = −m g·(x + R ρ)`` with ``ρ`` the centre of mass in the body
frame relative to the body's reference point (zero for free bodies, the pivot arm for pinned
ones). Force ``m g``; spatial moment ``(R ρ) × m g``."""

from numba import njit

from ..rotations import _cross, _quat_rotate
from ..state import GRAVITY


@njit(cache=True)
def _gravity_kernel(position, orientation, mass, com_offset, gravity, force, moment, energy):
    g = (gravity[0], gravity[1], gravity[2])
    if g[0] == 0.0 and g[1] == 0.0 and g[2] == 0.0:
        return
    for i in range(position.shape[0]):
        arm = _quat_rotate(orientation[i], com_offset[i])
        m = mass[i]
        energy[GRAVITY] -= m * (g[0] * (position[i, 0] + arm[0]) + g[1] * (position[i, 1] + arm[1])
                                + g[2] * (position[i, 2] + arm[2]))
        tau = _cross(arm, g)
        for c in range(3):
            force[i, c] += m * g[c]
            moment[i, c] += m * tau[c]
