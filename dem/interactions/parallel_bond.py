"""Parallel bonds (Potyondy & Cundall 2004, Int. J. Rock Mech. Min. Sci. 41:1329; the law behind
LAMMPS ``bpm/rotational``; docs/theory.md §3b): linear normal, shear, twisting and bending springs over a
bond disc, derived from one objective potential, with strength-based breakage.

Per bond ``ij`` (``d = x_i − x_j``, ``r = |d|``, ``n = d/r``; at rest ``L = r0``, ``n0``, ``R_i0``,
``R_j0``): a disc of radius ``R̄ = λ min(R_i, R_j)``, area ``A = π R̄²``, second moment
``I = π R̄⁴/4`` and polar moment ``J = 2I``, with the stiffnesses per area ``k̄_n = E/L`` and
``k̄_s = G/L`` of the binder's moduli ``E`` and ``G``, hence the springs

    K_n = k̄_n A = EA/L,  K_s = k̄_s A = GA/L   (force/length)
    K_t = k̄_s J = GJ/L,  K_b = k̄_n I = EI/L   (moment/rad; K_b is the beam's EI/L).

**Deformation** (each measure objective: a rigid motion of the pair leaves it unchanged):

* normal: ``e_n = r − L``;
* shear: ``a_i = R_i R_i0ᵀ n0`` and ``a_j = R_j R_j0ᵀ n0`` are the rest direction carried by
  each end (as in the three-spring binder's shear law), ``m = (a_i + a_j)/2`` their mean,
  ``c = m·n`` and ``s = m − c n`` (``m`` with its part along the bond taken out). The shear
  displacement is ``u_s = P_n(d − L m) = −L s``: the displacement of the bond disc's centre as
  carried by ``i`` relative to as carried by ``j``, the contact-midpoint shear of the PFC parallel
  bond (to first order ``u_s = Δx_⊥ − L (φ_i + φ_j)/2 × n0``);
* rotation: ``θ = log(R_j R_j0ᵀ R_i0 R_iᵀ)`` (the three-spring binder's relative rotation, ``|θ| < π``),
  split along the bond into twist ``θ_t = θ·n`` and bending ``θ_b = θ − θ_t n``.

**Potential** (docs/theory.md §3 conventions; ``U`` is the elastic energy of the bond disc):

    U = ½ K_n e_n² + ½ K_s L² |s|² + ½ K_t θ_t² + ½ K_b |θ_b|²

(``½ K_s |u_s|²``; ``|s|² = |m|² − c²``). It is a function of ``d`` and of ``R_i``, ``R_j``
through objective measures only, so the loads below conserve linear and angular momentum.

**Loads** (exact derivatives: ``F = −∂U/∂x``, ``δU = −τ·w`` for ``R → exp(S(w)) R``). With
``g = K_b θ_b + K_t θ_t n`` (``∂U/∂θ``) and the inverse Jacobians of SO(3)'s logarithm — a
variation ``w_j`` of ``R_j`` moves ``θ`` by ``J_l⁻¹(θ) w_j`` and one of ``R_i`` by
``−J_r⁻¹(θ) w_i``, where ``J_l⁻¹ = I − ½ S(θ) + κ S(θ)²``, ``J_r⁻¹ = I + ½ S(θ) + κ S(θ)²``,
``κ = 1/|θ|² − cot(|θ|/2)/(2|θ|)`` (``→ 1/12`` at 0) — and ``δa_i = w_i × a_i``,
``∂(m·n)/∂d = s/r``, ``∂θ_t/∂d = θ_b/r``:

    F_i = −K_n e_n n + K_s L² c s / r − (K_t − K_b) θ_t θ_b / r = −F_j
    τ_i = ½ K_s L² s × a_i + g − ½ θ × g + κ θ × (θ × g)
    τ_j = ½ K_s L² s × a_j − g − ½ θ × g − κ θ × (θ × g)

(``d × F_i + τ_i + τ_j = 0`` term by term). For ``K_t = K_b`` the rotational part is the seed
binder's ``τ_i = K_b θ = −τ_j``. Small deformations give the PFC increments: normal force
``K_n e_n``, shear force ``K_s u_s``, twisting moment ``K_t θ_t``, bending moment ``K_b θ_b``.

**Beam correspondence.** A straight chain of such bonds under a tip load is, node for node, an
Euler–Bernoulli beam of bending stiffness ``EI`` (the bending moment at each bond's midpoint
drives its relative rotation, which is exact for the linear moment of a cantilever) plus a shear
compliance ``1/K_s`` per bond and a ``−L²/12`` trapezoid correction: the tip deflection of ``N``
bonds of length ``L`` under a load ``P`` is ``P ℓ³/(3EI) − P ℓ L²/(12 EI) + N P/K_s`` with
``ℓ = NL`` (tested in ``tests/test_parallel_bond.py``).

**Breakage** (on when a strength is positive): the largest tensile and shear stresses on the
disc's rim,

    σ = F_n/A + |M_b| R̄/I = k̄_n (e_n + R̄ |θ_b|),   τ = |F_s|/A + |M_t| R̄/J = k̄_s (L |s| + R̄ |θ_t|),

against the tensile and shear strengths ``σ_c`` and ``τ_c``: a bond with ``σ > σ_c`` breaks in
tension (code `BROKEN_TENSION`), else one with ``τ > τ_c`` in shear (`BROKEN_SHEAR`). As in the
three-spring binder, its stored energy plus the half-step work ``(h/2)(F_i·(v_i − v_j) + τ_i·Ω_i +
τ_j·Ω_j)`` is booked to the first particle's ``broken_energy`` (column ``broken``), so that the
budget closes to the integrator's order.

Energies share the bond columns of ``energy.csv``: normal in ``axial``, shear in ``shear``,
twisting and bending in ``bending``.
"""

