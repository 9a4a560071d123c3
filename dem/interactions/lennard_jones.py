"""Lennard-Jones between the sites of rigid clusters (docs/theory.md §3; seed 003 §3.5):
``U = 4ε[(σ/r)¹² − (σ/r)⁶]`` over the site pairs of listed body pairs; a site force ``f`` at
``s`` gives the body the force ``f`` and the spatial moment ``(s − x) × f``. Builders list the
body pairs and ``ε``, ``σ`` in ``model.inputs["lennard_jones"]`` (``pairs``, ``epsilon``,
``sigma``)."""

from collections import namedtuple

import numpy as np
from numba import njit

from ..rotations import cross_one, quat_rotate_one
from .contract import GLOBAL, Interaction

LennardJonesParams = namedtuple("LennardJonesParams", "pair_a pair_b epsilon sigma site_start site_offset")


@njit(cache=True)
def lennard_jones(r2, epsilon, sigma):
    """``(U, f/r)`` at squared distance ``r2``; the force on the first site is ``(f/r) d``."""
    s6 = (sigma * sigma / r2) ** 3
    return 4.0 * epsilon * (s6 * s6 - s6), 24.0 * epsilon * (2.0 * s6 * s6 - s6) / r2


@njit(inline="always")
def _separation(position, orientation, p, a, b, s, t):
    """``(arm_s, arm_t, d)``: the arms of site ``s`` of body ``a`` and site ``t`` of body ``b``
    from their bodies' reference points, and ``d = s − t`` (spatial)."""
    arm_s = quat_rotate_one(orientation[a], p.site_offset[s])
    arm_t = quat_rotate_one(orientation[b], p.site_offset[t])
    return arm_s, arm_t, (position[a, 0] + arm_s[0] - position[b, 0] - arm_t[0],
                          position[a, 1] + arm_s[1] - position[b, 1] - arm_t[1],
                          position[a, 2] + arm_s[2] - position[b, 2] - arm_t[2])


@njit(cache=True)
def lennard_jones_forces(h, st, bodies, p, own):
    """Add the site forces and moments of every listed body pair."""
    for k in range(p.pair_a.shape[0]):
        a, b = p.pair_a[k], p.pair_b[k]
        for s in range(p.site_start[a], p.site_start[a + 1]):
            for t in range(p.site_start[b], p.site_start[b + 1]):
                arm_s, arm_t, d = _separation(st.position, st.orientation, p, a, b, s, t)
                f = lennard_jones(d[0] * d[0] + d[1] * d[1] + d[2] * d[2], p.epsilon, p.sigma)[1]
                fd = (f * d[0], f * d[1], f * d[2])
                tau_s = cross_one(arm_s, fd)
                tau_t = cross_one(arm_t, fd)
                for c in range(3):
                    st.force[a, c] += fd[c]
                    st.force[b, c] -= fd[c]
                    st.moment[a, c] += tau_s[c]
                    st.moment[b, c] -= tau_t[c]


@njit(cache=True)
def lennard_jones_energy(st, bodies, contacts, p, own):
    """``(lj,)``."""
    energy = 0.0
    for k in range(p.pair_a.shape[0]):
        first, second = p.pair_a[k], p.pair_b[k]
        sites = p.site_start
        for s in range(sites[first], sites[first + 1]):
            for t in range(sites[second], sites[second + 1]):
                d = _separation(st.position, st.orientation, p, first, second, s, t)[2]
                energy += lennard_jones(d[0] * d[0] + d[1] * d[1] + d[2] * d[2], p.epsilon, p.sigma)[0]
    return (energy,)


def setup(model):
    given = model.inputs.get("lennard_jones")
    if not given or not len(given["pairs"]):
        return None
    pairs = np.asarray(given["pairs"], np.int64).reshape(-1, 2)
    return LennardJonesParams(pairs[:, 0].copy(), pairs[:, 1].copy(), float(given["epsilon"]), float(given["sigma"]),
                              model.site_start, model.site_offset)


def localize(p, part):
    """The pairs as local indices, and the sites of the rank's bodies (every rank holds the
    bodies of the pairs: `shared_bodies`)."""
    counts = np.diff(p.site_start)[part.bodies]
    site_start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    sites = np.repeat(p.site_start[part.bodies] - site_start[:-1], counts) + np.arange(site_start[-1])
    return p._replace(pair_a=part.local(p.pair_a), pair_b=part.local(p.pair_b), site_start=site_start,
                      site_offset=p.site_offset[sites])


def shared_bodies(p):
    return np.union1d(p.pair_a, p.pair_b)


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
    forces=lennard_jones_forces, energy=lennard_jones_energy, critical_step=critical_step, localize=localize,
    shared_bodies=shared_bodies,
)
