"""An independent plain-numpy implementation of every interaction of docs/theory.md §3: energy, forces and
spatial moments from the formulas, O(N²) where the kernels use neighbour lists, rotations through
scipy (not `dem.rotations`). The tests compare the compiled kernels with it.

Each function takes ``(model, state)`` and returns ``(energy, force (n, 3), moment (n, 3))``;
`REFERENCE` maps interaction names to them.
"""

import numpy as np
from scipy.spatial.transform import Rotation


def rotations(state):
    return Rotation.from_quat(state.orientation[:, [1, 2, 3, 0]])


def _zeros(state):
    return np.zeros_like(state.position), np.zeros_like(state.position)


def binder(model, state):
    """Axial ``½ K_a (r/r0 − 1)²``, shear ``½ K_s [(1 − s_i)² + (1 − s_j)²]`` (objective per-end
    form), bending ``½ K_m |θ|²`` with ``θ = log(R_j R_j0ᵀ R_i0 R_iᵀ)``, every bond intact."""
    force, moment = _zeros(state)
    b, x, rotation = model.bonds, state.position, rotations(state)
    i, j = b.i, b.j
    d = x[i] - x[j]
    r = np.linalg.norm(d, axis=1)
    n = d / r[:, None]
    strain = r / b.rest_length - 1
    a_i = rotation[i].apply(b.rest_dir_i)
    a_j = rotation[j].apply(b.rest_dir_j)
    c_i = 1 - np.sum(a_i * n, axis=1)
    c_j = 1 - np.sum(a_j * n, axis=1)
    theta = (rotation[j] * Rotation.from_quat(b.rest_relative[:, [1, 2, 3, 0]]) * rotation[i].inv()).as_rotvec()
    energy = np.sum(0.5 * b.k_axial * strain ** 2 + 0.5 * b.k_shear * (c_i ** 2 + c_j ** 2)
                    + 0.5 * b.k_bending * np.sum(theta ** 2, axis=1))
    f = -(b.k_axial * strain / b.rest_length)[:, None] * n
    f += (b.k_shear / r)[:, None] * (c_i[:, None] * (a_i - (1 - c_i)[:, None] * n)
                                     + c_j[:, None] * (a_j - (1 - c_j)[:, None] * n))
    tau_i = (b.k_shear * c_i)[:, None] * np.cross(a_i, n) + b.k_bending[:, None] * theta
    tau_j = (b.k_shear * c_j)[:, None] * np.cross(a_j, n) - b.k_bending[:, None] * theta
    np.add.at(force, i, f)
    np.add.at(force, j, -f)
    np.add.at(moment, i, tau_i)
    np.add.at(moment, j, tau_j)
    return energy, force, moment


def skew(v):
    """``(m, 3, 3)`` matrices ``S(v)`` with ``S(v) b = v × b``."""
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2], out[..., 1, 2] = -v[..., 2], v[..., 1], -v[..., 0]
    out[..., 1, 0], out[..., 2, 0], out[..., 2, 1] = v[..., 2], -v[..., 1], v[..., 0]
    return out


def left_jacobian(theta):
    """``J_l(θ) = I + (1 − cos t)/t² S + (t − sin t)/t³ S²`` (``t = |θ|``): ``exp(S(θ + δ)) ≈
    exp(S(J_l δ)) exp(S(θ))``."""
    t = np.linalg.norm(theta, axis=1)[:, None, None]
    s = skew(theta)
    return np.eye(3) + (1 - np.cos(t)) / t ** 2 * s + (t - np.sin(t)) / t ** 3 * s @ s