import functools
from collections import namedtuple

import numpy as np
from numba import njit

from ..cell import deforming, deforms, image_velocity
from ..rotations import cross_one, dot_one
from .binder import (
    BROKEN_SHEAR, BROKEN_TENSION, INTACT, bond_ends, broken_count, pair_inverse_inertia, stiffest,
)
from .contract import BOND, Interaction, localize_bonds

ParallelBondParams = namedtuple("ParallelBondParams", "i j rest_length rest_dir_i rest_dir_j rest_relative "
                                "normal_stiffness shear_stiffness radius tensile_strength shear_strength "
                                "color_start breakable")
#: ``broken (m,)``: 0 intact, `BROKEN_TENSION` or `BROKEN_SHEAR`; ``broken_energy (n,)``;
#: ``cell_work (n,)`` as `dem.interactions.binder.BinderState`'s.
ParallelBondState = namedtuple("ParallelBondState", "broken broken_energy cell_work")
#: The criteria of a parallel bond, by code.
CRITERIA = {BROKEN_TENSION: "tension", BROKEN_SHEAR: "shear"}


@njit(inline="always")
def _scaled(a, k):
    return (k * a[0], k * a[1], k * a[2])


@njit(inline="always")
def _jacobian_coefficient(angle, cosine_half, sine_half):
    """``κ = 1/t² − cot(t/2)/(2t)`` of the inverse Jacobians of log on SO(3) at ``t = |θ|``
    (``cot(t/2) = cos(t/2)/sin(t/2)``), its series below ``t = 10⁻²``."""
    if angle < 1e-2:
        t2 = angle * angle
        return 1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 / 30240.0)
    return 1.0 / (angle * angle) - cosine_half / (2.0 * angle * sine_half)


@njit(inline="always")
def _deformation(b, position, orientation, p, cell):
    """Measures of bond ``b``: ``(i, j, n, r, a_i, a_j, c, s, θ, |θ|, κ)`` (module docstring)."""
    i, j, d, r, a_i, a_j, relative, sign, sine_half, scale = bond_ends(b, position, orientation, p, cell)
    n = (d[0] / r, d[1] / r, d[2] / r)
    m = (0.5 * (a_i[0] + a_j[0]), 0.5 * (a_i[1] + a_j[1]), 0.5 * (a_i[2] + a_j[2]))
    c = dot_one(m, n)
    s = (m[0] - c * n[0], m[1] - c * n[1], m[2] - c * n[2])
    theta = (scale * relative[1], scale * relative[2], scale * relative[3])
    angle = abs(scale) * sine_half
    return i, j, n, r, a_i, a_j, c, s, theta, angle, _jacobian_coefficient(angle, sign * relative[0], sine_half)


