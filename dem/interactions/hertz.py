"""Normal contact (docs/theory.md §3; seed 001 eqs. 56–57): particle–particle (`HERTZ_PP`) and
particle–wall (`HERTZ_PW`, `ADHESIVE_PW`), with optional viscous normal damping. The normal law is
a sub-model chosen by ``[contact] normal`` from the registry `dem.interactions.normal.LAWS`
(Hertz, the default, below; Hooke's linear spring ``F = k_n ξ_n`` of the overlap ``ξ_n = L δ``,
``k_pp``, ``k_pw`` then ``k_n``, a force per length; JKR and DMT adhesion); the kernels call it by
its code (``law``) through `dem.interactions.normal`'s dispatch (`normal_law`, `normal_stiffness`,
`adhesive_law`). Friction and rolling resistance (`dem.interactions.friction`,
`dem.interactions.rolling`) read the same law's force and tangent stiffness, so they act on
each.

Consistent energy ``U = (2/5) K δ^{5/2}`` for the force ``(K/R_s) δ^{3/2}`` (the paper's 5/2
prefactor does not match its force; see docs/theory.md §3.3), with ``δ = 1 − r/R_s``, ``R_s = (D_i + D_j)/2``
between particles and ``δ = 1 − gap/(D/2)`` against a wall. Particle–particle pairs come from the
full neighbour list, bonded pairs included (a binder compressed shut is a contact); each particle
sums the forces on itself only, so rows are independent. A plane wall ``w`` passes through its
current point ``walls.point[w]`` (it may move: ``walls`` is the walls' state,
`dem.interactions.walls`) with the unit normal ``wall_normal[w]`` pointing to the particles'
side; a mesh wall's contacts are the gaps and normals `dem.meshes` found for the particle
(``walls.mesh_*``), under the same law. Each wall
contact books its reaction on the wall (`add_wall_load`).

Damping (off when ``restitution = 1``): a normal force ``−γ √(m* k_n) v_n`` with the contact
stiffness ``k_n = dF/dr``, the effective mass ``m*`` and the normal approach speed ``v_n``
(against a wall, relative to the wall's material at the contact point),
where ``γ = −2 √(5/6) ln e / √(ln² e + π²)`` for a coefficient of restitution ``e``
(`damping_from_restitution`, the usual Hertz–Tsuji form); for Hooke ``γ = −2 ln e / √(ln² e + π²)``,
which makes a head-on collision of a linear spring–dashpot rebound at exactly ``e`` after the
contact time ``π/√(k_n/m* − (c/2m*)²)``, ``c = γ √(m* k_n)``. Its work is booked as ``dissipated``.
"""

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..cell import TILTED, deforming, deforms, image_kind, image_velocity, minimum_image
from ..schema import Key, SceneError, non_negative, restitution
from .binder import BINDER
from .contract import ROW, Interaction
from ..meshes import MAX_CONTACTS
from .normal import (
    CODES, LAWS, adhesive_law, beyond_contact, is_adhesive, normal_law, normal_stiffness, separation, touch_energy,
)
from .walls import add_wall_load, wall_coefficients, wall_velocity_at

#: ``meshes``: whether the walls include meshes (`hertz_pw`; their contacts are read only then);
#: ``substeps``: the contact sub-steps per step of `hertz_pp` (`dem.integrators.respa`; 1 for `hertz_pw`).
HertzParams = namedtuple("HertzParams", "law stiffness damping wall_normal meshes substeps work")
#: ``dissipated (n,)``: the damping work booked to each particle so far; `hertz_pp` only: ``active
#: (n,)``, how many of the particle's contacts are active at the last force evaluation
#: (`ACTIVE_OVERLAP`), and ``fast (n, 3)``, the fast force of contact sub-stepping
#: (`dem.integrators.respa`; each force evaluation sets its elastic Hertz force), and ``mean (n,
#: 3)``, its scratch (the drifts' mean velocity): without sub-steps, and for the walls, no rows;
#: ``adhered (n, planes)``, whether the particle's JKR contact with each plane is formed (``(n, 0)``
#: for other laws), and ``hysteresis (n,)``, the energy its JKR contacts lost forming and breaking
#: (`adhesive_law`; no rows for a law without adhesion); ``cell_work (n,)`` (`hertz_pp`), the work
#: its contacts did against the moving images of a deforming cell (`dem.cell`: minus the work the
#: cell put in through them, the budget's ``cell`` column; no rows where the cell does not deform).
HertzState = namedtuple("HertzState", "dissipated active fast mean adhered hysteresis cell_work")
#: A contact is *active* (the next step sub-steps the contacts, `dem.integrators.respa`) when its
#: overlap δ, now or as its approach speed would carry it over two steps, exceeds this: pairs that
#: touch only by round-off (a block of spheres at rest spacing in flight) do not count.
ACTIVE_OVERLAP = 1e-9

NORMAL = Key("str", "hertz", "normal contact law (sub-model) of every particle–particle and particle–wall contact: "
             + "; ".join(f"'{law.name}', {law.doc}" for law in LAWS)
             + "; friction, rolling resistance and the damping act on each", "", choices=tuple(CODES))


def listing(names, word="and"):
    """``'a'``, ``'a' and 'b'``, ``'a', 'b' and 'c'`` (or another ``word``): names for a message or
    a key's doc."""
    quoted = [f"'{name}'" for name in names]
    return f" {word} ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)


