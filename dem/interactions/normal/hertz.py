"""Hertz's law (docs/theory.md §3; seed 001 eqs. 56–57): ``|F| = (K/L) δ^{3/2}`` of the
dimensionless overlap ``δ = ξ_n/L`` with the consistent energy ``U = (2/5) K δ^{5/2}`` (the
paper's 5/2 prefactor does not match its force; see docs/theory.md §3.3). ``L`` is ``R_s = (D_i
+ D_j)/2`` between particles and ``D/2`` against a wall."""

import math

import numpy as np
from numba import njit

from .record import NormalLaw


@njit(inline="always")
def hertz(delta, stiffness, length):
    """Scalar Hertz law: ``(U, |F|)`` for the dimensionless overlap ``δ ≥ 0`` and the contact
    length scale (``R_s = (D_i + D_j)/2`` or ``D/2``)."""
    root = np.sqrt(delta)
    return 0.4 * stiffness * delta * delta * root, stiffness / length * delta * root


@njit(inline="always")
def hertz_stiffness(delta, stiffness, length):
    """Tangent stiffness ``dF/dξ_n = 1.5 K/L² √δ`` of the Hertz law above with respect to the
    overlap ``ξ_n = L δ`` (0 for ``δ ≤ 0``)."""
    if delta <= 0.0:
        return 0.0
    return 1.5 * stiffness / (length * length) * np.sqrt(delta)


@njit(inline="always")
def hertz_modulus(stiffness, length, reduced):
    """``E*`` of the Hertz law ``(K/L) δ^{3/2} = (4/3) E* √R* ξ^{3/2}`` (``ξ = L δ``):
    ``E* = 3 K / (4 L^{5/2} √R*)``."""
    return 0.75 * stiffness / (length * length * np.sqrt(length * reduced))


def critical_stiffness(energy, stiffness, length):
    """``(δ*, k)``: ``U(δ*) = energy``, ``k = 1.5 K/L² √δ*``."""
    overlap = np.maximum((energy / (0.4 * stiffness)) ** 0.4, 0.01)
    return overlap, 1.5 * stiffness / length ** 2 * np.sqrt(overlap)


LAW = NormalLaw(
    name="hertz", doc="F = (K/L) δ^{3/2} of the dimensionless overlap δ = ξ_n/L", energy_force=hertz,
    stiffness=hertz_stiffness, damping_factor=math.sqrt(5.0 / 6.0), secant_ratio=1.5,
    critical_stiffness=critical_stiffness,
)
