"""One battery for every registered interaction (docs/theory.md §3), generated from the registry:

* the kernels equal an independent plain-numpy implementation (`reference_laws`) to 1e-12 on a
  table of configurations (energy, forces, moments);
* forces and moments equal minus the central-difference gradient of the energy;
* internal interactions have ΣF = 0 and Σ(x × F + τ) = 0;
* nothing acts beyond reach, bonds at rest are unloaded.

Every interaction of `dem.interactions.INTERACTIONS` must have configurations in `CASES`, or be
one of the `NOT_POTENTIALS` (no potential to differentiate), which have their own test modules.

Interactions with per-contact springs (friction, rolling, twisting) are not gradients of a
potential of the configuration: their force depends on the springs' history. Their cases come
with random springs (within the slip limits, `reference_laws.random_springs`), the kernels are
compared with the numpy laws for those springs, and in place of the gradient test they pass
`test_spring_forces_are_minus_the_virtual_work`: for an infinitesimal motion of one body the
spring energy plus the work the interaction books changes by minus the work of its force and
moment (the statement the energy budget rests on)."""

import copy
import functools
from pathlib import Path

import numpy as np
import pytest
from support.reference_laws import REFERENCE, random_springs

from dem import SystemBuilder
from dem.builders.tetra_chain import TETRAHEDRON
from dem.contacts import restore_history
from dem.diagnostics import interaction_energies
from dem.engine import compute_forces, new_contacts
from dem.interactions import INTERACTIONS, hertz, list_diameters
from dem.rotations import quat_from_rotvec, quat_matrix, quat_multiply

SEEDS = range(5)
#: columns that book work taken out of the system: not potential energy
BOOKED = ("broken", "dissipated", "friction", "walls", "hysteresis")
#: interactions with contact springs: their cases give springs (see the module's docstring)
SPRINGS = ("contact_pp", "adhesive_pp", "contact_pw", "adhesive_contact_pw", "clump_pw", "adhesive_clump_pw",
           "clump_pp", "adhesive_clump_pp")
#: interactions that derive from no potential, and the modules that test them
NOT_POTENTIALS = {"walls": "test_walls.py", "damping": "test_damping.py", "cell": "test_deforming.py",
                  "insertion": "test_insertion.py"}


def random_quaternions(rng, n, angle=np.pi):
    axes = rng.normal(size=(n, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    return quat_from_rotvec(axes * rng.uniform(0, angle, size=(n, 1)))


def bonded_chain(**bond):
    """Four bonded spheres at rest in a random configuration, then displaced and turned; ``bond``
    is what `SystemBuilder.add_bond` takes (the three-spring binder's stiffnesses, or a law and its
    parameters)."""
    def make(rng):
        system = SystemBuilder()
        position = np.cumsum(rng.normal(scale=0.3, size=(4, 3)) + [1.0, 0, 0], axis=0)
        orientation = random_quaternions(rng, 4)
        for x, q in zip(position, orientation):
            system.add_body(x, mass=1.0, inertia=1.0, orientation=q, diameter=rng.uniform(1.0, 1.4))
        for i, j in ((0, 1), (1, 2), (2, 3), (3, 0)):
            system.add_bond(i, j, **bond)
        model, state = system.finish()
        state.position += rng.normal(scale=0.1, size=(4, 3))
        state.orientation[:] = quat_multiply(random_quaternions(rng, 4, angle=1.0), state.orientation)
        return model, state

    return make


def overlapping_cloud(rng, **contact):
    """Polydisperse spheres packed closely enough that several pairs overlap."""
    system = SystemBuilder()
    for x in rng.uniform(0, 2.0, size=(12, 3)):
        system.add_body(x, mass=1.0, inertia=1.0, diameter=rng.uniform(0.6, 1.2))
    return system.finish(contact={"k_pp": 50.0, **contact})


def spheres_near_walls(rng, wall_friction=None, **contact):
    system = SystemBuilder()
    for _ in range(8):
        system.add_body(rng.uniform(-0.3, 1.0, size=3), mass=1.0, inertia=1.0, diameter=rng.uniform(0.5, 1.0),
                        orientation=random_quaternions(rng, 1)[0])
    walls = [dict(point=(0.0, 0.0, 0.0), normal=(1.0, 0.0, 0.0), size=0.0),
             dict(point=(0.0, 0.1, 0.0), normal=(0.6, 0.8, 0.0), size=0.0, **(wall_friction or {}))]
    return system.finish(walls, contact={"k_pw": 30.0, **contact})


def three_clumps(rng, extent):
    """A system with a dimer, a tetrahedral clump and a trimer of unequal members (`dem.clumps`) at
    random places in the cube ``[0, extent]³`` and random orientations."""
    system = SystemBuilder()
    for template, (mass, moments, centre, axes, offsets) in _clump_frames():
        density = rng.uniform(0.8, 1.5)
        system.add_clumps(template, rng.uniform(0.0, extent, size=(1, 3)), orientation=random_quaternions(rng, 1),
                          frame=(density * mass, density * moments, centre, axes.copy(), offsets.copy()))
    return system


@functools.lru_cache(maxsize=None)
def _clump_frames():
    """`three_clumps`'s templates and their `dem.clumps.body_frame` at density 1 (mass and moments
    scale with the density): the union volume's quadrature, computed once."""
    from dem.clumps import Template, body_frame, built_in

    templates = (built_in("dimer", 0.4, 0.4), built_in("tetrahedron", 0.3, 0.35),
                 Template(np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.4, 0.1]]), np.array([0.35, 0.3, 0.25])))
    return tuple((template, body_frame(template)) for template in templates)


