"""Particle–binder–particle bonds (docs/theory.md §3; seed 001 eqs. 44–55): axial, shear, bending+torsion,
and optional breakage.

With ``d = x_i − x_j``, ``r = |d|``, ``n = d/r`` (`_deformation` computes every measure once):

* axial (eq. 51–52): ``U_a = ½ K_a (r/r0 − 1)²``, ``F_i = −K_a (r/r0 − 1)/r0 n``;
* shear (eq. 53–55, objective per-end form): ``a_i = R_i R_i0ᵀ n0``, ``s_i = a_i·n``,
  ``U_s = ½ K_s [(1−s_i)² + (1−s_j)²]``, ``F_i = K_s[(1−s_i)(a_i − s_i n) + (1−s_j)(a_j − s_j n)]/r``,
  ``τ_i = K_s(1−s_i) a_i×n``, ``τ_j = K_s(1−s_j) a_j×n``;
* bending + torsion (eq. 44–50): ``θ = log(R_j R_j0ᵀ R_i0 R_iᵀ)``, ``U_m = ½ K_m |θ|²``,
  ``τ_i = K_m θ = −τ_j``; ``F_j = −F_i``.

`binder_forces` applies the law to a range of bonds of one *colour*: bonds of a colour share no
particle (`dem.state.color_bonds`), so the ranges of a colour can run in parallel and each
particle still receives its bond loads in the same order, whatever the number of threads.

Breakage (off unless ``[breakage]`` sets a limit): a bond whose axial strain exceeds the
``tension`` limit, or ``compression`` in compression, whose shear ``1 − s`` (either end)
exceeds ``shear``, or whose ``|θ|`` exceeds ``bending`` is broken: its criterion's code
(`BROKEN_TENSION` …) is stored in the binder's state and its stored energy is booked to the
first particle's ``broken_energy``, so that the energy budget still closes. The step in which it
breaks kicked with its load in the first half only, so the booking adds that half-step's work,
``(h/2)(F_i·(v_i − v_j) + τ_i·Ω_i + τ_j·Ω_j)`` at the half-step velocities: the budget then
closes to the integrator's order instead of losing O(h) per broken bond.
"""

import functools
from collections import namedtuple

import numpy as np
from numba import njit

from ..cell import deforming, deforms, image_velocity, minimum_image
from ..rotations import log_scale_one, quat_conjugate_one, quat_multiply_one, unit_quat_rotate_one
from ..schema import Key, non_negative
from .contract import BOND, Interaction, localize_bonds

INTACT, BROKEN_TENSION, BROKEN_COMPRESSION, BROKEN_SHEAR, BROKEN_BENDING = 0, 1, 2, 3, 4
BREAK_CRITERIA = ("tension", "compression", "shear", "bending")

BinderParams = namedtuple("BinderParams", "i j k_axial k_shear k_bending rest_length rest_dir_i rest_dir_j "
                          "rest_relative color_start limits breakable")
#: ``broken (m,)``: 0 intact, else the `BREAK_CRITERIA` number + 1; ``broken_energy (n,)``;
#: ``cell_work (n,)``: the work the bonds did against a deforming cell's moving images (`dem.cell`,
#: the budget's ``cell`` column; no rows where the cell does not deform), booked to each bond's first body.
BinderState = namedtuple("BinderState", "broken broken_energy cell_work")

KEYS = {
    "breakage": {
        "tension": Key("float", 0.0, "a bond breaks at this axial strain r/r0 − 1 in tension (0: never)", "",
                       non_negative),
        "compression": Key("float", 0.0, "… at this axial strain 1 − r/r0 in compression (0: never)", "",
                           non_negative),
        "shear": Key("float", 0.0, "… at this shear 1 − s at either end (0: never)", "", non_negative),
        "bending": Key("float", 0.0, "… at this relative rotation angle |θ| (0: never)", "rad", non_negative),
    },
}


