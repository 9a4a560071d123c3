"""Scene builders (SPEC §5): each ``[[name]]`` table of a scene adds bodies and bonds.

A builder declares its keys (validated by `dem.scene`) and a function ``build(system, params)``
that adds to a `SystemBuilder`. `build_system` turns a validated scene into ``(Model, State)``;
the rest state of bonds is the configuration at ``t = 0``.
"""

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .rotations import (
    _quat_conjugate, _quat_from_rrp, _quat_multiply, _quat_rotate, _quat_rotate_inverse, matrix_quat, quat_from_rotvec,
    quat_matrix, quat_multiply,
)
from .interactions import damping_from_restitution
from .interactions.binder import BREAK_CRITERIA
from .packing import ASSEMBLY_KEYS, build_assembly, check_assembly
from . import scene as _scene
from .scene import REQUIRED, Key, SceneError, at_least, non_negative, nonzero_vector, positive
from .state import Bonds, Model, State, color_bonds


class SystemBuilder:
    """Accumulates bodies and bonds (in blocks of arrays, so that a builder can add 10⁶ bodies at
    once with `add_bodies`); `finish` makes the `Model` and `State`."""

    def __init__(self):
        self._blocks = []
        self._bond_blocks = []
        self._sites = {}  # body index -> its sites (body frame), for the few bodies that have any
        self._count = 0
        self.lj_pairs = []
        self.lj = None
        self.stress_bodies = []
        self.applied = []
        self.invariants = {}

    @property
    def n_bodies(self):
        return self._count

    def add_bodies(self, position, *, mass, inertia, velocity=(0, 0, 0), orientation=(1, 0, 0, 0),
                   angular_velocity=(0, 0, 0), diameter=0.0, com_offset=(0, 0, 0), pinned=False, clamped=False,
                   group=0):
        """Add ``n = len(position)`` bodies; every other argument is broadcast to ``n`` rows
        (``inertia``: scalar or three principal moments per body). Returns their indices."""
        position = np.asarray(position, float).reshape(-1, 3)
        n = len(position)

        def rows(value, shape, dtype=float):
            return np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype), (n,) + shape)).copy()

        pinned = rows(pinned, (), np.bool_)
        clamped = rows(clamped, (), np.bool_)
        inertia = np.asarray(inertia, float)
        inertia = rows(inertia[..., None] if inertia.ndim == 0 or inertia.shape == (n,) else inertia, (3,))
        orientation = rows(orientation, (4,))
        self._blocks.append(dict(
            position=position.copy(), velocity=np.where(pinned[:, None], 0.0, rows(velocity, (3,))),
            orientation=orientation / np.linalg.norm(orientation, axis=1, keepdims=True),
            angular_velocity=np.where(clamped[:, None], 0.0, rows(angular_velocity, (3,))), mass=rows(mass, ()),
            inertia=inertia, diameter=rows(diameter, ()), com_offset=rows(com_offset, (3,)), pinned=pinned,
            clamped=clamped, group=rows(group, (), np.int32),
        ))
        first = self._count
        self._count += n
        return np.arange(first, self._count)

    def add_body(self, position, *, sites=(), **properties):
        """Add one body; ``inertia`` is a scalar (sphere) or three principal moments; ``sites``
        are interaction sites in the body frame. Returns its index."""
        index = int(self.add_bodies(np.asarray(position, float)[None], **properties)[0])
        if len(sites):
            self._sites[index] = np.asarray(sites, float).reshape(-1, 3)
        return index

    def add_cluster(self, site_positions, site_masses, *, velocity=(0, 0, 0), angular_velocity=(0, 0, 0), **kwargs):
        """Add a rigid body made of point-mass sites (spatial positions): mass, centre of mass
        and inertia tensor come from the sites; the body frame is the principal frame, its axes
        ordered and signed to stay as close to the inertial axes as possible. Returns its index."""
        sites = np.asarray(site_positions, float)
        masses = np.broadcast_to(np.asarray(site_masses, float), (len(sites),))
        mass = masses.sum()
        centre = masses @ sites / mass
        arms = sites - centre
        tensor = np.sum(masses[:, None, None] * (np.sum(arms * arms, axis=1)[:, None, None] * np.eye(3)
                                                 - arms[:, :, None] * arms[:, None, :]), axis=0)
        moments, axes = principal_axes(tensor)
        return self.add_body(centre, mass=mass, inertia=moments, orientation=matrix_quat(axes), velocity=velocity,
                             angular_velocity=angular_velocity, sites=arms @ axes, **kwargs)

    def add_bonds(self, i, j, *, k_axial, k_shear, k_bending):
        """Bond bodies ``i[b]`` and ``j[b]`` (stiffnesses scalars or per bond)."""
        i = np.asarray(i, np.int32).reshape(-1)
        j = np.asarray(j, np.int32).reshape(-1)
        n = len(i)
        if n == 0:   # (an empty block would reach `_rest_bonds` as bonds with no colour)
            return
        self._bond_blocks.append((i, j) + tuple(np.broadcast_to(np.asarray(k, float), (n,)).copy()
                                               for k in (k_axial, k_shear, k_bending)))

    def add_bond(self, i, j, *, k_axial, k_shear, k_bending):
        self.add_bonds([i], [j], k_axial=k_axial, k_shear=k_shear, k_bending=k_bending)

    def finish(self, walls=(), k_pp=0.0, k_pw=0.0, gravity=(0, 0, 0), skin=0.0):
        bodies = {key: _joined([block[key] for block in self._blocks]) for key in self._blocks[0]}
        self._blocks = []
        state = State.new(bodies["position"], bodies["velocity"], bodies["orientation"], bodies["angular_velocity"])
        diameter = bodies["diameter"]
        if skin <= 0.0:
            contact = diameter[diameter > 0]
            skin = 0.25 * contact.mean() if len(contact) else 0.0
        epsilon, sigma = self.lj if self.lj else (0.0, 1.0)
        counts = np.zeros(self._count, np.int64)
        for body, sites in self._sites.items():
            counts[body] = len(sites)
        model = Model(
            mass=bodies["mass"], inertia=bodies["inertia"], diameter=diameter, com_offset=bodies["com_offset"],
            pinned=bodies["pinned"], clamped=bodies["clamped"], group=bodies["group"],
            bonds=self._rest_bonds(state), k_pp=k_pp, k_pw=k_pw, gravity=np.asarray(gravity, float), skin=skin,
            site_start=np.concatenate(([0], np.cumsum(counts))).astype(np.int64) if self._sites else None,
            site_offset=np.concatenate([self._sites[b] for b in sorted(self._sites)]) if self._sites
            else np.zeros((0, 3)),
            lj_pairs=np.array(self.lj_pairs, np.int64).reshape(-1, 2), lj_epsilon=epsilon, lj_sigma=sigma,
            applied_body=np.array([b for b, _ in self.applied], np.int64),
            applied_force=np.array([f for _, f in self.applied], float).reshape(-1, 3),
            invariants=dict(self.invariants),
        )
        if len(walls):
            model.wall_point = np.array([w["point"] for w in walls], dtype=float)
            normal = np.array([w["normal"] for w in walls], dtype=float)
            model.wall_normal = normal / np.linalg.norm(normal, axis=1, keepdims=True)
            model.wall_size = np.array([w["size"] for w in walls], dtype=float)
        return model, state

    def _rest_bonds(self, state):
        """Bonds with their rest state at ``state``, sorted by colour (`color_bonds`); built with
        one temporary array at a time, so that 10⁶ bodies fit."""
        if not self._bond_blocks:
            return Bonds.empty()
        columns = [_joined([block[k] for block in self._bond_blocks]) for k in range(5)]
        self._bond_blocks = []
        color = color_bonds(columns[0], columns[1], state.position.shape[0])
        order = np.argsort(color, kind="stable")
        color_start = np.searchsorted(color[order], np.arange(color.max() + 2)).astype(np.int64)
        del color
        for k in range(5):
            columns[k] = columns[k][order]
        del order
        i, j = columns[0], columns[1]
        m = len(i)
        rest_length, rest_dir_i, rest_dir_j, rest_relative = np.empty(m), np.empty((m, 3)), np.empty((m, 3)), np.empty((m, 4))
        _rest_bond_kernel(state.position, state.orientation, i, j, rest_length, rest_dir_i, rest_dir_j, rest_relative)
        return Bonds(i, j, columns[2], columns[3], columns[4], rest_length, rest_dir_i, rest_dir_j, rest_relative,
                     np.zeros(m, np.int8), color_start)


