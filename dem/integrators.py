"""Explicit variational integrators on SE(3)ⁿ (SPEC §2; seed 001 §2).

Each map is built from named stages, one equation each:

=========  =========================================================================  =======
``rrp2``   half kick, drift, ``Δα = h Ω_½`` (= ``hΩ + h²τ/2J``), forces, half kick   eq. (25)
``rrp``    half kick, drift, ``Δα = 2h w/(1+√(1−h²|w|²))``, ``w = Ω_½``, forces,    eq. (23)
           half kick
``rrp1``   full kick, drift with the new velocity, ``Δα = h Ω⁺``, forces              eq. (27)
``lgvi``   general inertia ``J = diag(J1, J2, J3)``: ``Π = Jω + (h/2)M``; Newton for   SPEC §2
           ``4/(4+|β|²)(Jβ + β×Jβ/2) = hΠ``; ``R⁺ = R R(β)``; forces;
           ``Jω⁺ = R(β)ᵀΠ + (h/2)M⁺`` (translation as ``rrp2``)
=========  =========================================================================  =======

``rrp2``, ``rrp`` and ``rrp1`` need spherical bodies (scalar ``J``); ``lgvi`` takes any, and
for ``J1 = J2 = J3`` solves its equation in closed form (eq. 16), so it then equals ``rrp``.

The kicks ``v ← v + (h/2) F/m``, ``Ω ← Ω + (h/2) τ/J`` before and after the force evaluation
are the velocity-Verlet form of ``v⁺ = v + h(F + F⁺)/2m``, ``Ω⁺ = Ω + h(τ + τ⁺)/2J``; the drift
``x ← x + h v_½`` is ``x⁺ = x + h v + h²F/2m``. Orientations are unit quaternions updated as
``R⁺ = R(Δα) R`` (SPEC §1). Pinned bodies have zero inverse mass and only rotate.

The state always carries the forces and moments of its configuration, so each step costs one
force evaluation. `_advance_kernel` runs many steps in compiled code between two output events.
Every stage is a loop over bodies that touches only its own body, written over an index range:
the kernel runs it in one call (small systems: no threading overhead) or in parallel over
fixed-size chunks (large ones), with the same result either way. (The range functions called
inside ``prange`` must not be ``inline="always"``: numba then loses their writes through the
named-tuple fields; the per-body helpers are inlined into them instead.)
"""

import numpy as np
from numba import njit, prange

from .interactions import CHUNK, _forces_kernel
from .rotations import (
    _cross, _quat_apply_increment, _quat_from_rrp, _quat_multiply, _quat_normalize, _quat_rotate, _quat_rotate_inverse,
)

RRP2, RRP, RRP1, LGVI = 0, 1, 2, 3
#: scene name -> (code, needs spherical inertia, order of accuracy)
INTEGRATORS = {"rrp2": (RRP2, True, 2), "rrp": (RRP, True, 2), "rrp1": (RRP1, True, 1), "lgvi": (LGVI, False, 2)}

OK, RRP_LIMIT, NOT_FINITE, NEWTON_FAILED = 0, 1, 2, 3
NEWTON_ITERATIONS = 30


@njit(inline="always")
def _kick(i, h, st, md):
    """``v ← v + h F/m``, ``Ω ← Ω + h τ/J`` (``h`` a full or half step; spherical ``J``)."""
    a = h * md.inverse_mass[i]
    b = h * md.inverse_inertia[i, 0]
    for c in range(3):
        st.velocity[i, c] += a * st.force[i, c]
        st.angular_velocity[i, c] += b * st.moment[i, c]


@njit(inline="always")
def _kick_translation(i, h, st, md):
    """``v ← v + h F/m``."""
    a = h * md.inverse_mass[i]
    for c in range(3):
        st.velocity[i, c] += a * st.force[i, c]


@njit(inline="always")
def _drift(i, h, st):
    """``x ← x + h v``."""
    for c in range(3):
        st.position[i, c] += h * st.velocity[i, c]


@njit(inline="always")
def _rotate_linear(i, h, st):
    """``Δα = h Ω`` (eq. 25 with ``Ω = Ω_½``; eq. 27 with ``Ω = Ω⁺``), ``R ← R(Δα) R``."""
    w = st.angular_velocity[i]
    q = _quat_apply_increment(st.orientation[i], (h * w[0], h * w[1], h * w[2]))
    for c in range(4):
        st.orientation[i, c] = q[c]


@njit(inline="always")
def _rotate_exact(i, h, st):
    """``Δα = 2h w/(1 + √(1 − h²|w|²))`` with ``w = Ω_½ = Ω + hτ/2J`` (eq. 16/23). Returns
    False if ``h²|w|² ≥ 1`` (an increment of π/2 or more: the quadratic (15) has no real root)."""
    w = st.angular_velocity[i]
    c = h * h * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if not c < 1.0:
        return False
    scale = 2.0 * h / (1.0 + np.sqrt(1.0 - c))
    q = _quat_apply_increment(st.orientation[i], (scale * w[0], scale * w[1], scale * w[2]))
    for k in range(4):
        st.orientation[i, k] = q[k]
    return True


