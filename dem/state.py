"""The system on SE(3)ⁿ as structure-of-arrays: constant `Model`, time-varying `State`.

Every array is contiguous float64 (int64 for indices, bool for flags) with the body index first.
Kernels never see these dataclasses: launchers unpack them into plain arrays (`Model.arrays()`,
`State.arrays()`), which numba takes as named tuples.

Units are those of the scene (consistent units; the reference scenes are non-dimensional).
"""

from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np
from numba import njit

#: Columns of the energy budget, in the order of SPEC §4. Potential, broken and dissipated terms
#: come from `dem.interactions.potential_energies` (on report steps only), kinetic terms from
#: `dem.diagnostics`.
ENERGY_COMPONENTS = (
    "kinetic_translational",
    "kinetic_rotational",
    "axial",
    "shear",
    "bending",
    "hertz_pp",
    "hertz_pw",
    "gravity",
    "lj",
    "external",
    "broken",
    "dissipated",
)
KINETIC_TRANSLATIONAL, KINETIC_ROTATIONAL, AXIAL, SHEAR, BENDING, HERTZ_PP, HERTZ_PW, GRAVITY, LJ, EXTERNAL, BROKEN, DISSIPATED = range(
    len(ENERGY_COMPONENTS)
)

StateArrays = namedtuple(
    "StateArrays",
    "position velocity orientation angular_velocity force moment broken_energy dissipated_energy",
)
ModelArrays = namedtuple(
    "ModelArrays",
    "inverse_mass mass inertia inverse_inertia diameter com_offset gravity "
    "bond_i bond_j bond_k_axial bond_k_shear bond_k_bending bond_rest_length "
    "bond_rest_dir_i bond_rest_dir_j bond_rest_relative bond_broken bond_color_start break_limits breakable "
    "wall_point wall_normal k_pp k_pw damping skin "
    "site_start site_offset lj_pair_i lj_pair_j lj_epsilon lj_sigma "
    "stress_body stress_alpha stress_attractor applied_body applied_force",
)


@njit(cache=True)
def color_bonds(bond_i, bond_j, n_bodies):
    """Greedy edge colouring: ``color[b]`` such that no two bonds of a colour share a body
    (at most ``2·max_degree − 1`` colours; at most 64)."""
    used = np.zeros(n_bodies, np.uint64)
    color = np.empty(bond_i.shape[0], np.int8)
    for b in range(bond_i.shape[0]):
        taken = used[bond_i[b]] | used[bond_j[b]]
        c = 0
        while taken & (np.uint64(1) << np.uint64(c)):
            c += 1
        if c >= 64:
            raise ValueError("a body has more than 32 bonds")
        color[b] = c
        used[bond_i[b]] |= np.uint64(1) << np.uint64(c)
        used[bond_j[b]] |= np.uint64(1) << np.uint64(c)
    return color


def _vectors(values, n, name):
    out = np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype=np.float64), (n, 3)))
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be finite")
    return out.copy()


@dataclass
class Bonds:
    """Binder bonds between bodies ``i`` and ``j`` and their rest state (SPEC §3).

    ``rest_dir_i = R_i0ᵀ n0`` and ``rest_dir_j = R_j0ᵀ n0`` are the rest bond direction
    ``n0 = (x_i0 − x_j0)/r0`` in each end's body frame; ``rest_relative`` is the quaternion of
    ``R_j0ᵀ R_i0``, so that the bending rotation is ``log(R_j R_j0ᵀ R_i0 R_iᵀ)``.
    Stiffnesses are energies (``U = ½ K_a (r/r0 − 1)²`` etc.).
    """

    i: np.ndarray
    j: np.ndarray
    k_axial: np.ndarray
    k_shear: np.ndarray
    k_bending: np.ndarray
    rest_length: np.ndarray
    rest_dir_i: np.ndarray
    rest_dir_j: np.ndarray
    rest_relative: np.ndarray
    broken: np.ndarray
    color_start: np.ndarray

    @classmethod
    def empty(cls):
        return cls(
            np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0), np.zeros(0), np.zeros(0),
            np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 4)), np.zeros(0, np.int8),
            np.zeros(1, np.int64),
        )

    def __len__(self):
        return len(self.i)