def parallel_bond(model, state):
    """Potyondy–Cundall parallel bond in its objective form (`dem.interactions.parallel_bond`):
    ``U = ½ K_n (r − L)² + ½ K_s |P_n (d − L m)|² + ½ K_t (θ·n)² + ½ K_b |P_n θ|²`` with
    ``m = (a_i + a_j)/2``, ``θ = log(R_j R_j0ᵀ R_i0 R_iᵀ)``. Moments through the left Jacobian
    ``J_l`` of SO(3)'s exponential, inverted numerically: a variation ``w_j`` of ``R_j`` moves θ
    by ``J_l⁻¹ w_j``, one of ``R_i`` by ``−J_l(−θ)⁻¹ w_i``."""
    force, moment = _zeros(state)
    b, x, rotation = model.bonds, state.position, rotations(state)
    block = b.block("parallel_bond")
    given = b.law_parameters["parallel_bond"]
    i, j, length = b.i[block], b.j[block], b.rest_length[block]
    area = np.pi * given["radius"] ** 2
    inertia = np.pi * given["radius"] ** 4 / 4
    k_n, k_s = given["modulus"] * area / length, given["shear_modulus"] * area / length
    k_b, k_t = given["modulus"] * inertia / length, given["shear_modulus"] * 2 * inertia / length
    d = x[i] - x[j]
    r = np.linalg.norm(d, axis=1)
    n = d / r[:, None]
    a_i = rotation[i].apply(b.rest_dir_i[block])
    a_j = rotation[j].apply(b.rest_dir_j[block])
    m = 0.5 * (a_i + a_j)
    projector = np.eye(3) - n[:, :, None] * n[:, None, :]
    u_s = np.einsum("bkl,bl->bk", projector, d - length[:, None] * m)
    theta = (rotation[j] * Rotation.from_quat(b.rest_relative[block][:, [1, 2, 3, 0]]) * rotation[i].inv()).as_rotvec()
    twist = np.sum(theta * n, axis=1)
    bend = theta - twist[:, None] * n
    energy = np.sum(0.5 * k_n * (r - length) ** 2 + 0.5 * k_s * np.sum(u_s ** 2, axis=1) + 0.5 * k_t * twist ** 2
                    + 0.5 * k_b * np.sum(bend ** 2, axis=1))
    # ∂U/∂d: the normal spring, the shear through n (u_s = −L P_n m), the twist through n
    c = np.sum(m * n, axis=1)
    grad_d = ((k_n * (r - length))[:, None] * n + (k_s * length * c / r)[:, None] * u_s
              + ((k_t - k_b) * twist / r)[:, None] * bend)
    # ∂U/∂w through a_i, a_j (δa = w × a): δU_s = k_s u_s·(−L/2)(w × a) = w·(k_s L/2)(u_s × a)
    g = k_b[:, None] * bend + (k_t * twist)[:, None] * n
    inverse_left = np.linalg.inv(left_jacobian(theta))
    inverse_right = np.linalg.inv(left_jacobian(-theta))
    grad_w_i = (0.5 * k_s * length)[:, None] * np.cross(u_s, a_i) - np.einsum("blk,bl->bk", inverse_right, g)
    grad_w_j = (0.5 * k_s * length)[:, None] * np.cross(u_s, a_j) + np.einsum("blk,bl->bk", inverse_left, g)
    np.add.at(force, i, -grad_d)
    np.add.at(force, j, grad_d)
    np.add.at(moment, i, -grad_w_i)
    np.add.at(moment, j, -grad_w_j)
    return energy, force, moment


def normal_law(model, key, delta, length):
    """``(U, |F|, dF/dξ)`` of the scene's normal law at the dimensionless overlap ``δ ≥ 0`` (arrays)
    of length scale ``L``, with the stiffness ``contact[key]``: Hertz ``(2/5) K δ^{5/2}``,
    ``(K/L) δ^{3/2}``, ``1.5 K/L² √δ``; Hooke ``½ k ξ²``, ``k ξ``, ``k`` of ``ξ = L δ``."""
    contact = model.sections["contact"]
    k = contact[key]
    if contact["normal"] == "hooke":
        overlap = length * delta
        return 0.5 * k * overlap ** 2, k * overlap, np.where(delta > 0, k, 0.0)
    return 0.4 * k * delta ** 2.5, k / length * delta ** 1.5, 1.5 * k / length ** 2 * np.sqrt(delta)


def adhesive_law(model, key, delta, length, reduced):
    """``(U_H, U_a, |F|, k)`` of the scene's adhesive normal law (``jkr``, ``dmt``) at one contact
    (scalars): Hertz ``F_H = (4/3) E* √R* ξ^{3/2}`` with ``E* = 3K/(4 L^{5/2} √R*)``; DMT ``F_H −
    2π w R*``, ``U_a = −2π w R* ξ``; JKR on the contact radius ``a``, the largest root of ``ξ = a²/R* −
    √(2π w a/E*)`` (numpy's polynomial roots in ``x = √a``), ``F = 4E*a³/(3R*) − √(8π w E* a³)`` and
    the energy ``∫ F dξ`` from ``a = 0``, a polynomial in ``x`` integrated by numpy; ``k = 2E* a``."""
    contact = model.sections["contact"]
    stiffness, work = contact[key], contact["work_of_adhesion"]
    xi = length * delta
    modulus = 3 * stiffness / (4 * length ** 2.5 * np.sqrt(reduced))
    u_hertz = 0.4 * stiffness * delta ** 2.5 if delta > 0 else 0.0
    if contact["normal"] == "dmt":
        pull = 2 * np.pi * work * reduced
        return u_hertz, -pull * xi, stiffness / length * delta ** 1.5 - pull, 2 * modulus * np.sqrt(reduced * xi)
    s = np.sqrt(2 * np.pi * work / modulus)
    roots = np.roots([1.0, 0.0, 0.0, -reduced * s, -reduced * xi])
    x = max(root.real for root in roots if abs(root.imag) < 1e-9 * abs(root))
    a = x * x
    Polynomial = np.polynomial.Polynomial
    force = Polynomial([0, 0, 0, -np.sqrt(8 * np.pi * work * modulus), 0, 0, 4 * modulus / (3 * reduced)])   # F(x²)
    energy = (force * Polynomial([-s, 0, 0, 4 / reduced])).integ()(x)   # dξ = (4x³/R* − s) dx
    return u_hertz, energy - u_hertz, force(x), 2 * modulus * a