def clumps_near_walls(rng, wall_friction=None, **contact):
    """`three_clumps` among the planes of `spheres_near_walls`, some of their members sunk into
    them."""
    system = three_clumps(rng, 0.5)
    walls = [dict(point=(0.0, 0.0, 0.0), normal=(1.0, 0.0, 0.0), size=0.0),
             dict(point=(0.0, 0.1, 0.0), normal=(0.6, 0.8, 0.0), size=0.0, **(wall_friction or {}))]
    return system.finish(walls, contact={"k_pw": 30.0, **contact})


def clumps_around_a_mesh(rng):
    """`three_clumps` pressed onto the convex polyhedron of `spheres_around_a_mesh` from outside,
    each moved along a random direction from the mesh's centre until a member touches, then
    further in, so that members overlap its faces and edges (no damping, no springs:
    the normal law alone)."""
    from support.reference_laws import closest_on_mesh

    vertices, faces, _ = convex_mesh(rng)
    system = three_clumps(rng, 0.0)
    model, state = system.finish([], [dict(vertices=vertices, faces=faces)], contact={"k_pw": 30.0})
    centre = vertices.mean(axis=0)
    corner = vertices[faces[:, 0]]
    outward = np.cross(vertices[faces[:, 1]] - corner, vertices[faces[:, 2]] - corner)
    outward *= np.sign(np.sum((corner - centre) * outward, axis=1))[:, None]
    owner = np.repeat(np.arange(model.n_bodies), np.diff(model.site_start))
    arms = np.einsum("nij,nj->ni", quat_matrix(state.orientation[owner]), model.site_offset)

    def clear(body, x):  # whether the body's members, its centre at x, are all outside and off the surface
        return all((np.sum((x + arms[m] - corner) * outward, axis=1) > 0).any()
                   and closest_on_mesh(x + arms[m], vertices, faces)[0] > model.site_radius[m]
                   for m in np.flatnonzero(owner == body))

    for body in range(model.n_bodies):
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        lo, hi = 0.0, 6.0  # bisection for the distance along u at which a member touches
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if clear(body, centre + mid * u) else (mid, hi)
        state.position[body] = centre + (hi - rng.uniform(0.02, 0.15)) * u
    return model, state


def clumps_touching(rng, **contact):
    """`three_clumps` and two spheres, close enough that members of different bodies overlap (the
    members of one clump overlap too, and do not touch)."""
    system = three_clumps(rng, 0.9)
    for x in rng.uniform(0.0, 0.9, size=(2, 3)):
        system.add_body(x, mass=rng.uniform(0.5, 1.5), inertia=rng.uniform(0.05, 0.1), diameter=rng.uniform(0.5, 0.8))
    return system.finish(contact={"k_pp": 50.0, **contact})