@njit(inline="always")
def _springs(b, p):
    """``(K_n, K_s, K_t, K_b)`` of bond ``b``: ``k̄_n A``, ``k̄_s A``, ``k̄_s J``, ``k̄_n I``."""
    radius = p.radius[b]
    area = np.pi * radius * radius
    second_moment = 0.25 * area * radius * radius
    return (p.normal_stiffness[b] * area, p.shear_stiffness[b] * area, p.shear_stiffness[b] * 2.0 * second_moment,
            p.normal_stiffness[b] * second_moment)


@njit(inline="always")
def _generalised(b, p, r, s, theta, n):
    """``(e_n, |s|², θ_t, θ_b)``: the normal stretch, the squared shear measure, the twist
    angle and the bending rotation vector of bond ``b``."""
    twist = dot_one(theta, n)
    bend = (theta[0] - twist * n[0], theta[1] - twist * n[1], theta[2] - twist * n[2])
    return r - p.rest_length[b], dot_one(s, s), twist, bend


@njit(inline="always")
def _energy(k_n, k_s, k_t, k_b, length, stretch, shear2, twist, bend):
    """``(U_n, U_s, U_t + U_b)``."""
    return (0.5 * k_n * stretch * stretch, 0.5 * k_s * length * length * shear2,
            0.5 * k_t * twist * twist + 0.5 * k_b * dot_one(bend, bend))


@njit(inline="always")
def _stresses(b, p, stretch, shear2, twist, bend):
    """``(σ, τ)``: the largest tensile and shear stresses on the bond disc's rim."""
    radius = p.radius[b]
    sigma = p.normal_stiffness[b] * (stretch + radius * np.sqrt(dot_one(bend, bend)))
    tau = p.shear_stiffness[b] * (p.rest_length[b] * np.sqrt(shear2) + radius * abs(twist))
    return sigma, tau


@njit(inline="always")
def _force(k_n, k_s, k_t, k_b, length, n, r, c, s, stretch, twist, bend):
    """``F_i = −F_j`` (module docstring)."""
    f_n = -k_n * stretch
    f_s = k_s * length * length * c / r
    f_r = -(k_t - k_b) * twist / r
    return (f_n * n[0] + f_s * s[0] + f_r * bend[0], f_n * n[1] + f_s * s[1] + f_r * bend[1],
            f_n * n[2] + f_s * s[2] + f_r * bend[2])