def hertz_pp(model, state):
    """The normal law (`normal_law`) along ``n`` over every touching pair (all pairs)."""
    force, moment = _zeros(state)
    x = state.position
    d = x[:, None, :] - x[None, :, :]
    r = np.linalg.norm(d, axis=2)
    reach = 0.5 * (model.diameter[:, None] + model.diameter[None, :])
    np.fill_diagonal(r, np.inf)
    touching = (model.diameter[:, None] > 0) & (model.diameter[None, :] > 0)
    delta = np.where(touching, np.clip(1 - r / reach, 0, None), 0.0)
    energy, magnitude, _ = normal_law(model, "k_pp", delta, reach)
    force += np.sum((magnitude / r)[:, :, None] * d, axis=1)
    return 0.5 * np.sum(energy), force, moment


def closest_on_mesh(x, vertices, faces):
    """``(distance, point)`` of the surface ``(vertices, faces)`` closest to ``x``, by brute
    force over every triangle at once: its plane projection if it falls inside (barycentric
    coordinates), else the closest point of its three sides; the first closest candidate in
    triangle order (projection, then the sides ab, bc, ca)."""
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    foot = x - np.einsum("fi,fi->f", x - a, normal)[:, None] * normal
    weights = np.linalg.solve(np.stack((b - a, c - a, normal), axis=2), (foot - a)[:, :, None])[:, :2, 0]
    inside = (weights.min(axis=1) >= 0) & (weights.sum(axis=1) <= 1)
    candidates = [foot]
    for p, q in ((a, b), (b, c), (c, a)):
        t = np.clip(np.einsum("fi,fi->f", x - p, q - p) / np.einsum("fi,fi->f", q - p, q - p), 0.0, 1.0)
        candidates.append(p + t[:, None] * (q - p))
    points = np.stack(candidates, axis=1)                      # (faces, 4, 3)
    distance = np.linalg.norm(x - points, axis=2)
    distance[:, 0] = np.where(inside, distance[:, 0], np.inf)
    best = np.unravel_index(np.argmin(distance), distance.shape)
    return distance[best], points[best]


def hertz_pw(model, state):
    """The normal law (`normal_law`) with ``δ = 1 − (x − p)·n_w/(D/2)`` along ``n_w``; a mesh
    (convex, the particles outside: one contact each) at the closest point of its surface,
    ``δ = 1 − distance/(D/2)``, along the direction from that point to the centre."""
    force, moment = _zeros(state)
    energy = 0.0
    radius = 0.5 * model.diameter
    length = np.where(radius > 0, radius, 1)
    for p, n in zip(model.wall_point, model.wall_normal):
        delta = np.where(radius > 0, np.clip(1 - (state.position - p) @ n / length, 0, None), 0.0)
        u, magnitude, _ = normal_law(model, "k_pw", delta, length)
        energy += np.sum(u)
        force += magnitude[:, None] * n
    for mesh in model.inputs["walls"]["meshes"]:
        for i, x in enumerate(state.position):
            distance, point = closest_on_mesh(x, mesh["vertices"] + mesh["center"], mesh["faces"])
            if radius[i] > 0 and distance < radius[i]:
                u, magnitude, _ = normal_law(model, "k_pw", 1 - distance / radius[i], radius[i])
                energy += u
                force[i] += magnitude * (x - point) / distance
    return energy, force, moment


def gravity(model, state):
    """``U = −Σ m g·(x + Rρ)``, ``F = m g``, ``τ = Rρ × m g``."""
    g = np.asarray(model.sections["fields"]["gravity"])
    arm = rotations(state).apply(model.com_offset)
    weight = model.mass[:, None] * g
    return -np.sum(weight * (state.position + arm)), weight.copy(), np.cross(arm, weight)


def lennard_jones(model, state):
    """``4ε[(σ/r)¹² − (σ/r)⁶]`` over the site pairs of the listed body pairs."""
    force, moment = _zeros(state)
    given = model.inputs["lennard_jones"]
    epsilon, sigma = given["epsilon"], given["sigma"]
    rotation = rotations(state)
    energy = 0.0
    for a, b in given["pairs"]:
        arms_a = rotation[a].apply(model.site_offset[model.site_start[a]:model.site_start[a + 1]])
        arms_b = rotation[b].apply(model.site_offset[model.site_start[b]:model.site_start[b + 1]])
        for s in arms_a:
            for t in arms_b:
                d = state.position[a] + s - state.position[b] - t
                r = np.linalg.norm(d)
                energy += 4 * epsilon * ((sigma / r) ** 12 - (sigma / r) ** 6)
                f = 24 * epsilon * (2 * (sigma / r) ** 12 - (sigma / r) ** 6) / r ** 2 * d
                force[a] += f
                force[b] -= f
                moment[a] += np.cross(s, f)
                moment[b] -= np.cross(t, f)
    return energy, force, moment


LEVI_CIVITA = np.zeros((3, 3, 3))
LEVI_CIVITA[0, 1, 2] = LEVI_CIVITA[1, 2, 0] = LEVI_CIVITA[2, 0, 1] = 1.0
LEVI_CIVITA[0, 2, 1] = LEVI_CIVITA[2, 1, 0] = LEVI_CIVITA[1, 0, 2] = -1.0


