"""The Derjaguin–Muller–Toporov law: Hertz's (`dem.interactions.normal.hertz`) with a constant
pull ``2π w R*`` of the work of adhesion ``w`` while the spheres overlap."""

import math

import numpy as np
from numba import njit

from .hertz import critical_stiffness, hertz, hertz_stiffness
from .record import NormalLaw


@njit(inline="always")
def dmt_pull_off(reduced, work):
    """``2π w R*``."""
    return 2.0 * np.pi * work * reduced


@njit(inline="always")
def dmt(delta, stiffness, length, reduced, work):
    """``(U_H, U_a, F, k)`` at ``δ > 0``: ``F = F_H − 2π w R*``, ``U_a = −2π w R* ξ``, ``k = dF/dξ``
    (`dem.interactions.normal.record.NormalLaw`'s ``adhesion``)."""
    xi = length * delta
    u_hertz = f_hertz = 0.0
    if delta > 0.0:
        u_hertz, f_hertz = hertz(delta, stiffness, length)
    pull = dmt_pull_off(reduced, work)
    return u_hertz, -pull * xi, f_hertz - pull, hertz_stiffness(delta, stiffness, length)


LAW = NormalLaw(
    name="dmt", doc="Hertz with the adhesion of work_of_adhesion w of Derjaguin–Muller–Toporov: a constant pull "
    "2 π w R* while the spheres overlap", energy_force=hertz, stiffness=hertz_stiffness,
    damping_factor=math.sqrt(5.0 / 6.0), secant_ratio=1.5, critical_stiffness=critical_stiffness, adhesion=dmt,
    pull_off=dmt_pull_off, needs={"work_of_adhesion": "a work of adhesion w > 0"},
)
