"""Rotation algebra: rescaled Rodrigues parameters (RRP), quaternions, matrices.

Conventions (docs/theory.md §1, seed 001 eqs. 3–5):

* ``R`` maps body-frame vectors to the inertial frame.
* RRP vector ``α = 2 tan(|θ|/2) θ/|θ|`` for the rotation vector ``θ``; ``α = 2 q_v / q_0`` for
  the unit quaternion ``q = (q_0, q_v)`` (scalar first).
* ``R(α) = I + 4/(4+|α|²) [S(α) + S(α)²/2]`` (the Cayley map, no trigonometry).
* ``α1 ⊕ α2 = 4/(4 − α1·α2) [α1 + α2 − α1×α2/2]`` with ``R(α1 ⊕ α2) = R(α2) R(α1)``:
  ``α1`` first, then ``α2``.

Orientations are *stored* as unit quaternions, which have no singularity at ``|θ| = π``; an RRP
increment ``Δα`` is applied as ``q⁺ ∝ (1, Δα/2) ⊗ q`` (the homogeneous form of ``α ⊕ Δα``).

The ``*_one`` functions are numba kernels on one body (3-vectors, 4-quaternions, 3×3 matrices)
that the integrators and interactions call (``quat_rotate_one(q, v)`` is ``quat_rotate``'s
arithmetic on one body; the ``_*`` ones serve this module only). The functions without the suffix
take arrays of shape ``(..., 3)``, ``(..., 4)`` or ``(..., 3, 3)`` and loop over the leading axes
in compiled code.
"""

import numpy as np
from numba import njit

# ---------------------------------------------------------------------------------------------
# single-body kernels: arguments are 3-/4-sequences (arrays or tuples); vectors and quaternions
# are returned as tuples so that the hot loops allocate nothing.
# ---------------------------------------------------------------------------------------------


@njit(inline="always")
def dot_one(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(inline="always")
def cross_one(a, b):
    """``a × b`` for 3-vectors."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True)
def _rrp_matrix(alpha):
    """``R(α)`` of docs/theory.md §1 (seed 001 eq. 4), a 3×3 rotation matrix, written out with
    ``S(α)² = ααᵀ − |α|² I``."""
    a0, a1, a2 = alpha[0], alpha[1], alpha[2]
    squared = a0 * a0 + a1 * a1 + a2 * a2
    c = 4.0 / (4.0 + squared)
    h = 0.5 * c
    return np.array((
        (1.0 + h * (a0 * a0 - squared), h * a0 * a1 - c * a2, h * a0 * a2 + c * a1),
        (h * a1 * a0 + c * a2, 1.0 + h * (a1 * a1 - squared), h * a1 * a2 - c * a0),
        (h * a2 * a0 - c * a1, h * a2 * a1 + c * a0, 1.0 + h * (a2 * a2 - squared)),
    ))


@njit(cache=True)
def _rrp_compose(alpha1, alpha2):
    """``α1 ⊕ α2`` (seed 001 eq. 5): rotation ``α1`` first, then ``α2``."""
    scale = 4.0 / (4.0 - dot_one(alpha1, alpha2))
    c = cross_one(alpha1, alpha2)
    return (
        scale * (alpha1[0] + alpha2[0] - 0.5 * c[0]),
        scale * (alpha1[1] + alpha2[1] - 0.5 * c[1]),
        scale * (alpha1[2] + alpha2[2] - 0.5 * c[2]),
    )


@njit(inline="always")
def quat_multiply_one(p, q):
    """Hamilton product ``p ⊗ q``; ``R(p ⊗ q) = R(p) R(q)``."""
    return (
        p[0] * q[0] - p[1] * q[1] - p[2] * q[2] - p[3] * q[3],
        p[0] * q[1] + p[1] * q[0] + p[2] * q[3] - p[3] * q[2],
        p[0] * q[2] - p[1] * q[3] + p[2] * q[0] + p[3] * q[1],
        p[0] * q[3] + p[1] * q[2] - p[2] * q[1] + p[3] * q[0],
    )


@njit(inline="always")
def quat_conjugate_one(q):
    """Inverse of a unit quaternion."""
    return (q[0], -q[1], -q[2], -q[3])


@njit(inline="always")
def quat_normalize_one(q):
    norm = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return (q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm)


@njit(inline="always")
def _rotate_scaled(q, v, scale):
    """``v + w t + u × t`` with ``t = scale (u × v)``: ``R(q) v`` for ``scale = 2/|q|²``."""
    t = cross_one((q[1], q[2], q[3]), v)
    t = (scale * t[0], scale * t[1], scale * t[2])
    c = cross_one((q[1], q[2], q[3]), t)
    return (v[0] + q[0] * t[0] + c[0], v[1] + q[0] * t[1] + c[1], v[2] + q[0] * t[2] + c[2])


@njit(inline="always")
def quat_rotate_one(q, v):
    """``R(q) v`` for a unit quaternion ``q`` and a 3-vector ``v``; divides by ``|q|²`` so that a
    quaternion off unit length by round-off still rotates without stretching."""
    return _rotate_scaled(q, v, 2.0 / (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]))


@njit(inline="always")
def unit_quat_rotate_one(q, v):
    """``R(q) v`` assuming ``|q| = 1`` exactly (no renormalising division: for hot loops whose
    quaternions were just normalised)."""
    return _rotate_scaled(q, v, 2.0)


@njit(inline="always")
def quat_rotate_inverse_one(q, v):
    """``R(q)ᵀ v``."""
    return quat_rotate_one(quat_conjugate_one(q), v)


@njit(cache=True)
def quat_matrix_one(q):
    """Rotation matrix of a unit quaternion (scalar first)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    return np.array(
        (
            (1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)),
            (2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)),
            (2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)),
        )
    )