def ortolan_saccon(model, state):
    """``U(Q) = (‖Q − I‖ − 1)² − α/‖Q − Q_m‖``. For ``Q → exp(S(w)) Q``,
    ``d‖Q − A‖/dw_k = ε_kij [Q (Q − A)ᵀ]_ij / ‖Q − A‖``, and ``τ = −dU/dw``."""
    force, moment = _zeros(state)
    values = model.sections["ortolan_saccon"]
    alpha = values["alpha"]
    attractor = Rotation.from_rotvec(values["attractor_rotation_vector"]).as_matrix()

    def distance_and_gradient(q, target):
        distance = np.linalg.norm(q - target)
        return distance, np.einsum("kij,ij->k", LEVI_CIVITA, q @ (q - target).T) / distance

    energy = 0.0
    rotation = rotations(state)
    for body in model.inputs["ortolan_saccon"]["bodies"]:
        q = rotation[body].as_matrix()
        d1, g1 = distance_and_gradient(q, np.eye(3))
        d2, g2 = distance_and_gradient(q, attractor)
        energy += (d1 - 1) ** 2 - alpha / d2
        moment[body] = -(2 * (d1 - 1) * g1 + alpha / d2 ** 2 * g2)
    return energy, force, moment


def applied_force(model, state):
    """``U = −Σ F·x``."""
    force, moment = _zeros(state)
    given = model.inputs["applied_force"]
    energy = 0.0
    for body, f in zip(given["bodies"], given["forces"]):
        force[body] += f
        energy -= np.dot(f, state.position[body])
    return energy, force, moment


REFERENCE = {
    "binder": binder, "parallel_bond": parallel_bond, "hertz_pp": hertz_pp, "hertz_pw": hertz_pw, "gravity": gravity,
    "lennard_jones": lennard_jones, "ortolan_saccon": ortolan_saccon, "applied_force": applied_force,
}


# ---------------------------------------------------------------------------------------------
# Friction, rolling and twisting (docs/theory.md §3b): forces of given springs (the per-contact histories)
# ---------------------------------------------------------------------------------------------

def _contact_constants(model):
    contact = model.sections["contact"]
    nu = contact["poisson_ratio"]
    return contact, 2 * (1 - nu) / (2 - nu)


def touching_pairs(model, state):
    """``[(a, b, n, r, reach, δ)]`` of the touching pairs ``a < b``, ``n`` from ``b`` to ``a``."""
    out = []
    x, d = state.position, model.diameter
    for a in range(model.n_bodies):
        for b in range(a + 1, model.n_bodies):
            reach = 0.5 * (d[a] + d[b])
            r = np.linalg.norm(x[a] - x[b])
            if d[a] > 0 and d[b] > 0 and r < reach:
                out.append((a, b, (x[a] - x[b]) / r, r, reach, 1 - r / reach))
    return out


def touching_walls(model, state):
    """``[(i, w, n, gap, radius, δ)]`` of the particle–wall contacts."""
    out = []
    for w, (p, n) in enumerate(zip(model.wall_point, model.wall_normal)):
        for i in range(model.n_bodies):
            radius = 0.5 * model.diameter[i]
            gap = (state.position[i] - p) @ n
            if radius > 0 and gap < radius:
                out.append((i, w, n, gap, radius, 1 - gap / radius))
    return out


def _wall_value(model, w, column, default):
    own = model.wall_friction[w, column]
    return default if np.isnan(own) else own


def spring_laws(model, name, n, overlap, length, delta, reduced, w=None):
    """``(stiffnesses, limits)`` of the springs of interaction ``name`` at one contact: ``((k_t,),
    (μ F_n,))`` for friction, ``((k_r, k_tw), (μ_r R* F_n, μ_t R* F_n))`` for rolling; under an
    adhesive law ``F_n`` is the force plus twice the pull-off force and the stiffness ``2E* a``."""
    contact, ratio = _contact_constants(model)
    key = "k_pw" if w is not None else "k_pp"
    if contact["normal"] in ("jkr", "dmt"):
        _, _, normal_force, normal_stiffness = adhesive_law(model, key, delta, length, reduced)
        normal_force += (1.5 if contact["normal"] == "jkr" else 2.0) * 2 * np.pi * contact["work_of_adhesion"] * reduced
    else:
        _, normal_force, normal_stiffness = normal_law(model, key, delta, length)
    if name.startswith("friction"):
        mu = contact["friction"] if w is None else _wall_value(model, w, 0, contact["friction"])
        linear = contact["tangential"] == "linear_history"
        return (contact["tangential_stiffness"] if linear else ratio * normal_stiffness,), (mu * normal_force,)
    mu_r = contact["rolling_friction"] if w is None else _wall_value(model, w, 1, contact["rolling_friction"])
    mu_t = contact["twisting_friction"] if w is None else _wall_value(model, w, 2, contact["twisting_friction"])
    return ((2.25 * mu_r ** 2 * reduced ** 2 * normal_stiffness, 0.5 * ratio * normal_stiffness * reduced * overlap),
            (mu_r * reduced * normal_force, mu_t * reduced * normal_force))


