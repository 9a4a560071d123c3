"""Constant forces on single bodies, ``U = −Σ F·x`` (energy column ``external``): builders list
them in ``model.inputs["applied_force"]`` (``bodies``, ``forces``), e.g. the pushed end of a
``[[tetra_chain]]`` with ``ends = "clamped-force"``."""

from collections import namedtuple

import numpy as np
from numba import njit

from .contract import GLOBAL, Interaction, listed_bodies, localize_body

AppliedForceParams = namedtuple("AppliedForceParams", "body force")


@njit(cache=True)
def applied_forces(h, st, bodies, p, own):
    """Add the force ``p.force[k]`` on body ``p.body[k]``."""
    for k in range(p.body.shape[0]):
        for c in range(3):
            st.force[p.body[k], c] += p.force[k, c]


@njit(cache=True)
def applied_energy(st, bodies, contacts, p, own):
    """``(external,)``: ``−Σ F·x``."""
    energy = 0.0
    for k in range(p.body.shape[0]):
        for c in range(3):
            energy -= p.force[k, c] * st.position[p.body[k], c]
    return (energy,)


def setup(model):
    given = model.inputs.get("applied_force")
    if not given or not len(given["bodies"]):
        return None
    return AppliedForceParams(np.asarray(given["bodies"], np.int64),
                              np.asarray(given["forces"], float).reshape(-1, 3))


APPLIED_FORCE = Interaction(
    name="applied_force", doc=__doc__, kind=GLOBAL, columns=("external",), internal=False, keys={}, setup=setup,
    forces=applied_forces, energy=applied_energy,
    localize=localize_body, shared_bodies=listed_bodies,
)