@njit(cache=True)
def _solve3(a, b):
    """``a⁻¹ b`` for a 3×3 matrix (Cramer's rule)."""
    x = np.empty(3)
    det = (a[0, 0] * (a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1]) - a[0, 1] * (a[1, 0] * a[2, 2] - a[1, 2] * a[2, 0])
           + a[0, 2] * (a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]))
    for k in range(3):
        m = a.copy()
        m[0, k] = b[0]
        m[1, k] = b[1]
        m[2, k] = b[2]
        x[k] = (m[0, 0] * (m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1]) - m[0, 1] * (m[1, 0] * m[2, 2] - m[1, 2] * m[2, 0])
                + m[0, 2] * (m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0])) / det
    return x


@njit(cache=True)
def _lgvi_increment(h, inertia, momentum):
    """Body-frame increment ``β`` solving ``4/(4+|β|²)(Jβ + β×Jβ/2) = hΠ`` (SPEC §2) by Newton
    from ``β = h J⁻¹Π``, or NaN when Newton does not converge (no solution: too large a step)."""
    j = inertia
    target = h * momentum
    beta = target / j
    tolerance = 1e-15 * (np.abs(target).max() + 1e-300)
    jacobian = np.empty((3, 3))
    for _ in range(NEWTON_ITERATIONS):
        jb = j * beta
        bxjb = np.asarray(_cross(beta, jb))
        b2 = beta[0] * beta[0] + beta[1] * beta[1] + beta[2] * beta[2]
        c = 4.0 / (4.0 + b2)
        g = jb + 0.5 * bxjb
        residual = c * g - target
        if np.abs(residual).max() <= tolerance:
            return beta
        # d(c g)/dβ = c (J + (S(β)J − S(Jβ))/2) − (c²/2) g βᵀ
        for k in range(3):
            e = np.zeros(3)
            e[k] = 1.0
            column = j * e + 0.5 * (np.asarray(_cross(beta, j * e)) - np.asarray(_cross(e, jb)))
            for r in range(3):
                jacobian[r, k] = c * column[r] - 0.5 * c * c * g[r] * beta[k]
        beta = beta - _solve3(jacobian, residual)
    return np.full(3, np.nan)


@njit(inline="always")
def _isotropic(md, i):
    return md.inertia[i, 0] == md.inertia[i, 1] and md.inertia[i, 1] == md.inertia[i, 2]


@njit(inline="always")
def _rotate_lgvi(i, h, st, md, angular_momentum):
    """Half kick of the spatial angular momentum ``L_½ = L + (h/2)τ`` (so ``Π = Rᵀ L_½ = Jω +
    (h/2)M``), solve for ``β``, ``R ← R R(β)``. ``angular_momentum`` holds each anisotropic
    body's spatial ``L = R J ω``, the integrated quantity, so that it is conserved to summation
    round-off. For ``J1 = J2 = J3`` the equation has the closed form (16), applied exactly as
    ``rrp`` does. Returns False if the update has no solution."""
    if md.inverse_inertia[i, 0] == 0.0:
        return True
    if _isotropic(md, i):
        b = 0.5 * h * md.inverse_inertia[i, 0]
        for c in range(3):
            st.angular_velocity[i, c] += b * st.moment[i, c]
        return _rotate_exact(i, h, st)
    for c in range(3):
        angular_momentum[i, c] += 0.5 * h * st.moment[i, c]
    q = st.orientation[i]
    beta = _lgvi_increment(h, md.inertia[i], np.asarray(_quat_rotate_inverse(q, angular_momentum[i])))
    if not np.isfinite(beta[0]):
        return False
    q_next = _quat_normalize(_quat_multiply(q, _quat_from_rrp(beta)))
    for c in range(4):
        st.orientation[i, c] = q_next[c]
    return True


@njit(inline="always")
def _kick_lgvi(i, h, st, md, angular_momentum):
    """``L⁺ = L_½ + (h/2)τ⁺`` (that is ``Jω⁺ = R(β)ᵀΠ + (h/2)M⁺``), ``Ω⁺ = R⁺ J⁻¹ R⁺ᵀ L⁺``;
    isotropic bodies: ``Ω ← Ω + (h/2)τ/J``."""
    if md.inverse_inertia[i, 0] == 0.0:
        return
    if _isotropic(md, i):
        b = 0.5 * h * md.inverse_inertia[i, 0]
        for c in range(3):
            st.angular_velocity[i, c] += b * st.moment[i, c]
        return
    for c in range(3):
        angular_momentum[i, c] += 0.5 * h * st.moment[i, c]
    _set_angular_velocity(i, st, md, angular_momentum)