def _joined(arrays):
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


@njit(cache=True)
def _rest_bond_kernel(position, orientation, bond_i, bond_j, rest_length, rest_dir_i, rest_dir_j, rest_relative):
    """Rest state of each bond: ``r0``, ``n0`` in each end's body frame, and ``R_j0ᵀ R_i0``."""
    for b in range(bond_i.shape[0]):
        i = bond_i[b]
        j = bond_j[b]
        d = (position[i, 0] - position[j, 0], position[i, 1] - position[j, 1], position[i, 2] - position[j, 2])
        r = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        n = (d[0] / r, d[1] / r, d[2] / r)
        rest_length[b] = r
        rest_dir_i[b] = np.asarray(_quat_rotate_inverse(orientation[i], n))
        rest_dir_j[b] = np.asarray(_quat_rotate_inverse(orientation[j], n))
        rest_relative[b] = np.asarray(_quat_multiply(_quat_conjugate(orientation[j]), orientation[i]))


def principal_axes(tensor):
    """``(moments, axes)`` of a symmetric inertia tensor: ``tensor = axes diag(moments) axesᵀ``
    with ``axes`` a rotation whose columns follow the coordinate axes as closely as possible
    (a tensor that is already diagonal keeps its frame and order)."""
    moments, vectors = np.linalg.eigh(tensor)
    order = []
    for axis in range(3):
        ranked = np.argsort(-np.abs(vectors[axis]))
        order.append(next(k for k in ranked if k not in order))
    moments, vectors = moments[order], vectors[:, order]
    vectors *= np.where(np.diag(vectors) < 0, -1.0, 1.0)
    if np.linalg.det(vectors) < 0:
        vectors[:, 2] *= -1
    return moments, vectors


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