def _contacts(model, state, name):
    """Every contact of interaction ``name``: ``(key, a, b, n, lever_a, lever_b, laws)`` (``b`` is
    None for a wall; levers from the centres to the contact point)."""
    out = []
    if name.endswith("_pp"):
        for a, b, n, r, reach, delta in touching_pairs(model, state):
            ra, rb = 0.5 * model.diameter[a], 0.5 * model.diameter[b]
            overlap = reach - r
            laws = spring_laws(model, name, n, overlap, reach, delta, ra * rb / (ra + rb))
            out.append(((a, b), a, b, n, -(ra - overlap / 2) * n, (rb - overlap / 2) * n, laws))
    else:
        for i, w, n, gap, radius, delta in touching_walls(model, state):
            overlap = radius - gap
            laws = spring_laws(model, name, n, overlap, radius, delta, radius, w)
            out.append(((i, w), i, None, n, -(radius - overlap / 2) * n, None, laws))
    return out


def random_springs(model, state, name, rng):
    """Springs (histories) for every contact of ``name``, random within 10–90 % of their limits:
    ``{key: vector}`` (friction: ``ξ ⊥ n``; rolling: ``(θ_r ⊥ n, θ_t)``; the particle pipeline
    ``contact_pp``: ``(ξ, θ_r, θ_t)``, each zero where its coefficient is)."""
    if name in ("contact_pp", "adhesive_pp"):
        tangential, rolling = (random_springs(model, state, law, rng) for law in ("friction_pp", "rolling_pp"))
        return {key: np.concatenate((tangential[key], rolling[key])) for key in tangential}
    if name in ("clump_pw", "adhesive_clump_pw"):  # the members' springs, as spheres' (`member_spheres`)
        return _clump_springs(model, state, rng)
    if name in ("clump_pp", "adhesive_clump_pp"):  # the member pairs' springs, side by side in their body pair's
        return _clump_pair_springs(model, state, rng, name)
    if name in ("contact_pw", "adhesive_contact_pw"):  # the springs of the parts that act at some wall, side by side
        parts = [random_springs(model, state, law, rng) for law in _wall_parts(model, name)]
        return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    springs = {}
    for key, a, b, n, _, _, (stiffness, limits) in _contacts(model, state, name):
        direction = rng.normal(size=3)
        direction -= (direction @ n) * n
        direction /= np.linalg.norm(direction)
        vector = direction * rng.uniform(0.1, 0.9) * _ratio(limits[0], stiffness[0])
        if name.startswith("rolling"):
            vector = np.append(vector, rng.choice([-1, 1]) * rng.uniform(0.1, 0.9) * _ratio(limits[1], stiffness[1]))
        springs[key] = vector
    return springs


def _ratio(limit, stiffness):
    """A spring's extension at its limit (0 for a spring that is off)."""
    return limit / stiffness if stiffness > 0 else 0.0


def _damped(spring, dashpot, limit):
    """``spring + f dashpot`` with the largest ``f ≤ 1`` that keeps its length within ``limit``
    (found by bisection)."""
    if np.linalg.norm(spring + dashpot) <= limit:
        return spring + dashpot
    low, high = 0.0, 1.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if np.linalg.norm(spring + middle * dashpot) <= limit else (low, middle)
    return spring + low * dashpot


def _friction(model, state, springs, name):
    force, moment = _zeros(state)
    energy = 0.0
    contact = model.sections["contact"]
    e = contact["restitution"]
    # the damping ratio that gives the normal law's oscillator the restitution e (a linear one: exactly)
    factor = 1.0 if contact["normal"] == "hooke" else np.sqrt(5 / 6)
    gamma = -2 * factor * np.log(e) / np.sqrt(np.log(e) ** 2 + np.pi ** 2)
    v, w = state.velocity, state.angular_velocity
    for key, a, b, n, lever_a, lever_b, ((k_t,), (limit,)) in _contacts(model, state, name):
        f = -k_t * springs[key]
        energy += 0.5 * k_t * springs[key] @ springs[key]
        if k_t * np.linalg.norm(springs[key]) < limit * (1 - 1e-9):   # the dashpot, while it sticks
            relative = v[a] + np.cross(w[a], lever_a)
            mass = model.mass[a]
            if b is not None:
                relative -= v[b] + np.cross(w[b], lever_b)
                mass = model.mass[a] * model.mass[b] / (model.mass[a] + model.mass[b])
            f = _damped(f, -gamma * np.sqrt(k_t * mass) * (relative - (relative @ n) * n), limit)
        force[a] += f
        moment[a] += np.cross(lever_a, f)
        if b is not None:
            force[b] -= f
            moment[b] += np.cross(lever_b, -f)
    return energy, force, moment


