"""Single rigid body on SO(3): the baseline integrators of seed 000 §5 and `dem`'s ``lgvi``.

The body turns about a fixed point with body-frame principal inertia ``J = diag(J1, J2, J3)``
in a potential ``U(Q)``. State: the attitude ``Q`` (body → inertial) and the **body** angular
velocity ``ω`` (seed 000 calls it ``Ω``; here, as in docs/theory.md, ``ω`` is body and ``Ω = Q ω``
spatial). ``M(Q)`` is the body-frame moment of the potential (seed 000's ``τ``), defined by
``M·y = −DU(Q)·Q ŷ``; the spatial moment is ``τ = Q M``. Equations of motion (seed 000 eq. 1)::

    Q̇ = Q ω̂,        J ω̇ = J ω × ω + M(Q)

Energy ``E = ½ ωᵀJω + U(Q)``; spatial angular momentum ``L = Q J ω`` (conserved when ``M = 0``).

Methods (`METHODS`), each a transcription of its equations with the number beside each line:

=============  ==============================================  ====================================
name           map                                             implicit stage (3 unknowns)
=============  ==============================================  ====================================
``ELN``        explicit Lie–Newmark, seed 000 eq. (4)          ``ω_{k+1}`` in (4c)
``TLN``        trapezoidal Lie–Newmark, eq. (6)                ``ω_{k+1}`` in (6a), through ``Q_{k+1}``
``LIEMID[EA]`` Krysl's alternating midpoint Lie, eq. (7);      ``Θ`` in (7a) and (7d)
               seed 002 (``Φ*_{h/2} ∘ Φ_{h/2}``)
``PRK``        partitioned RK Munthe-Kaas, eq. (9)             ``ω_{k+½}`` in (9a)
``MCG``        modified Crouch–Grossman splitting, eq. (10)    ``ω_{k+½}`` in (10a)
``NEW3``       Koziara–Bićanić, eq. (11)                       ``ω_{k+1}`` in (11b)
``VLV``        variational Lie–Verlet (Cayley), eq. (12)       ``ω_{k+½}`` in (12a)
``LGVI``       `dem`'s ``lgvi``, docs/theory.md §2                        ``β`` (body increment)
=============  ==============================================  ====================================

``cay(x) = I + 4/(4+|x|²) (x̂ + x̂²/2)`` is the Cayley map (docs/theory.md §1's ``R(x)``; seed 000's eq. 5
misprints ``|x|²`` as ``|x|``); ``exp(x)`` the exponential (Rodrigues). Attitudes are stored as
unit quaternions (``Q cay(x)`` is ``q ⊗ (1, x/2)``, normalised), so ``QᵀQ = I`` to round-off;
the public functions take and return 3×3 matrices.

Every implicit stage is solved by Newton's method with a finite-difference Jacobian to
``|Δx| ≤ 1e-14 (1 + |x|)``; a stage that does not converge in `MAX_ITERATIONS` raises
`NonConvergenceError` (naming the method and step).

Potentials are a kind and a parameter vector (`Potential`), evaluated by one compiled switch
(`_potential_of_matrix`), so that every kernel is cached on disk: `FREE` (``U = 0``) and
`ortolan_saccon_potential` (seed 000 eq. 3, via `dem.interactions.ortolan_saccon.ortolan_saccon`).
A new potential is a ``(Q, parameters) -> (U, M_body)`` ``@njit`` function plus one branch there.

Example (seed 000 §6, the stress test)::

    from dem.baselines import integrate, ortolan_saccon_potential, rotation_matrix
    J = [2.0, 2.0, 4.0]
    Q0 = rotation_matrix([0.0, 0.7227, 0.0])
    Qm = rotation_matrix([2.5 / 2**0.5, 0.0, 2.5 / 2**0.5])
    run = integrate("VLV", J, ortolan_saccon_potential(0.3, Qm), Q0, [0, 0, 0.625], 0.125, 80_000, 8)
    run.energy - run.energy[0]          # bounded, no drift
"""

from typing import NamedTuple