def too_many(count):
    """The problem with a body count above `dem.scene.MAX_BODIES`, or None."""
    if count > _scene.MAX_BODIES:
        return f"asks for {count} bodies, more than the {_scene.MAX_BODIES} a builder table may make"
    return None


def check_torus(p):
    problem = too_many(p["n_particles"])
    return ("n_particles", problem) if problem else None


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


def build_rigid_body(system, p):
    """One free rigid body with principal moments ``inertia`` (SPEC §5); with
    ``potential = "ortolan_saccon"`` it feels seed 000's stress potential (section
    ``[ortolan_saccon]``)."""
    q0 = quat_from_rotvec(np.asarray(p["rotation_vector"]))
    omega = np.asarray(p["angular_velocity"]) + quat_matrix(q0) @ np.asarray(p["body_angular_velocity"])
    body = system.add_body(p["position"], mass=p["mass"], inertia=p["inertia"], orientation=q0,
                           velocity=p["velocity"], angular_velocity=omega, group=system.n_bodies)
    if p["potential"] == "ortolan_saccon":
        system.stress_bodies.append(body)


def check_rigid_body(p):
    if any(p["angular_velocity"]) and any(p["body_angular_velocity"]):
        return "body_angular_velocity", "give angular_velocity (spatial) or body_angular_velocity, not both"
    if min(p["inertia"]) <= 0:
        return "inertia", f"principal moments must be positive, got {list(p['inertia'])}"
    return None


def build_top(system, p):
    """Heavy top on a fixed pivot (seed 004): centre of mass at distance ``length`` along body
    axis 3, ``inertia`` about the centre of mass (moved to the pivot by the parallel-axis
    theorem), initial state from z–x–z Euler angles and rates. Logs the spin ``J3 ω3``."""
    inertia = np.asarray(p["inertia"]) + p["mass"] * p["length"] ** 2 * np.array([1.0, 1.0, 0.0])
    q0, omega = euler_zxz(p["euler_angles"], p["euler_rates"])
    body = system.add_body(p["pivot"], mass=p["mass"], inertia=inertia, orientation=q0, angular_velocity=omega,
                           com_offset=(0.0, 0.0, p["length"]), pinned=True, group=system.n_bodies)
    suffix = "" if body == 0 else f"_{body}"
    system.invariants["spin" + suffix] = lambda model, state: float(
        model.inertia[body, 2] * _quat_rotate_inverse(state.orientation[body], state.angular_velocity[body])[2])


def check_top(p):
    if min(p["inertia"]) <= 0:
        return "inertia", f"principal moments must be positive, got {list(p['inertia'])}"
    try:   # the parallel-axis term of build_top
        transfer = p["mass"] * p["length"] ** 2
    except OverflowError:
        transfer = math.inf
    if not transfer + max(p["inertia"]) < math.inf:
        return "length", f"mass × length² = {p['mass']:g} × {p['length']:g}² is out of floating-point range"
    return None


def check_tetra_chain(p):
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


TETRAHEDRON = np.array([(-1 / 2, -1 / 3, -1 / 4), (1 / 2, -1 / 3, -1 / 4), (0, 2 / 3, -1 / 4), (0, 0, 3 / 4)])
CHAIN_ENDS = ("clamped-clamped", "clamped-force", "clamped-displacement", "free")


