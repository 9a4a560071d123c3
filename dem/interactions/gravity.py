"""Uniform gravity (docs/theory.md §3): ``U = −m g·(x + R ρ)`` with ``ρ`` the centre of mass in the body
frame relative to the body's reference point (zero for free bodies, the pivot arm for pinned
ones). Force ``m g``; spatial moment ``(R ρ) × m g``."""

from collections import namedtuple

import numpy as np
from numba import njit

from ..rotations import cross_one, quat_rotate_one
from ..schema import Key
from .contract import ROW, Interaction

GravityParams = namedtuple("GravityParams", "gravity")

KEYS = {"fields": {
    "gravity": Key("vec3", (0.0, 0.0, 0.0), "uniform gravitational acceleration g", "length/time²"),
}}


@njit(inline="always")
def gravity_forces(i, h, st, bodies, contacts, p, own):
    """Weight ``m g`` and moment ``(R ρ) × m g`` of body ``i``."""
    m = bodies.mass[i]
    g = p.gravity
    weight = (m * g[0], m * g[1], m * g[2])
    tau = cross_one(quat_rotate_one(st.orientation[i], bodies.com_offset[i]), weight)
    return weight[0], weight[1], weight[2], tau[0], tau[1], tau[2]


@njit(cache=True)
def gravity_energy(st, bodies, contacts, p, own):
    """``(gravity,)``: ``−Σ m g·(x + R ρ)``."""
    g = p.gravity
    energy = 0.0
    for i in range(st.position.shape[0]):
        arm = quat_rotate_one(st.orientation[i], bodies.com_offset[i])
        energy -= bodies.mass[i] * (g[0] * (st.position[i, 0] + arm[0]) + g[1] * (st.position[i, 1] + arm[1])
                                    + g[2] * (st.position[i, 2] + arm[2]))
    return (energy,)


def setup(model):
    gravity = np.asarray(model.sections["fields"]["gravity"], float)
    return GravityParams(gravity) if gravity.any() else None


GRAVITY = Interaction(
    name="gravity", doc=__doc__, kind=ROW, columns=("gravity",), internal=False, keys=KEYS, setup=setup,
    forces=gravity_forces, energy=gravity_energy,
)
