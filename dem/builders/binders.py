"""The bond law of the builders that bond particles (``[[torus]]``, ``[[assembly]]``,
``[[chain]]``): one set of keys (`KEYS`), one check (`check_binder`) and one mapping from those
keys to the bonds' properties (`bond_properties`, what `dem.system.SystemBuilder.add_bonds`
takes).

``binder = "three_spring"`` (default): Baker & Gonzalez's binder of an axial, a shear and a
bending–torsion spring (`dem.interactions.binder`; ``"seed001"``, its former name, is accepted
with a deprecation note), with per-bond
stiffnesses ``k_axial``, ``k_shear``, ``k_bending`` (energies), or from the binder material
(``binder_modulus`` E_b, ``binder_shear_modulus`` G_b, ``binder_radius_ratio`` λ, default 0.5) by
`material_stiffness`. ``binder = "parallel_bond"``: the Potyondy–Cundall parallel bond
(`dem.interactions.parallel_bond`) of modulus E = ``binder_modulus``, shear modulus G =
``binder_shear_modulus``, disc radius R̄ = λ min(R_i, R_j) (``binder_radius_ratio``, default 1)
and strengths σ_c, τ_c (``binder_tensile_strength``, ``binder_shear_strength``; 0 or absent:
never breaks).
"""

import logging

import numpy as np

from ..cell import minimum_image_array
from ..schema import Key, non_negative, positive
from ..state import BOND_LAWS

#: former names of the bond laws, accepted with a deprecation note (`check_binder`)
ALIASES = {"seed001": "three_spring"}

PER_BOND_KEYS = ("k_axial", "k_shear", "k_bending")
MATERIAL_KEYS = ("binder_modulus", "binder_shear_modulus", "binder_radius_ratio")
STRENGTH_KEYS = ("binder_tensile_strength", "binder_shear_strength")
#: default λ of each law
DEFAULT_RADIUS_RATIO = {"three_spring": 0.5, "parallel_bond": 1.0}


def _at_most_one(value):
    return None if 0 < value <= 1 else "must be in (0, 1]"


KEYS = {
    "binder": Key("str", "three_spring", "bond law: 'three_spring', Baker & Gonzalez's binder of axial, shear and "
                  "bending–torsion springs (stiffnesses k_axial, k_shear, k_bending, or the binder material; "
                  "'seed001' is its former name, accepted with a deprecation note), or 'parallel_bond', the "
                  "Potyondy–Cundall parallel bond (binder_modulus, binder_shear_modulus, binder_radius_ratio, "
                  "strengths)", choices=BOND_LAWS + tuple(ALIASES)),
    "k_axial": Key("float", None, "axial stiffness K_a of every three_spring bond (per-bond mode; default 0)",
                   "energy", non_negative),
    "k_shear": Key("float", None, "shear stiffness K_s of every three_spring bond (per-bond mode; default 0)",
                   "energy", non_negative),
    "k_bending": Key("float", None, "bending/torsion stiffness K_m of every three_spring bond (per-bond mode; "
                     "default 0)", "energy", non_negative),
    "binder_modulus": Key("float", None, "binder Young's modulus E: the parallel bond's (k̄_n = E/L), or the "
                          "three_spring material mode's (K_a = E A r0, K_m = E I/r0, A = π a², I = π a⁴/4, "
                          "a = λ min(D_i, D_j)/2, r0 the rest centre distance)", "energy/length³", positive),
    "binder_shear_modulus": Key("float", None, "binder shear modulus G: the parallel bond's (k̄_s = G/L), or the "
                                "three_spring material mode's (K_s = G A r0)", "energy/length³", positive),
    "binder_radius_ratio": Key("float", None, "binder radius over the smaller particle radius, λ: R̄ = λ min(R_i, R_j) "
                               "(default 0.5 for three_spring, 1 for parallel_bond)", "", _at_most_one),
    "binder_tensile_strength": Key("float", None, "parallel bond tensile strength σ_c: breaks when F_n/A + |M_b| R̄/I "
                                   "exceeds it (0 or absent: never)", "energy/length³", non_negative),
    "binder_shear_strength": Key("float", None, "parallel bond shear strength τ_c: breaks when |F_s|/A + |M_t| R̄/J "
                                 "exceeds it (0 or absent: never)", "energy/length³", non_negative),
}


