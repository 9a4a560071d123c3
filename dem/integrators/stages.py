"""Per-body stages the schemes are written with (SPEC §1–2): kicks, drift, rotation updates.

Each stage acts on one body ``i`` and is inlined into the schemes' range functions. ``st`` are
the state arrays, ``bodies`` the constant body arrays (`dem.state`). Orientations are unit
quaternions updated as ``R⁺ = R(Δα) R`` (SPEC §1); pinned bodies have zero inverse mass and
clamped ones zero inverse inertia, so the same stages hold them in place.
"""

import numpy as np
from numba import njit

from ..rotations import (
    _cross, _quat_apply_increment, _quat_from_rrp, _quat_multiply, _quat_normalize, _quat_rotate, _quat_rotate_inverse,
)

NEWTON_ITERATIONS = 30


@njit(inline="always")
def kick_translation(i, h, st, bodies):
    """``v ← v + h F/m`` (``h`` a full or half step)."""
    a = h * bodies.inverse_mass[i]
    for c in range(3):
        st.velocity[i, c] += a * st.force[i, c]


@njit(inline="always")
def kick_rotation(i, h, st, bodies):
    """``Ω ← Ω + h τ/J`` (spherical ``J``)."""
    b = h * bodies.inverse_inertia[i, 0]
    for c in range(3):
        st.angular_velocity[i, c] += b * st.moment[i, c]


@njit(inline="always")
def kick(i, h, st, bodies):
    """``v ← v + h F/m``, ``Ω ← Ω + h τ/J``."""
    kick_translation(i, h, st, bodies)
    kick_rotation(i, h, st, bodies)


@njit(inline="always")
def drift(i, h, st):
    """``x ← x + h v``."""
    for c in range(3):
        st.position[i, c] += h * st.velocity[i, c]


@njit(inline="always")
def rotate_linear(i, h, st):
    """``Δα = h Ω``, ``R ← R(Δα) R``."""
    w = st.angular_velocity[i]
    q = _quat_apply_increment(st.orientation[i], (h * w[0], h * w[1], h * w[2]))
    for c in range(4):
        st.orientation[i, c] = q[c]


@njit(inline="always")
def rotate_exact(i, h, st):
    """``Δα = 2h w/(1 + √(1 − h²|w|²))`` with ``w = Ω`` (seed 001 eq. 16/23), ``R ← R(Δα) R``.
    Returns False if ``h²|w|² ≥ 1`` (an increment of π/2 or more: the quadratic (15) has no real
    root)."""
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
def lgvi_increment(h, inertia, momentum):
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
def rotate_body_frame(i, h, st, bodies, angular_momentum):
    """Solve for the body-frame increment ``β`` with ``Π = Rᵀ L_½`` and turn ``R ← R R(β)``
    (SPEC §2). Returns False if Newton finds no solution."""
    q = st.orientation[i]
    beta = lgvi_increment(h, bodies.inertia[i], np.asarray(_quat_rotate_inverse(q, angular_momentum[i])))
    if not np.isfinite(beta[0]):
        return False
    q_next = _quat_normalize(_quat_multiply(q, _quat_from_rrp(beta)))
    for c in range(4):
        st.orientation[i, c] = q_next[c]
    return True


@njit(inline="always")
def kick_angular_momentum(i, h, st, angular_momentum):
    """``L ← L + h τ`` (spatial angular momentum)."""
    for c in range(3):
        angular_momentum[i, c] += h * st.moment[i, c]


@njit(inline="always")
def set_angular_velocity(i, st, bodies, angular_momentum):
    """``Ω = R J⁻¹ Rᵀ L`` for body ``i``."""
    q = st.orientation[i]
    momentum = _quat_rotate_inverse(q, angular_momentum[i])
    omega = (momentum[0] * bodies.inverse_inertia[i, 0], momentum[1] * bodies.inverse_inertia[i, 1],
             momentum[2] * bodies.inverse_inertia[i, 2])
    spatial = _quat_rotate(q, omega)
    for c in range(3):
        st.angular_velocity[i, c] = spatial[c]


@njit(inline="always")
def isotropic(bodies, i):
    return bodies.inertia[i, 0] == bodies.inertia[i, 1] and bodies.inertia[i, 1] == bodies.inertia[i, 2]


@njit(cache=True)
def angular_momentum_kernel(st, bodies, angular_momentum):
    """``L = R J Rᵀ Ω`` of every body."""
    for i in range(st.position.shape[0]):
        q = st.orientation[i]
        omega = _quat_rotate_inverse(q, st.angular_velocity[i])
        spatial = _quat_rotate(q, (bodies.inertia[i, 0] * omega[0], bodies.inertia[i, 1] * omega[1],
                                   bodies.inertia[i, 2] * omega[2]))
        for c in range(3):
            angular_momentum[i, c] = spatial[c]


@njit(cache=True)
def first_not_finite(st):
    """The first body with a non-finite position, velocity or angular velocity, or −1."""
    for i in range(st.position.shape[0]):
        for c in range(3):
            if not (np.isfinite(st.position[i, c]) and np.isfinite(st.velocity[i, c])
                    and np.isfinite(st.angular_velocity[i, c])):
                return i
    return -1