@dataclass
class Model:
    """Constant data: bodies' mass properties, bonds, walls, contact and field parameters.

    Shapes: ``mass (n,)``, ``inertia (n, 3)`` principal moments in the body frame (about the pivot
    for pinned bodies), ``diameter (n,)`` contact diameter (0: no contact), ``com_offset (n, 3)``
    centre of mass in the body frame relative to the body's reference point (zero for free bodies;
    ``ρ`` for a body on a pivot), ``pinned (n,)`` bodies that do not translate (they turn about
    ``position``), ``clamped (n,)`` bodies that do not rotate.

    Rigid clusters carry interaction sites: the sites of body ``i`` are
    ``site_offset[site_start[i]:site_start[i+1]]`` (body frame, from the body's reference point);
    Lennard-Jones acts between the sites of the body pairs ``lj_pairs (p, 2)``.
    """

    mass: np.ndarray
    inertia: np.ndarray
    diameter: np.ndarray
    com_offset: np.ndarray
    pinned: np.ndarray
    clamped: np.ndarray
    group: np.ndarray
    bonds: Bonds = field(default_factory=Bonds.empty)
    wall_point: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    wall_normal: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    wall_size: np.ndarray = field(default_factory=lambda: np.zeros(0))
    k_pp: float = 0.0
    k_pw: float = 0.0
    #: contact damping γ (`dem.interactions.contact.damping_from_restitution`); 0: none
    damping: float = 0.0
    #: breakage limits (axial strain in tension, in compression, shear 1 − s, angle |θ|); inf: off
    break_limits: np.ndarray = field(default_factory=lambda: np.full(4, np.inf))
    gravity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    skin: float = 0.0
    site_start: np.ndarray = None
    site_offset: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    lj_pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    lj_epsilon: float = 0.0
    lj_sigma: float = 1.0
    #: Ortolan–Saccon stress potential (seed 000 eq. 3) on these bodies
    stress_body: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    stress_alpha: float = 0.0
    stress_attractor: np.ndarray = field(default_factory=lambda: np.eye(3))
    #: constant forces ``applied_force[k]`` on bodies ``applied_body[k]``
    applied_body: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    applied_force: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    #: extra log columns: name -> function(model, state) -> float
    invariants: dict = field(default_factory=dict)

    @property
    def n_bodies(self):
        return len(self.mass)

    @property
    def spherical(self):
        """True when every body has ``J1 = J2 = J3`` (the RRP maps of seed 001 apply)."""
        return bool(np.all(self.inertia == self.inertia[:, :1]))

    def __post_init__(self):
        if self.site_start is None:  # no body has sites
            self.site_start = np.zeros(self.n_bodies + 1, np.int64)

    @property
    def n_sites(self):
        return len(self.site_offset)

    def arrays(self):
        inverse_mass = np.where(self.pinned, 0.0, 1.0 / self.mass)
        inverse_inertia = np.where(self.clamped[:, None], 0.0, 1.0 / self.inertia)
        b = self.bonds
        return ModelArrays(
            inverse_mass, self.mass, self.inertia, inverse_inertia, self.diameter, self.com_offset, self.gravity,
            b.i, b.j, b.k_axial, b.k_shear, b.k_bending, b.rest_length,
            b.rest_dir_i, b.rest_dir_j, b.rest_relative, b.broken, b.color_start, self.break_limits,
            bool(np.isfinite(self.break_limits).any()),
            self.wall_point, self.wall_normal, float(self.k_pp), float(self.k_pw), float(self.damping),
            float(self.skin),
            self.site_start, self.site_offset, self.lj_pairs[:, 0].copy(), self.lj_pairs[:, 1].copy(),
            float(self.lj_epsilon), float(self.lj_sigma),
            self.stress_body, float(self.stress_alpha), self.stress_attractor, self.applied_body, self.applied_force,
        )


@dataclass
class State:
    """Time-varying data: ``position (n,3)``, ``velocity (n,3)``, ``orientation (n,4)`` unit
    quaternions (scalar first; ``R`` maps body to inertial frame), ``angular_velocity (n,3)`` the
    spatial ``Ω``, the ``force``/``moment`` (spatial) evaluated at this configuration, and per
    body the energy taken out so far by bond breakage (``broken_energy``) and contact damping
    (``dissipated_energy``)."""

    position: np.ndarray
    velocity: np.ndarray
    orientation: np.ndarray
    angular_velocity: np.ndarray
    force: np.ndarray
    moment: np.ndarray
    broken_energy: np.ndarray
    dissipated_energy: np.ndarray
    step: int = 0
    time: float = 0.0

    @classmethod
    def new(cls, position, velocity, orientation, angular_velocity):
        n = len(position)
        return cls(
            _vectors(position, n, "position"),
            _vectors(velocity, n, "velocity"),
            np.ascontiguousarray(orientation, dtype=np.float64).copy(),
            _vectors(angular_velocity, n, "angular_velocity"),
            np.zeros((n, 3)),
            np.zeros((n, 3)),
            np.zeros(n),
            np.zeros(n),
        )

    def arrays(self):
        return StateArrays(
            self.position, self.velocity, self.orientation, self.angular_velocity,
            self.force, self.moment, self.broken_energy, self.dissipated_energy,
        )
