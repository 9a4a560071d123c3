"""Scene builders (SPEC §5): each ``[[name]]`` table of a scene adds bodies and bonds.

A builder declares its keys (validated by `dem.scene`) and a function ``build(system, params)``
that adds to a `SystemBuilder`. `build_system` turns a validated scene into ``(Model, State)``;
the rest state of bonds is the configuration at ``t = 0``.
"""

from dataclasses import dataclass

import numpy as np

from .rotations import _quat_conjugate, _quat_from_rrp, _quat_multiply, _quat_rotate, _quat_rotate_inverse
from .scene import REQUIRED, Key, at_least, non_negative, nonzero_vector, positive
from .state import Bonds, Model, State


class SystemBuilder:
    """Accumulates bodies and bonds; `finish` makes the `Model` and `State`."""

    def __init__(self):
        self._bodies = []
        self._bonds = []
        self.invariants = {}

    @property
    def n_bodies(self):
        return len(self._bodies)

    def add_body(self, position, *, mass, inertia, velocity=(0, 0, 0), orientation=(1, 0, 0, 0),
                 angular_velocity=(0, 0, 0), diameter=0.0, com_offset=(0, 0, 0), pinned=False, group=0):
        """Add one body; ``inertia`` is a scalar (sphere) or three principal moments. Returns its index."""
        inertia = np.broadcast_to(np.asarray(inertia, dtype=np.float64), (3,))
        self._bodies.append(dict(
            position=np.asarray(position, float), velocity=np.zeros(3) if pinned else np.asarray(velocity, float),
            orientation=np.asarray(orientation, float) / np.linalg.norm(orientation),
            angular_velocity=np.asarray(angular_velocity, float), mass=float(mass), inertia=inertia.copy(),
            diameter=float(diameter), com_offset=np.asarray(com_offset, float), pinned=bool(pinned), group=int(group),
        ))
        return len(self._bodies) - 1

    def add_bond(self, i, j, *, k_axial, k_shear, k_bending):
        self._bonds.append((i, j, float(k_axial), float(k_shear), float(k_bending)))

    def finish(self, walls=(), k_pp=0.0, k_pw=0.0, gravity=(0, 0, 0), skin=0.0):
        bodies = {key: np.array([b[key] for b in self._bodies]) for key in self._bodies[0]}
        state = State.new(bodies["position"], bodies["velocity"], bodies["orientation"], bodies["angular_velocity"])
        diameter = bodies["diameter"]
        if skin <= 0.0:
            contact = diameter[diameter > 0]
            skin = 0.25 * contact.mean() if len(contact) else 0.0
        model = Model(
            mass=bodies["mass"], inertia=np.ascontiguousarray(bodies["inertia"]), diameter=diameter,
            com_offset=np.ascontiguousarray(bodies["com_offset"]), pinned=bodies["pinned"], group=bodies["group"],
            bonds=self._rest_bonds(state), k_pp=k_pp, k_pw=k_pw, gravity=np.asarray(gravity, float), skin=skin,
            invariants=dict(self.invariants),
        )
        if len(walls):
            model.wall_point = np.array([w["point"] for w in walls], dtype=float)
            normal = np.array([w["normal"] for w in walls], dtype=float)
            model.wall_normal = normal / np.linalg.norm(normal, axis=1, keepdims=True)
            model.wall_size = np.array([w["size"] for w in walls], dtype=float)
        return model, state

    def _rest_bonds(self, state):
        if not self._bonds:
            return Bonds.empty()
        i, j, k_a, k_s, k_m = (np.array(column) for column in zip(*self._bonds))
        i = i.astype(np.int64)
        j = j.astype(np.int64)
        d = state.position[i] - state.position[j]
        rest_length = np.linalg.norm(d, axis=1)
        n0 = d / rest_length[:, None]
        q = state.orientation
        rest_dir_i = np.array([_quat_rotate_inverse(q[a], n) for a, n in zip(i, n0)])
        rest_dir_j = np.array([_quat_rotate_inverse(q[b], n) for b, n in zip(j, n0)])
        rest_relative = np.array([_quat_multiply(_quat_conjugate(q[b]), q[a]) for a, b in zip(i, j)])
        return Bonds(i, j, k_a, k_s, k_m, rest_length, rest_dir_i, rest_dir_j, rest_relative,
                     np.zeros(len(i), np.bool_))


@dataclass(frozen=True)
class Builder:
    keys: dict
    build: object
    check: object = None
    doc: str = ""


def _orthonormal_frame(axis):
    """Unit ``n`` along ``axis`` and ``e1, e2`` spanning its normal plane (``e1`` from the
    coordinate axis least aligned with ``n``; for ``n = z``: ``e1 = x``, ``e2 = y``)."""
    n = np.asarray(axis, float) / np.linalg.norm(axis)
    reference = np.eye(3)[np.argmin(np.abs(n))]
    e1 = reference - np.dot(reference, n) * n
    e1 /= np.linalg.norm(e1)
    return n, e1, np.cross(n, e1)