def _rolling(model, state, springs, name):
    force, moment = _zeros(state)
    contact = model.sections["contact"]
    energy = 0.0
    for key, a, b, n, lever_a, lever_b, ((k_r, k_tw), (limit_r, limit_t)) in _contacts(model, state, name):
        theta, twist = springs[key][:3], springs[key][3]
        m = -k_r * theta - k_tw * twist * n
        energy += 0.5 * k_r * theta @ theta + 0.5 * k_tw * twist ** 2
        spin = state.angular_velocity[a] - (state.angular_velocity[b] if b is not None else 0.0)
        bodies = [a] + ([b] if b is not None else [])
        inertia = 1 / sum(1 / (model.inertia[c, 0] + model.mass[c] * model.diameter[c] ** 2 / 4) for c in bodies)
        twisting_inertia = 1 / sum(1 / model.inertia[c, 0] for c in bodies)
        eta = contact["rolling_damping"]
        if k_r * np.linalg.norm(theta) < limit_r * (1 - 1e-9):   # the EPSD dashpots, below their limits
            m += _damped(-k_r * theta, -eta * 2 * np.sqrt(inertia * k_r) * (spin - (spin @ n) * n), limit_r) \
                + k_r * theta
        if abs(k_tw * twist) < limit_t * (1 - 1e-9):
            m += (_damped(-k_tw * twist * n, -eta * 2 * np.sqrt(twisting_inertia * k_tw) * (spin @ n) * n, limit_t)
                  + k_tw * twist * n)
        moment[a] += m
        if b is not None:
            moment[b] -= m
    return energy, force, moment


def normal_damping(model, state, walls=False):
    """The normal dashpot ``−γ √(m* k_n) v_n n`` of every touching pair (``walls``: of every
    particle–plane contact, the planes at rest), ``γ`` the normal law's for the restitution (no
    energy)."""
    force, moment = _zeros(state)
    contact = model.sections["contact"]
    e = contact["restitution"]
    if e >= 1:
        return 0.0, force, moment
    factor = 1.0 if contact["normal"] == "hooke" else np.sqrt(5 / 6)
    gamma = -2 * factor * np.log(e) / np.sqrt(np.log(e) ** 2 + np.pi ** 2)
    v = state.velocity
    if walls:
        for i, w, n, gap, radius, delta in touching_walls(model, state):
            k_n = normal_law(model, "k_pw", delta, radius)[2]
            force[i] += -gamma * np.sqrt(model.mass[i] * k_n) * (v[i] @ n) * n
        return 0.0, force, moment
    for a, b, n, r, reach, delta in touching_pairs(model, state):
        k_n = normal_law(model, "k_pp", delta, reach)[2]
        mass = model.mass[a] * model.mass[b] / (model.mass[a] + model.mass[b])
        f = -gamma * np.sqrt(mass * k_n) * ((v[a] - v[b]) @ n) * n
        force[a] += f
        force[b] -= f
    return 0.0, force, moment


def contact_pp(model, state, springs):
    """The particle pipeline: the normal law (`hertz_pp`) with its dashpot (`normal_damping`), the
    tangential spring (`friction_pp`'s law, ``springs[:3]``) and the rolling and twisting springs
    (`rolling_pp`'s law, ``springs[3:]``) of every touching pair, each where its coefficient acts."""
    contact = model.sections["contact"]
    parts = [hertz_pp(model, state), normal_damping(model, state)]
    if contact["friction"] > 0:
        parts.append(_friction(model, state, {key: value[:3] for key, value in springs.items()}, "friction_pp"))
    if contact["rolling_friction"] > 0 or contact["twisting_friction"] > 0:
        parts.append(_rolling(model, state, {key: value[3:] for key, value in springs.items()}, "rolling_pp"))
    return tuple(sum(part[k] for part in parts) for k in range(3))


def _wall_parts(model, name):
    """The spring laws of the wall pipeline ``name`` that act at some wall (``"friction_wall"``,
    ``"rolling_wall"``), in the order of its slots' springs."""
    walls = model.interactions[name].walls
    return [law for law, acts in (("friction_wall", (walls[:, 3] > 0).any()),
                                  ("rolling_wall", (walls[:, 4:] > 0).any())) if acts]


def _with_wall_springs(model, state, springs, name, parts):
    """``parts`` (the normal law's) summed with the tangential spring (`_friction`) and the rolling
    and twisting springs (`_rolling`) of every plane contact of the wall pipeline ``name``, where
    they act (`_wall_parts`: their springs side by side)."""
    first = 0
    for law in _wall_parts(model, name):
        width = 3 if law == "friction_wall" else 4
        part = {key: value[first:first + width] for key, value in springs.items()}
        parts.append(_friction(model, state, part, law) if law == "friction_wall" else _rolling(model, state, part,
                                                                                                   law))
        first += width
    return tuple(sum(part[k] for part in parts) for k in range(3))


def contact_pw(model, state, springs):
    """The wall pipeline: `hertz_pw` with its dashpot (`normal_damping`) and the springs."""
    return _with_wall_springs(model, state, springs, "contact_pw",
                              [hertz_pw(model, state), normal_damping(model, state, walls=True)])


