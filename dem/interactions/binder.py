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

from ..rotations import _cross, _dot, _quat_conjugate, _quat_multiply, _quat_rotate, _rotvec_from_quat

INTACT, BROKEN_TENSION, BROKEN_COMPRESSION, BROKEN_SHEAR, BROKEN_BENDING = 0, 1, 2, 3, 4
BREAK_CRITERIA = ("tension", "compression", "shear", "bending")


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
def binder_bending(theta, k_bending):
    """Bending + torsion ``U = ½ K_m |θ|²`` for the relative rotation vector ``θ`` (eq. 44–50).
    Returns ``(U, τ_i)`` with ``τ_j = −τ_i = −K_m θ``."""
    return 0.5 * k_bending * _dot(theta, theta), (k_bending * theta[0], k_bending * theta[1], k_bending * theta[2])


@njit(cache=True)
def _bond_geometry(position, orientation, i, j, rest_dir_i, rest_dir_j, rest_relative):
    """``d = x_i − x_j``, the images ``a_i``, ``a_j`` of the rest direction, and the relative
    rotation vector ``θ = log(R_j R_j0ᵀ R_i0 R_iᵀ)`` of one bond."""
    d = (position[i, 0] - position[j, 0], position[i, 1] - position[j, 1], position[i, 2] - position[j, 2])
    a_i = _quat_rotate(orientation[i], rest_dir_i)
    a_j = _quat_rotate(orientation[j], rest_dir_j)
    theta = _rotvec_from_quat(_quat_multiply(_quat_multiply(orientation[j], rest_relative),
                                             _quat_conjugate(orientation[i])))
    return d, a_i, a_j, theta


@njit(cache=True)
def _break_code(d, a_i, a_j, theta, rest_length, limits):
    """The criterion a bond's deformation violates (`BROKEN_*`), or `INTACT`."""
    r = np.sqrt(_dot(d, d))
    strain = r / rest_length - 1.0
    if strain > limits[0]:
        return BROKEN_TENSION
    if -strain > limits[1]:
        return BROKEN_COMPRESSION
    if max(1.0 - _dot(a_i, d) / r, 1.0 - _dot(a_j, d) / r) > limits[2]:
        return BROKEN_SHEAR
    if np.sqrt(_dot(theta, theta)) > limits[3]:
        return BROKEN_BENDING
    return INTACT


@njit(cache=True)
def _binder_range(lo, hi, h, position, velocity, orientation, angular_velocity, bond_i, bond_j, k_axial, k_shear,
                  k_bending, rest_length, rest_dir_i, rest_dir_j, rest_relative, broken, limits, breakable, force,
                  moment, broken_energy):
    """Add the binder loads of bonds ``lo ≤ b < hi`` (one colour: no shared particles)."""
    for b in range(lo, hi):
        if broken[b] != INTACT:
            continue
        i = bond_i[b]
        j = bond_j[b]
        d, a_i, a_j, theta = _bond_geometry(position, orientation, i, j, rest_dir_i[b], rest_dir_j[b],
                                            rest_relative[b])
        u_a, f_a = binder_axial(d, k_axial[b], rest_length[b])
        u_s, f_s, tau_si, tau_sj = binder_shear(d, a_i, a_j, k_shear[b])
        u_m, tau_m = binder_bending(theta, k_bending[b])
        if breakable:
            code = _break_code(d, a_i, a_j, theta, rest_length[b], limits)
            if code != INTACT:
                broken[b] = code
                work = 0.0
                for c in range(3):
                    work += ((f_a[c] + f_s[c]) * (velocity[i, c] - velocity[j, c])
                             + (tau_si[c] + tau_m[c]) * angular_velocity[i, c]
                             + (tau_sj[c] - tau_m[c]) * angular_velocity[j, c])
                broken_energy[i] += u_a + u_s + u_m + 0.5 * h * work
                continue
        for c in range(3):
            f = f_a[c] + f_s[c]
            force[i, c] += f
            force[j, c] -= f
            moment[i, c] += tau_si[c] + tau_m[c]
            moment[j, c] += tau_sj[c] - tau_m[c]


@njit(cache=True)
def _binder_energy(position, orientation, bond_i, bond_j, k_axial, k_shear, k_bending, rest_length, rest_dir_i,
                   rest_dir_j, rest_relative, broken):
    """``(axial, shear, bending)`` energies summed over intact bonds (serial, fixed order)."""
    axial = shear = bending = 0.0
    for b in range(bond_i.shape[0]):
        if broken[b] != INTACT:
            continue
        d, a_i, a_j, theta = _bond_geometry(position, orientation, bond_i[b], bond_j[b], rest_dir_i[b],
                                            rest_dir_j[b], rest_relative[b])
        axial += binder_axial(d, k_axial[b], rest_length[b])[0]
        shear += binder_shear(d, a_i, a_j, k_shear[b])[0]
        bending += binder_bending(theta, k_bending[b])[0]
    return axial, shear, bending


@njit(cache=True)
def _bond_measures_kernel(position, orientation, bond_i, bond_j, k_axial, rest_length, rest_dir_i, rest_dir_j,
                          rest_relative, axial_strain, shear, bending_angle, axial_force):
    """Per-bond state of deformation for output (SPEC §3, §7), broken bonds included.

    Writes ``axial_strain = r/r0 − 1``, ``shear = max(1 − s_i, 1 − s_j)``, ``bending_angle = |θ|``
    (rotation angle of ``R_j R_j0ᵀ R_i0 R_iᵀ``, radians) and ``axial_force = K_a (r/r0 − 1)/r0``
    (the binder's axial load, positive in tension) into the ``(n_bonds,)`` output arrays.
    """
    for b in range(bond_i.shape[0]):
        d, a_i, a_j, theta = _bond_geometry(position, orientation, bond_i[b], bond_j[b], rest_dir_i[b],
                                            rest_dir_j[b], rest_relative[b])
        r = np.sqrt(_dot(d, d))
        n = (d[0] / r, d[1] / r, d[2] / r)
        _, f_i = binder_axial(d, k_axial[b], rest_length[b])
        axial_strain[b] = r / rest_length[b] - 1.0
        axial_force[b] = -_dot(f_i, n)  # F_i pulls i towards j in tension
        shear[b] = max(1.0 - _dot(a_i, n), 1.0 - _dot(a_j, n))
        bending_angle[b] = np.sqrt(_dot(theta, theta))


def bond_measures(model, state):
    """Per-bond ``axial_strain``, ``shear``, ``bending_angle`` (rad), ``axial_force`` (positive in
    tension) and ``broken`` (0 intact, else the `BREAK_CRITERIA` number + 1) of ``model.bonds``."""
    b = model.bonds
    n = len(b)
    out = {name: np.empty(n) for name in ("axial_strain", "shear", "bending_angle", "axial_force")}
    if n:
        _bond_measures_kernel(state.position, state.orientation, b.i, b.j, b.k_axial, b.rest_length,
                              b.rest_dir_i, b.rest_dir_j, b.rest_relative, out["axial_strain"], out["shear"],
                              out["bending_angle"], out["axial_force"])
    out["broken"] = b.broken.copy()
    return out
