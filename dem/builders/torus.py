"""The ``[[torus]]`` builder (docs/theory.md §5, seed 001 §4.1)."""

import numpy as np

from ..schema import REQUIRED, Key, at_least, nonzero_vector, positive, too_many
from .binders import KEYS as BINDER_KEYS, bond_properties, check_binder

KEYS = {
    "n_particles": Key("int", REQUIRED, "number of particles N", "", at_least(3)),
    "diameter": Key("float", REQUIRED, "ring diameter D_t (particle diameter D_t sin(π/N))", "length", positive),
    "center": Key("vec3", (0.0, 0.0, 0.0), "centre of the ring", "length"),
    "axis": Key("vec3", (0.0, 0.0, 1.0), "normal of the ring's plane", "", nonzero_vector),
    "mass": Key("float", REQUIRED, "mass of each particle", "mass", positive),
    "inertia": Key("float", REQUIRED, "moment of inertia J of each particle", "mass·length²", positive),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "initial velocity of the ring", "length/time"),
    "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial rigid spin of the ring (and of each particle)",
                            "1/time"),
    **BINDER_KEYS,
}


def orthonormal_frame(axis):
    """Unit ``n`` along ``axis`` and ``e1, e2`` spanning its normal plane (``e1`` from the
    coordinate axis least aligned with ``n``; for ``n = z``: ``e1 = x``, ``e2 = y``)."""
    n = np.asarray(axis, float) / np.linalg.norm(axis)
    reference = np.eye(3)[np.argmin(np.abs(n))]
    e1 = reference - np.dot(reference, n) * n
    e1 /= np.linalg.norm(e1)
    return n, e1, np.cross(n, e1)


def check(p):
    problem = too_many(p["n_particles"])
    return ("n_particles", problem) if problem else check_binder(p)


def build(system, p):
    """A ring of ``n_particles`` spheres of diameter ``D_t sin(π/N)`` touching on a circle of
    diameter ``D_t``, each bonded to its two ring neighbours (docs/theory.md §5, seed 001 §4.1) by the bond
    law of `dem.builders.binders` (the three-spring binder by default). An
    ``angular_velocity`` ω spins the ring rigidly about its centre (v = v0 + ω × (x − c)) and each
    particle at the same rate."""
    count = p["n_particles"]
    n, e1, e2 = orthonormal_frame(p["axis"])
    centre = np.asarray(p["center"])
    omega = np.asarray(p["angular_velocity"])
    radius = 0.5 * p["diameter"]
    diameter = p["diameter"] * np.sin(np.pi / count)
    first = system.n_bodies
    position = np.empty((count, 3))
    for k in range(count):
        phi = 2.0 * np.pi * k / count
        x = position[k] = centre + radius * (np.cos(phi) * e1 + np.sin(phi) * e2)
        system.add_body(
            x, mass=p["mass"], inertia=p["inertia"], diameter=diameter,
            velocity=np.asarray(p["velocity"]) + np.cross(omega, x - centre), angular_velocity=omega,
            group=first,
        )
    i = np.arange(count)
    j = (i + 1) % count
    system.add_bonds(first + i, first + j, **bond_properties(p, i, j, position, np.full(count, diameter)))