@njit(inline="always")
def _separation(b, position, p, cell):
    """``(i, j, dx, dy, dz, r)`` of bond ``b``: its ends and ``d = x_i − x_j`` (the nearest
    image's across the periodic faces of ``cell``, `dem.cell`), ``r = |d|``."""
    i = p.i[b]
    j = p.j[b]
    dx, dy, dz = minimum_image(position[i, 0] - position[j, 0], position[i, 1] - position[j, 1],
                               position[i, 2] - position[j, 2], cell)
    return i, j, dx, dy, dz, np.sqrt(dx * dx + dy * dy + dz * dz)


@njit(inline="always")
def _axial(k_axial, inverse_r0, strain, n):
    """The axial force ``F_i = −K_a (r/r0 − 1)/r0 n`` (the same bits in `binder_forces` and
    `binder_axial_fast`)."""
    f_axial = -k_axial * strain * inverse_r0
    return f_axial * n[0], f_axial * n[1], f_axial * n[2]


@njit(inline="always")
def _add_fast(fast, i, j, f):
    """``fast[i] += f``, ``fast[j] −= f``."""
    for c in range(3):
        fast[i, c] += f[c]
        fast[j, c] -= f[c]


@njit(inline="always")
def bond_ends(b, position, orientation, p, cell):
    """What every bond law measures of bond ``b`` (``p.i``, ``p.j``, ``p.rest_dir_i``,
    ``p.rest_dir_j``, ``p.rest_relative``): ``(i, j, d, r, a_i, a_j, q, sign, |q_v|, scale)`` with
    ``d = x_i − x_j``, ``r = |d|``, ``a_i = R_i R_i0ᵀ n0``, ``a_j = R_j R_j0ᵀ n0``, ``q`` the
    quaternion of the relative rotation ``R_j R_j0ᵀ R_i0 R_iᵀ`` and ``θ = scale · q_v`` its
    rotation vector (``|θ| ≤ π``; ``sign`` that of ``q_0``)."""
    i, j, dx, dy, dz, r = _separation(b, position, p, cell)
    q_i = (orientation[i, 0], orientation[i, 1], orientation[i, 2], orientation[i, 3])
    q_j = (orientation[j, 0], orientation[j, 1], orientation[j, 2], orientation[j, 3])
    a_i = unit_quat_rotate_one(q_i, (p.rest_dir_i[b, 0], p.rest_dir_i[b, 1], p.rest_dir_i[b, 2]))
    a_j = unit_quat_rotate_one(q_j, (p.rest_dir_j[b, 0], p.rest_dir_j[b, 1], p.rest_dir_j[b, 2]))
    relative = quat_multiply_one(quat_multiply_one(q_j, (p.rest_relative[b, 0], p.rest_relative[b, 1],
                                                         p.rest_relative[b, 2], p.rest_relative[b, 3])),
                                 quat_conjugate_one(q_i))
    sign = 1.0 if relative[0] >= 0.0 else -1.0
    s = np.sqrt(relative[1] * relative[1] + relative[2] * relative[2] + relative[3] * relative[3])
    scale = sign * log_scale_one(s, sign * relative[0])  # θ = scale · (q1, q2, q3)
    return i, j, (dx, dy, dz), r, a_i, a_j, relative, sign, s, scale


@njit(inline="always")
def _deformation(b, position, orientation, p, cell):
    """Measures of bond ``b``: ``(i, j, n, 1/r, 1/r0, r/r0 − 1, a_i, a_j, 1 − s_i, 1 − s_j, p, scale,
    |θ|)`` with ``p`` the quaternion of the relative rotation and ``θ = scale · p_v``. Written out
    in scalars: it is the innermost loop of every bonded simulation."""
    i, j, d, r, a_i, a_j, relative, _, s, scale = bond_ends(b, position, orientation, p, cell)
    inverse_r = 1.0 / r
    n = (d[0] * inverse_r, d[1] * inverse_r, d[2] * inverse_r)
    inverse_r0 = 1.0 / p.rest_length[b]
    strain = r * inverse_r0 - 1.0
    c_i = 1.0 - (a_i[0] * n[0] + a_i[1] * n[1] + a_i[2] * n[2])  # 1 − s_i
    c_j = 1.0 - (a_j[0] * n[0] + a_j[1] * n[1] + a_j[2] * n[2])
    return i, j, n, inverse_r, inverse_r0, strain, a_i, a_j, c_i, c_j, relative, scale, abs(scale) * s