def with_springs(name, make, **contact):
    """A configuration of the spring interaction ``name`` alone (a wall's: without the normal
    contact it rides on; the walls' bookkeeping, which it reads, is kept), spinning bodies, and
    random springs on its contacts."""
    def configure(rng):
        model, state = make(rng, **contact)
        kept = (name, "walls") if INTERACTIONS[name].walls else (name,)
        model.interactions = {key: model.interactions[key] for key in kept}
        state.interactions = {key: state.interactions[key] for key in kept}
        state.velocity[:] = rng.normal(size=state.velocity.shape)
        state.angular_velocity[:] = rng.normal(size=state.angular_velocity.shape)
        return model, state, random_springs(model, state, name, rng)

    return configure


def convex_mesh(rng):
    """``(vertices, faces, reach)`` of a convex polyhedron: the hull of a cube's corners and random
    points (coplanar triangles on the cube's faces), turned and moved away from the origin;
    ``reach`` the largest coordinate of its points before they were turned and moved."""
    from scipy.spatial import ConvexHull

    points = np.concatenate((np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T,
                             rng.uniform(-1.3, 1.3, size=(6, 3))))
    hull = ConvexHull(points)
    used = np.unique(hull.simplices)
    turn = quat_matrix(random_quaternions(rng, 1)[0])
    return points[used] @ turn.T + (0.5, -0.3, 0.2), np.searchsorted(used, hull.simplices), points[used].max()


def spheres_around_a_mesh(rng):
    """Spheres pressed onto a convex polyhedron (`convex_mesh`) from outside, near its faces,
    edges and corners."""
    vertices, faces, reach = convex_mesh(rng)
    system = SystemBuilder()
    for k in range(8):  # every third one towards a corner, the others anywhere
        direction = rng.normal(size=3) if k % 3 else vertices[k] - vertices.mean(axis=0) + 0.05 * rng.normal(size=3)
        x = reach * 1.6 * direction / np.linalg.norm(direction)
        system.add_body(x, mass=1.0, inertia=1.0, diameter=1.0, orientation=random_quaternions(rng, 1)[0])
    model, state = system.finish([], [dict(vertices=vertices, faces=faces)], contact={"k_pw": 30.0})
    # put each sphere at a random overlap with the surface, along its direction from the centre
    from support.reference_laws import closest_on_mesh
    centre = vertices.mean(axis=0)
    for i in range(model.n_bodies):
        u = state.position[i] / np.linalg.norm(state.position[i])
        lo, hi = 0.0, 5.0  # bisection for the distance along u at which the sphere touches
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if closest_on_mesh(centre + mid * u, vertices, faces)[0] > 0.5 else (mid, hi)
        state.position[i] = centre + (hi - rng.uniform(0.02, 0.2)) * u
    return model, state


def pendulum_in_gravity(rng):
    system = SystemBuilder()
    for _ in range(3):
        system.add_body(rng.normal(size=3), mass=rng.uniform(0.5, 2), inertia=1.0, com_offset=rng.normal(size=3),
                        orientation=random_quaternions(rng, 1)[0], pinned=True)
    system.add_body(rng.normal(size=3), mass=1.5, inertia=1.0)
    return system.finish(fields={"gravity": (0.3, -0.2, -9.81)})


def tetrahedra_close_together(rng):
    """Three rigid tetrahedral clusters, randomly turned, with Lennard-Jones between neighbours."""
    system = SystemBuilder()
    for k in range(3):
        turned = TETRAHEDRON @ quat_matrix(random_quaternions(rng, 1)[0]).T
        system.add_cluster([1.6 * k, 0.2 * k, 0] + turned, rng.uniform(0.5, 2.0, 4))
    for pair in ((0, 1), (1, 2), (0, 2)):
        system.append_input("lennard_jones", "pairs", pair)
    system.set_input("lennard_jones", "epsilon", 5.0)
    system.set_input("lennard_jones", "sigma", 1.0)
    return system.finish()


def bodies_in_stress_potential(rng):
    system = SystemBuilder()
    for _ in range(2):
        body = system.add_body(rng.normal(size=3), mass=1.0, inertia=(2.0, 2.0, 4.0),
                               orientation=random_quaternions(rng, 1)[0])
        system.append_input("ortolan_saccon", "bodies", body)
    return system.finish(ortolan_saccon={"alpha": 0.3})


def bodies_with_applied_forces(rng):
    system = SystemBuilder()
    for _ in range(3):
        system.add_body(rng.normal(size=3), mass=1.0, inertia=1.0)
    for body in (0, 2):
        system.append_input("applied_force", "bodies", body)
        system.append_input("applied_force", "forces", rng.normal(size=3))
    return system.finish()