def _adhesive_contacts(model, state, pairs):
    """``(energy, force, moment)`` of the adhesive normal law with its dashpot (``−γ √(m* 2E*a)
    v_n``) over ``pairs``: ``(a, b, n, length, delta, reduced)``, ``b`` None for a wall."""
    force, moment = _zeros(state)
    contact = model.sections["contact"]
    e = contact["restitution"]
    gamma = 0.0 if e >= 1 else -2 * np.sqrt(5 / 6) * np.log(e) / np.sqrt(np.log(e) ** 2 + np.pi ** 2)
    energy = 0.0
    for a, b, n, length, delta, reduced in pairs:
        u_hertz, u_adhesion, magnitude, k = adhesive_law(model, "k_pw" if b is None else "k_pp", delta, length,
                                                         reduced)
        energy += u_hertz + u_adhesion
        mass = model.mass[a] if b is None else model.mass[a] * model.mass[b] / (model.mass[a] + model.mass[b])
        speed = (state.velocity[a] - (0.0 if b is None else state.velocity[b])) @ n
        f = (magnitude - gamma * np.sqrt(mass * k) * speed) * n
        force[a] += f
        if b is not None:
            force[b] -= f
    return energy, force, moment


def adhesive_pp(model, state, springs):
    """`contact_pp` under an adhesive normal law (`adhesive_law`): every touching pair forms."""
    contact = model.sections["contact"]
    d = model.diameter
    pairs = [(a, b, n, reach, delta, d[a] * d[b] / (2 * (d[a] + d[b])))
             for a, b, n, r, reach, delta in touching_pairs(model, state)]
    parts = [_adhesive_contacts(model, state, pairs)]
    if contact["friction"] > 0:
        parts.append(_friction(model, state, {key: value[:3] for key, value in springs.items()}, "friction_pp"))
    if contact["rolling_friction"] > 0 or contact["twisting_friction"] > 0:
        parts.append(_rolling(model, state, {key: value[3:] for key, value in springs.items()}, "rolling_pp"))
    return tuple(sum(part[k] for part in parts) for k in range(3))


def adhesive_pw(model, state):
    """The adhesive normal law against the planes (every touching contact forms)."""
    return _adhesive_contacts(model, state, [(i, None, n, radius, delta, radius)
                                             for i, w, n, gap, radius, delta in touching_walls(model, state)])


def adhesive_contact_pw(model, state, springs):
    """The wall pipeline under an adhesive normal law: `adhesive_pw` and the springs."""
    return _with_wall_springs(model, state, springs, "adhesive_contact_pw", [adhesive_pw(model, state)])


REFERENCE.update(contact_pp=contact_pp, contact_pw=contact_pw, adhesive_contact_pw=adhesive_contact_pw,
                 adhesive_pp=adhesive_pp, adhesive_pw=adhesive_pw)


# ---------------------------------------------------------------------------------------------
# Clumps (docs/theory.md §3b.11): their members as spheres, the loads summed about the centres of mass
# ---------------------------------------------------------------------------------------------

def member_spheres(model, state):
    """The clumps' members as free spheres: ``(model, state, owner, arm)`` of a system of one
    sphere per member at ``x + R s`` (rotated with scipy), moving at ``v + Ω × R s`` and spinning
    at ``Ω``, with its clump's mass and smallest principal moment, among the same walls (planes and
    meshes, at rest) under the same ``[contact]``; ``owner`` the clump of each, ``arm`` its ``R s``."""
    from dem import SystemBuilder

    p = model.interactions["clump_pw" if "clump_pw" in model.interactions else "adhesive_clump_pw"]
    owner = np.repeat(np.arange(model.n_bodies), np.diff(p.member_start))
    arm = Rotation.from_quat(state.orientation[owner][:, [1, 2, 3, 0]]).apply(p.member_offset)
    system = SystemBuilder()
    system.add_bodies(state.position[owner] + arm, mass=model.mass[owner], inertia=model.inertia.min(axis=1)[owner],
                      diameter=2.0 * p.member_radius, velocity=state.velocity[owner] + np.cross(
                          state.angular_velocity[owner], arm), angular_velocity=state.angular_velocity[owner])
    meshes = [dict(vertices=mesh["vertices"] + mesh["center"], faces=mesh["faces"], center=mesh["center"])
              for mesh in model.inputs["walls"]["meshes"]]
    spheres, moving = system.finish(model.inputs["walls"]["planes"], meshes, contact=model.sections["contact"])
    return spheres, moving, owner, arm


