"""The ``[[pendulum]]`` builder (docs/theory.md §5/§6, seed 001 §3)."""

import numpy as np

from ..rotations import quat_from_rrp_one, quat_rotate_one
from ..schema import REQUIRED, Key, positive

KEYS = {
    "pivot": Key("vec3", (0.0, 0.0, 0.0), "fixed pivot point", "length"),
    "mass": Key("float", REQUIRED, "mass m", "mass", positive),
    "inertia": Key("float", REQUIRED, "moment of inertia J about the pivot", "mass·length²", positive),
    "center_of_mass": Key("vec3", (0.0, 0.0, 1.0), "centre of mass ρ in the body frame, from the pivot", "length"),
    "rrp": Key("vec3", (0.0, 0.0, 0.0), "initial orientation as an RRP vector α0 (docs/theory.md §1)", ""),
    "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial spatial angular velocity Ω0", "1/time"),
}


def build(system, p):
    """One body on a fixed pivot (docs/theory.md §5/§6, seed 001 §3): centre of mass at ``ρ`` in the body
    frame, inertia about the pivot, initial orientation as an RRP vector, spatial Ω. Adds the
    invariants ``|Rρ|`` and ``Rρ·Ω`` to the log (columns ``rho_norm``, ``rho_dot_omega``)."""
    q0 = np.asarray(quat_from_rrp_one(np.asarray(p["rrp"])))
    body = system.add_body(
        p["pivot"], mass=p["mass"], inertia=p["inertia"], orientation=q0, angular_velocity=p["angular_velocity"],
        com_offset=p["center_of_mass"], pinned=True, group=system.n_bodies,
    )
    suffix = "" if body == 0 else f"_{body}"

    def arm(model, state):
        return np.asarray(quat_rotate_one(state.orientation[body], model.com_offset[body]))

    system.invariants["rho_norm" + suffix] = lambda model, state: float(np.linalg.norm(arm(model, state)))
    system.invariants["rho_dot_omega" + suffix] = lambda model, state: float(
        np.dot(arm(model, state), state.angular_velocity[body]))