def damping_from_restitution(restitution, law=0):
    """``γ`` of the normal ``law`` (its code; Hertz's by default) for a coefficient of restitution
    ``0 < e ≤ 1`` (``e = 1``: no damping): ``−2 f ln e / √(ln² e + π²)`` with the law's
    ``damping_factor`` ``f`` (`dem.interactions.normal.record.NormalLaw`)."""
    if restitution >= 1.0:
        return 0.0
    log_e = math.log(restitution)
    factor = LAWS[law].damping_factor
    return -2.0 * factor * log_e / math.sqrt(log_e * log_e + math.pi * math.pi)


def tsuji_damping(restitution, law=0):
    """``γ`` of Tsuji's damping (``damping = "tsuji"``) for a coefficient of restitution ``e``:
    Tsuji et al. (1992) write the dashpot ``α(e) √(m k)`` on the spring's secant stiffness in
    their effective-mass convention (``√2`` here); Marshall (2009, eq. 53) fits ``α(e)`` by a
    polynomial. The secant stiffness is ``k_n/s`` of the law's tangent stiffness (its
    ``secant_ratio`` ``s``: 1.5 for Hertz, 1 for Hooke), so ``γ = √2 α(e)/√s``. A Hertz collision
    rebounds at ``e`` to about 10⁻³ (0.1: 0.0995, 0.8: 0.7989, 0.9: 0.9002), where
    ``"restitution"`` gives ``e`` exactly."""
    if restitution >= 1.0:
        return 0.0
    e = restitution
    alpha = 1.2728 - 4.2783 * e + 11.087 * e ** 2 - 22.348 * e ** 3 + 27.467 * e ** 4 - 18.022 * e ** 5 \
        + 4.8218 * e ** 6
    return math.sqrt(2.0) * alpha / math.sqrt(LAWS[law].secant_ratio)


def no_damping(restitution, law=0):
    """``γ = 0``."""
    return 0.0


#: A damping sub-model of ``[contact] damping``: the text of its choice in the key's doc and its
#: set-up, ``gamma(e, law)``, the dashpot's ``γ`` for the restitution ``e`` under the normal law
#: of code ``law`` (`normal_damping`).
DampingModel = namedtuple("DampingModel", "doc gamma")
#: the damping sub-models, by their names in ``[contact] damping``
DAMPING_MODELS = {
    "restitution": DampingModel("sets γ so that a head-on collision rebounds at exactly the restitution e (Hertz and "
                                "Hooke)", damping_from_restitution),
    "tsuji": DampingModel("takes Tsuji's γ(e) (Marshall 2009's fit, as LAMMPS's 'damping tsuji')", tsuji_damping),
    "none": DampingModel("gives no damping (then restitution must be 1)", no_damping),
}
DAMPING = Key("str", "restitution", "normal damping (sub-model): a dashpot −γ √(m* k_n) v_n on the contact stiffness "
              "k_n; " + "; ".join(f"'{name}' {model.doc}" for name, model in DAMPING_MODELS.items()), "",
              choices=tuple(DAMPING_MODELS))

WORK_OF_ADHESION = Key("float", 0.0, "work of adhesion w of the adhesive normal laws "
                       + listing(law.name for law in LAWS if "work_of_adhesion" in law.needs)
                       + " (an energy per area; w = 2γ for like surfaces of surface energy γ, so LAMMPS's cohesion "
                       "parameter is w/2)",
                       "energy/area", non_negative)
RESTITUTION = Key("float", 1.0, "normal coefficient of restitution e of the contacts, which sets the damping ratio of "
                  "the normal law's dashpot (Hooke: exactly e in a head-on collision; 1: no damping; the damping "
                  "work is logged as 'dissipated'); with friction that ratio also damps the tangential spring "
                  "while it sticks", "", restitution)
#: contact sub-steps per step where a bond law with a fast axial spring acts, by default
#: (`contact_substeps`; `dem.integrators.respa`; docs/guide.md's contact sub-stepping)
SUBSTEPS = 3
KEYS_PP = {"contact": {
    "normal": NORMAL,
    "damping": DAMPING,
    "work_of_adhesion": WORK_OF_ADHESION,
    "k_pp": Key("float", 0.0, "particle–particle stiffness: Hertz K_pp (an energy), or with normal = 'hooke' the "
                "spring constant k_n (a force per length) (0: off)", "energy", non_negative),
    "restitution": RESTITUTION,
    "substeps": Key("int", 0, "velocity-Verlet sub-steps M of the fast forces (the elastic normal force between "
                    "particles, the binder's axial force) in every step in which a contact is active (r-RESPA: the "
                    "centres move in steps of dt/M under them; every other force, the damping and every rotation "
                    "stay on the step); it cuts the energy error where contacts open and close next to stiff bonds "
                    "(an impact of a bonded assembly), at the price of M - 1 more contact passes. 1: the plain "
                    "map (rrp1 always); 0, the default: M = 3 where three-spring bonds act, the plain map elsewhere "
                    "(docs/guide.md, contact sub-stepping)", "", non_negative),
}}
KEYS_PW = {"contact": {
    "normal": NORMAL,
    "damping": DAMPING,
    "work_of_adhesion": WORK_OF_ADHESION,
    "k_pw": Key("float", 0.0, "particle–wall stiffness: Hertz K_pw (an energy), or with normal = 'hooke' the spring "
                "constant k_n (a force per length) (0: off)", "energy", non_negative),
    "restitution": RESTITUTION,
}}


