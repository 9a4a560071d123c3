"""Particle–binder–particle bonds (SPEC §3; seed 001 eqs. 44–55): axial, shear, bending+torsion.

Each law is a small `@njit` function of one bond; `_binder_kernel` sums them over the bond
table, adding forces and spatial moments into the buffers and energies into ``energy``.
"""

import numpy as np
from numba import njit

from ..rotations import _cross, _dot, _quat_conjugate, _quat_multiply, _quat_rotate, _rotvec_from_quat
from ..state import AXIAL, BENDING, SHEAR


@njit(cache=True)
def binder_axial(d, k_axial, rest_length):
    """``U = ½ K_a (r/r0 − 1)²`` (eq. 51–52). Returns ``(U, F_i)`` with ``F_j = −F_i``."""
    r = np.sqrt(_dot(d, d))
    strain = r / rest_length - 1.0
    scale = -k_axial * strain / (rest_length * r)
    return 0.5 * k_axial * strain * strain, (scale * d[0], scale * d[1], scale * d[2])


@njit(cache=True)
def binder_shear(d, a_i, a_j, k_shear):
    """Objective shear ``U = ½ K_s [(1−s_i)² + (1−s_j)²]``, ``s = a·n`` (eq. 53–55, per-end form).

    ``a_i = R_i R_i0ᵀ n0`` and ``a_j`` are the current images of the rest bond direction.
    Returns ``(U, F_i, τ_i, τ_j)``, ``F_j = −F_i``.
    """
    r = np.sqrt(_dot(d, d))
    n = (d[0] / r, d[1] / r, d[2] / r)
    c_i = 1.0 - _dot(a_i, n)
    c_j = 1.0 - _dot(a_j, n)
    s_i = 1.0 - c_i
    s_j = 1.0 - c_j
    f = (
        k_shear * (c_i * (a_i[0] - s_i * n[0]) + c_j * (a_j[0] - s_j * n[0])) / r,
        k_shear * (c_i * (a_i[1] - s_i * n[1]) + c_j * (a_j[1] - s_j * n[1])) / r,
        k_shear * (c_i * (a_i[2] - s_i * n[2]) + c_j * (a_j[2] - s_j * n[2])) / r,
    )
    t_i = _cross(a_i, n)
    t_j = _cross(a_j, n)
    tau_i = (k_shear * c_i * t_i[0], k_shear * c_i * t_i[1], k_shear * c_i * t_i[2])
    tau_j = (k_shear * c_j * t_j[0], k_shear * c_j * t_j[1], k_shear * c_j * t_j[2])
    return 0.5 * k_shear * (c_i * c_i + c_j * c_j), f, tau_i, tau_j


@njit(cache=True)
def binder_bending(q_i, q_j, rest_relative, k_bending):
    """Bending + torsion ``U = ½ K_m |θ|²``, ``θ = log(R_j R_j0ᵀ R_i0 R_iᵀ)`` (eq. 44–50).

    Returns ``(U, τ_i)`` with ``τ_j = −τ_i = −K_m θ``.
    """
    theta = _rotvec_from_quat(_quat_multiply(_quat_multiply(q_j, rest_relative), _quat_conjugate(q_i)))
    return 0.5 * k_bending * _dot(theta, theta), (k_bending * theta[0], k_bending * theta[1], k_bending * theta[2])


@njit(cache=True)
def _binder_kernel(position, orientation, bond_i, bond_j, k_axial, k_shear, k_bending, rest_length,
                   rest_dir_i, rest_dir_j, rest_relative, broken, force, moment, energy):
    """All three binder loads over the bond table; broken bonds are skipped."""
    for b in range(bond_i.shape[0]):
        if broken[b]:
            continue
        i = bond_i[b]
        j = bond_j[b]
        d = (position[i, 0] - position[j, 0], position[i, 1] - position[j, 1], position[i, 2] - position[j, 2])
        u_a, f_a = binder_axial(d, k_axial[b], rest_length[b])
        a_i = _quat_rotate(orientation[i], rest_dir_i[b])
        a_j = _quat_rotate(orientation[j], rest_dir_j[b])
        u_s, f_s, tau_si, tau_sj = binder_shear(d, a_i, a_j, k_shear[b])
        u_m, tau_m = binder_bending(orientation[i], orientation[j], rest_relative[b], k_bending[b])
        energy[AXIAL] += u_a
        energy[SHEAR] += u_s
        energy[BENDING] += u_m
        for c in range(3):
            f = f_a[c] + f_s[c]
            force[i, c] += f
            force[j, c] -= f
            moment[i, c] += tau_si[c] + tau_m[c]
            moment[j, c] += tau_sj[c] - tau_m[c]


@njit(cache=True)
def _bond_measures_kernel(position, orientation, bond_i, bond_j, k_axial, rest_length, rest_dir_i, rest_dir_j,
                          rest_relative, axial_strain, shear, bending_angle, axial_force):
    """Per-bond state of deformation for output (SPEC §3, §7), broken bonds included.

    Writes ``axial_strain = r/r0 − 1``, ``shear = max(1 − s_i, 1 − s_j)``, ``bending_angle = |θ|``
    (rotation angle of ``R_j R_j0ᵀ R_i0 R_iᵀ``, radians) and ``axial_force = K_a (r/r0 − 1)/r0``
    (the binder's axial load, positive in tension) into the ``(n_bonds,)`` output arrays.
    """
    for b in range(bond_i.shape[0]):
        i = bond_i[b]
        j = bond_j[b]
        d = (position[i, 0] - position[j, 0], position[i, 1] - position[j, 1], position[i, 2] - position[j, 2])
        r = np.sqrt(_dot(d, d))
        n = (d[0] / r, d[1] / r, d[2] / r)
        _, f_i = binder_axial(d, k_axial[b], rest_length[b])
        axial_strain[b] = r / rest_length[b] - 1.0
        axial_force[b] = -_dot(f_i, n)  # F_i pulls i towards j in tension
        a_i = _quat_rotate(orientation[i], rest_dir_i[b])
        a_j = _quat_rotate(orientation[j], rest_dir_j[b])
        shear[b] = max(1.0 - _dot(a_i, n), 1.0 - _dot(a_j, n))
        theta = _rotvec_from_quat(_quat_multiply(_quat_multiply(orientation[j], rest_relative[b]),
                                                 _quat_conjugate(orientation[i])))
        bending_angle[b] = np.sqrt(_dot(theta, theta))


def bond_measures(model, state):
    """Per-bond ``axial_strain``, ``shear``, ``bending_angle`` (rad), ``axial_force`` (positive in
    tension) and ``broken`` of ``model.bonds`` at ``state``, as a dict of ``(n_bonds,)`` arrays."""
    b = model.bonds
    n = len(b)
    out = {name: np.empty(n) for name in ("axial_strain", "shear", "bending_angle", "axial_force")}
    if n:
        _bond_measures_kernel(state.position, state.orientation, b.i, b.j, b.k_axial, b.rest_length,
                              b.rest_dir_i, b.rest_dir_j, b.rest_relative, out["axial_strain"], out["shear"],
                              out["bending_angle"], out["axial_force"])
    out["broken"] = np.asarray(b.broken, dtype=np.bool_).copy()
    return out