import numpy as np
from numba import njit, types
from scipy.integrate import solve_ivp

from .interactions.ortolan_saccon import ortolan_saccon
from .rotations import (
    matrix_quat_one,
    quat_from_rotvec_one,
    quat_from_rrp_one,
    quat_matrix_one,
    quat_multiply_one,
    quat_normalize_one,
    quat_rotate_one,
)

__all__ = [
    "FREE", "MAX_ITERATIONS", "METHODS", "TOLERANCE", "NonConvergenceError", "Potential", "Trajectory",
    "angular_momentum", "energy", "integrate", "ortolan_saccon_potential", "reference", "rotation_matrix", "step",
]

#: Method names, in the order of seed 000 §5, then `dem`'s own.
METHODS = ("ELN", "TLN", "LIEMID[EA]", "PRK", "MCG", "NEW3", "VLV", "LGVI")
_ELN, _TLN, _LIEMID, _PRK, _MCG, _NEW3, _VLV, _LGVI = range(len(METHODS))

#: Newton's method for the implicit stages: tolerance on the update, iteration limit.
TOLERANCE = 1e-14
MAX_ITERATIONS = 30
_FD_STEP = 1e-7


class NonConvergenceError(RuntimeError):
    """An implicit stage did not converge (the step is too large for the method)."""


# ---------------------------------------------------------------------------------------------
# potentials: a kind and a parameter vector; `_potential_of_matrix` is the compiled switch
# ---------------------------------------------------------------------------------------------

_FREE_KIND, _ORTOLAN_SACCON_KIND = 0, 1


class Potential(NamedTuple):
    """A potential ``U(Q)`` as ``kind`` (an integer `_potential_of_matrix` knows) and ``parameters``
    (float64 vector). Calling it with a 3×3 rotation gives ``(U, M_body)``."""

    kind: int
    parameters: np.ndarray

    def __call__(self, rotation):
        return _potential_of_matrix(self.kind, np.ascontiguousarray(rotation, dtype=np.float64), self.parameters)


#: No potential: the free rigid body.
FREE = Potential(_FREE_KIND, np.zeros(1))


def ortolan_saccon_potential(alpha, attractor):
    """Seed 000 eq. (3): ``U(Q) = (‖Q − I‖_F − 1)² − α/‖Q − Q_m‖_F`` with the attractor
    ``Q_m`` (3×3 rotation)."""
    attractor = np.asarray(attractor, dtype=np.float64)
    if attractor.shape != (3, 3):
        raise ValueError(f"attractor must be a 3x3 rotation matrix, got shape {attractor.shape}")
    return Potential(_ORTOLAN_SACCON_KIND, np.concatenate(([float(alpha)], attractor.ravel())))


@njit(cache=True)
def _ortolan_saccon_body(rotation, parameters):
    """``(U, M)`` of seed 000 eq. (3), ``M = Qᵀ τ`` the body moment."""
    u, tau = ortolan_saccon(rotation, parameters[0], parameters[1:10].copy().reshape((3, 3)))
    return u, rotation.T @ tau


@njit(cache=True)
def _potential_of_matrix(kind, rotation, parameters):
    """``(U, M_body)`` of potential ``kind`` at the attitude ``rotation`` (3×3, contiguous)."""
    if kind == _ORTOLAN_SACCON_KIND:
        return _ortolan_saccon_body(rotation, parameters)
    return 0.0, np.zeros(3)


@njit(cache=True)
def _potential(kind, q, parameters):
    """``(U, M_body)`` at the attitude of the unit quaternion ``q``."""
    return _potential_of_matrix(kind, quat_matrix_one(q), parameters)


@njit(cache=True, inline='always')
def _moment(kind, q, parameters):
    return _potential(kind, q, parameters)[1]


# ---------------------------------------------------------------------------------------------
# small kernels on 3-vectors (numpy arrays) and quaternions (tuples)
# ---------------------------------------------------------------------------------------------


@njit(cache=True, inline='always')
def _cross(a, b):
    return np.array((a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]))


