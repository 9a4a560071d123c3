"""The ``[[chain]]`` builder: spheres in a straight line, each bonded to its neighbours, the first
ones held fixed and an optional constant force on the last (a cantilever, ``scenes/cantilever.toml``)."""

import numpy as np

from ..schema import REQUIRED, Key, at_least, non_negative, nonzero_vector, positive, too_many
from .binders import KEYS as BINDER_KEYS, bond_properties, check_binder

KEYS = {
    "n_particles": Key("int", REQUIRED, "number of spheres", "", at_least(2)),
    "particle_diameter": Key("float", REQUIRED, "sphere diameter D", "length", positive),
    "spacing": Key("float", None, "distance between consecutive centres (default D: touching)", "length", positive),
    "start": Key("vec3", (0.0, 0.0, 0.0), "centre of the first sphere", "length"),
    "direction": Key("vec3", (1.0, 0.0, 0.0), "direction of the line", "", nonzero_vector),
    "density": Key("float", 1.0, "mass density: m = ρ π D³/6, J = m D²/10 (solid spheres)", "mass/length³",
                   positive),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "initial velocity of the free spheres", "length/time"),
    "clamped": Key("int", 1, "number of spheres held fixed (no translation, no rotation) at the start of the "
                   "line", "", non_negative),
    "end_force": Key("vec3", (0.0, 0.0, 0.0), "constant force on the last sphere (the applied_force "
                     "interaction; energy column 'external')", "force"),
    **BINDER_KEYS,
}


def check(p):
    problem = too_many(p["n_particles"])
    if problem:
        return "n_particles", problem
    if p["clamped"] > p["n_particles"]:
        return "clamped", f"must be at most n_particles = {p['n_particles']}, got {p['clamped']}"
    return check_binder(p)


def build(system, p):
    """``n_particles`` spheres of diameter ``D`` with centres ``start + k · spacing · direction``
    (touching by default), each bonded to the next by the bond law of `dem.builders.binders`
    (e.g. ``binder = "parallel_bond"``). The first ``clamped`` spheres are held fixed (pinned and
    clamped); a non-zero ``end_force`` pushes the last sphere with a constant force (potential
    ``−F·x``, column ``external``). Solid spheres of ``density``: ``m = ρ π D³/6``,
    ``J = m D²/10``. A cantilever of length ``ℓ = (n_particles − clamped) · spacing`` from the
    last clamped centre to the tip."""
    count = p["n_particles"]
    diameter = p["particle_diameter"]
    spacing = p["spacing"] if p["spacing"] is not None else diameter
    direction = np.asarray(p["direction"], float) / np.linalg.norm(p["direction"])
    position = np.asarray(p["start"], float) + spacing * np.arange(count)[:, None] * direction
    mass = p["density"] * np.pi / 6.0 * diameter ** 3
    held = np.arange(count) < p["clamped"]
    first = system.add_bodies(position, mass=mass, inertia=0.1 * mass * diameter ** 2, diameter=diameter,
                              velocity=np.where(held[:, None], 0.0, np.asarray(p["velocity"], float)),
                              pinned=held, clamped=held, group=system.n_bodies)[0]
    i = np.arange(count - 1)
    system.add_bonds(first + i, first + i + 1, **bond_properties(p, i, i + 1, position, np.full(count, diameter)))
    if any(p["end_force"]):
        system.append_input("applied_force", "bodies", int(first + count - 1))
        system.append_input("applied_force", "forces", np.asarray(p["end_force"], float))