#: the contact springs' cases on each normal law (``[contact] normal``; Hooke's ``k_n`` the size of
#: the Hertz ``K``, at the same overlaps)
NORMAL_VARIANTS = {"hertz": {}, "hooke": {"normal": "hooke"}}
#: interaction name -> {variant: configuration(rng) -> (model, state)}; each configuration
#: activates that interaction alone
CASES = {
    "binder": {"axial": bonded_chain(k_axial=200.0), "shear": bonded_chain(k_shear=200.0),
               "bending": bonded_chain(k_bending=10.0),
               "all": bonded_chain(k_axial=200.0, k_shear=150.0, k_bending=10.0)},
    "parallel_bond": {
        "E > 2G": bonded_chain(law="parallel_bond", modulus=1e3, shear_modulus=400.0, radius=0.4,
                               tensile_strength=0.0, shear_strength=0.0),
        "E < 2G": bonded_chain(law="parallel_bond", modulus=200.0, shear_modulus=500.0, radius=0.3,
                               tensile_strength=0.0, shear_strength=0.0),
        "E = 2G": bonded_chain(law="parallel_bond", modulus=500.0, shear_modulus=250.0, radius=0.5,
                               tensile_strength=0.0, shear_strength=0.0)},
    "hertz_pp": {"cloud": overlapping_cloud, "hooke": functools.partial(overlapping_cloud, normal="hooke")},
    "hertz_pw": {"walls": spheres_near_walls, "mesh": spheres_around_a_mesh,
                 "hooke": functools.partial(spheres_near_walls, normal="hooke", restitution=0.6)},
    "gravity": {"pinned and free": pendulum_in_gravity},
    "lennard_jones": {"tetrahedra": tetrahedra_close_together},
    "ortolan_saccon": {"two bodies": bodies_in_stress_potential},
    "applied_force": {"three bodies": bodies_with_applied_forces},
    "contact_pp": {
        **{f"friction {normal}": with_springs("contact_pp", overlapping_cloud, friction=0.4, poisson_ratio=0.3,
                                              restitution=0.5, **law) for normal, law in NORMAL_VARIANTS.items()},
        **{f"rolling {normal}": with_springs("contact_pp", overlapping_cloud, rolling_friction=0.1,
                                             twisting_friction=0.05, poisson_ratio=0.2, **law)
           for normal, law in NORMAL_VARIANTS.items()},
        "all": with_springs("contact_pp", overlapping_cloud, friction=0.3, rolling_friction=0.1,
                            twisting_friction=0.08, restitution=0.7),
        "linear_history": with_springs("contact_pp", overlapping_cloud, friction=0.4, restitution=0.5,
                                       tangential="linear_history", tangential_stiffness=40.0)},
    "adhesive_pp": {law: with_springs("adhesive_pp", overlapping_cloud, normal=law, work_of_adhesion=0.5, friction=0.3,
                                      rolling_friction=0.1, twisting_friction=0.08, restitution=0.7)
                    for law in ("jkr", "dmt")},
    "adhesive_pw": {law: functools.partial(spheres_near_walls, normal=law, work_of_adhesion=0.3, restitution=0.6)
                    for law in ("jkr", "dmt")},
    "contact_pw": {**{normal: with_springs("contact_pw", spheres_near_walls, k_pw=3000.0, friction=0.4,
                                           rolling_friction=0.1, twisting_friction=0.08, restitution=0.7,
                                           wall_friction={"friction": 0.25, "rolling_friction": 0.2}, **law)
                      for normal, law in NORMAL_VARIANTS.items()},
                   "friction": with_springs("contact_pw", spheres_near_walls, k_pw=3000.0, friction=0.4,
                                            restitution=0.7),
                   "rolling": with_springs("contact_pw", spheres_near_walls, k_pw=3000.0, rolling_friction=0.1,
                                           twisting_friction=0.08, wall_friction={"rolling_friction": 0.2}),
                   "linear_history": with_springs("contact_pw", spheres_near_walls, k_pw=3000.0, friction=0.4,
                                                  restitution=0.7, tangential="linear_history",
                                                  tangential_stiffness=500.0)},
    "adhesive_contact_pw": {
        **{f"friction {law}": with_springs("adhesive_contact_pw", spheres_near_walls, k_pw=3000.0, friction=0.4,
                                           restitution=0.7, normal=law, work_of_adhesion=0.3,
                                           wall_friction={"friction": 0.25}) for law in ("jkr", "dmt")},
        **{f"rolling {law}": with_springs("adhesive_contact_pw", spheres_near_walls, k_pw=3000.0, rolling_friction=0.1,
                                          twisting_friction=0.08, normal=law, work_of_adhesion=0.3,
                                          wall_friction={"rolling_friction": 0.2}) for law in ("jkr", "dmt")}},
    "clump_pw": {**{normal: with_springs("clump_pw", clumps_near_walls, k_pw=3000.0, friction=0.4,
                                         rolling_friction=0.1, twisting_friction=0.08, restitution=0.7,
                                         wall_friction={"friction": 0.25, "rolling_friction": 0.2}, **law)
                    for normal, law in NORMAL_VARIANTS.items()},
                 "no springs": functools.partial(clumps_near_walls, k_pw=3000.0, restitution=0.7),
                 "mesh": clumps_around_a_mesh,
                 "friction": with_springs("clump_pw", clumps_near_walls, k_pw=3000.0, friction=0.4, restitution=0.7),
                 "linear_history": with_springs("clump_pw", clumps_near_walls, k_pw=3000.0, friction=0.4,
                                                restitution=0.7, tangential="linear_history",
                                                tangential_stiffness=500.0)},
    "adhesive_clump_pw": {
        **{law: with_springs("adhesive_clump_pw", clumps_near_walls, k_pw=3000.0, friction=0.4, rolling_friction=0.1,
                             twisting_friction=0.08, restitution=0.7, normal=law, work_of_adhesion=0.3,
                             wall_friction={"friction": 0.25, "rolling_friction": 0.2}) for law in ("jkr", "dmt")},
        **{f"no springs {law}": functools.partial(clumps_near_walls, k_pw=3000.0, restitution=0.7, normal=law,
                                                  work_of_adhesion=0.3) for law in ("jkr", "dmt")}},
    "clump_pp": {**{normal: with_springs("clump_pp", clumps_touching, friction=0.4, rolling_friction=0.1,
                                         twisting_friction=0.08, restitution=0.7, **law)
                    for normal, law in NORMAL_VARIANTS.items()},
                 "no springs": functools.partial(clumps_touching, restitution=0.7),
                 "linear_history": with_springs("clump_pp", clumps_touching, friction=0.4, restitution=0.7,
                                                tangential="linear_history", tangential_stiffness=40.0)},
    "adhesive_clump_pp": {law: with_springs("adhesive_clump_pp", clumps_touching, normal=law, work_of_adhesion=0.5,
                                            friction=0.3, rolling_friction=0.1, twisting_friction=0.08,
                                            restitution=0.7) for law in ("jkr", "dmt")},
}
PARAMETERS = [(name, variant, seed) for name, variants in CASES.items() for variant in variants for seed in SEEDS]