@njit(cache=True)
def matrix_quat_one(m):
    """Unit quaternion (``q_0 ≥ 0``) of a rotation matrix, Shepperd's branch choice."""
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace >= max(m[0, 0], m[1, 1], m[2, 2]):
        s = 2.0 * np.sqrt(1.0 + trace)
        q = (0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s)
    elif m[0, 0] >= m[1, 1] and m[0, 0] >= m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = ((m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s)
    elif m[1, 1] >= m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = ((m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s)
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = ((m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s)
    if q[0] < 0.0:
        q = (-q[0], -q[1], -q[2], -q[3])
    return quat_normalize_one(q)


@njit(inline="always")
def quat_from_rrp_one(alpha):
    """Unit quaternion ``∝ (1, α/2)``."""
    return quat_normalize_one((1.0, 0.5 * alpha[0], 0.5 * alpha[1], 0.5 * alpha[2]))


@njit(cache=True)
def _rrp_from_quat(q):
    """``α = 2 q_v / q_0`` (undefined at ``|θ| = π``, where ``q_0 = 0``)."""
    return (2.0 * q[1] / q[0], 2.0 * q[2] / q[0], 2.0 * q[3] / q[0])


@njit(cache=True)
def quat_from_rotvec_one(theta):
    """Unit quaternion of the rotation vector ``θ``."""
    angle = np.sqrt(dot_one(theta, theta))
    # sin(angle/2)/angle without cancellation at small angles
    scale = 0.5 - angle * angle / 48.0 if angle < 1e-4 else np.sin(0.5 * angle) / angle
    return (np.cos(0.5 * angle), scale * theta[0], scale * theta[1], scale * theta[2])


@njit(inline="always")
def log_scale_one(s, w):
    """``2 atan2(s, w)/s`` for a unit quaternion with vector norm ``s`` and scalar part
    ``w ≥ 0``: the factor from its vector part to its rotation vector (its limit ``2/w`` below
    ``s = 1e-8``, where the next term, ``s²/3w²``, is under round-off)."""
    if s < 1e-8:
        return 2.0 / w
    return 2.0 * np.arctan2(s, w) / s


@njit(cache=True)
def _rotvec_from_quat(q):
    """Rotation vector ``θ`` of a unit quaternion, ``|θ| ≤ π`` (the shorter of ``±q``)."""
    sign = 1.0 if q[0] >= 0.0 else -1.0
    scale = sign * log_scale_one(np.sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]), sign * q[0])
    return (scale * q[1], scale * q[2], scale * q[3])


@njit(cache=True)
def _rrp_from_rotvec(theta):
    """``α = 2 tan(|θ|/2) θ/|θ|`` (seed 001 eq. 3)."""
    angle = np.sqrt(dot_one(theta, theta))
    scale = 1.0 + angle * angle / 12.0 if angle < 1e-8 else 2.0 * np.tan(0.5 * angle) / angle
    return (scale * theta[0], scale * theta[1], scale * theta[2])


@njit(cache=True)
def _rotvec_from_rrp(alpha):
    """``θ = 2 atan(|α|/2) α/|α|``."""
    norm = np.sqrt(dot_one(alpha, alpha))
    scale = 1.0 - norm * norm / 12.0 if norm < 1e-8 else 2.0 * np.arctan(0.5 * norm) / norm
    return (scale * alpha[0], scale * alpha[1], scale * alpha[2])


@njit(inline="always")
def quat_apply_increment_one(q, dalpha):
    """``q⁺ ∝ (1, Δα/2) ⊗ q``: the spatial increment ``R⁺ = R(Δα) R`` (docs/theory.md §1)."""
    return quat_normalize_one(quat_multiply_one((1.0, 0.5 * dalpha[0], 0.5 * dalpha[1], 0.5 * dalpha[2]), q))


@njit(cache=True)
def _relative_rotvec(q_i, q_j):
    """Rotation vector of ``R_j R_iᵀ``, ``|θ| ≤ π``."""
    return _rotvec_from_quat(quat_multiply_one(q_j, quat_conjugate_one(q_i)))


# ---------------------------------------------------------------------------------------------
# batch kernels (n bodies) and the public, numpy-facing functions. One cached loop per pair of
# input/output shapes, selecting the single-body kernel by an op code (a jitted function passed
# as an argument would defeat numba's on-disk cache).
# ---------------------------------------------------------------------------------------------


@njit(cache=True)
def _map_vector(op, values, width):
    """Rows of ``values (n, 3|4)`` to rows of width ``width``: op 0 rrp←rotvec, 1 rotvec←rrp,
    2 quat←rrp, 3 quat←rotvec, 4 rrp←quat, 5 rotvec←quat."""
    out = np.empty((values.shape[0], width))
    for k in range(values.shape[0]):
        v = values[k]
        if op == 0:
            r = _rrp_from_rotvec(v)
        elif op == 1:
            r = _rotvec_from_rrp(v)
        elif op == 4:
            r = _rrp_from_quat(v)
        elif op == 5:
            r = _rotvec_from_quat(v)
        else:
            q = quat_from_rrp_one(v) if op == 2 else quat_from_rotvec_one(v)
            for c in range(4):
                out[k, c] = q[c]
            continue
        for c in range(3):
            out[k, c] = r[c]
    return out


@njit(cache=True)
def _map_pair(op, first, second, width):
    """Rows of two arrays to rows of width ``width``: op 0 ``α1 ⊕ α2``, 1 ``p ⊗ q``, 2 relative
    rotation vector of ``R_j R_iᵀ``."""
    out = np.empty((first.shape[0], width))
    for k in range(first.shape[0]):
        if op == 1:
            q = quat_multiply_one(first[k], second[k])
            for c in range(4):
                out[k, c] = q[c]
            continue
        r = _rrp_compose(first[k], second[k]) if op == 0 else _relative_rotvec(first[k], second[k])
        for c in range(3):
            out[k, c] = r[c]
    return out


@njit(cache=True)
def _map_matrix(op, values):
    """op 0: ``R(α)`` of rows ``(n, 3)``; op 1: matrices of quaternion rows ``(n, 4)``."""
    out = np.empty((values.shape[0], 3, 3))
    for k in range(values.shape[0]):
        m = _rrp_matrix(values[k]) if op == 0 else quat_matrix_one(values[k])
        for a in range(3):  # (element by element: an array assignment compiles a shape check)
            for b in range(3):
                out[k, a, b] = m[a, b]
    return out


@njit(cache=True)
def _map_matrix_quat(values):
    out = np.empty((values.shape[0], 4))
    for k in range(values.shape[0]):
        q = matrix_quat_one(values[k])
        for c in range(4):
            out[k, c] = q[c]
    return out


def _rows(values, trailing):
    values = np.asarray(values, dtype=np.float64)
    if values.shape[values.ndim - len(trailing):] != trailing:
        raise ValueError(f"expected trailing shape {trailing}, got {values.shape}")
    return values.shape[: values.ndim - len(trailing)], np.ascontiguousarray(values.reshape((-1,) + trailing))


def _vector_function(op, trailing, width, doc):
    def apply(values):
        lead, flat = _rows(values, trailing)
        return _map_vector(op, flat, width).reshape(lead + (width,))

    apply.__doc__ = doc
    return apply


def _pair_function(op, trailing, width, doc):
    def apply(first, second):
        first, second = np.broadcast_arrays(np.asarray(first, np.float64), np.asarray(second, np.float64))
        lead, flat1 = _rows(first, trailing)
        _, flat2 = _rows(second, trailing)
        return _map_pair(op, flat1, flat2, width).reshape(lead + (width,))

    apply.__doc__ = doc
    return apply


rrp_from_rotvec = _vector_function(0, (3,), 3, _rrp_from_rotvec.__doc__)
rotvec_from_rrp = _vector_function(1, (3,), 3, _rotvec_from_rrp.__doc__)
quat_from_rrp = _vector_function(2, (3,), 4, quat_from_rrp_one.__doc__)
quat_from_rotvec = _vector_function(3, (3,), 4, quat_from_rotvec_one.__doc__)
rrp_from_quat = _vector_function(4, (4,), 3, _rrp_from_quat.__doc__)
rotvec_from_quat = _vector_function(5, (4,), 3, _rotvec_from_quat.__doc__)
rrp_compose = _pair_function(0, (3,), 3, _rrp_compose.__doc__)
quat_multiply = _pair_function(1, (4,), 4, quat_multiply_one.__doc__)
relative_rotvec = _pair_function(2, (4,), 3, _relative_rotvec.__doc__)


def rrp_matrix(alpha):
    """``R(α)`` of docs/theory.md §1 for RRP vectors ``(..., 3)``."""
    lead, flat = _rows(alpha, (3,))
    return _map_matrix(0, flat).reshape(lead + (3, 3))


def quat_matrix(q):
    """Rotation matrices of unit quaternions ``(..., 4)``."""
    lead, flat = _rows(q, (4,))
    return _map_matrix(1, flat).reshape(lead + (3, 3))


def matrix_quat(matrix):
    """Unit quaternions (``q_0 ≥ 0``) of rotation matrices ``(..., 3, 3)``."""
    lead, flat = _rows(matrix, (3, 3))
    return _map_matrix_quat(flat).reshape(lead + (4,))


@njit(cache=True)
def _rotate_rows(q, v, inverse):
    out = np.empty(v.shape)
    for k in range(v.shape[0]):
        r = quat_rotate_inverse_one(q[k], v[k]) if inverse else quat_rotate_one(q[k], v[k])
        for c in range(3):
            out[k, c] = r[c]
    return out


def quat_rotate(q, v, inverse=False):
    """``R(q) v`` (or ``R(q)ᵀ v``) row by row for ``q (n, 4)`` and ``v (n, 3)``."""
    q = np.ascontiguousarray(np.broadcast_to(np.asarray(q, np.float64), (len(v), 4)))
    return _rotate_rows(q, np.ascontiguousarray(v, dtype=np.float64), inverse)


def quat_conjugate(q):
    """Inverse of unit quaternions ``(..., 4)``."""
    return np.asarray(q, dtype=np.float64) * np.array([1.0, -1.0, -1.0, -1.0])


def rrp_inverse(alpha):
    """Inverse rotation in RRP: ``−α`` (``α ⊕ (−α) = 0``)."""
    return -np.asarray(alpha, dtype=np.float64)


def principal_axes(tensor):
    """``(moments, axes)`` of a symmetric inertia tensor: ``tensor = axes diag(moments) axesᵀ``
    with ``axes`` a rotation whose columns follow the coordinate axes as closely as possible
    (a tensor that is already diagonal keeps its frame and order)."""
    moments, vectors = np.linalg.eigh(tensor)
    order = []
    for axis in range(3):
        ranked = np.argsort(-np.abs(vectors[axis]))
        order.append(next(k for k in ranked if k not in order))
    moments, vectors = moments[order], vectors[:, order]
    vectors *= np.where(np.diag(vectors) < 0, -1.0, 1.0)
    if np.linalg.det(vectors) < 0:
        vectors[:, 2] *= -1
    return moments, vectors