@njit(cache=True, inline='always')
def _exp_apply(x, v):
    """``exp(x̂) v``."""
    return np.array(quat_rotate_one(quat_from_rotvec_one(x), v))


@njit(cache=True, inline='always')
def _cay_apply(x, v):
    """``cay(x) v``."""
    return np.array(quat_rotate_one(quat_from_rrp_one(x), v))


@njit(cache=True, inline='always')
def _times_exp(q, x):
    """Quaternion of ``Q exp(x̂)``."""
    return quat_normalize_one(quat_multiply_one(q, quat_from_rotvec_one(x)))


@njit(cache=True, inline='always')
def _times_cay(q, x):
    """Quaternion of ``Q cay(x)``."""
    return quat_normalize_one(quat_multiply_one(q, (1.0, 0.5 * x[0], 0.5 * x[1], 0.5 * x[2])))


@njit(cache=True, inline='always')
def _solve3(a, b):
    """``a⁻¹ b`` for a 3×3 matrix (Cramer's rule)."""
    c0 = _cross(a[:, 1], a[:, 2])
    det = a[0, 0] * c0[0] + a[1, 0] * c0[1] + a[2, 0] * c0[2]
    c1 = _cross(a[:, 2], a[:, 0])
    c2 = _cross(a[:, 0], a[:, 1])
    return np.array((c0 @ b, c1 @ b, c2 @ b)) / det


# ---------------------------------------------------------------------------------------------
# implicit stages: the residual r(x) of each stage's equation in its unknown x (3-vector), given
# J, h and a right-hand side c; TLN's also needs the state at step k, `at_k = (q, ω, kind, params)`
# ---------------------------------------------------------------------------------------------

_TLN_STAGE, _ELN_STAGE, _LIEMID_STAGE, _PRK_STAGE, _MCG_STAGE, _NEW3_STAGE, _VLV_STAGE, _LGVI_STAGE = range(-1, 7)


@njit(cache=True)
def _residual(stage, x, J, h, c, at_k):
    """``lhs(x) − c`` of the stage's implicit equation."""
    Jx = J * x
    if stage == _TLN_STAGE:      # (6a) with (6b): (I + (h/2) ω̂) J ω − (h/2) M(Q_k cay(h(ω_k + ω)/2)) = c
        q, w, kind, parameters = at_k
        q_next = _times_cay(q, 0.5 * h * (w + x))
        return Jx + 0.5 * h * _cross(x, Jx) - 0.5 * h * _moment(kind, q_next, parameters) - c
    if stage == _ELN_STAGE:      # (4c)  J ω − (h/2) J ω × ω = J ω_{k+½} + (h/2) M(Q_{k+1})
        return Jx - 0.5 * h * _cross(Jx, x) - c
    if stage == _LIEMID_STAGE:   # (7a), (7d)  J Θ = (h/2) exp(−Θ/2) c
        return Jx - 0.5 * h * _exp_apply(-0.5 * x, c)
    if stage == _PRK_STAGE:      # (9a)  J ω + (h/2) ω × J ω = J ω_k + (h/2) M(Q_k)
        return Jx + 0.5 * h * _cross(x, Jx) - c
    if stage == _MCG_STAGE:      # (10a)  J ω = exp(−(h/2) ω) c
        return Jx - _exp_apply(-0.5 * h * x, c)
    if stage == _NEW3_STAGE:     # (11b)  exp((h/2) ω) J ω = c
        return _exp_apply(0.5 * h * x, Jx) - c
    if stage == _VLV_STAGE:      # (12a)  J ω − (h/2)[J ω × ω − (h/2)(ωᵀJω) ω] = J ω_k + (h/2) M(Q_k)
        return Jx - 0.5 * h * (_cross(Jx, x) - 0.5 * h * (x @ Jx) * x) - c
    # _LGVI_STAGE, docs/theory.md §2:  4/(4+|β|²) (J β + β × J β / 2) = h Π
    return 4.0 / (4.0 + x @ x) * (Jx + 0.5 * _cross(x, Jx)) - h * c


