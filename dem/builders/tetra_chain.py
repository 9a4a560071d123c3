"""The ``[[tetra_chain]]`` builder: rigid tetrahedra of four point-mass sites with Lennard-Jones
between consecutive bodies (seed 003 §3.5; docs/theory.md §5)."""

import math

import numpy as np

from ..schema import Key, at_least, positive, too_many

#: The four sites in the body frame, in units of the edge scale ``a`` (docs/theory.md §5).
TETRAHEDRON = np.array([(-1 / 2, -1 / 3, -1 / 4), (1 / 2, -1 / 3, -1 / 4), (0, 2 / 3, -1 / 4), (0, 0, 3 / 4)])
CHAIN_ENDS = ("clamped-clamped", "clamped-force", "clamped-displacement", "free")

KEYS = {
    "n_bodies": Key("int", 8, "number of tetrahedra", "", at_least(2)),
    "edge": Key("float", 1.0, "site-layout scale a", "length", positive),
    "site_mass": Key("float", 1.0, "mass of each of the four sites", "mass", positive),
    "spacing": Key("float", 2.0, "distance between consecutive centres", "length", positive),
    "epsilon": Key("float", 5.0, "Lennard-Jones well depth ε", "energy", positive),
    "sigma": Key("float", 1.0, "Lennard-Jones length σ", "length", positive),
    "ends": Key("str", "clamped-force", "end conditions", choices=CHAIN_ENDS),
    "end_force": Key("vec3", (3.0, 0.0, 0.0), "force on the last body (clamped-force)", "force"),
    "end_position": Key("vec3", None, "where the last centre is held (clamped-displacement; default: where it "
                        "starts)", "length"),
}


def check(p):
    problem = too_many(p["n_bodies"])
    if problem:
        return "n_bodies", problem
    try:   # the Lennard-Jones stiffness scale (and the critical time step from it)
        scale = p["epsilon"] / p["sigma"] ** 2 / p["site_mass"]
    except (OverflowError, ZeroDivisionError):
        scale = math.inf
    if not 0.0 < scale < math.inf:
        return "sigma", (f"epsilon/sigma²/site_mass = {p['epsilon']:g}/{p['sigma']:g}²/{p['site_mass']:g} is out of "
                         f"floating-point range")
    return None


def build(system, p):
    """Rigid tetrahedra of four point-mass sites (seed 003 §3.5; docs/theory.md §5) with centres at
    ``(spacing·i, 0, 0)``, Lennard-Jones between the sites of consecutive bodies. ``ends``: the
    first body is clamped (no translation, no rotation) unless ``free``; the last is clamped
    (``clamped-clamped``), pushed by ``end_force`` (``clamped-force``), or has its centre held at
    ``end_position`` and turns freely (``clamped-displacement``)."""
    system.set_input("lennard_jones", "epsilon", p["epsilon"])
    system.set_input("lennard_jones", "sigma", p["sigma"])
    count = p["n_bodies"]
    ends = p["ends"]
    first = system.n_bodies
    for k in range(count):
        centre = np.array([p["spacing"] * k, 0.0, 0.0])
        held_first = k == 0 and ends != "free"
        last = k == count - 1
        if last and ends == "clamped-displacement" and p["end_position"] is not None:
            centre = np.asarray(p["end_position"])
        system.add_cluster(centre + p["edge"] * TETRAHEDRON, p["site_mass"], group=first,
                           pinned=held_first or (last and ends in ("clamped-clamped", "clamped-displacement")),
                           clamped=held_first or (last and ends == "clamped-clamped"))
        if k > 0:
            system.append_input("lennard_jones", "pairs", (first + k - 1, first + k))
    if ends == "clamped-force":
        system.append_input("applied_force", "bodies", first + count - 1)
        system.append_input("applied_force", "forces", np.asarray(p["end_force"]))