@njit(inline="always")
def _break_code(strain, shear, angle, limits):
    """The criterion a bond's deformation violates (`BROKEN_*`), or `INTACT`."""
    if strain > limits[0]:
        return BROKEN_TENSION
    if -strain > limits[1]:
        return BROKEN_COMPRESSION
    if shear > limits[2]:
        return BROKEN_SHEAR
    if angle > limits[3]:
        return BROKEN_BENDING
    return INTACT


@njit(inline="always")
def _bond_force(k_axial, k_shear, n, inverse_r, inverse_r0, strain, a_i, a_j, c_i, c_j):
    """``F_i = −F_j`` of a bond of stiffnesses ``k_axial``, ``k_shear`` (measures of `_deformation`)."""
    nx, ny, nz = n
    ax, ay, az = _axial(k_axial, inverse_r0, strain, n)
    s_i = 1.0 - c_i
    s_j = 1.0 - c_j
    k_r = k_shear * inverse_r
    return (ax + k_r * (c_i * (a_i[0] - s_i * nx) + c_j * (a_j[0] - s_j * nx)),
            ay + k_r * (c_i * (a_i[1] - s_i * ny) + c_j * (a_j[1] - s_j * ny)),
            az + k_r * (c_i * (a_i[2] - s_i * nz) + c_j * (a_j[2] - s_j * nz)))


@njit(cache=True, _nrt=False)
def binder_forces(lo, hi, h, st, bodies, p, own, fast):
    """Add the loads of the intact bonds ``lo ≤ b < hi`` (one colour); break those past the
    limits, booking their energy and half-step work (see the module's docstring). With contact
    sub-stepping (``fast`` has rows, no breakage) also add their axial force into ``fast``, as
    `binder_axial_fast` does."""
    position, orientation, force, moment, cell = st.position, st.orientation, st.force, st.moment, st.cell
    broken, k_axial, k_shear, k_bending = own.broken, p.k_axial, p.k_shear, p.k_bending
    substepped = fast.shape[0] > 0 and not p.breakable
    driven = deforms(cell)
    for b in range(lo, hi):
        if broken[b] != INTACT:
            continue
        i, j, n, inverse_r, inverse_r0, strain, a_i, a_j, c_i, c_j, q, scale, angle = \
            _deformation(b, position, orientation, p, cell)
        nx, ny, nz = n
        f0, f1, f2 = _bond_force(k_axial[b], k_shear[b], n, inverse_r, inverse_r0, strain, a_i, a_j, c_i, c_j)
        image = (0.0, 0.0, 0.0)
        if driven:  # the bond acts across a moving face: its image's velocity, and the cell's work
            r = 1.0 / inverse_r
            image = image_velocity(i, j, nx * r, ny * r, nz * r, position, cell)
            own.cell_work[i] -= h * (f0 * image[0] + f1 * image[1] + f2 * image[2])
        kc_i = k_shear[b] * c_i
        kc_j = k_shear[b] * c_j
        k_m = k_bending[b] * scale
        ti0 = kc_i * (a_i[1] * nz - a_i[2] * ny) + k_m * q[1]
        ti1 = kc_i * (a_i[2] * nx - a_i[0] * nz) + k_m * q[2]
        ti2 = kc_i * (a_i[0] * ny - a_i[1] * nx) + k_m * q[3]
        tj0 = kc_j * (a_j[1] * nz - a_j[2] * ny) - k_m * q[1]
        tj1 = kc_j * (a_j[2] * nx - a_j[0] * nz) - k_m * q[2]
        tj2 = kc_j * (a_j[0] * ny - a_j[1] * nx) - k_m * q[3]
        if p.breakable:
            code = _break_code(strain, max(c_i, c_j), angle, p.limits)
            if code != INTACT:
                broken[b] = code
                v, w = st.velocity, st.angular_velocity
                work = (f0 * (v[i, 0] - v[j, 0] - image[0]) + f1 * (v[i, 1] - v[j, 1] - image[1])
                        + f2 * (v[i, 2] - v[j, 2] - image[2])
                        + ti0 * w[i, 0] + ti1 * w[i, 1] + ti2 * w[i, 2] + tj0 * w[j, 0] + tj1 * w[j, 1] + tj2 * w[j, 2])
                u = _bond_energy(b, p, strain, c_i, c_j, angle)
                own.broken_energy[i] += u[0] + u[1] + u[2] + 0.5 * h * work
                continue
        force[i, 0] += f0
        force[i, 1] += f1
        force[i, 2] += f2
        force[j, 0] -= f0
        force[j, 1] -= f1
        force[j, 2] -= f2
        if substepped:
            _add_fast(fast, i, j, _axial(k_axial[b], inverse_r0, strain, n))
        moment[i, 0] += ti0
        moment[i, 1] += ti1
        moment[i, 2] += ti2
        moment[j, 0] += tj0
        moment[j, 1] += tj1
        moment[j, 2] += tj2


