"""Per-body stages the schemes are written with (docs/theory.md §1–2): kicks, drift, rotation updates.

Each stage acts on one body ``i`` and is inlined into the schemes' range functions. ``st`` are
the state arrays, ``bodies`` the constant body arrays (`dem.state`). Orientations are unit
quaternions updated as ``R⁺ = R(Δα) R`` (docs/theory.md §1); pinned bodies have zero inverse mass and
clamped ones zero inverse inertia, so the same stages hold them in place.
"""

import numpy as np
from numba import njit

from ..rotations import (
    cross_one, quat_apply_increment_one, quat_from_rrp_one, quat_multiply_one, quat_normalize_one,
    quat_rotate_inverse_one, quat_rotate_one,
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
    q = quat_apply_increment_one(st.orientation[i], (h * w[0], h * w[1], h * w[2]))
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
    q = quat_apply_increment_one(st.orientation[i], (scale * w[0], scale * w[1], scale * w[2]))
    for k in range(4):
        st.orientation[i, k] = q[k]
    return True


@njit(inline="always")
def _det3(a):
    """Determinant of the 3×3 matrix ``a`` (9-tuple, row by row)."""
    return (a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6])
            + a[2] * (a[3] * a[7] - a[4] * a[6]))


@njit(inline="always")
def _solve3(a, b):
    """``a⁻¹ b`` for a 3×3 matrix ``a`` (9-tuple, row by row; Cramer's rule); NaN when ``a`` is
    singular."""
    det = _det3(a)
    if det == 0.0:  # (Newton diverged: c = 4/(4 + |β|²) underflowed)
        return np.nan, np.nan, np.nan
    x0 = _det3((b[0], a[1], a[2], b[1], a[4], a[5], b[2], a[7], a[8])) / det
    x1 = _det3((a[0], b[0], a[2], a[3], b[1], a[5], a[6], b[2], a[8])) / det
    x2 = _det3((a[0], a[1], b[0], a[3], a[4], b[1], a[6], a[7], b[2])) / det
    return x0, x1, x2


@njit(inline="always")
def _column(e, beta, j, jb):
    """Column of ``J + (S(β)J − S(Jβ))/2`` along the unit vector ``e``."""
    je = (j[0] * e[0], j[1] * e[1], j[2] * e[2])
    u, v = cross_one(beta, je), cross_one(e, jb)
    return je[0] + 0.5 * (u[0] - v[0]), je[1] + 0.5 * (u[1] - v[1]), je[2] + 0.5 * (u[2] - v[2])


@njit(cache=True)
def lgvi_increment(h, j, momentum):
    """Body-frame increment ``β`` solving ``4/(4+|β|²)(Jβ + β×Jβ/2) = hΠ`` (docs/theory.md §2) by Newton
    from ``β = h J⁻¹Π``, or NaN when Newton does not converge (no solution: too large a step).
    ``j`` the principal inertia, ``momentum`` Π: 3-tuples (scalars only: the scheme's stages run
    without numba's reference counting, `dem.interactions.contract`)."""
    target = (h * momentum[0], h * momentum[1], h * momentum[2])
    beta = (target[0] / j[0], target[1] / j[1], target[2] / j[2])
    tolerance = 1e-15 * (max(abs(target[0]), abs(target[1]), abs(target[2])) + 1e-300)
    for _ in range(NEWTON_ITERATIONS):
        jb = (j[0] * beta[0], j[1] * beta[1], j[2] * beta[2])
        bxjb = cross_one(beta, jb)
        b2 = beta[0] * beta[0] + beta[1] * beta[1] + beta[2] * beta[2]
        c = 4.0 / (4.0 + b2)
        g = (jb[0] + 0.5 * bxjb[0], jb[1] + 0.5 * bxjb[1], jb[2] + 0.5 * bxjb[2])
        residual = (c * g[0] - target[0], c * g[1] - target[1], c * g[2] - target[2])
        if max(abs(residual[0]), abs(residual[1]), abs(residual[2])) <= tolerance:
            return beta
        # d(c g)/dβ = c (J + (S(β)J − S(Jβ))/2) − (c²/2) g βᵀ
        columns = (_column((1.0, 0.0, 0.0), beta, j, jb), _column((0.0, 1.0, 0.0), beta, j, jb),
                   _column((0.0, 0.0, 1.0), beta, j, jb))
        jacobian = (c * columns[0][0] - 0.5 * c * c * g[0] * beta[0], c * columns[1][0] - 0.5 * c * c * g[0] * beta[1],
                    c * columns[2][0] - 0.5 * c * c * g[0] * beta[2],
                    c * columns[0][1] - 0.5 * c * c * g[1] * beta[0], c * columns[1][1] - 0.5 * c * c * g[1] * beta[1],
                    c * columns[2][1] - 0.5 * c * c * g[1] * beta[2],
                    c * columns[0][2] - 0.5 * c * c * g[2] * beta[0], c * columns[1][2] - 0.5 * c * c * g[2] * beta[1],
                    c * columns[2][2] - 0.5 * c * c * g[2] * beta[2])
        step = _solve3(jacobian, residual)
        beta = (beta[0] - step[0], beta[1] - step[1], beta[2] - step[2])
    return (np.nan, np.nan, np.nan)


@njit(inline="always")
def rotate_body_frame(i, h, st, bodies, angular_momentum):
    """Solve for the body-frame increment ``β`` with ``Π = Rᵀ L_½`` and turn ``R ← R R(β)``
    (docs/theory.md §2). Returns False if Newton finds no solution."""
    q = st.orientation[i]
    inertia = bodies.inertia[i]
    beta = lgvi_increment(h, (inertia[0], inertia[1], inertia[2]), quat_rotate_inverse_one(q, angular_momentum[i]))
    if not np.isfinite(beta[0]):
        return False
    q_next = quat_normalize_one(quat_multiply_one(q, quat_from_rrp_one(beta)))
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
    momentum = quat_rotate_inverse_one(q, angular_momentum[i])
    omega = (momentum[0] * bodies.inverse_inertia[i, 0], momentum[1] * bodies.inverse_inertia[i, 1],
             momentum[2] * bodies.inverse_inertia[i, 2])
    spatial = quat_rotate_one(q, omega)
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
        omega = quat_rotate_inverse_one(q, st.angular_velocity[i])
        spatial = quat_rotate_one(q, (bodies.inertia[i, 0] * omega[0], bodies.inertia[i, 1] * omega[1],
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