@njit(cache=True, _nrt=False)
def parallel_bond_forces(lo, hi, h, st, bodies, p, own):
    """Add the loads of the intact parallel bonds ``lo ≤ b < hi`` (one colour); break those past
    their strengths, booking their energy and half-step work (module docstring)."""
    position, orientation, force, moment, cell = st.position, st.orientation, st.force, st.moment, st.cell
    velocity, angular_velocity = st.velocity, st.angular_velocity
    broken, broken_energy = own.broken, own.broken_energy
    driven = deforms(cell)
    for b in range(lo, hi):
        if broken[b] != INTACT:
            continue
        i, j, n, r, a_i, a_j, c, s, theta, _, kappa = _deformation(b, position, orientation, p, cell)
        k_n, k_s, k_t, k_b = _springs(b, p)
        length = p.rest_length[b]
        stretch, shear2, twist, bend = _generalised(b, p, r, s, theta, n)
        f = _force(k_n, k_s, k_t, k_b, length, n, r, c, s, stretch, twist, bend)
        image = (0.0, 0.0, 0.0)
        if driven:  # the bond acts across a moving face: its image's velocity, and the cell's work
            image = image_velocity(i, j, n[0] * r, n[1] * r, n[2] * r, position, cell)
            own.cell_work[i] -= h * (f[0] * image[0] + f[1] * image[1] + f[2] * image[2])
        g = (k_b * bend[0] + k_t * twist * n[0], k_b * bend[1] + k_t * twist * n[1],
             k_b * bend[2] + k_t * twist * n[2])
        half_theta_g = _scaled(cross_one(theta, g), 0.5)
        second = _scaled(cross_one(theta, cross_one(theta, g)), kappa)
        shear_i = _scaled(cross_one(s, a_i), 0.5 * k_s * length * length)
        shear_j = _scaled(cross_one(s, a_j), 0.5 * k_s * length * length)
        t_i = (shear_i[0] + g[0] - half_theta_g[0] + second[0], shear_i[1] + g[1] - half_theta_g[1] + second[1],
               shear_i[2] + g[2] - half_theta_g[2] + second[2])
        t_j = (shear_j[0] - g[0] - half_theta_g[0] - second[0], shear_j[1] - g[1] - half_theta_g[1] - second[1],
               shear_j[2] - g[2] - half_theta_g[2] - second[2])
        if p.breakable:
            sigma, tau = _stresses(b, p, stretch, shear2, twist, bend)
            code = BROKEN_TENSION if sigma > p.tensile_strength[b] else (
                BROKEN_SHEAR if tau > p.shear_strength[b] else INTACT)
            if code != INTACT:
                broken[b] = code
                work = 0.0
                for k in range(3):
                    work += (f[k] * (velocity[i, k] - velocity[j, k] - image[k]) + t_i[k] * angular_velocity[i, k]
                             + t_j[k] * angular_velocity[j, k])
                u = _energy(k_n, k_s, k_t, k_b, length, stretch, shear2, twist, bend)
                broken_energy[i] += u[0] + u[1] + u[2] + 0.5 * h * work
                continue
        for k in range(3):
            force[i, k] += f[k]
            force[j, k] -= f[k]
            moment[i, k] += t_i[k]
            moment[j, k] += t_j[k]


@njit(cache=True)
def parallel_bond_energy(st, bodies, contacts, p, own):
    """``(axial, shear, bending, broken, cell)``: normal, shear, twisting + bending energies of the
    intact bonds, the energy booked to broken ones and the work done against a deforming cell."""
    position, orientation, broken, cell = st.position, st.orientation, own.broken, st.cell
    normal = shear = rotation = 0.0
    for b in range(p.i.shape[0]):
        if broken[b] != INTACT:
            continue
        _, _, n, r, _, _, _, s, theta, _, _ = _deformation(b, position, orientation, p, cell)
        k_n, k_s, k_t, k_b = _springs(b, p)
        stretch, shear2, twist, bend = _generalised(b, p, r, s, theta, n)
        u = _energy(k_n, k_s, k_t, k_b, p.rest_length[b], stretch, shear2, twist, bend)
        normal += u[0]
        shear += u[1]
        rotation += u[2]
    return normal, shear, rotation, np.sum(own.broken_energy), np.sum(own.cell_work)


#: The per-bond columns of `measures`, in order.
MEASURES = ("axial_strain", "shear", "bending_angle", "twist_angle", "axial_force", "shear_force", "bending_moment",
            "twisting_moment", "tensile_stress", "shear_stress")


@njit(cache=True)
def _measures_kernel(position, orientation, p, out, cell):
    for b in range(p.i.shape[0]):
        _, _, n, r, _, _, c, s, theta, _, _ = _deformation(b, position, orientation, p, cell)
        k_n, k_s, k_t, k_b = _springs(b, p)
        stretch, shear2, twist, bend = _generalised(b, p, r, s, theta, n)
        bending = np.sqrt(dot_one(bend, bend))
        sigma, tau = _stresses(b, p, stretch, shear2, twist, bend)
        length = p.rest_length[b]
        f = _force(k_n, k_s, k_t, k_b, length, n, r, c, s, stretch, twist, bend)
        values = (stretch / length, np.sqrt(shear2), bending, abs(twist), k_n * stretch,
                  k_s * length * np.sqrt(shear2), k_b * bending, k_t * abs(twist), sigma, tau, f[0], f[1], f[2])
        for k in range(len(values)):
            out[b, k] = values[k]


