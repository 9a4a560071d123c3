"""The record each normal law's module gives the registry (`dem.interactions.normal.LAWS`)."""

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class NormalLaw:
    """One normal law of ``[contact] normal``.

    Compiled pieces (``@njit``, called by the kernels through the dispatch on the law's code):

    * ``energy_force(δ, K, L) → (U, |F|)`` at the dimensionless overlap ``δ ≥ 0`` (``ξ_n = L δ``);
      an adhesive law's is that of its elastic (Hertz) part;
    * ``stiffness(δ, K, L)``: the tangent ``dF/dξ_n`` of ``energy_force``'s force (0 for ``δ ≤ 0``);
    * an adhesive law's ``adhesion(δ, K, L, R*, w) → (U_H, U_a, F, k)`` (elastic and adhesion
      energies, the force, the contact stiffness that scales the damping and the springs) and
      ``pull_off(R*, w)``, the force that separates the spheres under force control;
    * a law that holds a contact stretched beyond touch (JKR) also ``separation(K, L, R*, w) →
      (ξ_c, U_c)``, where it breaks and its energy there, and ``touch_energy(K, L, R*, w)``, its
      energy where it forms: the kernels then keep a formed flag per contact.

    Python-side facts: ``name`` (the key's value) and ``doc`` (its text in the key's doc);
    ``damping_factor``, the ``f`` of the damping ratio ``γ = −2 f ln e / √(ln² e + π²)`` that
    makes a head-on collision rebound at the restitution ``e``; ``secant_ratio``, the tangent
    stiffness over the secant stiffness ``F/ξ_n`` (Tsuji's damping is written on the secant one);
    ``critical_stiffness(U, K, L) → (δ*, k)`` (numpy, per particle): the overlap at which the
    law stores the energy ``U`` (at least 0.01) and the tangent stiffness there, for the critical
    time step; ``needs``: the ``[contact]`` keys it reads besides the stiffness, which must then
    be positive, with what each is (for the error message)."""

    name: str
    doc: str
    energy_force: Callable
    stiffness: Callable
    damping_factor: float
    secant_ratio: float
    critical_stiffness: Callable
    adhesion: Callable = None
    pull_off: Callable = None
    separation: Callable = None
    touch_energy: Callable = None
    needs: dict = field(default_factory=dict)

    @property
    def adhesive(self):
        """Whether it adheres (``adhesion``): its contacts then carry history and are not sub-stepped."""
        return self.adhesion is not None

    @property
    def beyond_contact(self):
        """Whether a formed contact holds, stretched, until ``separation`` (JKR)."""
        return self.separation is not None
