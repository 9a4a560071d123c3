"""Particle–binder–particle bonds (SPEC §3; seed 001 eqs. 44–55): axial, shear, bending+torsion,
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

from collections import namedtuple

import numpy as np
from numba import njit

from ..rotations import _log_scale, _quat_conjugate, _quat_multiply, _unit_quat_rotate
from ..schema import Key, non_negative
from .contract import BOND, Interaction

INTACT, BROKEN_TENSION, BROKEN_COMPRESSION, BROKEN_SHEAR, BROKEN_BENDING = 0, 1, 2, 3, 4
BREAK_CRITERIA = ("tension", "compression", "shear", "bending")

BinderParams = namedtuple("BinderParams", "i j k_axial k_shear k_bending rest_length rest_dir_i rest_dir_j "
                          "rest_relative color_start limits breakable")
#: ``broken (m,)``: 0 intact, else the `BREAK_CRITERIA` number + 1; ``broken_energy (n,)``.
BinderState = namedtuple("BinderState", "broken broken_energy")

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
def _deformation(b, position, orientation, p):
    """Measures of bond ``b``: ``(i, j, n, 1/r, 1/r0, r/r0 − 1, a_i, a_j, 1 − s_i, 1 − s_j, p, scale,
    |θ|)`` with ``p`` the quaternion of the relative rotation and ``θ = scale · p_v``. Written out
    in scalars: it is the innermost loop of every bonded simulation."""
    i = p.i[b]
    j = p.j[b]
    dx = position[i, 0] - position[j, 0]
    dy = position[i, 1] - position[j, 1]
    dz = position[i, 2] - position[j, 2]
    r = np.sqrt(dx * dx + dy * dy + dz * dz)
    inverse_r = 1.0 / r
    n = (dx * inverse_r, dy * inverse_r, dz * inverse_r)
    inverse_r0 = 1.0 / p.rest_length[b]
    strain = r * inverse_r0 - 1.0
    q_i = (orientation[i, 0], orientation[i, 1], orientation[i, 2], orientation[i, 3])
    q_j = (orientation[j, 0], orientation[j, 1], orientation[j, 2], orientation[j, 3])
    a_i = _unit_quat_rotate(q_i, (p.rest_dir_i[b, 0], p.rest_dir_i[b, 1], p.rest_dir_i[b, 2]))
    a_j = _unit_quat_rotate(q_j, (p.rest_dir_j[b, 0], p.rest_dir_j[b, 1], p.rest_dir_j[b, 2]))
    c_i = 1.0 - (a_i[0] * n[0] + a_i[1] * n[1] + a_i[2] * n[2])  # 1 − s_i
    c_j = 1.0 - (a_j[0] * n[0] + a_j[1] * n[1] + a_j[2] * n[2])
    relative = _quat_multiply(_quat_multiply(q_j, (p.rest_relative[b, 0], p.rest_relative[b, 1],
                                                   p.rest_relative[b, 2], p.rest_relative[b, 3])),
                              _quat_conjugate(q_i))
    sign = 1.0 if relative[0] >= 0.0 else -1.0
    s = np.sqrt(relative[1] * relative[1] + relative[2] * relative[2] + relative[3] * relative[3])
    scale = sign * _log_scale(s, sign * relative[0])  # θ = scale · (p1, p2, p3)
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


@njit(cache=True)
def binder_forces(lo, hi, h, st, bodies, p, own):
    """Add the loads of the intact bonds ``lo ≤ b < hi`` (one colour); break those past the
    limits, booking their energy and half-step work (see the module's docstring)."""
    position, orientation, force, moment = st.position, st.orientation, st.force, st.moment
    broken, k_axial, k_shear, k_bending = own.broken, p.k_axial, p.k_shear, p.k_bending
    for b in range(lo, hi):
        if broken[b] != INTACT:
            continue
        i, j, n, inverse_r, inverse_r0, strain, a_i, a_j, c_i, c_j, q, scale, angle = \
            _deformation(b, position, orientation, p)
        nx, ny, nz = n
        f_axial = -k_axial[b] * strain * inverse_r0
        s_i = 1.0 - c_i
        s_j = 1.0 - c_j
        k_r = k_shear[b] * inverse_r
        f0 = f_axial * nx + k_r * (c_i * (a_i[0] - s_i * nx) + c_j * (a_j[0] - s_j * nx))
        f1 = f_axial * ny + k_r * (c_i * (a_i[1] - s_i * ny) + c_j * (a_j[1] - s_j * ny))
        f2 = f_axial * nz + k_r * (c_i * (a_i[2] - s_i * nz) + c_j * (a_j[2] - s_j * nz))
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
                work = (f0 * (v[i, 0] - v[j, 0]) + f1 * (v[i, 1] - v[j, 1]) + f2 * (v[i, 2] - v[j, 2])
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
        moment[i, 0] += ti0
        moment[i, 1] += ti1
        moment[i, 2] += ti2
        moment[j, 0] += tj0
        moment[j, 1] += tj1
        moment[j, 2] += tj2


@njit(inline="always")
def _bond_energy(b, p, strain, c_i, c_j, angle):
    """``(U_a, U_s, U_m)`` of bond ``b``."""
    return (0.5 * p.k_axial[b] * strain * strain, 0.5 * p.k_shear[b] * (c_i * c_i + c_j * c_j),
            0.5 * p.k_bending[b] * angle * angle)


@njit(cache=True)
def binder_energy(st, bodies, contacts, p, own):
    """``(axial, shear, bending, broken)``: the energies of the intact bonds and the energy booked
    to broken ones."""
    axial = 0.0
    shear = 0.0
    bending = 0.0
    for b in range(p.i.shape[0]):
        if own.broken[b] != INTACT:
            continue
        _, _, _, _, _, strain, _, _, c_i, c_j, _, _, angle = _deformation(b, st.position, st.orientation, p)
        u = _bond_energy(b, p, strain, c_i, c_j, angle)
        axial += u[0]
        shear += u[1]
        bending += u[2]
    return axial, shear, bending, np.sum(own.broken_energy)


@njit(cache=True)
def _measures_kernel(position, orientation, p, out):
    for b in range(p.i.shape[0]):
        _, _, _, _, inverse_r0, strain, _, _, c_i, c_j, _, _, angle = _deformation(b, position, orientation, p)
        out[b, 0] = strain
        out[b, 1] = max(c_i, c_j)
        out[b, 2] = angle
        out[b, 3] = p.k_axial[b] * strain * inverse_r0


def bond_measures(model, state):
    """Per-bond ``axial_strain``, ``shear``, ``bending_angle`` (rad), ``axial_force`` (positive in
    tension) and ``broken`` (0 intact, else the `BREAK_CRITERIA` number + 1) of ``model.bonds``."""
    table = np.zeros((len(model.bonds), 4))
    broken = np.zeros(len(model.bonds), np.int8)
    if "binder" in model.interactions:
        _measures_kernel(state.position, state.orientation, model.interactions["binder"], table)
        broken = state.interactions["binder"].broken.copy()
    out = dict(zip(("axial_strain", "shear", "bending_angle", "axial_force"), table.T.copy()))
    out["broken"] = broken
    return out


def setup(model):
    b = model.bonds
    if not len(b):
        return None
    limits = np.array([limit if limit > 0 else np.inf for limit in
                       (model.sections["breakage"][name] for name in BREAK_CRITERIA)])
    return BinderParams(b.i, b.j, b.k_axial, b.k_shear, b.k_bending, b.rest_length, b.rest_dir_i, b.rest_dir_j,
                        b.rest_relative, b.color_start, limits, bool(np.isfinite(limits).any()))


def initial_state(model, params):
    return BinderState(np.zeros(len(params.i), np.int8), np.zeros(model.n_bodies))


def critical_step(model, state, p):
    """The stiffest bond's axial spring ``K_a/r0²`` between its two masses and bending spring
    ``K_m`` between its two inertias (the shear law is quartic in the shear angle, ``1 − s ≈ γ²/2``,
    and adds no linear stiffness)."""
    inverse_mass = np.where(model.pinned, 0.0, 1.0 / model.mass)
    inverse_inertia = np.where(model.clamped[:, None], 0.0, 1.0 / model.inertia).max(axis=1)
    axial = p.k_axial / p.rest_length ** 2 * (inverse_mass[p.i] + inverse_mass[p.j])
    bending = p.k_bending * (inverse_inertia[p.i] + inverse_inertia[p.j])
    out = []
    for name, omega2 in (("binder axial", axial), ("binder bending", bending)):
        k = int(np.argmax(omega2))
        if omega2[k] > 0:
            out.append((2.0 / np.sqrt(omega2[k]), name, int(p.i[k])))
    return out


def extra_columns(model, p):
    """With breakage on: the number of bonds broken so far by each criterion."""
    if not p.breakable:
        return {}
    return {f"broken_{name}": _broken_count(code) for code, name in enumerate(BREAK_CRITERIA, start=1)}


def _broken_count(code):
    return lambda model, state: int(np.count_nonzero(state.interactions["binder"].broken == code))


BINDER = Interaction(
    name="binder", doc=__doc__, kind=BOND, columns=("axial", "shear", "bending", "broken"), internal=True,
    keys=KEYS, setup=setup, state=initial_state, forces=binder_forces, energy=binder_energy,
    critical_step=critical_step, extra_columns=extra_columns,
)