def configuration(name, variant, seed):
    """``(model, state, springs)``; ``springs`` None for interactions without contact springs."""
    made = CASES[name][variant](np.random.default_rng(seed))
    model, state, springs = made if len(made) == 3 else (*made, None)
    # the configuration loads this interaction alone (and the walls' bookkeeping, where it has walls)
    assert [n for n in model.interactions if n != "walls"] == [name]
    return model, state, springs


def set_springs(model, state, contacts, springs):
    """Put ``springs`` (`reference_laws.random_springs`) into the contact table's history or the
    interaction's wall slots."""
    (name,) = [key for key in model.interactions if key != "walls"]
    if INTERACTIONS[name].history:
        keys = np.array(sorted(springs), np.int32).reshape(-1, 2)
        values = np.array([springs[tuple(key)] for key in keys]).reshape(len(keys), -1)
        contacts.histories[name] = restore_history(contacts.start, contacts.index, contacts.owner_start, keys, values,
                                                   contacts.histories[name])
    else:
        own = state.interactions[name]
        own.wall_key[:] = -1
        own.wall_spring[:] = 0.0
        for (i, w), value in springs.items():
            slot = int(np.argmax(own.wall_key[i] < 0))
            own.wall_key[i, slot] = w
            own.wall_spring[i, slot] = value