def normal_damping(contact):
    """``γ`` of the normal dashpot of a ``[contact]`` table (its ``damping`` sub-model)."""
    return DAMPING_MODELS[contact["damping"]].gamma(contact["restitution"], normal_code(contact))


def normal_code(contact):
    """The code of the normal law a ``[contact]`` table chooses (its position in
    `dem.interactions.normal.LAWS`)."""
    return CODES[contact["normal"]]


def adhesive(contact):
    """Whether a ``[contact]`` table chooses an adhesive normal law."""
    return LAWS[normal_code(contact)].adhesive

@njit(inline="always")
def stiffness_damped(force, power, share, stiffness, inverse_mass, approach_speed, damping):
    """``(force, power)`` with the normal damping force ``f_d = −γ √(m* k) v_n`` of the contact
    stiffness ``k`` added to the force and ``share · f_d · v_n`` taken from the power (a pair's row
    books half)."""
    if damping == 0.0 or inverse_mass == 0.0:
        return force, power
    f_d = -damping * np.sqrt(stiffness / inverse_mass) * approach_speed
    return force + f_d, power - share * f_d * approach_speed


@njit(inline="always")
def normal_damped(force, power, share, law, delta, stiffness, length, inverse_mass, approach_speed, damping):
    """`stiffness_damped` on the tangent stiffness of the normal ``law`` (`normal_stiffness`)."""
    return stiffness_damped(force, power, share, normal_stiffness(law, delta, stiffness, length), inverse_mass,
                            approach_speed, damping)


@njit(inline="always")
def in_contact(r2, reach):
    """Whether two spheres at squared distance ``r2`` whose radii add up to ``reach`` overlap by
    more than round-off: ``δ = 1 − r/reach > ACTIVE_OVERLAP`` (to 10⁻¹⁸). Such a contact is
    *active* (contact sub-stepping) and carries friction (`dem.interactions.friction`)."""
    return r2 < reach * reach * (1.0 - 2.0 * ACTIVE_OVERLAP)


@njit(inline="always")
def pair_active(i, j, dx, dy, dz, r2, reach, velocity, horizon):
    """1 if the contact of particles ``i`` and ``j`` (``d = x_i − x_j``, ``r² = |d|²``, radii adding
    up to ``reach``) is *active* (contact sub-stepping): `in_contact` now, or as its approach speed
    would carry it over the ``horizon``; else 0. (δ ≈ (R_s² − r²)/2R_s², and r² falls by 2 r × the
    approach speed per unit time.) The same bits from either row."""
    if in_contact(r2, reach):
        return 1
    approach = -((velocity[i, 0] - velocity[j, 0]) * dx + (velocity[i, 1] - velocity[j, 1]) * dy
                 + (velocity[i, 2] - velocity[j, 2]) * dz)
    return 1 if in_contact(r2 - 2.0 * horizon * max(approach, 0.0), reach) else 0


@njit(inline="always")
def pair_overlap(i, j, radius, position, diameter, cell, kind=TILTED):
    """``(dx, dy, dz, r², reach)`` of particles ``i`` (of radius ``radius``) and ``j``, ``d = x_i −
    x_j`` the nearest image's along the periodic axes of ``cell`` (`dem.cell`; ``kind``: its
    `dem.cell.image_kind`, read before a loop over a row); they touch when ``r² < reach²``."""
    dx, dy, dz = minimum_image(position[i, 0] - position[j, 0], position[i, 1] - position[j, 1],
                               position[i, 2] - position[j, 2], cell, kind)
    return dx, dy, dz, dx * dx + dy * dy + dz * dz, radius + 0.5 * diameter[j]


@njit(inline="always")
def wall_gap(i, w, position, wall_point, wall_normal):
    """Distance of particle ``i``'s centre from wall ``w`` along its normal."""
    return ((position[i, 0] - wall_point[w, 0]) * wall_normal[w, 0]
            + (position[i, 1] - wall_point[w, 1]) * wall_normal[w, 1]
            + (position[i, 2] - wall_point[w, 2]) * wall_normal[w, 2])


