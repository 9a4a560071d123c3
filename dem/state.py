"""The system on SE(3)ⁿ as structure-of-arrays: constant `Model`, time-varying `State`.

Every array is contiguous float64 (int32/int64 for indices, bool for flags) with the body index
first. Kernels never see these dataclasses: launchers unpack them into named tuples of plain
arrays (`Model.body_arrays`, `State.arrays`) and each interaction's own named parameters
(`Model.interactions`) and state (`State.interactions`).

Units are those of the scene (consistent units; the reference scenes are non-dimensional).
"""

from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .cell import box_cell
from .rotations import cross_one, quat_rotate_inverse_one, quat_rotate_one

#: What every kernel may read of the bodies (constant).
BodyArrays = namedtuple("BodyArrays", "mass inverse_mass inertia inverse_inertia diameter com_offset")
#: The bodies' configuration and velocities, the force and moment buffers, and the cell (`dem.cell`).
StateArrays = namedtuple("StateArrays", "position velocity orientation angular_velocity force moment cell")


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


#: The bond laws a bond may follow (`Bonds.law` is an index into this tuple): the seed 001 binder
#: (`dem.interactions.binder`) and the parallel bond (`dem.interactions.parallel_bond`).
BOND_LAWS = ("three_spring", "parallel_bond")
#: Per-bond parameters of the laws that have their own (beyond the three-spring binder's stiffnesses).
LAW_PARAMETERS = {"parallel_bond": ("modulus", "shear_modulus", "radius", "tensile_strength", "shear_strength")}