def build_tetra_chain(system, p):
    """Rigid tetrahedra of four point-mass sites (seed 003 §3.5; SPEC §5) with centres at
    ``(spacing·i, 0, 0)``, Lennard-Jones between the sites of consecutive bodies. ``ends``: the
    first body is clamped (no translation, no rotation) unless ``free``; the last is clamped
    (``clamped-clamped``), pushed by ``end_force`` (``clamped-force``), or has its centre held at
    ``end_position`` and turns freely (``clamped-displacement``)."""
    if system.lj not in (None, (p["epsilon"], p["sigma"])):
        raise ValueError("all Lennard-Jones parameters of a scene must agree")
    system.lj = (p["epsilon"], p["sigma"])
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
            system.lj_pairs.append((first + k - 1, first + k))
    if ends == "clamped-force":
        system.applied.append((first + count - 1, np.asarray(p["end_force"])))


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
        check_torus,
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
    "rigid_body": Builder(
        {
            "mass": Key("float", 1.0, "mass", "mass", positive),
            "inertia": Key("vec3", REQUIRED, "principal moments of inertia J1, J2, J3 (body frame)", "mass·length²"),
            "position": Key("vec3", (0.0, 0.0, 0.0), "centre of mass", "length"),
            "velocity": Key("vec3", (0.0, 0.0, 0.0), "initial velocity", "length/time"),
            "rotation_vector": Key("vec3", (0.0, 0.0, 0.0), "initial orientation as a rotation vector θ", ""),
            "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial spatial angular velocity Ω", "1/time"),
            "body_angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial body-frame angular velocity ω", "1/time"),
            "potential": Key("str", "none", "external potential on the body", choices=("none", "ortolan_saccon")),
        },
        build_rigid_body,
        check_rigid_body,
        doc=build_rigid_body.__doc__,
    ),
    "top": Builder(
        {
            "mass": Key("float", REQUIRED, "mass m", "mass", positive),
            "inertia": Key("vec3", REQUIRED, "principal moments about the centre of mass", "mass·length²"),
            "length": Key("float", REQUIRED, "distance L from the pivot to the centre of mass (body axis 3)", "length",
                          positive),
            "pivot": Key("vec3", (0.0, 0.0, 0.0), "fixed pivot point", "length"),
            "euler_angles": Key("vec3", (0.0, 0.0, 0.0), "initial z–x–z Euler angles (φ, θ, ψ)", "rad"),
            "euler_rates": Key("vec3", (0.0, 0.0, 0.0), "initial rates (φ̇, θ̇, ψ̇): precession, nutation, spin",
                               "rad/time"),
        },
        build_top,
        check_top,
        doc=build_top.__doc__,
    ),
    "tetra_chain": Builder(
        {
            "n_bodies": Key("int", 8, "number of tetrahedra", "", at_least(2)),
            "edge": Key("float", 1.0, "site-layout scale a", "length", positive),
            "site_mass": Key("float", 1.0, "mass of each of the four sites", "mass", positive),
            "spacing": Key("float", 2.0, "distance between consecutive centres", "length", positive),
            "epsilon": Key("float", 5.0, "Lennard-Jones well depth ε", "energy", positive),
            "sigma": Key("float", 1.0, "Lennard-Jones length σ", "length", positive),
            "ends": Key("str", "clamped-force", "end conditions", choices=CHAIN_ENDS),
            "end_force": Key("vec3", (3.0, 0.0, 0.0), "force on the last body (clamped-force)", "force"),
            "end_position": Key("vec3", None, "where the last centre is held (clamped-displacement; default: "
                                "where it starts)", "length"),
        },
        build_tetra_chain,
        check_tetra_chain,
        doc=build_tetra_chain.__doc__,
    ),
    "assembly": Builder(ASSEMBLY_KEYS, build_assembly, check_assembly, doc=build_assembly.__doc__),
}


def _broken_count(code):
    return lambda model, state: int(np.count_nonzero(model.bonds.broken == code))


#: Body arrays that must be finite, and those that must also be positive.
_FINITE_BODY_ARRAYS = ("position", "velocity", "orientation", "angular_velocity", "diameter", "com_offset")
_POSITIVE_BODY_ARRAYS = ("mass", "inertia")


def _body_problem(block):
    """What is wrong with a block of bodies a builder added (values that overflowed, underflowed
    or lost all precision), or None."""
    for key in _FINITE_BODY_ARRAYS:
        if not np.isfinite(block[key]).all():
            return f"gives a non-finite {key.replace('_', ' ')} (values too large or too small)"
    for key in _POSITIVE_BODY_ARRAYS:
        values = block[key]
        if not (np.isfinite(values).all() and (values > 0).all()):
            return f"gives a {key} that is not a positive finite number (values too large or too small)"
    return None