@njit(cache=True, _nrt=False)
def binder_axial_fast(lo, hi, st, bodies, p, own, fast):
    """Add the axial force ``F_i = −K_a (r/r0 − 1)/r0 n = −F_j`` of the intact bonds ``lo ≤ b < hi``
    (one colour) into ``fast``: the binder's part of the fast force of contact sub-stepping
    (`dem.integrators.respa`; a central force of the centres alone). None with breakage: a bond
    that breaks at the step's force evaluation must leave the slow force ``F − f`` whole, so
    its axial force stays on the step."""
    if p.breakable:
        return
    position, broken, k_axial, rest_length, cell = st.position, own.broken, p.k_axial, p.rest_length, st.cell
    for b in range(lo, hi):
        if broken[b] != INTACT:
            continue
        i, j, dx, dy, dz, r = _separation(b, position, p, cell)
        inverse_r = 1.0 / r
        inverse_r0 = 1.0 / rest_length[b]
        _add_fast(fast, i, j, _axial(k_axial[b], inverse_r0, r * inverse_r0 - 1.0,
                                     (dx * inverse_r, dy * inverse_r, dz * inverse_r)))


@njit(inline="always")
def _bond_energy(b, p, strain, c_i, c_j, angle):
    """``(U_a, U_s, U_m)`` of bond ``b``."""
    return (0.5 * p.k_axial[b] * strain * strain, 0.5 * p.k_shear[b] * (c_i * c_i + c_j * c_j),
            0.5 * p.k_bending[b] * angle * angle)


@njit(cache=True)
def binder_energy(st, bodies, contacts, p, own):
    """``(axial, shear, bending, broken, cell)``: the energies of the intact bonds, the energy booked
    to broken ones and the work done against a deforming cell."""
    axial = 0.0
    shear = 0.0
    bending = 0.0
    for b in range(p.i.shape[0]):
        if own.broken[b] != INTACT:
            continue
        _, _, _, _, _, strain, _, _, c_i, c_j, _, _, angle = _deformation(b, st.position, st.orientation, p, st.cell)
        u = _bond_energy(b, p, strain, c_i, c_j, angle)
        axial += u[0]
        shear += u[1]
        bending += u[2]
    return axial, shear, bending, np.sum(own.broken_energy), np.sum(own.cell_work)


@njit(cache=True)
def _measures_kernel(position, orientation, p, out, cell):
    for b in range(p.i.shape[0]):
        _, _, n, inverse_r, inverse_r0, strain, a_i, a_j, c_i, c_j, _, _, angle = \
            _deformation(b, position, orientation, p, cell)
        out[b, 0] = strain
        out[b, 1] = max(c_i, c_j)
        out[b, 2] = angle
        out[b, 3] = p.k_axial[b] * strain * inverse_r0
        f = _bond_force(p.k_axial[b], p.k_shear[b], n, inverse_r, inverse_r0, strain, a_i, a_j, c_i, c_j)
        for k in range(3):
            out[b, 4 + k] = f[k]