@njit(inline="always")
def _pair_row(i, st, bodies, contacts, p, damping, horizon=-1.0):
    """Particle ``i``'s contacts with other particles: ``(fx, fy, fz, power, energy, active, ex,
    ey, ez, driven)``, the Hertz (and damping) force on ``i``, half the damping power and elastic
    energy of its contacts (the other halves belong to the partners), with a ``horizon`` ≥ 0 (two
    steps; 0 at a run's start) how many of its pairs are active (`in_contact` now, or as the
    approach speed would carry them over the horizon; 0 without a horizon), the elastic Hertz
    force alone (with a horizon; 0 without), and half the power its pairs take from a deforming
    cell's moving images (`dem.cell.image_velocity`: 0 in a cell that does not deform, whose
    images' velocity, ±0, is not computed: subtracting it changes no bit)."""
    position, velocity, diameter, inverse_mass = st.position, st.velocity, bodies.diameter, bodies.inverse_mass
    start, index, stiffness, law, cell = contacts.start, contacts.neighbors, p.stiffness, p.law, st.cell
    fx = fy = fz = power = energy = ex = ey = ez = driven = 0.0
    active = 0
    radius = 0.5 * diameter[i]
    kind, moving = image_kind(cell), deforms(cell)  # (read before the loop: its copies skip what is not needed)
    wx = wy = wz = 0.0
    for k in range(start[i], start[i + 1]):
        j = index[k]
        dx, dy, dz, r2, reach = pair_overlap(i, j, radius, position, diameter, cell, kind)
        if horizon >= 0.0:
            active += pair_active(i, j, dx, dy, dz, r2, reach, velocity, horizon)
        if r2 >= reach * reach:
            continue
        r = np.sqrt(r2)
        delta = 1.0 - r / reach
        u, force = normal_law(law, delta, stiffness, reach)
        energy += 0.5 * u
        if horizon >= 0.0:
            elastic = force / r
            ex += elastic * dx
            ey += elastic * dy
            ez += elastic * dz
        if moving:
            wx, wy, wz = image_velocity(i, j, dx, dy, dz, position, cell)
        if damping != 0.0:
            speed = ((velocity[i, 0] - velocity[j, 0] - wx) * dx + (velocity[i, 1] - velocity[j, 1] - wy) * dy
                     + (velocity[i, 2] - velocity[j, 2] - wz) * dz) / r
            force, power = normal_damped(force, power, 0.5, law, delta, stiffness, reach,
                                         inverse_mass[i] + inverse_mass[j], speed, damping)
        force /= r
        fx += force * dx
        fy += force * dy
        fz += force * dz
        if moving:
            driven += 0.5 * force * (wx * dx + wy * dy + wz * dz)
    return fx, fy, fz, power, energy, active, ex, ey, ez, driven


@njit(inline="always")
def wall_contact(i, w, gap, nx, ny, nz, radius, power, position, velocity, inverse_mass, law, stiffness, damping,
                  walls):
    """Wall ``w``'s normal contact with particle ``i`` (centre at ``gap < radius`` from the wall
    along the unit normal ``n``): ``(|F|, power, energy, p, k)`` with the damping power added to
    ``power``, ``p`` the contact point on the wall and ``k = dF/dgap``. (It takes the walls'
    velocities out of ``walls`` itself, for touching particles only.)"""
    delta = 1.0 - gap / radius
    u, force = normal_law(law, delta, stiffness, radius)
    px, py, pz = position[i, 0] - gap * nx, position[i, 1] - gap * ny, position[i, 2] - gap * nz  # on the wall
    if damping != 0.0:
        wx, wy, wz = wall_velocity_at(walls.point, walls.velocity, walls.angular_velocity, w, px, py, pz)
        speed = (velocity[i, 0] - wx) * nx + (velocity[i, 1] - wy) * ny + (velocity[i, 2] - wz) * nz
        force, power = normal_damped(force, power, 1.0, law, delta, stiffness, radius, inverse_mass, speed, damping)
    return force, power, u, px, py, pz, normal_stiffness(law, delta, stiffness, radius)


@njit(inline="always")
def _wall_row(i, st, bodies, p, walls, damping):
    """The walls' contacts with particle ``i``, the planes' then (``p.meshes``) the mesh contacts
    `dem.meshes` found for it: ``(fx, fy, fz, power, energy)`` (none for a body without contact
    diameter); books their reactions on the walls (`add_wall_load`; on every plane for every row,
    zero without contact: an unconditional write keeps the pass over the bodies fast)."""
    position, velocity, wall_point, wall_normal, stiffness = st.position, st.velocity, walls.point, \
        p.wall_normal, p.stiffness
    inverse_mass = bodies.inverse_mass[i]
    fx = fy = fz = power = energy = 0.0
    radius = 0.5 * bodies.diameter[i]
    for w in range(wall_normal.shape[0]):
        gap = wall_gap(i, w, position, wall_point, wall_normal)
        nx, ny, nz = wall_normal[w, 0], wall_normal[w, 1], wall_normal[w, 2]
        force = u = px = py = pz = k = 0.0
        if gap < radius and radius > 0.0:
            force, power, u, px, py, pz, k = wall_contact(i, w, gap, nx, ny, nz, radius, power, position, velocity,
                                                           inverse_mass, p.law, stiffness, damping, walls)
            px, py, pz = px - wall_point[w, 0], py - wall_point[w, 1], pz - wall_point[w, 2]
        add_wall_load(walls, i, w, force * nx, force * ny, force * nz, px, py, pz, k)
        energy += u
        fx, fy, fz = fx + force * nx, fy + force * ny, fz + force * nz
    if p.meshes:
        mesh_count, mesh_wall, mesh_gap, mesh_normal = walls.mesh_count, walls.mesh_wall, walls.mesh_gap, \
            walls.mesh_normal
        for c in range(min(mesh_count[i], MAX_CONTACTS)):
            w = mesh_wall[i, c]
            nx, ny, nz = mesh_normal[i, c, 0], mesh_normal[i, c, 1], mesh_normal[i, c, 2]
            force, power, u, px, py, pz, k = wall_contact(i, w, mesh_gap[i, c], nx, ny, nz, radius, power, position,
                                                           velocity, inverse_mass, p.law, stiffness, damping, walls)
            add_wall_load(walls, i, w, force * nx, force * ny, force * nz, px - wall_point[w, 0],
                          py - wall_point[w, 1], pz - wall_point[w, 2], k)
            energy += u
            fx, fy, fz = fx + force * nx, fy + force * ny, fz + force * nz
    return fx, fy, fz, power, energy


