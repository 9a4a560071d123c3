"""Hooke's law: a linear spring ``|F| = k_n ξ_n``, ``U = ½ k_n ξ_n²`` of the overlap ``ξ_n = L δ``
(the stiffness ``K`` is then ``k_n``, a force per length)."""

import numpy as np
from numba import njit

from .record import NormalLaw


@njit(inline="always")
def hooke(delta, stiffness, length):
    """``(U, |F|) = (½ k ξ², k ξ)`` of the overlap ``ξ = L δ``."""
    overlap = length * delta
    return 0.5 * stiffness * overlap * overlap, stiffness * overlap


@njit(inline="always")
def hooke_stiffness(delta, stiffness, length):
    """``dF/dξ_n = k_n`` (0 for ``δ ≤ 0``)."""
    return stiffness if delta > 0.0 else 0.0


def critical_stiffness(energy, stiffness, length):
    """``(δ*, k_n)``: ``½ k_n (L δ*)² = energy``."""
    overlap = np.maximum(np.sqrt(2.0 * energy / stiffness) / length, 0.01)
    return overlap, np.full_like(overlap, stiffness)


LAW = NormalLaw(
    name="hooke", doc="a linear spring F = k_n ξ_n (k_pp and k_pw are then k_n, a force per length)",
    energy_force=hooke, stiffness=hooke_stiffness, damping_factor=1.0, secant_ratio=1.0,
    critical_stiffness=critical_stiffness,
)