def measures(model, state):
    """Per-bond measures of the parallel bonds (their block of ``model.bonds``): ``axial_strain``
    ``e_n/L``, ``shear`` ``|u_s|/L``, ``bending_angle`` ``|θ_b|``, ``twist_angle`` ``|θ_t|`` (rad),
    ``axial_force`` ``K_n e_n`` (positive in tension), ``shear_force`` ``|F_s|``,
    ``bending_moment`` ``|M_b|``, ``twisting_moment`` ``|M_t|``, ``tensile_stress`` σ,
    ``shear_stress`` τ, ``force`` ``(m, 3)`` (the bond's force on its first body ``i``; 0 once
    broken) and ``broken``; ``{}`` when the model has none."""
    params = model.interactions.get("parallel_bond")
    if params is None:
        return {}
    table = np.zeros((len(params.i), len(MEASURES) + 3))
    _measures_kernel(state.position, state.orientation, params, table, state.cell)
    out = dict(zip(MEASURES, table[:, :len(MEASURES)].T.copy()))
    out["broken"] = state.interactions["parallel_bond"].broken.copy()
    out["force"] = np.where(out["broken"][:, None] == INTACT, table[:, len(MEASURES):], 0.0)
    return out


def setup(model):
    """The parallel bonds of ``model.bonds`` (its block of law ``"parallel_bond"``): ``k̄_n = E/L``,
    ``k̄_s = G/L`` per bond, strengths (0: never breaks) as limits."""
    b = model.bonds
    block = b.block("parallel_bond")
    if block.start == block.stop:
        return None
    given = b.law_parameters["parallel_bond"]
    rest_length = b.rest_length[block]
    tensile, shear = (np.where(given[key] > 0, given[key], np.inf) for key in ("tensile_strength", "shear_strength"))
    return ParallelBondParams(
        b.i[block], b.j[block], rest_length, b.rest_dir_i[block], b.rest_dir_j[block], b.rest_relative[block],
        given["modulus"] / rest_length, given["shear_modulus"] / rest_length, given["radius"].copy(), tensile, shear,
        b.color_start("parallel_bond"), bool(np.isfinite(tensile).any() or np.isfinite(shear).any()))


def initial_state(model, params):
    return ParallelBondState(np.zeros(len(params.i), np.int8), np.zeros(model.n_bodies),
                             np.zeros(model.n_bodies if deforming(model.sections["cell"]) else 0))


def critical_step(model, state, p):
    """The stiffest bond's normal spring between its two masses, its shear spring on the two
    masses and, through the lever ``L/2``, the two inertias (``K_s (1/m_i + 1/m_j + (L/2)²
    (1/J_i + 1/J_j))``, an upper bound of the shear mode), and its twisting and bending springs
    between the two inertias."""
    masses, inertias = pair_inverse_inertia(model, p)
    area = np.pi * p.radius ** 2
    return stiffest(p, (
        ("parallel bond normal", p.normal_stiffness * area * masses),
        ("parallel bond shear", p.shear_stiffness * area * (masses + 0.25 * p.rest_length ** 2 * inertias)),
        ("parallel bond bending/twisting",
         np.maximum(p.normal_stiffness, 2.0 * p.shear_stiffness) * 0.25 * area * p.radius ** 2 * inertias)))


def extra_columns(model, p):
    """With breakage on: the number of parallel bonds broken so far in tension and in shear."""
    if not p.breakable:
        return {}
    return {f"broken_parallel_{name}": broken_count("parallel_bond", code) for code, name in CRITERIA.items()}


PARALLEL_BOND = Interaction(
    name="parallel_bond", doc=__doc__, kind=BOND, columns=("axial", "shear", "bending", "broken", "cell"),
    internal=True,
    keys={}, setup=setup, state=initial_state, forces=parallel_bond_forces, energy=parallel_bond_energy,
    critical_step=critical_step, extra_columns=extra_columns, bond_state=("broken",), bond_law="parallel_bond",
    localize=functools.partial(localize_bonds, per_bond=(
        "rest_length", "rest_dir_i", "rest_dir_j", "rest_relative", "normal_stiffness", "shear_stiffness", "radius",
        "tensile_strength", "shear_strength")),
)