def run_forces(model, state, springs=None, dt=0.0):
    """Forces of ``model`` at ``state`` (with ``springs``, taking a step ``dt`` of them); returns
    the contact table."""
    contacts = new_contacts(model)
    contacts.rebuild(state.position, list_diameters(model, model), state.cell)
    if springs is not None:
        set_springs(model, state, contacts, springs)
    return compute_forces(model, state, contacts, dt=dt)


def evaluate(model, state, springs=None):
    """Forces, moments and the potential energy (every column but the booked ones)."""
    energies = interaction_energies(model, state, run_forces(model, state, springs))
    return state.force.copy(), state.moment.copy(), sum(v for k, v in energies.items() if k not in BOOKED)


def energy_at(model, state, position=None, orientation=None):
    trial = type(state).new(state.position if position is None else position, state.velocity,
                            state.orientation if orientation is None else orientation, state.angular_velocity,
                            state.interactions)
    return evaluate(model, trial)[2]


def test_every_interaction_is_in_the_battery():
    assert set(CASES) == set(REFERENCE) == set(INTERACTIONS) - set(NOT_POTENTIALS)
    for module in NOT_POTENTIALS.values():
        assert (Path(__file__).parent / module).is_file()


@pytest.mark.parametrize("name, variant, seed", PARAMETERS)
def test_kernels_equal_the_reference_implementation(name, variant, seed):
    model, state, springs = configuration(name, variant, seed)
    force, moment, energy = evaluate(model, state, springs)
    ref_energy, ref_force, ref_moment = REFERENCE[name](model, state, *([springs] if springs is not None else []))
    scale = max(np.abs(ref_force).max(), np.abs(ref_moment).max())
    assert scale > 0 and ref_energy != 0.0, "the configuration must load the interaction"
    assert energy == pytest.approx(ref_energy, rel=1e-12, abs=1e-12 * scale)
    assert np.abs(force - ref_force).max() <= 1e-12 * scale
    assert np.abs(moment - ref_moment).max() <= 1e-12 * scale


@pytest.mark.parametrize("name, variant, seed", [p for p in PARAMETERS if p[0] not in SPRINGS])
def test_forces_and_moments_are_minus_the_energy_gradient(name, variant, seed):
    model, state, _ = configuration(name, variant, seed)
    force, moment, energy = evaluate(model, state)
    eps = 1e-6
    fd_force = np.zeros_like(force)
    fd_moment = np.zeros_like(moment)
    for i in range(model.n_bodies):
        for c in range(3):
            step = np.zeros((model.n_bodies, 3))
            step[i, c] = eps
            fd_force[i, c] = -(energy_at(model, state, position=state.position + step)
                               - energy_at(model, state, position=state.position - step)) / (2 * eps)
            # R -> exp(S(w)) R with w = ±eps e_c on body i
            turn = np.tile([1.0, 0, 0, 0], (model.n_bodies, 1))
            plus, minus = turn.copy(), turn.copy()
            plus[i] = quat_from_rotvec(step[i])
            minus[i] = quat_from_rotvec(-step[i])
            fd_moment[i, c] = -(energy_at(model, state, orientation=quat_multiply(plus, state.orientation))
                                - energy_at(model, state, orientation=quat_multiply(minus, state.orientation))) / (2 * eps)
    scale = max(np.abs(force).max(), np.abs(moment).max())
    assert np.abs(force - fd_force).max() < 1e-6 * scale
    assert np.abs(moment - fd_moment).max() < 1e-6 * scale


@pytest.mark.parametrize("name, variant, seed", [p for p in PARAMETERS if INTERACTIONS[p[0]].internal])
def test_internal_interactions_have_no_net_force_or_moment(name, variant, seed):
    model, state, springs = configuration(name, variant, seed)
    force, moment, _ = evaluate(model, state, springs)
    scale = np.abs(force).max() * (1 + np.abs(state.position).max()) + np.abs(moment).max()
    assert np.abs(force.sum(axis=0)).max() < 1e-13 * scale
    torque = np.cross(state.position, force).sum(axis=0) + moment.sum(axis=0)
    assert np.abs(torque).max() < 1e-13 * scale