def material_stiffness(rest_length, diameter_i, diameter_j, binder_modulus, binder_shear_modulus,
                       binder_radius_ratio):
    """Three-spring stiffnesses ``(K_a, K_s, K_m)`` (energies, docs/theory.md §3) of a cylindrical binder of
    radius ``a = λ min(D_i, D_j)/2`` and length ``r0`` (the rest centre distance), moduli E_b and
    G_b:

    * axial: a bar of stiffness ``E_b A / r0`` stores ``½ (E_b A/r0)(r − r0)² = ½ K_a (r/r0 − 1)²``
      with ``K_a = E_b A r0``, ``A = π a²`` (modulus × binder volume);
    * shear: ``K_s = G_b A r0`` by the same rule with ``1 − s`` in place of the strain. This is
      nominal: ``1 − s = 1 − cos γ ≈ γ²/2`` for a shear angle γ, so ``½ K_s (1 − s)²`` is quartic
      in γ and no small-strain match with a linear shear spring exists (the parallel bond has one);
    * bending and torsion: a beam of length ``r0`` bent through θ stores ``½ (E_b I/r0) θ²``, so
      ``K_m = E_b I / r0``, ``I = π a⁴/4`` (torsion then has ``E_b I/r0`` too, where an elastic
      rod has ``G_b J/r0 = 2 G_b I/r0``; equal when ``G_b = E_b/2``)."""
    a = 0.5 * binder_radius_ratio * np.minimum(diameter_i, diameter_j)
    area = np.pi * a * a
    second_moment = 0.25 * np.pi * a ** 4
    return (binder_modulus * area * rest_length, binder_shear_modulus * area * rest_length,
            binder_modulus * second_moment / rest_length)


def stiffness_mode(p):
    """``"parallel_bond"``, or for the three-spring binder (or its former name) ``"material"`` when
    a binder modulus is given, else ``"per_bond"``."""
    if p["binder"] == "parallel_bond":
        return "parallel_bond"
    return "material" if any(p.get(k) is not None for k in MATERIAL_KEYS) else "per_bond"


def check_binder(p):
    """``(key, problem)`` for an inconsistent set of bond-law keys, or None (a former law name
    logs its deprecation note)."""
    if p["binder"] in ALIASES:
        logging.getLogger(__name__).warning(f"binder = {p['binder']!r} is the former name of "
                                            f"{ALIASES[p['binder']]!r}: it still works, but write the new name")
    mode = stiffness_mode(p)
    if mode == "parallel_bond":
        for name in PER_BOND_KEYS:
            if p[name] is not None:
                return name, ("is a three_spring stiffness; binder = 'parallel_bond' takes binder_modulus, "
                              "binder_shear_modulus, binder_radius_ratio and strengths")
    else:
        for name in STRENGTH_KEYS:
            if p[name] is not None:
                return name, ("is a parallel-bond strength (binder = 'parallel_bond'); three_spring bonds break by "
                              "the [breakage] limits")
    if mode == "material":
        for name in PER_BOND_KEYS:
            if p[name] is not None:
                return name, ("give per-bond stiffnesses (k_axial, k_shear, k_bending) or binder material "
                              "parameters (binder_modulus, binder_shear_modulus, binder_radius_ratio), not both")
    if mode in ("material", "parallel_bond"):
        for name in ("binder_modulus", "binder_shear_modulus"):
            if p[name] is None:
                return name, ("is required with binder = 'parallel_bond'" if mode == "parallel_bond" else
                              "is required with the binder material parameters (material stiffness mode)")
    return None


def bond_properties(p, i, j, position, diameter, period=None):
    """What `dem.system.SystemBuilder.add_bonds` takes for the bonds ``i[b]``–``j[b]`` between
    spheres at ``position (n, 3)`` of diameters ``diameter (n,)`` under the bond-law keys of the
    (checked) builder table ``p`` (rest lengths ``|x_i − x_j|``, nearest images' along the axes
    where ``period (3,)`` > 0, are computed for the seed binder's material mode only)."""
    mode = stiffness_mode(p)
    ratio = p["binder_radius_ratio"]
    if mode == "per_bond":
        return {k: np.full(len(i), p[k] if p[k] is not None else 0.0) for k in PER_BOND_KEYS}
    if mode == "material":
        rest_length = np.linalg.norm(minimum_image_array(position[i] - position[j], np.zeros(3) if period is None
                                                         else period), axis=1)
        stiffness = material_stiffness(rest_length, diameter[i], diameter[j], p["binder_modulus"],
                                       p["binder_shear_modulus"], ratio if ratio is not None else
                                       DEFAULT_RADIUS_RATIO["three_spring"])
        return dict(zip(PER_BOND_KEYS, stiffness))
    ratio = ratio if ratio is not None else DEFAULT_RADIUS_RATIO["parallel_bond"]
    return dict(law="parallel_bond", modulus=p["binder_modulus"], shear_modulus=p["binder_shear_modulus"],
                radius=0.5 * ratio * np.minimum(diameter[i], diameter[j]),
                tensile_strength=p["binder_tensile_strength"] or 0.0, shear_strength=p["binder_shear_strength"] or 0.0)