@njit(inline="always")
def adhesive_wall_contact(i, w, plane, gap, nx, ny, nz, radius, inverse_mass, power, lost, position, velocity, p, own,
                          walls, advance):
    """Wall ``w``'s contact with particle ``i`` (centre at ``gap`` from the wall along the unit
    normal ``n``) under an adhesive normal law: ``(touching, |F|, power, U_H, U_a, lost, p, k)``
    with the damping power added to ``power`` and the energy lost by a JKR contact that formed or
    broke added to ``lost``, ``p`` the contact point on the wall and ``k = dF/dgap``. A plane's
    (``plane``) JKR contact stays formed while ``ξ > ξ_c`` (the law's ``separation``), its flag
    ``own.adhered[i, w]`` (updated with ``advance``); a mesh contact is one while it overlaps."""
    holds = beyond_contact(p.law)
    formed = holds and plane and own.adhered[i, w] != 0
    touching = gap < radius
    if formed and not touching:  # stretched: it holds down to ξ_c, where it snaps off and its energy is lost
        broken, snapped = separation(p.law, p.stiffness, radius, radius, p.work)
        touching = radius - gap > broken
        if not touching:
            lost += snapped
    if advance and holds and plane:
        own.adhered[i, w] = 1 if touching else 0
    if not touching:
        return False, 0.0, power, 0.0, 0.0, lost, 0.0, 0.0, 0.0, 0.0
    delta = 1.0 - gap / radius
    u_h, u_a, force, k = adhesive_law(p.law, delta, p.stiffness, radius, radius, p.work)
    if holds and not formed:  # it snaps on: the curve's energy at touch is lost
        lost -= touch_energy(p.law, p.stiffness, radius, radius, p.work)
    px, py, pz = position[i, 0] - gap * nx, position[i, 1] - gap * ny, position[i, 2] - gap * nz
    if p.damping != 0.0 and inverse_mass != 0.0:
        vx, vy, vz = wall_velocity_at(walls.point, walls.velocity, walls.angular_velocity, w, px, py, pz)
        speed = (velocity[i, 0] - vx) * nx + (velocity[i, 1] - vy) * ny + (velocity[i, 2] - vz) * nz
        force, power = stiffness_damped(force, power, 1.0, k, inverse_mass, speed, p.damping)
    return True, force, power, u_h, u_a, lost, px, py, pz, k


@njit(cache=True)
def _adhesive_wall_row(i, h, st, bodies, p, own, walls, advance):
    """`_wall_row` for an adhesive normal law: ``(fx, fy, fz, power, U_H, U_a, lost)``, the
    force and damping power of the walls' contacts on particle ``i``, their Hertz and adhesion
    energies and, with ``advance``, the energy lost by the JKR contacts that formed or broke at
    this evaluation (their flags ``own.adhered`` updated, the reactions booked on the walls;
    `adhesive_wall_contact`)."""
    position, velocity, wall_point, wall_normal = st.position, st.velocity, walls.point, p.wall_normal
    inverse_mass = bodies.inverse_mass[i]
    radius = 0.5 * bodies.diameter[i]
    fx = fy = fz = power = u_hertz = u_adhesion = lost = 0.0
    if radius <= 0.0:
        return fx, fy, fz, power, u_hertz, u_adhesion, lost
    contacts = wall_normal.shape[0] + (min(walls.mesh_count[i], MAX_CONTACTS) if p.meshes else 0)
    for c in range(contacts):
        if c < wall_normal.shape[0]:
            w = c
            nx, ny, nz = wall_normal[w, 0], wall_normal[w, 1], wall_normal[w, 2]
            gap = wall_gap(i, w, position, wall_point, wall_normal)
        else:
            m = c - wall_normal.shape[0]
            w = walls.mesh_wall[i, m]
            nx, ny, nz = walls.mesh_normal[i, m, 0], walls.mesh_normal[i, m, 1], walls.mesh_normal[i, m, 2]
            gap = walls.mesh_gap[i, m]
        touching, force, power, u_h, u_a, lost, px, py, pz, k = adhesive_wall_contact(
            i, w, c < wall_normal.shape[0], gap, nx, ny, nz, radius, inverse_mass, power, lost, position, velocity, p,
            own, walls, advance)
        if not touching:
            continue
        u_hertz += u_h
        u_adhesion += u_a
        if advance:
            add_wall_load(walls, i, w, force * nx, force * ny, force * nz, px - wall_point[w, 0],
                          py - wall_point[w, 1], pz - wall_point[w, 2], k)
        fx, fy, fz = fx + force * nx, fy + force * ny, fz + force * nz
    return fx, fy, fz, power, u_hertz, u_adhesion, lost


@njit(inline="always")
def _elastic_over_r(r2, reach, law, stiffness):
    """``|F|/r`` of the elastic normal force of two spheres overlapping at squared distance ``r2``
    (the same bits as `_pair_row`'s elastic force)."""
    r = np.sqrt(r2)
    return normal_law(law, 1.0 - r / reach, stiffness, reach)[1] / r