def build_torus(system, p):
    """A ring of ``n_particles`` spheres of diameter ``D_t sin(π/N)`` touching on a circle of
    diameter ``D_t``, each bonded to its two ring neighbours (SPEC §5, seed 001 §4.1). An
    ``angular_velocity`` ω spins the ring rigidly about its centre (v = v0 + ω × (x − c)) and each
    particle at the same rate."""
    count = p["n_particles"]
    n, e1, e2 = _orthonormal_frame(p["axis"])
    centre = np.asarray(p["center"])
    omega = np.asarray(p["angular_velocity"])
    radius = 0.5 * p["diameter"]
    first = system.n_bodies
    for k in range(count):
        phi = 2.0 * np.pi * k / count
        x = centre + radius * (np.cos(phi) * e1 + np.sin(phi) * e2)
        system.add_body(
            x, mass=p["mass"], inertia=p["inertia"], diameter=p["diameter"] * np.sin(np.pi / count),
            velocity=np.asarray(p["velocity"]) + np.cross(omega, x - centre), angular_velocity=omega,
            group=first,
        )
    for k in range(count):
        system.add_bond(first + k, first + (k + 1) % count,
                        k_axial=p["k_axial"], k_shear=p["k_shear"], k_bending=p["k_bending"])


def build_pendulum(system, p):
    """One body on a fixed pivot (SPEC §5/§6, seed 001 §3): centre of mass at ``ρ`` in the body
    frame, inertia about the pivot, initial orientation as an RRP vector, spatial Ω. Adds the
    invariants ``|Rρ|`` and ``Rρ·Ω`` to the log (columns ``rho_norm``, ``rho_dot_omega``)."""
    q0 = np.asarray(_quat_from_rrp(np.asarray(p["rrp"])))
    body = system.add_body(
        p["pivot"], mass=p["mass"], inertia=p["inertia"], orientation=q0, angular_velocity=p["angular_velocity"],
        com_offset=p["center_of_mass"], pinned=True, group=system.n_bodies,
    )
    suffix = "" if body == 0 else f"_{body}"

    def arm(model, state):
        return np.asarray(_quat_rotate(state.orientation[body], model.com_offset[body]))

    system.invariants["rho_norm" + suffix] = lambda model, state: float(np.linalg.norm(arm(model, state)))
    system.invariants["rho_dot_omega" + suffix] = lambda model, state: float(
        np.dot(arm(model, state), state.angular_velocity[body]))


BUILDERS = {
    "torus": Builder(
        {
            "n_particles": Key("int", REQUIRED, "number of particles N", "", at_least(3)),
            "diameter": Key("float", REQUIRED, "ring diameter D_t (particle diameter D_t sin(π/N))", "length", positive),
            "center": Key("vec3", (0.0, 0.0, 0.0), "centre of the ring", "length"),
            "axis": Key("vec3", (0.0, 0.0, 1.0), "normal of the ring's plane", "", nonzero_vector),
            "mass": Key("float", REQUIRED, "mass of each particle", "mass", positive),
            "inertia": Key("float", REQUIRED, "moment of inertia J of each particle", "mass·length²", positive),
            "velocity": Key("vec3", (0.0, 0.0, 0.0), "initial velocity of the ring", "length/time"),
            "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial rigid spin of the ring (and of each particle)",
                                    "1/time"),
            "k_axial": Key("float", 0.0, "binder axial stiffness K_a", "energy", non_negative),
            "k_shear": Key("float", 0.0, "binder shear stiffness K_s", "energy", non_negative),
            "k_bending": Key("float", 0.0, "binder bending/torsion stiffness K_m", "energy", non_negative),
        },
        build_torus,
        doc=build_torus.__doc__,
    ),
    "pendulum": Builder(
        {
            "pivot": Key("vec3", (0.0, 0.0, 0.0), "fixed pivot point", "length"),
            "mass": Key("float", REQUIRED, "mass m", "mass", positive),
            "inertia": Key("float", REQUIRED, "moment of inertia J about the pivot", "mass·length²", positive),
            "center_of_mass": Key("vec3", (0.0, 0.0, 1.0), "centre of mass ρ in the body frame, from the pivot",
                                  "length"),
            "rrp": Key("vec3", (0.0, 0.0, 0.0), "initial orientation as an RRP vector α0 (SPEC §1)", ""),
            "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial spatial angular velocity Ω0", "1/time"),
        },
        build_pendulum,
        doc=build_pendulum.__doc__,
    ),
}


def build_system(scene):
    """``(Model, State)`` of a validated `dem.scene.Scene`."""
    system = SystemBuilder()
    for name, _, params in scene.builders:
        BUILDERS[name].build(system, params)
    contact = scene.contact
    return system.finish(walls=scene.walls, k_pp=contact["k_pp"], k_pw=contact["k_pw"],
                         gravity=scene.fields["gravity"], skin=contact["skin"])
