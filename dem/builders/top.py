"""The ``[[top]]`` builder: a heavy top on a fixed pivot (seed 004)."""

import math

import numpy as np

from ..rotations import quat_from_rotvec, quat_matrix, quat_multiply, quat_rotate_inverse_one
from ..schema import REQUIRED, Key, positive

KEYS = {
    "mass": Key("float", REQUIRED, "mass m", "mass", positive),
    "inertia": Key("vec3", REQUIRED, "principal moments about the centre of mass", "mass·length²"),
    "length": Key("float", REQUIRED, "distance L from the pivot to the centre of mass (body axis 3)", "length",
                  positive),
    "pivot": Key("vec3", (0.0, 0.0, 0.0), "fixed pivot point", "length"),
    "euler_angles": Key("vec3", (0.0, 0.0, 0.0), "initial z–x–z Euler angles (φ, θ, ψ)", "rad"),
    "euler_rates": Key("vec3", (0.0, 0.0, 0.0), "initial rates (φ̇, θ̇, ψ̇): precession, nutation, spin",
                       "rad/time"),
}


def euler_zxz(angles, rates):
    """Orientation quaternion and spatial angular velocity from z–x–z Euler angles
    ``(φ, θ, ψ)``, ``R = R_z(φ) R_x(θ) R_z(ψ)``, and their rates (seed 004 §6)."""
    phi, theta, psi = angles
    dphi, dtheta, dpsi = rates
    q = quat_multiply(quat_multiply(quat_from_rotvec([0, 0, phi]), quat_from_rotvec([theta, 0, 0])),
                      quat_from_rotvec([0, 0, psi]))
    body = np.array([
        dphi * np.sin(theta) * np.sin(psi) + dtheta * np.cos(psi),
        dphi * np.sin(theta) * np.cos(psi) - dtheta * np.sin(psi),
        dpsi + dphi * np.cos(theta),
    ])
    return q, quat_matrix(q) @ body


def check(p):
    if min(p["inertia"]) <= 0:
        return "inertia", f"principal moments must be positive, got {list(p['inertia'])}"
    try:   # the parallel-axis term of build
        transfer = p["mass"] * p["length"] ** 2
    except OverflowError:
        transfer = math.inf
    if not transfer + max(p["inertia"]) < math.inf:
        return "length", f"mass × length² = {p['mass']:g} × {p['length']:g}² is out of floating-point range"
    return None


def build(system, p):
    """Heavy top on a fixed pivot (seed 004): centre of mass at distance ``length`` along body
    axis 3, ``inertia`` about the centre of mass (moved to the pivot by the parallel-axis
    theorem), initial state from z–x–z Euler angles and rates. Logs the spin ``J3 ω3``."""
    inertia = np.asarray(p["inertia"]) + p["mass"] * p["length"] ** 2 * np.array([1.0, 1.0, 0.0])
    q0, omega = euler_zxz(p["euler_angles"], p["euler_rates"])
    body = system.add_body(p["pivot"], mass=p["mass"], inertia=inertia, orientation=q0, angular_velocity=omega,
                           com_offset=(0.0, 0.0, p["length"]), pinned=True, group=system.n_bodies)
    suffix = "" if body == 0 else f"_{body}"
    system.invariants["spin" + suffix] = lambda model, state: float(
        model.inertia[body, 2] * quat_rotate_inverse_one(state.orientation[body], state.angular_velocity[body])[2])