_VECTOR = types.float64[::1]
_AT_K = types.Tuple((types.UniTuple(types.float64, 4), _VECTOR, types.int64, _VECTOR))


# One explicit signature: the stage is a run-time integer, so that the solver is compiled once
# rather than once per (literal) stage constant.
@njit(types.Tuple((_VECTOR, types.boolean))(types.int64, _VECTOR, _VECTOR, types.float64, _VECTOR, _AT_K),
      cache=True)
def _newton(stage, x0, J, h, c, at_k):
    """Newton's method for the stage's ``r(x) = 0`` from ``x0`` (finite-difference Jacobian):
    ``(x, converged)``."""
    x = x0.copy()
    jacobian = np.empty((3, 3))
    for _ in range(MAX_ITERATIONS):
        r = _residual(stage, x, J, h, c, at_k)
        for col in range(3):
            shifted = x.copy()
            dx = _FD_STEP * max(1.0, abs(x[col]))
            shifted[col] += dx
            jacobian[:, col] = (_residual(stage, shifted, J, h, c, at_k) - r) / dx
        update = _solve3(jacobian, r)
        if not np.all(np.isfinite(update)):
            return x, False
        x = x - update
        if np.max(np.abs(update)) <= TOLERANCE * (1.0 + np.max(np.abs(x))):
            return x, True
    return x, False


# ---------------------------------------------------------------------------------------------
# the methods: (q, ω) at step k -> (q, ω) at step k+1 and whether the implicit stages converged;
# q the attitude quaternion, ω the body angular velocity (seed 000's Ω), M the body moment (its τ)
# ---------------------------------------------------------------------------------------------


@njit(cache=True, inline='always')
def _eln_step(q, w, J, h, kind, parameters):
    """Explicit Lie–Newmark, seed 000 eq. (4)."""
    at_k = (q, w, kind, parameters)
    w_half = w + 0.5 * h * (_cross(J * w, w) + _moment(kind, q, parameters)) / J          # (4a)
    q_next = _times_cay(q, h * w_half)                                                     # (4b)
    c = J * w_half + 0.5 * h * _moment(kind, q_next, parameters)
    w_next, ok = _newton(_ELN_STAGE, w_half, J, h, c, at_k)                                # (4c)
    return q_next, w_next, ok


@njit(cache=True, inline='always')
def _tln_step(q, w, J, h, kind, parameters):
    """Trapezoidal Lie–Newmark, seed 000 eq. (6)."""
    at_k = (q, w, kind, parameters)
    c = J * w - 0.5 * h * _cross(w, J * w) + 0.5 * h * _moment(kind, q, parameters)      # (6a) right side
    w_next, ok = _newton(_TLN_STAGE, w, J, h, c, at_k)                                     # (6a)
    q_next = _times_cay(q, 0.5 * h * (w + w_next))                                         # (6b)
    return q_next, w_next, ok


@njit(cache=True, inline='always')
def _liemid_step(q, w, J, h, kind, parameters):
    """Krysl's LIEMID[EA], seed 000 eq. (7): seed 002's ``Φ*_{h/2} ∘ Φ_{h/2}``."""
    at_k = (q, w, kind, parameters)
    p = J * w + 0.5 * h * _moment(kind, q, parameters)
    theta, ok1 = _newton(_LIEMID_STAGE, 0.5 * h * p / J, J, h, p, at_k)                   # (7a)
    q_half = _times_exp(q, theta)                                                          # (7b)
    p_half = _exp_apply(-theta, p)                                                         # (7c)  J ω_{k+½}
    theta, ok2 = _newton(_LIEMID_STAGE, 0.5 * h * p_half / J, J, h, p_half, at_k)         # (7d)
    q_next = _times_exp(q_half, theta)                                                     # (7e)
    w_next = (_exp_apply(-theta, p_half) + 0.5 * h * _moment(kind, q_next, parameters)) / J  # (7f)
    return q_next, w_next, ok1 and ok2