@njit(cache=True, _nrt=False)
def hertz_pp_fast(lo, hi, st, bodies, contacts, p, fast):
    """``fast[i]``: the elastic Hertz force of particle ``i``'s contacts on it, ``lo ≤ i < hi``
    (no damping: a function of the positions alone; the fast force of `dem.integrators.respa`).
    Each pair's force is computed from both rows by the same expression, so the two are exactly
    opposite."""
    position, diameter, start, index, stiffness = st.position, bodies.diameter, contacts.start, contacts.neighbors, \
        p.stiffness
    for i in range(lo, hi):
        fx = fy = fz = 0.0
        radius = 0.5 * diameter[i]
        kind = image_kind(st.cell)
        for k in range(start[i], start[i + 1]):
            dx, dy, dz, r2, reach = pair_overlap(i, index[k], radius, position, diameter, st.cell, kind)
            if r2 >= reach * reach:
                continue
            force = _elastic_over_r(r2, reach, p.law, stiffness)
            fx += force * dx
            fy += force * dy
            fz += force * dz
        fast[i, 0] = fx
        fast[i, 1] = fy
        fast[i, 2] = fz


@njit(cache=True, _nrt=False)
def hertz_pp_fast_pairs(st, bodies, contacts, p, fast):
    """`hertz_pp_fast` of every particle, serially, visiting each pair once: the pair ``i < j``
    adds its force to ``fast[i]`` and takes it from ``fast[j]``. Rows are in ascending order
    (`dem.neighbors`), so each particle receives its pairs' forces in its row's order, and the
    sums are those of `hertz_pp_fast`, bit for bit, at half the pair evaluations."""
    position, diameter, start, index, stiffness = st.position, bodies.diameter, contacts.start, contacts.neighbors, \
        p.stiffness
    for i in range(position.shape[0]):
        for c in range(3):
            fast[i, c] = 0.0
    kind = image_kind(st.cell)
    for i in range(position.shape[0]):
        radius = 0.5 * diameter[i]
        fx, fy, fz = fast[i, 0], fast[i, 1], fast[i, 2]  # the pairs j < i's, added in row order
        for k in range(start[i], start[i + 1]):
            j = index[k]
            if j < i:
                continue
            dx, dy, dz, r2, reach = pair_overlap(i, j, radius, position, diameter, st.cell, kind)
            if r2 >= reach * reach:
                continue
            force = _elastic_over_r(r2, reach, p.law, stiffness)
            fx += force * dx
            fy += force * dy
            fz += force * dz
            fast[j, 0] -= force * dx
            fast[j, 1] -= force * dy
            fast[j, 2] -= force * dz
        fast[i, 0] = fx
        fast[i, 1] = fy
        fast[i, 2] = fz


@njit(inline="always")
def _booked(i, h, own, row):
    """A row's force as body ``i``'s share; books its damping work (every step, 0 without
    damping: see `dem.interactions.contract`)."""
    own.dissipated[i] += h * row[3]
    return row[0], row[1], row[2], 0.0, 0.0, 0.0


@njit(inline="always")
def hertz_pp_forces(i, h, st, bodies, contacts, p, own):
    """Hertz forces of particle ``i``'s contacts on it; books half the damping work of each
    (a particle without contact has an empty neighbour row) and, when the contacts are
    sub-stepped, how many of them are active (``own.active``, `dem.integrators.respa`)."""
    row = _pair_row(i, st, bodies, contacts, p, p.damping, 2.0 * h if p.substeps > 1 else -1.0)
    if own.cell_work.shape[0] > 0:  # a deforming cell
        own.cell_work[i] -= h * row[9]
    if p.substeps > 1:  # as hertz_pp_fast: the last sub-step's f comes from here (the plain map reads none)
        own.active[i] = row[5]
        own.fast[i, 0] = row[6]
        own.fast[i, 1] = row[7]
        own.fast[i, 2] = row[8]
    return _booked(i, h, own, row)


@njit(inline="always")
def hertz_pw_forces(i, h, st, bodies, contacts, p, own, walls):
    """Hertz forces of all walls on particle ``i`` (``walls``: the walls' state); books the
    damping work and the reactions on the walls (and the hysteresis of adhesive contacts)."""
    if is_adhesive(p.law):
        row = _adhesive_wall_row(i, h, st, bodies, p, own, walls, True)
        own.hysteresis[i] += row[6]
        return _booked(i, h, own, row)
    return _booked(i, h, own, _wall_row(i, st, bodies, p, walls, p.damping))


@njit(cache=True)
def hertz_pp_energy(st, bodies, contacts, p, own):
    """``(hertz_pp, dissipated, cell)``: the normal law's energy (Hertz ``(2/5) K δ^{5/2}``) over
    touching pairs, half from each row, the booked damping work and the work done against a
    deforming cell."""
    energy = 0.0
    for i in range(st.position.shape[0]):
        energy += _pair_row(i, st, bodies, contacts, p, 0.0)[4]
    return energy, np.sum(own.dissipated), np.sum(own.cell_work)