def _bond_problem(bonds):
    """Index of the first bond whose rest state is degenerate (coincident ends, non-finite), or
    None."""
    good = np.isfinite(bonds.rest_length) & (bonds.rest_length > 0)
    for values in (bonds.rest_dir_i, bonds.rest_dir_j, bonds.rest_relative):
        good &= np.isfinite(values).all(axis=1)
    bad = np.flatnonzero(~good)
    return int(bad[0]) if len(bad) else None


def _coincident(path, tables, i, j):
    table = next(table for first, end, table in tables if first <= i < end)
    raise SceneError(f"{path}: {table}: bonds bodies {i} and {j} at zero distance (values too large or too small "
                     f"to tell them apart)")


def build_system(scene):
    """``(Model, State)`` of a validated `dem.scene.Scene`; a builder that cannot make what the
    scene asks (including values that overflow, or bodies that coincide) raises `SceneError`
    naming the builder table."""
    system = SystemBuilder()
    tables = []   # (first body, end, table) of each builder table
    with np.errstate(all="ignore"):   # non-finite results are reported below, not warned about
        for name, index, params in scene.builders:
            table = f"{name}.{index}"
            first, blocks = system.n_bodies, len(system._blocks)
            try:
                BUILDERS[name].build(system, params)
            except ValueError as error:
                raise SceneError(f"{scene.path}: {table}: {error}") from None
            except ArithmeticError as error:   # OverflowError of a float power, …
                raise SceneError(f"{scene.path}: {table}: values too large or too small to build with "
                                 f"({error.args[-1] if error.args else type(error).__name__})") from None
            for block in system._blocks[blocks:]:
                problem = _body_problem(block)
                if problem:
                    raise SceneError(f"{scene.path}: {table}: {problem}")
            if any(body >= first and not np.isfinite(sites).all() for body, sites in system._sites.items()):
                raise SceneError(f"{scene.path}: {table}: gives non-finite interaction sites (values too large or "
                                 f"too small)")
            tables.append((first, system.n_bodies, table))
        if system.n_bodies == 0:
            raise SceneError(f"{scene.path}: {tables[-1][2] if tables else '(builders)'}: the scene makes no body")
        contact = scene.contact
        blocks, bond_blocks = list(system._blocks), list(system._bond_blocks)   # `finish` empties them
        try:
            model, state = system.finish(walls=scene.walls, k_pp=contact["k_pp"], k_pw=contact["k_pw"],
                                         gravity=scene.fields["gravity"], skin=contact["skin"])
        except ZeroDivisionError:   # raised by the rest-bond kernel: a bond of zero length
            position = np.concatenate([block["position"] for block in blocks])
            for i, j, *_ in bond_blocks:
                d = position[i] - position[j]
                zero = np.flatnonzero(np.sum(d * d, axis=1) == 0)   # |d|² as the kernel sums it
                if len(zero):
                    _coincident(scene.path, tables, i[zero[0]], j[zero[0]])
            _coincident(scene.path, tables, bond_blocks[0][0][0], bond_blocks[0][1][0])
        bad = _bond_problem(model.bonds)
        if bad is not None:
            _coincident(scene.path, tables, model.bonds.i[bad], model.bonds.j[bad])
        if not np.isfinite(model.skin):
            raise SceneError(f"{scene.path}: contact.skin: the mean particle diameter is not finite")
    model.damping = damping_from_restitution(contact["restitution"])
    limits = [scene.breakage[name] for name in BREAK_CRITERIA]
    model.break_limits = np.array([limit if limit > 0 else np.inf for limit in limits])
    if np.isfinite(model.break_limits).any():
        for code, name in enumerate(BREAK_CRITERIA, start=1):
            model.invariants[f"broken_{name}"] = _broken_count(code)
    if system.stress_bodies:
        stress = scene.ortolan_saccon
        model.stress_body = np.array(system.stress_bodies, np.int64)
        model.stress_alpha = stress["alpha"]
        with np.errstate(all="ignore"):
            model.stress_attractor = quat_matrix(quat_from_rotvec(np.asarray(stress["attractor_rotation_vector"])))
        if not np.isfinite(model.stress_attractor).all():
            raise SceneError(f"{scene.path}: ortolan_saccon.attractor_rotation_vector: too large to make a rotation, "
                             f"got {list(stress['attractor_rotation_vector'])}")
    return model, state