@njit(cache=True, inline='always')
def _cayley_half_step(stage, q, w, J, h, kind, parameters):
    """``ω_{k+½}`` from the implicit ``stage`` with right side ``J ω_k + (h/2) M(Q_k)``, then
    ``Q⁺ = Q cay(h ω_{k+½})``: the first two lines of PRK (9a–b) and VLV (12a–b)."""
    c = J * w + 0.5 * h * _moment(kind, q, parameters)
    w_half, ok = _newton(stage, w, J, h, c, (q, w, kind, parameters))
    return w_half, _times_cay(q, h * w_half), ok


@njit(cache=True, inline='always')
def _prk_step(q, w, J, h, kind, parameters):
    """Partitioned Runge–Kutta Munthe-Kaas (Lobatto IIIA–IIIB), seed 000 eq. (9)."""
    w_half, q_next, ok = _cayley_half_step(_PRK_STAGE, q, w, J, h, kind, parameters)      # (9a), (9b)
    w_next = w_half + 0.5 * h * (_moment(kind, q_next, parameters) - _cross(w_half, J * w_half)) / J  # (9c)
    return q_next, w_next, ok


@njit(cache=True, inline='always')
def _mcg_step(q, w, J, h, kind, parameters):
    """Modified Crouch–Grossman splitting, seed 000 eq. (10)."""
    at_k = (q, w, kind, parameters)
    p = J * w + 0.5 * h * _moment(kind, q, parameters)
    w_half, ok = _newton(_MCG_STAGE, w, J, h, p, at_k)                                     # (10a)
    q_next = _times_exp(q, h * w_half)                                                     # (10b)
    w_next = (_exp_apply(-h * w_half, p) + 0.5 * h * _moment(kind, q_next, parameters)) / J  # (10c)
    return q_next, w_next, ok


@njit(cache=True, inline='always')
def _new3_step(q, w, J, h, kind, parameters):
    """Koziara–Bićanić NEW3, seed 000 eq. (11)."""
    at_k = (q, w, kind, parameters)
    q_half = _times_exp(q, 0.5 * h * w)                                                    # (11a)
    c = _exp_apply(-0.5 * h * w, J * w) + h * _moment(kind, q_half, parameters)
    w_next, ok = _newton(_NEW3_STAGE, w, J, h, c, at_k)                                    # (11b)
    q_next = _times_exp(q_half, 0.5 * h * w_next)                                          # (11c)
    return q_next, w_next, ok


@njit(cache=True, inline='always')
def _vlv_step(q, w, J, h, kind, parameters):
    """Variational Lie–Verlet with the Cayley map, seed 000 eq. (12)."""
    w_half, q_next, ok = _cayley_half_step(_VLV_STAGE, q, w, J, h, kind, parameters)      # (12a), (12b)
    Jw = J * w_half
    w_next = w_half + 0.5 * h * (_cross(Jw, w_half) + 0.5 * h * (w_half @ Jw) * w_half
                                 + _moment(kind, q_next, parameters)) / J                  # (12c)
    return q_next, w_next, ok


@njit(cache=True, inline='always')
def _lgvi_step(q, w, J, h, kind, parameters):
    """`dem`'s ``lgvi`` (docs/theory.md §2) for one body; body increment ``QᵀQ⁺ = cay(β)``."""
    at_k = (q, w, kind, parameters)
    momentum = J * w + 0.5 * h * _moment(kind, q, parameters)                             # Π = Jω + (h/2) M
    beta, ok = _newton(_LGVI_STAGE, h * momentum / J, J, h, momentum, at_k)               # 4/(4+|β|²)(Jβ + β×Jβ/2) = hΠ
    q_next = _times_cay(q, beta)                                                           # R⁺ = R R(β)
    w_next = (_cay_apply(-beta, momentum) + 0.5 * h * _moment(kind, q_next, parameters)) / J  # Jω⁺ = R(β)ᵀΠ + (h/2) M⁺
    return q_next, w_next, ok