@njit(cache=True)
def hertz_pw_energy(st, bodies, contacts, p, own, walls):
    """``(hertz_pw, dissipated)``: the normal law's energy over particle–wall contacts, plane by
    plane, then the mesh contacts particle by particle."""
    energy = 0.0
    position, diameter, wall_point, wall_normal = st.position, bodies.diameter, walls.point, p.wall_normal
    mesh_count, mesh_gap = walls.mesh_count, walls.mesh_gap
    for w in range(wall_normal.shape[0]):
        for i in range(diameter.shape[0]):
            radius = 0.5 * diameter[i]
            gap = wall_gap(i, w, position, wall_point, wall_normal)
            if radius > 0.0 and gap < radius:
                energy += normal_law(p.law, 1.0 - gap / radius, p.stiffness, radius)[0]
    for i in range(mesh_count.shape[0]):
        radius = 0.5 * diameter[i]
        for k in range(min(mesh_count[i], MAX_CONTACTS)):
            energy += normal_law(p.law, 1.0 - mesh_gap[i, k] / radius, p.stiffness, radius)[0]
    return energy, np.sum(own.dissipated)


@njit(cache=True)
def adhesive_pw_energy(st, bodies, contacts, p, own, walls):
    """``(hertz_pw, adhesion, hysteresis, dissipated)`` of the walls' contacts under an adhesive
    normal law."""
    u_hertz = u_adhesion = 0.0
    for i in range(st.position.shape[0]):
        row = _adhesive_wall_row(i, 0.0, st, bodies, p, own, walls, False)
        u_hertz += row[4]
        u_adhesion += row[5]
    return u_hertz, u_adhesion, np.sum(own.hysteresis), np.sum(own.dissipated)


def contact_substeps(model):
    """The contact sub-steps ``M`` of ``model``: ``[contact] substeps``, or, when it is 0 (the
    default), `SUBSTEPS` where a bond law whose axial spring is part of the fast force acts (the
    three-spring binder's, `dem.interactions.binder.BINDER`'s ``fast``: a bonded assembly whose contacts open
    and close next to its stiff bonds) and 1, the plain map, elsewhere (granular matter, whose
    contacts the time step resolves: there the sub-steps cost their price and change little) and
    under an adhesive law (whose force depends on the contact's history, which the sub-steps do
    not carry: `dem.interactions.contact.check_sub_models` refuses ``substeps > 1`` with it)."""
    substeps = int(model.sections["contact"]["substeps"])
    if substeps > 0:
        return substeps
    if adhesive(model.sections["contact"]):
        return 1
    return SUBSTEPS if BINDER.fast is not None and BINDER.setup(model) is not None else 1


def carries_springs(contact):
    """Whether the particle–particle contacts of a ``[contact]`` table carry friction, rolling
    resistance or adhesion: then `dem.interactions.contact`'s pipeline acts for them instead of
    ``hertz_pp``."""
    return contact["k_pp"] > 0.0 and (contact["friction"] > 0.0 or contact["rolling_friction"] > 0.0
                                      or contact["twisting_friction"] > 0.0 or adhesive(contact))


def sub_model_error(contact, key, models, what, plural):
    """The one-line error of a ``[contact]`` table whose sub-model ``contact[key]`` (one of
    ``models``, by name, each with its ``needs``: the keys it reads, which must then be positive,
    and what each is) lacks a parameter it needs or has one set that only other sub-models read;
    or None. ``what``, ``plural``: what one sub-model is called, and several."""
    chosen = contact[key]
    for parameter in dict.fromkeys(name for model in models.values() for name in model.needs):
        users = [name for name, model in models.items() if parameter in model.needs]
        if chosen in users and contact[parameter] <= 0.0:
            return f"contact.{parameter}: the '{chosen}' {what} needs {models[chosen].needs[parameter]}"
        if chosen not in users and contact[parameter] > 0.0:
            who = f"the {listing(users)} {what} uses" if len(users) == 1 else f"the {plural} {listing(users)} use"
            return f"contact.{parameter}: only {who} it (contact.{key} is '{chosen}')"
    return None


def jkr_skin(contact, diameter):
    """The Verlet skin a law that holds contacts stretched (JKR) needs so that every formed contact
    stays listed until it breaks (`dem.neighbors`: a pair within ``reach + skin`` at a build is
    listed until the next): 1.1 × the largest separation ``−ξ_c`` (its ``separation``) among pairs
    of the smallest and largest particles (``diameter``: the spheres that touch, clumps' members
    included; 0 for other laws)."""
    sizes = diameter[diameter > 0]
    law = LAWS[normal_code(contact)]
    if not law.beyond_contact or contact["k_pp"] <= 0.0 or not len(sizes):
        return 0.0
    radii = (0.5 * sizes.min(), 0.5 * sizes.max())
    stiffness, work = float(contact["k_pp"]), float(contact["work_of_adhesion"])
    return 1.1 * max(-law.separation(stiffness, a + b, a * b / (a + b), work)[0] for a in radii for b in radii)


def wall_pipeline_acts(model):
    """Whether the particle–wall pipeline (`dem.interactions.wall_contact`) acts in ``model``, in
    place of ``hertz_pw`` or ``adhesive_pw``: a particle–wall normal law, and friction or rolling
    resistance at a wall."""
    contact = model.sections["contact"]
    return bool(contact["k_pw"] > 0.0 and "walls" in model.inputs and (model.diameter > 0).any()
                and (wall_coefficients(model)[:, 3:] > 0).any())


def check_formed_on_meshes(contact, meshes):
    """Refuse a law that holds contacts stretched (JKR, whose formed flags are kept per plane) with
    mesh walls (``meshes``)."""
    if LAWS[normal_code(contact)].beyond_contact and meshes:
        raise SceneError(f"contact.normal: the '{contact['normal']}' law acts on particles and planes; mesh walls "
                         f"take {listing((other.name for other in LAWS if not other.beyond_contact), 'or')}")


