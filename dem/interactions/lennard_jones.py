"""Lennard-Jones between the sites of rigid clusters (SPEC §3; seed 003 §3.5):
``U = 4ε[(σ/r)¹² − (σ/r)⁶]`` over the site pairs of listed body pairs; a site force ``f`` at
``s`` gives the body the force ``f`` and the spatial moment ``(s − x) × f``. Builders list the
body pairs and ``ε``, ``σ`` in ``model.inputs["lennard_jones"]`` (``pairs``, ``epsilon``,
``sigma``)."""

from collections import namedtuple

import numpy as np
from numba import njit

from ..rotations import _cross, _quat_rotate
from .contract import GLOBAL, Interaction

LennardJonesParams = namedtuple("LennardJonesParams", "pair_a pair_b epsilon sigma site_start site_offset")


@njit(cache=True)
def lennard_jones(r2, epsilon, sigma):
    """``(U, f/r)`` at squared distance ``r2``; the force on the first site is ``(f/r) d``."""
    s6 = (sigma * sigma / r2) ** 3
    return 4.0 * epsilon * (s6 * s6 - s6), 24.0 * epsilon * (2.0 * s6 * s6 - s6) / r2


@njit(cache=True)
def _site_pairs(position, orientation, p):
    """Every interacting site pair: ``(a, b, arm_s, arm_t, d)`` with the bodies ``a``, ``b``, the
    sites' arms from their bodies' reference points and ``d = s − t`` (spatial)."""
    for k in range(p.pair_a.shape[0]):
        a = p.pair_a[k]
        b = p.pair_b[k]
        for s in range(p.site_start[a], p.site_start[a + 1]):
            arm_s = _quat_rotate(orientation[a], p.site_offset[s])
            for t in range(p.site_start[b], p.site_start[b + 1]):
                arm_t = _quat_rotate(orientation[b], p.site_offset[t])
                yield a, b, arm_s, arm_t, (position[a, 0] + arm_s[0] - position[b, 0] - arm_t[0],
                                           position[a, 1] + arm_s[1] - position[b, 1] - arm_t[1],
                                           position[a, 2] + arm_s[2] - position[b, 2] - arm_t[2])


@njit(cache=True)
def lennard_jones_forces(h, st, bodies, p, own):
    """Add the site forces and moments of every listed body pair."""
    for a, b, arm_s, arm_t, d in _site_pairs(st.position, st.orientation, p):
        _, f = lennard_jones(d[0] * d[0] + d[1] * d[1] + d[2] * d[2], p.epsilon, p.sigma)
        fd = (f * d[0], f * d[1], f * d[2])
        tau_s = _cross(arm_s, fd)
        tau_t = _cross(arm_t, fd)
        for c in range(3):
            st.force[a, c] += fd[c]
            st.force[b, c] -= fd[c]
            st.moment[a, c] += tau_s[c]
            st.moment[b, c] -= tau_t[c]


@njit(cache=True)
def lennard_jones_energy(st, bodies, contacts, p, own):
    """``(lj,)``."""
    energy = 0.0
    for _, _, _, _, d in _site_pairs(st.position, st.orientation, p):
        energy += lennard_jones(d[0] * d[0] + d[1] * d[1] + d[2] * d[2], p.epsilon, p.sigma)[0]
    return (energy,)


def setup(model):
    given = model.inputs.get("lennard_jones")
    if not given or not len(given["pairs"]):
        return None
    pairs = np.asarray(given["pairs"], np.int64).reshape(-1, 2)
    return LennardJonesParams(pairs[:, 0].copy(), pairs[:, 1].copy(), float(given["epsilon"]), float(given["sigma"]),
                              model.site_start, model.site_offset)


def critical_step(model, state, p):
    """The well's curvature ``57.1 ε/σ²`` on a site mass."""
    if p.epsilon <= 0:
        return []
    site_mass = model.mass[p.pair_a] / np.maximum(np.diff(model.site_start)[p.pair_a], 1)
    omega2 = 57.1 * p.epsilon / p.sigma ** 2 / site_mass
    k = int(np.argmax(omega2))
    return [(2.0 / np.sqrt(omega2[k]), "Lennard-Jones", int(p.pair_a[k]))]


LENNARD_JONES = Interaction(
    name="lennard_jones", doc=__doc__, kind=GLOBAL, columns=("lj",), internal=True, keys={}, setup=setup,
    forces=lennard_jones_forces, energy=lennard_jones_energy, critical_step=critical_step,
)