@njit(cache=True, inline='always')
def _step(method, q, w, J, h, kind, parameters):
    """One step of ``method`` (in `METHODS` order: Lie–Newmark, midpoint, RK–Munthe-Kaas and
    splitting methods, then the variational ones)."""
    if method <= _LIEMID:
        if method == _ELN:
            return _eln_step(q, w, J, h, kind, parameters)
        if method == _TLN:
            return _tln_step(q, w, J, h, kind, parameters)
        return _liemid_step(q, w, J, h, kind, parameters)
    if method <= _NEW3:
        if method == _PRK:
            return _prk_step(q, w, J, h, kind, parameters)
        return _mcg_step(q, w, J, h, kind, parameters) if method == _MCG else _new3_step(q, w, J, h, kind, parameters)
    if method == _VLV:
        return _vlv_step(q, w, J, h, kind, parameters)
    return _lgvi_step(q, w, J, h, kind, parameters)


@njit(cache=True, inline='always')
def _energy(q, w, J, kind, parameters):
    return 0.5 * (w @ (J * w)) + _potential(kind, q, parameters)[0]


@njit(cache=True)
def _run_kernel(method, q0, w0, J, h, n_steps, sample_every, kind, parameters, out_q, out_w, out_energy):
    """Advance ``n_steps``, storing every ``sample_every``-th state (and the initial one) into
    ``out_*``. Returns the number of steps completed (less than ``n_steps`` if a stage failed)."""
    q = (q0[0], q0[1], q0[2], q0[3])
    w = w0.copy()
    out_q[0] = q0
    out_w[0] = w0
    out_energy[0] = _energy(q, w, J, kind, parameters)
    for k in range(n_steps):
        q, w, ok = _step(method, q, w, J, h, kind, parameters)
        if not ok:
            return k
        if (k + 1) % sample_every == 0:
            i = (k + 1) // sample_every
            for c in range(4):
                out_q[i, c] = q[c]
            out_w[i] = w
            out_energy[i] = _energy(q, w, J, kind, parameters)
    return n_steps


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------


class Trajectory(NamedTuple):
    """Samples of a run: ``t (K,)``, ``rotation (K, 3, 3)``, body ``angular_velocity (K, 3)``,
    total ``energy (K,)``."""

    t: np.ndarray
    rotation: np.ndarray
    angular_velocity: np.ndarray
    energy: np.ndarray


def rotation_matrix(rotation_vector):
    """``exp(θ̂)``: the 3×3 rotation of the rotation vector ``θ``."""
    return quat_matrix_one(quat_from_rotvec_one(np.asarray(rotation_vector, dtype=np.float64)))


@njit(cache=True)
def _matrices(quaternions):
    """``(K, 4)`` unit quaternions -> ``(K, 3, 3)`` rotation matrices."""
    out = np.empty((quaternions.shape[0], 3, 3))
    for k in range(quaternions.shape[0]):
        out[k] = quat_matrix_one(quaternions[k])
    return out


def _method_index(method):
    try:
        return METHODS.index(method)
    except ValueError:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}") from None


def _inertia(J):
    J = np.asarray(J, dtype=np.float64).reshape(-1)
    if J.shape != (3,) or not np.all(J > 0):
        raise ValueError(f"J must be three positive principal moments, got {J}")
    return J


def _quaternion(rotation):
    rotation = np.asarray(rotation, dtype=np.float64)
    if rotation.shape != (3, 3) or np.abs(rotation.T @ rotation - np.eye(3)).max() > 1e-10:
        raise ValueError("Q0 must be a 3x3 rotation matrix")
    return np.asarray(matrix_quat_one(np.ascontiguousarray(rotation)))