def _setup(stiffness_key, needs_walls, adhesion):
    def setup(model):
        substeps = 1 if needs_walls else contact_substeps(model)
        contact = model.sections["contact"]
        stiffness = contact[stiffness_key]
        if stiffness <= 0.0 or not (model.diameter > 0).any() or (needs_walls and "walls" not in model.inputs) \
                or (not needs_walls and (carries_springs(contact) or model.has_clumps)) \
                or adhesive(contact) != adhesion \
                or (needs_walls and wall_pipeline_acts(model)):  # `dem.interactions.wall_contact` acts instead
            return None
        meshes = bool(needs_walls and model.inputs["walls"]["meshes"])
        check_formed_on_meshes(contact, meshes)
        return HertzParams(normal_code(contact), float(stiffness), normal_damping(contact), model.wall_normal, meshes,
                           substeps, float(contact["work_of_adhesion"]))

    return setup


def initial_state(model, params):
    n = model.n_bodies
    steps = n if params.substeps > 1 else 0  # the sub-steps' active contacts, fast force and scratch (`hertz_pp`)
    planes = params.wall_normal.shape[0] if LAWS[params.law].beyond_contact else 0  # formed flags per plane
    return HertzState(np.zeros(n), np.zeros(steps, np.int64), np.zeros((steps, 3)), np.zeros((steps, 3)),
                      np.zeros((n, planes), np.uint8), np.zeros(n if LAWS[params.law].adhesive else 0),
                      np.zeros(n if deforming(model.sections["cell"]) else 0))


def contact_critical_step(model, state, p, reach_factor, scale):
    """``(dt, body)``: ``2/ω`` of the stiffest contact oscillator of the normal law ``p.law`` (of
    stiffness ``p.stiffness``). Each particle's contact is taken at the overlap its kinetic energy
    would reach, ``U(δ*) = ½ m v²`` (at least 1 %), with the law's tangent stiffness there (its
    ``critical_stiffness``; ``L = reach_factor · D``); ``scale(δ*)`` turns it into ``ω²``
    per particle (inverse masses, the pair factor, a stiffness ratio, …)."""
    stiffness = p.stiffness
    energy = 0.5 * model.mass * np.sum(state.velocity ** 2, axis=1) + 1e-300
    length = reach_factor * model.diameter
    with np.errstate(divide="ignore", invalid="ignore"):
        overlap, contact = LAWS[p.law].critical_stiffness(energy, stiffness, length)
        omega2 = np.where(model.diameter > 0, contact * scale(overlap), 0.0)
    k = int(np.argmax(omega2))
    return 2.0 / np.sqrt(omega2[k]), k


def inverse_masses(model):
    """``(1/m, 1/J)`` per body, 0 for pinned (mass) and clamped (inertia) bodies; ``J`` the first
    principal moment (spheres)."""
    return np.where(model.pinned, 0.0, 1.0 / model.mass), np.where(model.clamped, 0.0, 1.0 / model.inertia[:, 0])


def normal_critical_step(what, reach_factor, pair_factor):
    """The normal contact oscillator (`contact_critical_step`): ``ω² = k_n(δ*) · pair/m``."""
    def critical_step(model, state, p):
        inverse_mass = inverse_masses(model)[0]
        dt, k = contact_critical_step(model, state, p, reach_factor, lambda overlap: inverse_mass * pair_factor)
        return [(dt, what, k)]

    return critical_step


HERTZ_PP = Interaction(
    name="hertz_pp", kind=ROW,
    doc="Normal contact (Hertz or Hooke) between every pair of touching particles (bonded or not).",
    columns=("hertz_pp", "dissipated", "cell"), internal=True, keys=KEYS_PP, setup=_setup("k_pp", False, False),
    state=initial_state, forces=hertz_pp_forces, energy=hertz_pp_energy, neighbors=True, fast_pairs=True,
    critical_step=normal_critical_step("normal contact particle–particle", 1.0, 2.0),
)
HERTZ_PW = Interaction(
    name="hertz_pw", kind=ROW,
    doc="Normal contact (Hertz or Hooke) between particles and the walls (planes and meshes), where neither "
        "friction nor rolling resistance acts at a wall (else contact_pw applies it).",
    columns=("hertz_pw", "dissipated"), internal=False, keys=KEYS_PW, setup=_setup("k_pw", True, False),
    state=initial_state, forces=hertz_pw_forces, energy=hertz_pw_energy, walls=True,
    critical_step=normal_critical_step("normal contact particle–wall", 0.5, 1.0),
)
ADHESIVE_PW = Interaction(
    name="adhesive_pw", kind=ROW,
    doc="Normal contact with adhesion (JKR or DMT) between particles and the walls (JKR: planes only), where neither "
        "friction nor rolling resistance acts at a wall (else adhesive_contact_pw applies it).",
    columns=("hertz_pw", "adhesion", "hysteresis", "dissipated"), internal=False, keys=KEYS_PW,
    setup=_setup("k_pw", True, True), state=initial_state, forces=hertz_pw_forces, energy=adhesive_pw_energy,
    walls=True, critical_step=normal_critical_step("normal contact particle–wall", 0.5, 1.0),
)
