"""An independent plain-numpy implementation of every interaction of SPEC §3: energy, forces and
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


def hertz_pp(model, state):
    """``(2/5) K δ^{5/2}`` and ``(K/R_s) δ^{3/2} n`` over every touching pair (all pairs)."""
    force, moment = _zeros(state)
    k = model.sections["contact"]["k_pp"]
    x = state.position
    d = x[:, None, :] - x[None, :, :]
    r = np.linalg.norm(d, axis=2)
    reach = 0.5 * (model.diameter[:, None] + model.diameter[None, :])
    np.fill_diagonal(r, np.inf)
    touching = (model.diameter[:, None] > 0) & (model.diameter[None, :] > 0)
    delta = np.where(touching, np.clip(1 - r / reach, 0, None), 0.0)
    force += np.sum((k / reach * delta ** 1.5 / r)[:, :, None] * d, axis=1)
    return 0.5 * np.sum(0.4 * k * delta ** 2.5), force, moment


def closest_on_mesh(x, vertices, faces):
    """``(distance, point)`` of the surface ``(vertices, faces)`` closest to ``x``, by brute
    force: each triangle's plane projection if it falls inside (barycentric coordinates), else
    the closest point of its three sides."""
    best = (np.inf, None)
    for a, b, c in vertices[faces]:
        normal = np.cross(b - a, c - a)
        normal /= np.linalg.norm(normal)
        foot = x - np.dot(x - a, normal) * normal
        weights = np.linalg.solve(np.column_stack((b - a, c - a, normal)), foot - a)[:2]
        candidates = [foot] if weights.min() >= 0 and weights.sum() <= 1 else []
        for p, q in ((a, b), (b, c), (c, a)):
            t = np.clip(np.dot(x - p, q - p) / np.dot(q - p, q - p), 0.0, 1.0)
            candidates.append(p + t * (q - p))
        for point in candidates:
            if np.linalg.norm(x - point) < best[0]:
                best = (np.linalg.norm(x - point), point)
    return best


def hertz_pw(model, state):
    """``(2/5) K δ^{5/2}`` and ``(K/(D/2)) δ^{3/2} n_w`` with ``δ = 1 − (x − p)·n_w/(D/2)``; a
    mesh (convex, the particles outside: one contact each) at the closest point of its surface,
    ``δ = 1 − distance/(D/2)``, along the direction from that point to the centre."""
    force, moment = _zeros(state)
    k = model.sections["contact"]["k_pw"]
    energy = 0.0
    radius = 0.5 * model.diameter
    for p, n in zip(model.wall_point, model.wall_normal):
        delta = np.where(radius > 0, np.clip(1 - (state.position - p) @ n / np.where(radius > 0, radius, 1), 0, None),
                         0.0)
        energy += np.sum(0.4 * k * delta ** 2.5)
        force += (k / np.where(radius > 0, radius, 1) * delta ** 1.5)[:, None] * n
    for mesh in model.inputs["walls"]["meshes"]:
        for i, x in enumerate(state.position):
            distance, point = closest_on_mesh(x, mesh["vertices"] + mesh["center"], mesh["faces"])
            if radius[i] > 0 and distance < radius[i]:
                delta = 1 - distance / radius[i]
                energy += 0.4 * k * delta ** 2.5
                force[i] += k / radius[i] * delta ** 1.5 * (x - point) / distance
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
    "binder": binder, "hertz_pp": hertz_pp, "hertz_pw": hertz_pw, "gravity": gravity,
    "lennard_jones": lennard_jones, "ortolan_saccon": ortolan_saccon, "applied_force": applied_force,
}