def integrate(method, J, potential, Q0, omega0, h, n_steps, sample_every=1):
    """Run ``method`` (one of `METHODS`) for ``n_steps`` steps of size ``h`` (negative runs
    backward) from attitude ``Q0`` (3×3) and body angular velocity ``omega0``; ``J`` the
    principal moments, ``potential`` a `Potential` (`FREE` for none). Returns a `Trajectory`
    sampled at steps ``0, sample_every, 2 sample_every, …``. Raises `NonConvergenceError` if an
    implicit stage does not converge."""
    index = _method_index(method)
    J = _inertia(J)
    potential = FREE if potential is None else potential
    n_steps, sample_every = int(n_steps), int(sample_every)
    if n_steps < 0 or sample_every < 1:
        raise ValueError("n_steps must be >= 0 and sample_every >= 1")
    n_samples = n_steps // sample_every + 1
    out_q = np.empty((n_samples, 4))
    out_w = np.empty((n_samples, 3))
    out_energy = np.empty(n_samples)
    done = _run_kernel(index, _quaternion(Q0), np.asarray(omega0, dtype=np.float64).copy(), J, float(h),
                       n_steps, sample_every, potential.kind, potential.parameters, out_q, out_w, out_energy)
    if done < n_steps:
        raise NonConvergenceError(
            f"{method}: an implicit stage did not converge at step {done + 1} (t = {done * h:g}, h = {h:g}); "
            "try a smaller step")
    t = np.arange(n_samples) * (sample_every * float(h))
    return Trajectory(t, _matrices(out_q), out_w, out_energy)


def step(method, J, potential, Q, omega, h):
    """One step of ``method``: ``(Q⁺, ω⁺)``."""
    run = integrate(method, J, potential, Q, omega, h, 1)
    return run.rotation[-1], run.angular_velocity[-1]


def energy(J, potential, Q, omega):
    """``E = ½ ωᵀJω + U(Q)`` for one state."""
    J = _inertia(J)
    omega = np.asarray(omega, dtype=np.float64)
    potential = FREE if potential is None else potential
    return 0.5 * omega @ (J * omega) + potential(Q)[0]


def angular_momentum(Q, J, omega):
    """Spatial angular momentum ``L = Q J ω``; ``Q (..., 3, 3)``, ``omega (..., 3)``."""
    return np.einsum("...ij,...j->...i", np.asarray(Q), _inertia(J) * np.asarray(omega))


@njit(cache=True)
def _reference_rhs(y, J, kind, parameters):
    """``(vec Q̇, ω̇)`` with ``Q̇ = Q ω̂``, ``J ω̇ = Jω × ω + M(Q)`` (seed 000 eq. 1)."""
    rotation = y[:9].reshape((3, 3))
    w = y[9:]
    # Q is off SO(3) only by the integrator's tolerance
    moment = _potential_of_matrix(kind, rotation.copy(), parameters)[1]
    hat = np.array(((0.0, -w[2], w[1]), (w[2], 0.0, -w[0]), (-w[1], w[0], 0.0)))
    out = np.empty(12)
    out[:9] = (rotation @ hat).ravel()
    out[9:] = (_cross(J * w, w) + moment) / J
    return out


def reference(J, potential, Q0, omega0, T, t_eval=None, rtol=1e-13, atol=1e-14):
    """Reference solution of seed 000 eq. (1) by scipy's DOP853 on ``(vec Q, ω)`` (as seed 000
    §6 does with MATLAB's ode45). Returns a `Trajectory` at ``t_eval`` (default ``[0, T]``)."""
    J = _inertia(J)
    potential = FREE if potential is None else potential
    Q0 = np.asarray(Q0, dtype=np.float64)
    _quaternion(Q0)  # validates
    y0 = np.concatenate((Q0.ravel(), np.asarray(omega0, dtype=np.float64)))
    t_eval = np.array([0.0, T]) if t_eval is None else np.asarray(t_eval, dtype=np.float64)
    solution = solve_ivp(lambda t, y: _reference_rhs(y, J, potential.kind, potential.parameters),
                         (0.0, T), y0, method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not solution.success:
        raise RuntimeError(f"reference solution failed: {solution.message}")
    rotation = solution.y[:9].T.reshape(-1, 3, 3)
    omega = solution.y[9:].T.copy()
    energies = np.array([0.5 * w @ (J * w) + potential(Q)[0] for Q, w in zip(rotation, omega)])
    return Trajectory(solution.t, rotation, omega, energies)
