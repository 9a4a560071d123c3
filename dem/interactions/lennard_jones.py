"""Lennard-Jones between the sites of rigid clusters (SPEC §3; seed 003 §3.5):
``U = 4ε[(σ/r)¹² − (σ/r)⁶]`` over the site pairs of listed body pairs; a site force ``f`` at
``s`` gives the body the force ``f`` and the spatial moment ``(s − x) × f``."""

from numba import njit

from ..rotations import _cross, _quat_rotate


@njit(cache=True)
def lennard_jones(r2, epsilon, sigma):
    """``(U, f/r)`` at squared distance ``r2``; the force on the first site is ``(f/r) d``."""
    s6 = (sigma * sigma / r2) ** 3
    return 4.0 * epsilon * (s6 * s6 - s6), 24.0 * epsilon * (2.0 * s6 * s6 - s6) / r2


@njit(cache=True)
def _lennard_jones_kernel(position, orientation, site_start, site_offset, pair_a, pair_b, epsilon, sigma,
                          force, moment):
    """Add the site forces and moments of every listed body pair; returns the energy."""
    energy = 0.0
    for p in range(pair_a.shape[0]):
        a = pair_a[p]
        b = pair_b[p]
        for s in range(site_start[a], site_start[a + 1]):
            arm_s = _quat_rotate(orientation[a], site_offset[s])
            for t in range(site_start[b], site_start[b + 1]):
                arm_t = _quat_rotate(orientation[b], site_offset[t])
                d = (position[a, 0] + arm_s[0] - position[b, 0] - arm_t[0],
                     position[a, 1] + arm_s[1] - position[b, 1] - arm_t[1],
                     position[a, 2] + arm_s[2] - position[b, 2] - arm_t[2])
                u, f = lennard_jones(d[0] * d[0] + d[1] * d[1] + d[2] * d[2], epsilon, sigma)
                energy += u
                fd = (f * d[0], f * d[1], f * d[2])
                tau_s = _cross(arm_s, fd)
                tau_t = _cross(arm_t, fd)
                for c in range(3):
                    force[a, c] += fd[c]
                    force[b, c] -= fd[c]
                    moment[a, c] += tau_s[c]
                    moment[b, c] -= tau_t[c]
    return energy