@njit(inline="always")
def _set_angular_velocity(i, st, md, angular_momentum):
    """``Ω = R J⁻¹ Rᵀ L`` for body ``i``."""
    q = st.orientation[i]
    momentum = _quat_rotate_inverse(q, angular_momentum[i])
    omega = (momentum[0] * md.inverse_inertia[i, 0], momentum[1] * md.inverse_inertia[i, 1],
             momentum[2] * md.inverse_inertia[i, 2])
    spatial = _quat_rotate(q, omega)
    for c in range(3):
        st.angular_velocity[i, c] = spatial[c]


@njit(cache=True)
def _angular_momentum_kernel(st, md, angular_momentum):
    """``L = R J Rᵀ Ω`` of every body (the starting value of `_rotate_lgvi`'s ``L``)."""
    for i in range(st.position.shape[0]):
        q = st.orientation[i]
        omega = _quat_rotate_inverse(q, st.angular_velocity[i])
        spatial = _quat_rotate(q, (md.inertia[i, 0] * omega[0], md.inertia[i, 1] * omega[1],
                                   md.inertia[i, 2] * omega[2]))
        for c in range(3):
            angular_momentum[i, c] = spatial[c]


@njit(cache=True)
def _before_forces(lo, hi, scheme, h, st, md, angular_momentum):
    """The stages of ``scheme`` before the force evaluation, for bodies ``lo ≤ i < hi``. Returns
    the first body whose rotation update has no solution, or −1."""
    for i in range(lo, hi):
        if scheme == RRP1:
            _kick(i, h, st, md)
            _drift(i, h, st)
            _rotate_linear(i, h, st)
        elif scheme == LGVI:
            _kick_translation(i, 0.5 * h, st, md)
            _drift(i, h, st)
            if not _rotate_lgvi(i, h, st, md, angular_momentum):
                return i
        else:
            _kick(i, 0.5 * h, st, md)
            _drift(i, h, st)
            if scheme == RRP:
                if not _rotate_exact(i, h, st):
                    return i
            else:
                _rotate_linear(i, h, st)
    return -1


@njit(cache=True)
def _after_forces(lo, hi, scheme, h, st, md, angular_momentum):
    """The closing kicks of ``scheme`` for bodies ``lo ≤ i < hi``."""
    for i in range(lo, hi):
        if scheme == LGVI:
            _kick_translation(i, 0.5 * h, st, md)
            _kick_lgvi(i, h, st, md, angular_momentum)
        elif scheme != RRP1:
            _kick(i, 0.5 * h, st, md)


@njit(cache=True)
def _first_not_finite(st):
    for i in range(st.position.shape[0]):
        for c in range(3):
            if not (np.isfinite(st.position[i, c]) and np.isfinite(st.velocity[i, c])
                    and np.isfinite(st.angular_velocity[i, c])):
                return i
    return -1


@njit(cache=True, parallel=True)
def _advance_kernel(n_steps, scheme, h, parallel, st, md, angular_momentum, reference_position, start, index,
                    cell_start, cell_particles, counters):
    """Advance ``n_steps`` steps of ``scheme``. Returns ``(status, body, steps_done, index)``
    (``index``: the neighbour rows, possibly grown); on a non-OK status the state is the one
    where the problem was found. ``angular_momentum (n, 3)``: the spatial ``L`` that ``lgvi``
    integrates (see `_rotate_lgvi`)."""
    n = st.position.shape[0]
    n_chunks = (n + CHUNK - 1) // CHUNK
    failed = np.empty(n_chunks, np.int64)  # filled below; np.full would be a thread launch
    for k in range(n_steps):
        if parallel:
            for chunk in prange(n_chunks):
                failed[chunk] = _before_forces(chunk * CHUNK, min(n, (chunk + 1) * CHUNK), scheme, h, st, md,
                                               angular_momentum)
        else:
            failed[0] = _before_forces(0, n, scheme, h, st, md, angular_momentum)
        for chunk in range(n_chunks if parallel else 1):
            if failed[chunk] >= 0:
                return (RRP_LIMIT if scheme == RRP else NEWTON_FAILED), failed[chunk], k, index
        index = _forces_kernel(h, parallel, st, md, reference_position, start, index, cell_start, cell_particles,
                               counters)
        if parallel:
            for chunk in prange(n_chunks):
                _after_forces(chunk * CHUNK, min(n, (chunk + 1) * CHUNK), scheme, h, st, md, angular_momentum)
        else:
            _after_forces(0, n, scheme, h, st, md, angular_momentum)
    body = _first_not_finite(st)
    if body >= 0:
        return NOT_FINITE, body, n_steps, index
    return OK, -1, n_steps, index
