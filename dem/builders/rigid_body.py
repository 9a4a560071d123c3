"""The ``[[rigid_body]]`` builder (docs/theory.md §5): one free rigid body, optionally in seed 000's stress
potential."""

import numpy as np

from ..rotations import quat_from_rotvec, quat_matrix
from ..schema import REQUIRED, Key, positive

KEYS = {
    "mass": Key("float", 1.0, "mass", "mass", positive),
    "inertia": Key("vec3", REQUIRED, "principal moments of inertia J1, J2, J3 (body frame)", "mass·length²"),
    "position": Key("vec3", (0.0, 0.0, 0.0), "centre of mass", "length"),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "initial velocity", "length/time"),
    "rotation_vector": Key("vec3", (0.0, 0.0, 0.0), "initial orientation as a rotation vector θ", ""),
    "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial spatial angular velocity Ω", "1/time"),
    "body_angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial body-frame angular velocity ω", "1/time"),
    "potential": Key("str", "none", "external potential on the body", choices=("none", "ortolan_saccon")),
}


def check(p):
    if any(p["angular_velocity"]) and any(p["body_angular_velocity"]):
        return "body_angular_velocity", "give angular_velocity (spatial) or body_angular_velocity, not both"
    if min(p["inertia"]) <= 0:
        return "inertia", f"principal moments must be positive, got {list(p['inertia'])}"
    return None


def build(system, p):
    """One free rigid body with principal moments ``inertia`` (docs/theory.md §5); with
    ``potential = "ortolan_saccon"`` it feels seed 000's stress potential (section
    ``[ortolan_saccon]``)."""
    q0 = quat_from_rotvec(np.asarray(p["rotation_vector"]))
    omega = np.asarray(p["angular_velocity"]) + quat_matrix(q0) @ np.asarray(p["body_angular_velocity"])
    body = system.add_body(p["position"], mass=p["mass"], inertia=p["inertia"], orientation=q0,
                           velocity=p["velocity"], angular_velocity=omega, group=system.n_bodies)
    if p["potential"] == "ortolan_saccon":
        system.append_input("ortolan_saccon", "bodies", body)
