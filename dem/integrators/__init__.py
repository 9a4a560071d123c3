"""Explicit variational integrators on SE(3)ⁿ (docs/theory.md §2; seed 001 §2), one module per scheme.

=========  ===========================================================================  =======
``rrp2``   half kick, drift, ``Δα = h Ω_½`` (= ``hΩ + h²τ/2J``), forces, half kick     eq. (25)
``rrp``    half kick, drift, ``Δα = 2h w/(1+√(1−h²|w|²))``, ``w = Ω_½``, forces,      eq. (23)
           half kick
``rrp1``   full kick, drift with the new velocity, ``Δα = h Ω⁺``, forces                eq. (27)
``lgvi``   general inertia ``J = diag(J1, J2, J3)``: ``Π = Jω + (h/2)M``; Newton for     docs/theory.md §2
           ``4/(4+|β|²)(Jβ + β×Jβ/2) = hΠ``; ``R⁺ = R R(β)``; forces;
           ``Jω⁺ = R(β)ᵀΠ + (h/2)M⁺`` (translation as ``rrp2``)
=========  ===========================================================================  =======

A scheme module defines ``before_forces(lo, hi, h, st, bodies, aux)`` (every stage up to the new
configuration, for bodies ``lo ≤ i < hi``; returns the first body whose update has no solution,
or −1) and ``after_forces(lo, hi, h, st, bodies, aux)`` (the stages after the force evaluation),
each line beside the equation it implements. The compiled loop (`dem.engine`) calls them around
the forces, so each step costs one force evaluation. ``aux`` is the scheme's own state (``lgvi``:
the spatial angular momenta), an empty tuple for the others.
"""

from collections import namedtuple
from dataclasses import dataclass

from . import lgvi, rrp, rrp1, rrp2

NoState = namedtuple("NoState", "")


@dataclass(frozen=True)
class Scheme:
    """``module``: where ``before_forces``/``after_forces`` live; ``spherical``: needs
    ``J1 = J2 = J3``; ``failure``: what it means when ``before_forces`` reports a body;
    ``initial_state(state, bodies)``: its ``aux``."""

    name: str
    module: object
    order: int
    spherical: bool
    failure: str = ""
    initial_state: object = None

    def aux(self, state, bodies):
        return self.initial_state(state, bodies) if self.initial_state else NoState()


SCHEMES = {
    "rrp2": Scheme("rrp2", rrp2, 2, True),
    "rrp": Scheme("rrp", rrp, 2, True, rrp.FAILURE),
    "rrp1": Scheme("rrp1", rrp1, 1, True),
    "lgvi": Scheme("lgvi", lgvi, 2, False, lgvi.FAILURE, lgvi.initial_state),
}

__all__ = ["SCHEMES", "Scheme"]