def clump_pw(model, state, springs=None):
    """`contact_pw` on the members as spheres (`member_spheres`; ``springs`` keyed by member and
    wall; without friction and rolling resistance the normal law and its dashpot alone; under an
    adhesive law ``adhesive_clump_pw``'s: `adhesive_contact_pw`, or `adhesive_pw` without springs),
    each member's force to its clump and its moment plus ``R s × f`` about the clump's centre of
    mass."""
    spheres, moving, owner, arm = member_spheres(model, state)
    if "contact_pw" in spheres.interactions:
        energy, member_force, member_moment = contact_pw(spheres, moving, springs or {})
    elif "adhesive_contact_pw" in spheres.interactions:
        energy, member_force, member_moment = adhesive_contact_pw(spheres, moving, springs or {})
    elif "adhesive_pw" in spheres.interactions:
        energy, member_force, member_moment = adhesive_pw(spheres, moving)
    else:
        parts = [hertz_pw(spheres, moving), normal_damping(spheres, moving, walls=True)]
        energy, member_force, member_moment = (sum(part[k] for part in parts) for k in range(3))
    force, moment = _zeros(state)
    np.add.at(force, owner, member_force)
    np.add.at(moment, owner, member_moment + np.cross(arm, member_force))
    return energy, force, moment


def _clump_springs(model, state, rng):
    spheres, moving, _, _ = member_spheres(model, state)
    return random_springs(spheres, moving, "contact_pw" if "contact_pw" in spheres.interactions
                          else "adhesive_contact_pw", rng)


REFERENCE.update(clump_pw=clump_pw, adhesive_clump_pw=clump_pw)


def member_pairs(model, state, name="clump_pp"):
    """The touching member pairs of ``name`` (``clump_pp`` or ``adhesive_clump_pp``,
    `dem.interactions.clump_contacts`: the clumps'
    members and the other bodies as one member each), members of one body left out, each as a
    system of two free spheres: ``[(key, slot, (spheres, moving), arms)]`` with ``key`` the body
    pair ``(i, j)``, ``slot`` the member pair's place in its history (``(a · most + b) · 7``, or
    ``· 8`` under an adhesive law: the formed flag after the springs), the
    spheres at ``x + R s`` (rotated with scipy) moving at ``v + Ω × R s`` and spinning at ``Ω``
    with their bodies' masses and smallest principal moments, and ``arms`` their ``R s``."""
    from dem import SystemBuilder

    p = model.interactions[name]
    stride = 8 if name == "adhesive_clump_pp" else 7
    owner = np.repeat(np.arange(model.n_bodies), np.diff(p.member_start))
    local = np.arange(len(owner)) - p.member_start[owner]
    arm = Rotation.from_quat(state.orientation[owner][:, [1, 2, 3, 0]]).apply(p.member_offset)
    x = state.position[owner] + arm
    out = []
    for a in range(len(owner)):
        for b in range(a + 1, len(owner)):
            pair = [a, b]
            if owner[a] == owner[b] or np.linalg.norm(x[a] - x[b]) >= p.member_radius[pair].sum():
                continue
            system = SystemBuilder()
            system.add_bodies(x[pair], mass=model.mass[owner[pair]], inertia=model.inertia.min(axis=1)[owner[pair]],
                              diameter=2.0 * p.member_radius[pair], velocity=state.velocity[owner[pair]] + np.cross(
                                  state.angular_velocity[owner[pair]], arm[pair]),
                              angular_velocity=state.angular_velocity[owner[pair]])
            out.append(((int(owner[a]), int(owner[b])), (local[a] * p.most + local[b]) * stride,
                        system.finish(contact=model.sections["contact"]), arm[pair]))
    return out


def clump_pp(model, state, springs=None, name="clump_pp"):
    """`contact_pp` (or, without springs, `hertz_pp` with its dashpot; ``adhesive_clump_pp``:
    `adhesive_pp`) on every touching member
    pair as two free spheres (`member_pairs`; ``springs`` keyed by body pair, the member pairs'
    side by side), each member's force to its body and its moment plus ``R s × f`` about the
    body's centre of mass."""
    force, moment = _zeros(state)
    energy = 0.0
    pair_law = adhesive_pp if name == "adhesive_clump_pp" else contact_pp
    for (i, j), slot, (spheres, moving), arms in member_pairs(model, state, name):
        if springs is None:
            parts = [hertz_pp(spheres, moving), normal_damping(spheres, moving)]
            pair_energy, pair_force, pair_moment = (sum(part[k] for part in parts) for k in range(3))
        else:
            pair_energy, pair_force, pair_moment = pair_law(spheres, moving, {(0, 1): springs[i, j][slot:slot + 7]})
        energy += pair_energy
        for body, k in ((i, 0), (j, 1)):
            force[body] += pair_force[k]
            moment[body] += pair_moment[k] + np.cross(arms[k], pair_force[k])
    return energy, force, moment


def _clump_pair_springs(model, state, rng, name):
    """Random springs (`random_springs` of ``contact_pp``) on every touching member pair of
    ``name``, keyed by body pair (an adhesive law's formed flags 0: every touching pair forms)."""
    width = model.interactions[name].width
    springs = {}
    for key, slot, (spheres, moving), _ in member_pairs(model, state, name):
        springs.setdefault(key, np.zeros(width))[slot:slot + 7] = random_springs(spheres, moving, "contact_pp",
                                                                                 rng)[0, 1]
    return springs


REFERENCE.update(clump_pp=clump_pp, adhesive_clump_pp=lambda model, state, springs: clump_pp(model, state, springs,
                                                                                          "adhesive_clump_pp"))