def bond_measures(model, state):
    """Per-bond ``axial_strain``, ``shear``, ``bending_angle`` (rad), ``axial_force`` (positive in
    tension), ``force`` ``(m, 3)`` (the bond's force on its first body ``i``; 0 once broken) and
    ``broken`` (0 intact, else the `BREAK_CRITERIA` number + 1) of the three-spring
    bonds (their block of ``model.bonds``); ``{}`` when the model has none
    (`dem.interactions.bonds.bond_measures` gathers every law's)."""
    params = model.interactions.get("binder")
    if params is None:
        return {}
    table = np.zeros((len(params.i), 7))
    _measures_kernel(state.position, state.orientation, params, table, state.cell)
    out = dict(zip(("axial_strain", "shear", "bending_angle", "axial_force"), table[:, :4].T.copy()))
    out["broken"] = state.interactions["binder"].broken.copy()
    out["force"] = np.where(out["broken"][:, None] == INTACT, table[:, 4:], 0.0)
    return out


def setup(model):
    """The seed-001 bonds of ``model.bonds`` (its block of law ``"three_spring"``, views)."""
    b = model.bonds
    block = b.block("three_spring")
    if block.start == block.stop:
        return None
    limits = np.array([limit if limit > 0 else np.inf for limit in
                       (model.sections["breakage"][name] for name in BREAK_CRITERIA)])
    return BinderParams(b.i[block], b.j[block], b.k_axial[block], b.k_shear[block], b.k_bending[block],
                        b.rest_length[block], b.rest_dir_i[block], b.rest_dir_j[block], b.rest_relative[block],
                        b.color_start("three_spring"), limits, bool(np.isfinite(limits).any()))


def initial_state(model, params):
    return BinderState(np.zeros(len(params.i), np.int8), np.zeros(model.n_bodies),
                       np.zeros(model.n_bodies if deforming(model.sections["cell"]) else 0))


def pair_inverse_inertia(model, p):
    """``(1/m_i + 1/m_j, 1/J_i + 1/J_j)`` per bond of ``p`` (``i``, ``j``): 0 for pinned masses
    and clamped inertias; ``J`` the largest principal inverse moment."""
    inverse_mass = np.where(model.pinned, 0.0, 1.0 / model.mass)
    inverse_inertia = np.where(model.clamped[:, None], 0.0, 1.0 / model.inertia).max(axis=1)
    return inverse_mass[p.i] + inverse_mass[p.j], inverse_inertia[p.i] + inverse_inertia[p.j]


def stiffest(p, oscillators):
    """``[(2/ω, name, body)]`` of the bond with the largest ``ω²`` for each ``(name, ω² per
    bond)`` of ``oscillators`` (`dem.stability`)."""
    out = []
    for name, omega2 in oscillators:
        k = int(np.argmax(omega2))
        if omega2[k] > 0:
            out.append((2.0 / np.sqrt(omega2[k]), name, int(p.i[k])))
    return out


def broken_count(interaction, code):
    """Log column: the number of bonds of ``interaction`` broken so far with ``code``."""
    return lambda model, state: int(np.count_nonzero(state.interactions[interaction].broken == code))


def critical_step(model, state, p):
    """The stiffest bond's axial spring ``K_a/r0²`` between its two masses and bending spring
    ``K_m`` between its two inertias (the shear law is quartic in the shear angle, ``1 − s ≈ γ²/2``,
    and adds no linear stiffness)."""
    masses, inertias = pair_inverse_inertia(model, p)
    return stiffest(p, (("binder axial", p.k_axial / p.rest_length ** 2 * masses),
                        ("binder bending", p.k_bending * inertias)))


def extra_columns(model, p):
    """With breakage on: the number of bonds broken so far by each criterion."""
    if not p.breakable:
        return {}
    return {f"broken_{name}": broken_count("binder", code) for code, name in enumerate(BREAK_CRITERIA, start=1)}


BINDER = Interaction(
    name="binder", doc=__doc__, kind=BOND, columns=("axial", "shear", "bending", "broken", "cell"), internal=True,
    keys=KEYS, setup=setup, state=initial_state, forces=binder_forces, energy=binder_energy, fast=binder_axial_fast,
    critical_step=critical_step, extra_columns=extra_columns, bond_state=("broken",), bond_law="three_spring",
    localize=functools.partial(localize_bonds, per_bond=("k_axial", "k_shear", "k_bending", "rest_length", "rest_dir_i",
                                                        "rest_dir_j", "rest_relative")),
)