@dataclass
class Bonds:
    """Bonds between bodies ``i`` and ``j`` and their rest state (docs/theory.md §3), sorted by law, then by
    colour: the bonds of law ``k`` (`BOND_LAWS`) are the block `block` ``(k)``, and within it the
    bonds of colour ``c`` are ``color_start(k)[c]:color_start(k)[c+1]`` (offsets in the block) and
    share no body.

    ``rest_dir_i = R_i0ᵀ n0`` and ``rest_dir_j = R_j0ᵀ n0`` are the rest bond direction
    ``n0 = (x_i0 − x_j0)/r0`` in each end's body frame; ``rest_relative`` is the quaternion of
    ``R_j0ᵀ R_i0``, so that the relative rotation is ``log(R_j R_j0ᵀ R_i0 R_iᵀ)``.
    Three-spring stiffnesses are energies (``U = ½ K_a (r/r0 − 1)²`` etc.; 0 for bonds of other
    laws); ``law_parameters[law][name]`` holds the per-bond parameters of the bonds of a law
    that has its own (`LAW_PARAMETERS`; arrays over the law's block). Whether a bond is broken
    is time-varying: its law's interaction state.
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
    law: np.ndarray
    color: np.ndarray
    law_parameters: dict = field(default_factory=dict)

    @classmethod
    def empty(cls):
        return cls(
            np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0), np.zeros(0), np.zeros(0),
            np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 4)), np.zeros(0, np.int8),
            np.zeros(0, np.int8),
        )

    def __len__(self):
        return len(self.i)

    def block(self, law):
        """``slice`` of the bonds of ``law`` (a name of `BOND_LAWS`)."""
        code = BOND_LAWS.index(law)
        return slice(int(np.searchsorted(self.law, code, "left")), int(np.searchsorted(self.law, code, "right")))

    def color_start(self, law):
        """``(colours + 1,)`` int64: colour ``c`` of ``law``'s block is ``[start[c], start[c+1])``
        (offsets in the block)."""
        color = self.color[self.block(law)]
        return np.searchsorted(color, np.arange(int(color.max(initial=-1)) + 2)).astype(np.int64)

    @property
    def n_colors(self):
        return len(np.unique(self.color))


@dataclass
class Model:
    """Constant data: the bodies' mass properties, the topology the builders made (bonds, walls,
    interaction sites, per-interaction inputs), the validated scene sections and, from them,
    each active interaction's named parameters.

    Shapes: ``mass (n,)``, ``inertia (n, 3)`` principal moments in the body frame (about the pivot
    for pinned bodies), ``diameter (n,)`` contact diameter (0: no contact), ``com_offset (n, 3)``
    centre of mass in the body frame relative to the body's reference point (zero for free bodies;
    ``ρ`` for a body on a pivot), ``pinned (n,)`` bodies that do not translate (they turn about
    ``position``), ``clamped (n,)`` bodies that do not rotate, ``group (n,)`` the first body of
    the builder table that made each body.

    Walls are planes through ``wall_point (w, 3)`` (at t = 0: moving walls carry their pose in
    the ``walls`` interaction's state) with unit normals ``wall_normal (w, 3)`` pointing to the
    particles' side (``wall_size``: the square drawn in VTK output); ``wall_friction (w, 3)``
    holds each wall's own friction, rolling and twisting coefficients (NaN: the wall takes the
    ``[contact]`` value); the ``[[walls]]`` tables and the ``[[mesh]]`` surfaces are
    ``inputs["walls"]`` (`dem.interactions.walls`). Rigid
    clusters carry interaction sites: the sites of body ``i`` are
    ``site_offset[site_start[i]:site_start[i+1]]`` (body frame, from the body's reference point);
    a clump's sites are its member spheres, of radius ``site_radius`` (0 for point sites).
    ``inputs[name]`` is what builders hand to interaction ``name`` (e.g. the Lennard-Jones body
    pairs); ``sections`` the scene sections' values; ``interactions`` maps the name of every
    interaction that acts in this system to its parameters (registry order).
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
    wall_friction: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    site_start: np.ndarray = None
    site_offset: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    #: radius of each site that is a clump's member sphere (`dem.clumps`; 0: a point site)
    site_radius: np.ndarray = None
    #: Verlet skin of the particles' neighbour list (`dem.contacts`)
    skin: float = 0.0
    inputs: dict = field(default_factory=dict)
    sections: dict = field(default_factory=dict)
    interactions: dict = field(default_factory=dict)
    #: extra log columns: name -> function(model, state) -> float
    invariants: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.site_start is None:  # no body has sites
            self.site_start = np.zeros(self.n_bodies + 1, np.int64)
        if self.site_radius is None:  # point sites only
            self.site_radius = np.zeros(len(self.site_offset))

    @property
    def n_bodies(self):
        return len(self.mass)

    @property
    def n_sites(self):
        return len(self.site_offset)

    @property
    def has_clumps(self):
        """True when some body is a clump of member spheres (`dem.clumps`)."""
        return bool((self.site_radius > 0).any())

    @property
    def spherical(self):
        """True when every body has ``J1 = J2 = J3`` (the RRP maps of seed 001 apply)."""
        return bool(np.all(self.inertia == self.inertia[:, :1]))

    def body_arrays(self):
        inverse_mass = np.where(self.pinned, 0.0, 1.0 / self.mass)
        inverse_inertia = np.where(self.clamped[:, None], 0.0, 1.0 / self.inertia)
        return BodyArrays(self.mass, inverse_mass, self.inertia, inverse_inertia, self.diameter, self.com_offset)


@dataclass
class State:
    """Time-varying data: ``position (n,3)``, ``velocity (n,3)``, ``orientation (n,4)`` unit
    quaternions (scalar first; ``R`` maps body to inertial frame), ``angular_velocity (n,3)`` the
    spatial ``Ω``, the ``force``/``moment`` (spatial) evaluated at this configuration,
    ``interactions[name]``: the time-varying arrays of each interaction that has any (broken
    bonds, energy booked to breakage or damping, …), and ``cell``: the periodic cell
    (`dem.cell`; all zero: none). Positions are unwrapped: a particle that crossed a periodic
    face keeps going."""

    position: np.ndarray
    velocity: np.ndarray
    orientation: np.ndarray
    angular_velocity: np.ndarray
    force: np.ndarray
    moment: np.ndarray
    interactions: dict = field(default_factory=dict)
    step: int = 0
    time: float = 0.0
    cell: np.ndarray = field(default_factory=box_cell)

    @classmethod
    def new(cls, position, velocity, orientation, angular_velocity, interactions=None):
        n = len(position)
        return cls(
            _vectors(position, n, "position"),
            _vectors(velocity, n, "velocity"),
            np.ascontiguousarray(orientation, dtype=np.float64).copy(),
            _vectors(angular_velocity, n, "angular_velocity"),
            np.zeros((n, 3)),
            np.zeros((n, 3)),
            dict(interactions or {}),
        )

    def arrays(self):
        return StateArrays(self.position, self.velocity, self.orientation, self.angular_velocity, self.force,
                           self.moment, self.cell)


@njit(cache=True)
def motion(st, bodies):
    """The bodies' kinetic energies and momenta about the origin (docs/theory.md §4), and the fastest:
    ``(kinetic_translational, kinetic_rotational, Px, Py, Pz, Lx, Ly, Lz, body, |v|)`` with
    ``P = Σ m v`` and ``L = Σ x × m v + Σ R J Rᵀ Ω`` (for a body on a pivot at the origin,
    ``v = 0`` and ``J`` is about the pivot); ``body`` is the fastest (−1 when there is none)."""
    ke_t = ke_r = px = py = pz = lx = ly = lz = 0.0
    fastest, top = -1, -1.0
    for i in range(st.position.shape[0]):
        v = st.velocity[i]
        m = bodies.mass[i]
        speed2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
        ke_t += 0.5 * m * speed2
        w = quat_rotate_inverse_one(st.orientation[i], st.angular_velocity[i])  # body frame ω
        jw = (bodies.inertia[i, 0] * w[0], bodies.inertia[i, 1] * w[1], bodies.inertia[i, 2] * w[2])
        ke_r += 0.5 * (w[0] * jw[0] + w[1] * jw[1] + w[2] * jw[2])
        spin = quat_rotate_one(st.orientation[i], jw)
        orbital = cross_one(st.position[i], v)
        px += m * v[0]
        py += m * v[1]
        pz += m * v[2]
        lx += m * orbital[0] + spin[0]
        ly += m * orbital[1] + spin[1]
        lz += m * orbital[2] + spin[2]
        if speed2 > top:
            fastest, top = i, speed2
    return ke_t, ke_r, px, py, pz, lx, ly, lz, fastest, np.sqrt(top) if fastest >= 0 else 0.0