@pytest.mark.parametrize("name, variant, seed", [p for p in PARAMETERS if p[0] in SPRINGS])
def test_spring_forces_are_minus_the_virtual_work(name, variant, seed):
    """Moving body i by ε e (velocity e, step h = ε) or turning it by ε e (Ω = e) advances the
    springs by the relative motion at the contact points; the springs' energy plus the work the
    interaction books for them (its ``friction`` column) changes by −F·ε e, −τ·ε e: central
    differences of it equal the elastic force and moment (the dashpots, velocity terms whose work
    is ``dissipated``, are zero at rest)."""
    model, state, springs = configuration(name, variant, seed)
    state.velocity[:] = 0.0
    state.angular_velocity[:] = 0.0
    force, moment, _ = evaluate(model, state, springs)
    eps = 1e-6

    def energy_after(c, body, sign, turn):
        unit = np.zeros((model.n_bodies, 3))
        unit[body, c] = sign
        # a turn turns the body by ε e too (R -> exp(S(ε e)) R): a clump's members move with it
        orientation = quat_multiply(quat_from_rotvec(eps * unit), state.orientation) if turn else state.orientation
        moved = type(state).new(state.position + (0.0 if turn else eps * unit), 0.0 if turn else unit,
                                orientation, unit if turn else 0.0, copy.deepcopy(state.interactions))
        energies = interaction_energies(model, moved, run_forces(model, moved, springs, dt=eps))
        # (the dashpots' work: velocity terms; the hysteresis: the JKR contacts of each new table form anew)
        return sum(v for k, v in energies.items() if k not in ("dissipated", "hysteresis"))

    fd_force, fd_moment = np.zeros_like(force), np.zeros_like(moment)
    for body in range(model.n_bodies):
        for c in range(3):
            fd_force[body, c] = -(energy_after(c, body, 1, False) - energy_after(c, body, -1, False)) / (2 * eps)
            fd_moment[body, c] = -(energy_after(c, body, 1, True) - energy_after(c, body, -1, True)) / (2 * eps)
    scale = max(np.abs(force).max(), np.abs(moment).max())
    assert scale > 0
    assert np.abs(force - fd_force).max() < 1e-6 * scale
    assert np.abs(moment - fd_moment).max() < 1e-6 * scale


def test_nothing_acts_beyond_reach():
    system = SystemBuilder()
    system.add_body((0, 0, 0), mass=1, inertia=1, diameter=1.0)
    system.add_body((1.0 + 1e-12, 0, 0), mass=1, inertia=1, diameter=1.0)   # just apart
    system.add_body((5.0, 0.5 + 1e-12, 0), mass=1, inertia=1, diameter=1.0)  # just off the wall
    model, state = system.finish([dict(point=(0, 0, 0), normal=(0, 1, 0), size=0.0)],
                                 contact={"k_pp": 100.0, "k_pw": 100.0})
    state.position[:2, 1] = 3.0
    force, moment, energy = evaluate(model, state)
    assert list(model.interactions) == ["hertz_pp", "hertz_pw", "walls"]
    assert energy == 0.0 and not force.any() and not moment.any()


def test_bonds_at_rest_are_unloaded():
    system = SystemBuilder()
    rng = np.random.default_rng(1)
    position = np.cumsum(rng.normal(scale=0.3, size=(4, 3)) + [1.0, 0, 0], axis=0)
    for x, q in zip(position, random_quaternions(rng, 4)):
        system.add_body(x, mass=1.0, inertia=1.0, orientation=q)
    for i, j in ((0, 1), (1, 2), (2, 3), (3, 0)):
        system.add_bond(i, j, k_axial=200.0, k_shear=200.0, k_bending=10.0)
    model, state = system.finish()
    force, moment, energy = evaluate(model, state)
    assert energy < 1e-25 and np.abs(force).max() < 1e-12 and np.abs(moment).max() < 1e-12


def test_hertz_energy_is_consistent_with_the_force():
    """U = (2/5) K δ^{5/2} integrates F = (K/R_s) δ^{3/2} (not the paper's 5/2 prefactor)."""
    reach, k = 0.7, 3.0
    r = np.linspace(0.2, 0.7, 2001)
    forces = np.array([hertz(1 - x / reach, k, reach)[1] for x in r])
    work = np.sum(0.5 * (forces[1:] + forces[:-1]) * np.diff(r))
    assert hertz(1 - 0.2 / reach, k, reach)[0] == pytest.approx(work, rel=1e-6)
