"""Particle–binder–particle bonds (SPEC §3; seed 001 eqs. 44–55): axial, shear, bending+torsion,
and optional breakage.

Each law is a small `@njit` function of one bond. `_binder_range` applies them to a range of
bonds of one *colour*: bonds of a colour share no particle (`dem.state.color_bonds`), so the
ranges of a colour can run in parallel and each particle still receives its bond loads in the
same order, whatever the number of threads. Energies are summed only when asked for
(`_binder_energy`), so the stepping loop never reduces across threads.

Breakage (off unless limits are set): a bond whose axial strain exceeds ``limits[0]`` in
tension or ``limits[1]`` in compression, whose shear ``1 − s`` (either end) exceeds
``limits[2]``, or whose bending/torsion angle ``|θ|`` exceeds ``limits[3]`` is broken: its code
(`BROKEN_TENSION` …) is stored in ``broken`` and its stored energy is booked to the first
particle's ``broken_energy``, so that the energy budget still closes. The step in which it
breaks kicked with its load in the first half only, so the booking adds that half-step's work,
``(h/2)(F_i·(v_i − v_j) + τ_i·Ω_i + τ_j·Ω_j)`` at the half-step velocities: the budget then
closes to the integrator's order instead of losing O(h) per broken bond.
"""

import numpy as np
from numba import njit

from ..rotations import _log_scale, _quat_conjugate, _quat_multiply, _unit_quat_rotate

INTACT, BROKEN_TENSION, BROKEN_COMPRESSION, BROKEN_SHEAR, BROKEN_BENDING = 0, 1, 2, 3, 4
BREAK_CRITERIA = ("tension", "compression", "shear", "bending")


FORCES, ENERGIES, MEASURES = 0, 1, 2


@njit(cache=True)
def _binder_range(mode, lo, hi, h, position, velocity, orientation, angular_velocity, bond_i, bond_j, k_axial,
                  k_shear, k_bending, rest_length, rest_dir_i, rest_dir_j, rest_relative, broken, limits, breakable,
                  force, moment, broken_energy, out):
    """The binder law (SPEC §3) over bonds ``lo ≤ b < hi``. With ``d = x_i − x_j``, ``r = |d|``,
    ``n = d/r``:

    * axial (eq. 51–52): ``U_a = ½ K_a (r/r0 − 1)²``, ``F_i = −K_a (r/r0 − 1)/r0 n``;
    * shear (eq. 53–55, objective per-end form): ``a_i = R_i R_i0ᵀ n0``, ``s_i = a_i·n``,
      ``U_s = ½ K_s [(1−s_i)² + (1−s_j)²]``, ``F_i = K_s[(1−s_i)(a_i − s_i n) + (1−s_j)(a_j − s_j n)]/r``,
      ``τ_i = K_s(1−s_i) a_i×n``, ``τ_j = K_s(1−s_j) a_j×n``;
    * bending + torsion (eq. 44–50): ``θ = log(R_j R_j0ᵀ R_i0 R_iᵀ)``, ``U_m = ½ K_m |θ|²``,
      ``τ_i = K_m θ = −τ_j``; ``F_j = −F_i``.

    ``mode`` says what to do with them: `FORCES` adds the loads of intact bonds (one colour: no
    shared particles) and breaks bonds past ``limits``; `ENERGIES` sums ``U_a, U_s, U_m`` of intact
    bonds into ``out[0:3]``; `MEASURES` writes ``r/r0 − 1``, ``max(1 − s_i, 1 − s_j)``, ``|θ|`` and
    the axial load ``K_a (r/r0 − 1)/r0`` of every bond into the rows of ``out (m, 4)``. The law is
    written out in scalars: it is the innermost loop of every bonded simulation.
    """
    for b in range(lo, hi):
        if mode != MEASURES and broken[b] != INTACT:
            continue
        i = bond_i[b]
        j = bond_j[b]
        dx = position[i, 0] - position[j, 0]
        dy = position[i, 1] - position[j, 1]
        dz = position[i, 2] - position[j, 2]
        r = np.sqrt(dx * dx + dy * dy + dz * dz)
        inverse_r = 1.0 / r
        nx, ny, nz = dx * inverse_r, dy * inverse_r, dz * inverse_r
        inverse_r0 = 1.0 / rest_length[b]
        strain = r * inverse_r0 - 1.0
        f_axial = -k_axial[b] * strain * inverse_r0
        q_i = (orientation[i, 0], orientation[i, 1], orientation[i, 2], orientation[i, 3])
        q_j = (orientation[j, 0], orientation[j, 1], orientation[j, 2], orientation[j, 3])
        a_i = _unit_quat_rotate(q_i, (rest_dir_i[b, 0], rest_dir_i[b, 1], rest_dir_i[b, 2]))
        a_j = _unit_quat_rotate(q_j, (rest_dir_j[b, 0], rest_dir_j[b, 1], rest_dir_j[b, 2]))
        c_i = 1.0 - (a_i[0] * nx + a_i[1] * ny + a_i[2] * nz)  # 1 − s_i
        c_j = 1.0 - (a_j[0] * nx + a_j[1] * ny + a_j[2] * nz)
        p = _quat_multiply(_quat_multiply(q_j, (rest_relative[b, 0], rest_relative[b, 1], rest_relative[b, 2],
                                                rest_relative[b, 3])), _quat_conjugate(q_i))
        sign = 1.0 if p[0] >= 0.0 else -1.0
        s = np.sqrt(p[1] * p[1] + p[2] * p[2] + p[3] * p[3])
        scale = sign * _log_scale(s, sign * p[0])  # θ = scale · (p1, p2, p3)
        angle = abs(scale) * s
        if mode == MEASURES:
            out[b, 0] = strain
            out[b, 1] = max(c_i, c_j)
            out[b, 2] = angle
            out[b, 3] = -f_axial
            continue
        u_a = 0.5 * k_axial[b] * strain * strain
        u_s = 0.5 * k_shear[b] * (c_i * c_i + c_j * c_j)
        u_m = 0.5 * k_bending[b] * angle * angle
        if mode == ENERGIES:
            out[0, 0] += u_a
            out[0, 1] += u_s
            out[0, 2] += u_m
            continue
        s_i = 1.0 - c_i
        s_j = 1.0 - c_j
        k_r = k_shear[b] * inverse_r
        f0 = f_axial * nx + k_r * (c_i * (a_i[0] - s_i * nx) + c_j * (a_j[0] - s_j * nx))
        f1 = f_axial * ny + k_r * (c_i * (a_i[1] - s_i * ny) + c_j * (a_j[1] - s_j * ny))
        f2 = f_axial * nz + k_r * (c_i * (a_i[2] - s_i * nz) + c_j * (a_j[2] - s_j * nz))
        kc_i = k_shear[b] * c_i
        kc_j = k_shear[b] * c_j
        k_m = k_bending[b] * scale
        ti0 = kc_i * (a_i[1] * nz - a_i[2] * ny) + k_m * p[1]
        ti1 = kc_i * (a_i[2] * nx - a_i[0] * nz) + k_m * p[2]
        ti2 = kc_i * (a_i[0] * ny - a_i[1] * nx) + k_m * p[3]
        tj0 = kc_j * (a_j[1] * nz - a_j[2] * ny) - k_m * p[1]
        tj1 = kc_j * (a_j[2] * nx - a_j[0] * nz) - k_m * p[2]
        tj2 = kc_j * (a_j[0] * ny - a_j[1] * nx) - k_m * p[3]
        if breakable:
            code = _break_code(strain, max(c_i, c_j), angle, limits)
            if code != INTACT:
                broken[b] = code
                work = (f0 * (velocity[i, 0] - velocity[j, 0]) + f1 * (velocity[i, 1] - velocity[j, 1])
                        + f2 * (velocity[i, 2] - velocity[j, 2])
                        + ti0 * angular_velocity[i, 0] + ti1 * angular_velocity[i, 1] + ti2 * angular_velocity[i, 2]
                        + tj0 * angular_velocity[j, 0] + tj1 * angular_velocity[j, 1] + tj2 * angular_velocity[j, 2])
                broken_energy[i] += u_a + u_s + u_m + 0.5 * h * work
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


def bond_measures(model, state):
    """Per-bond ``axial_strain``, ``shear``, ``bending_angle`` (rad), ``axial_force`` (positive in
    tension) and ``broken`` (0 intact, else the `BREAK_CRITERIA` number + 1) of ``model.bonds``."""
    b = model.bonds
    table = np.zeros((len(b), 4))
    _binder_range(MEASURES, 0, len(b), 0.0, state.position, state.velocity, state.orientation,
                  state.angular_velocity, b.i, b.j, b.k_axial, b.k_shear, b.k_bending, b.rest_length, b.rest_dir_i,
                  b.rest_dir_j, b.rest_relative, b.broken, model.break_limits, False, state.force, state.moment,
                  state.broken_energy, table)
    out = dict(zip(("axial_strain", "shear", "bending_angle", "axial_force"), table.T.copy()))
    out["broken"] = b.broken.copy()
    return out
