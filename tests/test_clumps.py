"""Multi-sphere clumps (`dem.clumps`): mass properties of sphere unions against independent
integrations, template validation, and a clump tumbling in free flight under `lgvi`."""

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import ellipk

from dem import Simulation, SystemBuilder
from dem.clumps import (
    RESOLUTION,
    Template,
    _union_by_rays,
    body_frame,
    built_in,
    built_in_problem,
    mass_properties,
    template_problem,
)
from dem.cell import cell_image
from dem.diagnostics import energy_budget
from dem.rotations import quat_from_rotvec, quat_matrix

ROOT = Path(__file__).resolve().parents[1]


def dimer_by_cross_sections(r1, r2, d):
    """``(V, z̄, I_axial, I_transverse)`` of two spheres on the z axis (centres 0 and d) at unit
    density, integrated over z: every cross-section of the union is one disc (both discs are
    centred on the axis), of radius² ``max(r1² − z², r2² − (z − d)², 0)``."""
    def area(z):
        return max(r1 * r1 - z * z, r2 * r2 - (z - d) ** 2, 0.0)

    low, high = min(-r1, d - r2), max(r1, d + r2)
    crossing = (d * d + r1 * r1 - r2 * r2) / (2.0 * d)
    points = [crossing] if low < crossing < high else None

    def integral(f):
        return quad(f, low, high, points=points, epsabs=0.0, epsrel=1e-13, limit=200)[0]

    volume = np.pi * integral(area)
    first = np.pi * integral(lambda z: z * area(z))
    second = np.pi * integral(lambda z: z * z * area(z))
    radial = 0.5 * np.pi * integral(lambda z: area(z) ** 2)   # ∫ (x² + y²) dV: a disc gives π ρ⁴/2
    centre = first / volume
    return volume, centre, radial, second - volume * centre * centre + 0.5 * radial


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")   # (round-off: the pieces are polynomials)
@pytest.mark.parametrize("r1, r2, d", [(1.0, 1.0, 1.0), (1.0, 0.6, 1.2), (0.3, 0.8, 0.9), (1.0, 1.0, 1.999),
                                       (1.0, 0.5, 1.5), (2.0, 0.5, 1.0), (1.0, 0.2, 0.5)])
def test_dimer_mass_properties_are_the_closed_form(r1, r2, d):
    """Two spheres, placed anywhere and at any angle: the closed form of `dem.clumps` against the
    quadrature of the union's cross-sections, to 1e-12 (the last two: the smaller sphere inside
    the larger's radical plane, or wholly inside it)."""
    rotation = quat_matrix(quat_from_rotvec(np.array([0.4, -1.1, 0.7])))
    axis = rotation[:, 2]
    start = np.array([0.3, -2.0, 1.5])
    template = Template(np.array([start, start + d * axis]), np.array([r1, r2]))
    density = 2.5
    properties = mass_properties(template, density)
    volume, centre, axial, transverse = dimer_by_cross_sections(r1, r2, d)
    expected = density * (transverse * np.eye(3) + (axial - transverse) * np.outer(axis, axis))
    assert abs(properties.volume / volume - 1.0) < 1e-12
    assert abs(properties.mass / (density * volume) - 1.0) < 1e-12
    assert np.abs(properties.centre - (start + centre * axis)).max() < 1e-12 * max(r1, r2)
    assert np.abs(properties.tensor - expected).max() < 1e-12 * np.abs(expected).max()


def test_the_quadrature_error_on_dimers_is_below_its_stated_bound():
    """The ray quadrature (three members or more) on two members, against the closed form: the
    error the module documents (below 1e-5 of the mass and moments; measured about 1e-6)."""
    rotation = quat_matrix(quat_from_rotvec(np.array([0.2, 0.9, -0.4])))
    worst = 0.0
    for r2, d in ((1.0, 0.5), (1.0, 1.0), (0.6, 1.0), (1.0, 1.5), (0.7, 1.6)):
        centres = np.array([[0.0, 0.0, 0.0], [d, 0.0, 0.0]]) @ rotation.T
        exact = mass_properties(Template(centres, np.array([1.0, r2])))
        volume, first, second = _union_by_rays(centres, np.array([1.0, r2]), RESOLUTION)
        centre = first / volume
        second = second - volume * np.outer(centre, centre)
        tensor = np.trace(second) * np.eye(3) - second
        worst = max(worst, abs(volume / exact.volume - 1.0), np.abs(centre - exact.centre).max(),
                    np.abs(tensor - exact.tensor).max() / np.abs(exact.tensor).max())
    assert worst < 1e-5, worst


def voxel_properties(template, n):
    """Volume, centre and inertia tensor (unit density) by counting the midpoints of an ``n³``
    grid over the bounding box that lie in the union, slab by slab."""
    centres, radii = template.centres, template.radii
    low, high = (centres - radii[:, None]).min(axis=0), (centres + radii[:, None]).max(axis=0)
    h = (high - low) / n
    axes = [low[k] + h[k] * (np.arange(n) + 0.5) for k in range(3)]
    y, z = np.meshgrid(axes[1], axes[2], indexing="ij")
    count, first, second = 0, np.zeros(3), np.zeros((3, 3))
    for x in axes[0]:
        points = np.stack([np.full(y.size, x), y.ravel(), z.ravel()], axis=1)
        inside = (((points[:, None, :] - centres[None]) ** 2).sum(axis=2) <= radii ** 2).any(axis=1)
        points = points[inside]
        count += len(points)
        first += points.sum(axis=0)
        second += points.T @ points
    cell = np.prod(h)
    volume = count * cell
    centre = first * cell / volume
    second = second * cell - volume * np.outer(centre, centre)
    return volume, centre, np.trace(second) * np.eye(3) - second


def test_tetrahedral_clump_against_voxels():
    """Four spheres of radius 1 at the corners of a regular tetrahedron of edge 1 (each overlapping
    every other by half a diameter, a region common to all four): the quadrature against a
    200³ voxel count, within 0.5 %; the tensor is isotropic, as the symmetry requires."""
    template = built_in("tetrahedron", 1.0, 1.0)
    properties = mass_properties(template)
    volume, centre, tensor = voxel_properties(template, 200)
    assert abs(properties.volume / volume - 1.0) < 5e-3
    assert np.abs(properties.centre - centre).max() < 5e-3
    assert np.abs(properties.tensor - tensor).max() < 5e-3 * np.abs(tensor).max()
    moments = np.linalg.eigvalsh(properties.tensor)
    assert np.ptp(moments) < 1e-5 * moments.mean()
    assert np.abs(properties.centre).max() < 1e-5


def test_rod_and_trimer_shapes():
    """A rod of n touching spheres has aspect n; its length is aspect × diameter; a trimer has
    three-fold symmetry (two equal moments about axes in its plane)."""
    rod = built_in("rod", 0.5, count=4, aspect=3.0)
    length = np.ptp(rod.centres[:, 0]) + 1.0
    assert abs(length - 3.0) < 1e-14 and template_problem(rod.centres, rod.radii) is None
    assert built_in_problem("rod", 0.5, count=4, aspect=4.5)[0] == "aspect"
    assert built_in_problem("rod", 0.5, count=4, aspect=4.0) is None
    assert built_in_problem("dimer", 0.5, distance=1.2)[0] == "distance"
    moments = np.sort(body_frame(built_in("trimer", 1.0, 1.2))[1])
    assert abs(moments[0] / moments[1] - 1.0) < 1e-5 and moments[2] > moments[1] * 1.01


@pytest.mark.parametrize("centres, radii, problem", [
    (np.zeros((0, 3)), np.zeros(0), "the template has no sphere"),
    ([[0, 0, 0], [1, 0, 0]], [1.0, 0.0], "member 1: radius must be a positive number, got 0"),
    ([[0, 0, 0], [1, 0, 0]], [1.0, -2.0], "member 1: radius must be a positive number, got -2"),
    ([[0, 0, 0], [1, 0, 0], [5, 0, 0]], [0.6, 0.6, 1.0],
     "members are not connected: member 2 neither overlaps nor touches the piece of member 0 (the clump is in 2 "
     "pieces)"),
])
def test_template_problems(centres, radii, problem):
    assert template_problem(centres, radii) == problem


def test_touching_members_are_connected():
    assert template_problem([[0, 0, 0], [2, 0, 0]], [1.0, 1.0]) is None


def asymmetric_clump(spin, tilt):
    """A clump of three unequal spheres (distinct principal moments) spinning at ``spin`` about
    its intermediate axis, tipped towards the others by ``tilt`` (radians of the spin vector)."""
    template = Template(np.array([[0.0, 0.0, 0.0], [1.3, 0.0, 0.0], [0.0, 0.9, 0.2]]), np.array([1.0, 0.7, 0.5]))
    frame = body_frame(template, density=1.0)
    moments = frame[1]
    low, middle, high = np.argsort(moments)
    omega_body = np.zeros(3)
    omega_body[middle] = spin * np.cos(tilt)
    omega_body[low] = spin * np.sin(tilt)
    system = SystemBuilder()
    turn = quat_from_rotvec(np.array([0.3, -0.2, 0.5]))
    body = system.add_clumps(template, [[1.0, 2.0, -1.0]], orientation=turn, velocity=(0.1, -0.2, 0.3),
                             frame=frame)[0]
    model, state = system.finish()
    state.angular_velocity[body] = quat_matrix(state.orientation[body]) @ omega_body
    return model, state, (low, middle, high)


def free_rigid_period(moments, omega):
    """Period of the body-frame angular velocity of a torque-free rigid body (Jacobi's elliptic
    solution: ``4 K(k)/λ``), principal moments ``I1 < I2 < I3`` in that order."""
    i1, i2, i3 = moments
    energy2 = np.sum(moments * omega ** 2)        # 2T
    momentum2 = np.sum((moments * omega) ** 2)    # L²
    if momentum2 > energy2 * i2:
        rate = np.sqrt((i3 - i2) * (momentum2 - energy2 * i1) / (i1 * i2 * i3))
        m = (i2 - i1) * (energy2 * i3 - momentum2) / ((i3 - i2) * (momentum2 - energy2 * i1))
    else:
        rate = np.sqrt((i2 - i1) * (energy2 * i3 - momentum2) / (i1 * i2 * i3))
        m = (i3 - i2) * (momentum2 - energy2 * i1) / ((i2 - i1) * (energy2 * i3 - momentum2))
    return 4.0 * ellipk(m) / rate


def test_tumbling_clump_conserves_energy_and_momentum_and_flips_at_the_elliptic_period():
    """The tennis-racket flip: spun about its intermediate axis with a slight tilt, the clump
    turns over and back, the body-frame spin about that axis changing sign with the period of
    the torque-free rigid body (Jacobi's solution); energy and angular momentum stay put (the
    spin part ``R J Rᵀ Ω`` to round-off; the orbital part ``x × m v`` of a body in uniform motion
    gathers the round-off of ``x += h v`` over the 10⁴ steps, ~1e-12 relative)."""
    model, state, (low, middle, high) = asymmetric_clump(spin=2.0, tilt=0.02)
    order = np.array([low, middle, high])
    omega0 = quat_matrix(state.orientation[0]).T @ state.angular_velocity[0]
    period = free_rigid_period(model.inertia[0][order], omega0[order])
    row = energy_budget(model, state)
    energy0, angular0 = row["total"], np.array([row["L" + a] for a in "xyz"])

    def spin_momentum():
        rotation = quat_matrix(state.orientation[0])
        return rotation @ (model.inertia[0] * (rotation.T @ state.angular_velocity[0]))

    spin0 = spin_momentum()
    dt = 2e-3
    sim = Simulation(model, state, "lgvi", dt)
    spin, energies = [], []
    for _ in range(int(2.6 * period / dt) // 20):
        sim.advance(20)
        spin.append((quat_matrix(state.orientation[0]).T @ state.angular_velocity[0])[middle])
        row = energy_budget(model, state)
        energies.append(row["total"])
    angular = np.array([row["L" + a] for a in "xyz"])
    spin = np.array(spin)
    times = 20 * dt * (np.arange(len(spin)) + 1)
    # upward zero crossings of the spin about the intermediate axis, interpolated
    up = np.flatnonzero((spin[:-1] < 0) & (spin[1:] >= 0))
    crossings = times[up] + (times[up + 1] - times[up]) * (-spin[up]) / (spin[up + 1] - spin[up])
    assert len(crossings) >= 2 and spin.min() < -0.9 * spin.max()   # it turns over, all the way
    assert abs(np.diff(crossings).mean() / period - 1.0) < 1e-3, (np.diff(crossings), period)
    assert np.abs(np.array(energies) - energy0).max() < 1e-12 * energy0
    assert np.abs(spin_momentum() - spin0).max() < 1e-14 * np.linalg.norm(spin0)
    assert np.abs(angular - angular0).max() < 1e-10 * np.linalg.norm(angular0)


# ---------------------------------------------------------------------------------------------
# the [[clump]] builder and its output
# ---------------------------------------------------------------------------------------------

HEAD = """[simulation]
integrator = "lgvi"
dt = 1e-3
t_end = 0.01
[output]
vtk_every = 5
"""


def clump_scene(tmp_path, tables, name="scene.toml"):
    path = tmp_path / name
    path.write_text(HEAD + tables, encoding="utf-8")
    return path


def member_positions(model, state):
    """World centres of every member sphere, body by body."""
    owner = np.repeat(np.arange(model.n_bodies), np.diff(model.site_start))
    return state.position[owner] + np.einsum("nij,nj->ni", quat_matrix(state.orientation[owner]), model.site_offset)


def test_clumps_placed_at_random_in_a_box_overlap_nothing_and_stay_inside(tmp_path):
    from dem.runner import prepare

    path = clump_scene(tmp_path, '[[clump]]\ntemplate = "tetrahedron"\nradius = 0.5\ncount = 40\nmin = [0, 0, 0]\n'
                                 'max = [8, 8, 8]\ndensity = 2.0\n')
    _, model, state, _ = prepare(path)
    _, again, _ = prepare(path)[1:]
    template = built_in("tetrahedron", 0.5)
    expected = mass_properties(template, 2.0)
    assert model.n_bodies == 40 and model.n_sites == 160 and np.all(model.site_radius == 0.5)
    assert np.allclose(model.mass, expected.mass, rtol=1e-14) and np.all(model.diameter == 0)
    members = member_positions(model, state)
    owner = np.repeat(np.arange(40), 4)
    gap = np.linalg.norm(members[:, None] - members[None], axis=2) - 1.0
    assert gap[owner[:, None] != owner[None]].min() >= 0.0
    assert (members - 0.5 >= -1e-12).all() and (members + 0.5 <= 8.0 + 1e-12).all()
    assert np.array_equal(state.orientation, again.orientation)            # seeded: every build the same
    # each member sits where its clump's orientation puts the template's member
    for body in (0, 17):
        rotation = quat_matrix(state.orientation[body])
        local = np.sort(np.linalg.norm(member_positions(model, state)[4 * body:4 * body + 4] - state.position[body],
                                       axis=1))
        assert np.allclose(local, np.sort(np.linalg.norm(template.centres - expected.centre, axis=1)), atol=1e-13)
        tensor = rotation @ np.diag(model.inertia[body]) @ rotation.T
        assert np.allclose(np.linalg.eigvalsh(tensor), np.linalg.eigvalsh(expected.tensor), rtol=1e-12)


DENSE = 'packing = "dense"\nmin = [0, 0, 0]\nmax = [6, 6, 6]\nseed = 4\n'
PERIODIC_CELL = "[cell]\nperiodic = [true, true, true]\norigin = [0, 0, 0]\nsize = [6.0, 6.0, 6.0]\n"


@pytest.mark.parametrize("shape, fraction, periodic", [("dimer", 0.5, False), ("tetrahedron", 0.55, False),
                                                       ("trimer", 0.6, True)])
def test_a_dense_packing_of_clumps_fills_its_packing_fraction_without_overlaps(tmp_path, shape, fraction, periodic):
    """``packing = "dense"`` in a box 6 × 6 × 6 (periodic: a periodic cell, the box spanning it): the
    clumps fill ``packing_fraction`` of the box to the rounding of their count (half a clump's volume),
    no member of one overlaps a member of another by more than the tolerance, 1e-4 of a diameter,
    every member lies inside the box to 1e-4 of a diameter (periodic: every centre of mass in the
    cell, the members meeting the images across its faces), every clump has the template's mass
    properties, and the same seed gives the same bits."""
    from dem.runner import prepare

    table = (f'[[clump]]\ntemplate = "{shape}"\nradius = 0.5\ndensity = 2.0\npacking_fraction = {fraction}\n' + DENSE
             + ("periodic = [true, true, true]\n" if periodic else ""))
    path = clump_scene(tmp_path, (PERIODIC_CELL if periodic else "") + table)
    _, model, state, _ = prepare(path)
    again = prepare(path)[2]
    template = built_in(shape, 0.5)
    expected = mass_properties(template, 2.0)
    count = model.n_bodies
    assert count == round(fraction * 216.0 / expected.volume) and count > 80
    assert abs(count * expected.volume / 216.0 - fraction) <= 0.5 * expected.volume / 216.0
    assert np.allclose(model.mass, expected.mass, rtol=1e-14)
    for body in range(count):
        rotation = quat_matrix(state.orientation[body])
        tensor = rotation @ np.diag(model.inertia[body]) @ rotation.T
        assert np.allclose(np.linalg.eigvalsh(tensor), np.linalg.eigvalsh(expected.tensor), rtol=1e-12)
    members = member_positions(model, state)
    owner = np.repeat(np.arange(count), len(template))
    between = members[:, None] - members[None]
    if periodic:
        between -= 6.0 * np.rint(between / 6.0)
    gap = np.linalg.norm(between, axis=2) - 1.0
    overlap = -gap[owner[:, None] != owner[None]].min()
    assert 0.0 < overlap < 1e-4                                           # relaxed to the tolerance, not beyond
    if periodic:
        assert (state.position >= 0.0).all() and (state.position < 6.0).all()
    else:
        assert (members - 0.5 >= -1e-4).all() and (members + 0.5 <= 6.0 + 1e-4).all()
    assert np.array_equal(state.position, again.position) and np.array_equal(state.orientation, again.orientation)


def test_the_default_packing_is_random_sequential_addition(tmp_path):
    """``packing`` left out builds the bodies of ``packing = "random"`` and of `random_placement`
    with the table's seed, to the bit: a scene written before dense packings builds as it did."""
    from dem.builders.clump import random_placement
    from dem.runner import prepare

    table = '[[clump]]\ntemplate = "tetrahedron"\ncount = 30\nmin = [0, 0, 0]\nmax = [8, 8, 8]\nseed = 2\n'
    _, model, state, _ = prepare(clump_scene(tmp_path, table))
    explicit = prepare(clump_scene(tmp_path, table + 'packing = "random"\n', "random.toml"))[2]
    template = built_in("tetrahedron", 0.5)
    arms = template.centres - body_frame(template)[2]
    position, orientation = random_placement(arms, template.radii, 30, (0, 0, 0), (8, 8, 8),
                                             np.random.default_rng([2, 0xC1C1]), 100)
    assert np.array_equal(state.position, position) and np.array_equal(explicit.position, position)
    assert np.array_equal(state.orientation, explicit.orientation)
    members = position[:, None] + np.einsum("njk,mk->nmj", quat_matrix(orientation), arms)
    assert np.allclose(member_positions(model, state), members.reshape(-1, 3), rtol=0.0, atol=1e-13)


def test_clumps_imported_from_rows_with_a_template_from_a_file(tmp_path):
    from dem.runner import prepare

    (tmp_path / "members.csv").write_text("x,y,z,radius\n0,0,0,0.5\n0.6,0,0,0.4\n0.6,0.5,0,0.3\n", encoding="utf-8")
    turn = quat_from_rotvec(np.array([0.3, 1.0, -0.2]))
    rows = f"x,y,z,qw,qx,qy,qz,vx,vy,vz\n1,2,3,1,0,0,0,0,0,0\n-4,0,2,{','.join(map(repr, turn.tolist()))},1,0,0\n"
    (tmp_path / "rows.csv").write_text(rows, encoding="utf-8")
    path = clump_scene(tmp_path, '[[clump]]\ntemplate = "file"\ntemplate_file = "members.csv"\nrows = "rows.csv"\n'
                                 'velocity = [0, 0, 1]\n')
    _, model, state, _ = prepare(path)
    template = Template(np.array([[0, 0, 0], [0.6, 0, 0], [0.6, 0.5, 0]], float), np.array([0.5, 0.4, 0.3]))
    centre = mass_properties(template).centre
    assert np.allclose(state.position, [[1, 2, 3], [-4, 0, 2]], atol=1e-15)
    assert np.allclose(state.velocity, [[0, 0, 1], [1, 0, 1]])
    members = member_positions(model, state)
    assert np.allclose(members[:3], [1, 2, 3] + template.centres - centre, atol=1e-13)
    assert np.allclose(members[3:], [-4, 0, 2] + (template.centres - centre) @ quat_matrix(turn).T, atol=1e-13)


@pytest.mark.parametrize("table, problem", [
    ('template = "spheres"\ncenters = []\nradii = []\nposition = [0, 0, 0]',
     "clump.0.radii: the template has no sphere"),
    ('template = "spheres"\ncenters = [[0, 0, 0], [1, 0, 0]]\nradii = [0.6, -0.5]\nposition = [0, 0, 0]',
     "clump.0.radii: member 1: radius must be a positive number, got -0.5"),
    ('template = "spheres"\ncenters = [[0, 0, 0], [2, 0, 0]]\nradii = [0.6, 0.5]\nposition = [0, 0, 0]',
     "clump.0.radii: members are not connected: member 1 neither overlaps nor touches the piece of member 0 (the "
     "clump is in 2 pieces)"),
    ('template = "file"\ntemplate_file = "none.csv"\nposition = [0, 0, 0]', "clump.0.template_file: "),
    ('template = "dimer"\nposition = [0, 0, 0]\ncount = 3', "clump.0.position: give one of position, count, rows "
     "(got position, count)"),
    ('template = "rod"\nspheres = 2\naspect = 2.5\nposition = [0, 0, 0]', "clump.0.aspect: 2 spheres make a rod"),
    ('template = "dimer"\nposition = [0, 0, 0]\nbinder_modulus = 100.0', "clump.0.binder_modulus: is a bond-law key: "
     "set bonded = true to bond the clumps"),
    ('template = "dimer"\nposition = [0, 0, 0]\nbonded = true\nbond_gap_tolerance = 1.5',
     "clump.0.bond_gap_tolerance: must be at most 1"),
    ('template = "dimer"\nposition = [0, 0, 0]\nbonded = true\nbinder = "parallel_bond"\nbinder_modulus = 1.0',
     "clump.0.binder_shear_modulus: is required with binder = 'parallel_bond'"),
    ('template = "dimer"\npacking_fraction = 0.0\n' + DENSE, "clump.0.packing_fraction: must be in (0, 1), got 0.0"),
    ('template = "dimer"\npacking_fraction = 1.0\n' + DENSE, "clump.0.packing_fraction: must be in (0, 1), got 1.0"),
    ('template = "dimer"\ncount = 3\nmin = [0, 0, 0]\nmax = [6, 6, 6]\npacking = "tight"',
     "clump.0.packing: must be one of random, dense, got 'tight'"),
    ('template = "dimer"\npacking_fraction = 0.5\npacking = "dense"\nmax = [6, 6, 6]',
     "clump.0.min: is required with packing_fraction"),
    ('template = "dimer"\npacking_fraction = 0.5\nmin = [0, 0, 0]\nmax = [6, 6, 6]',
     "clump.0.packing_fraction: is a key of packing = 'dense'"),
    ('template = "dimer"\nposition = [0, 0, 0]\npacking = "dense"', "clump.0.packing: 'dense' fills the box min–max "
     "with count clumps or packing_fraction: give one of them, not position"),
    ('template = "dimer"\ncount = 30\npacking_fraction = 0.5\n' + DENSE,
     "clump.0.packing_fraction: give count or packing_fraction, one of them"),
    ('template = "dimer"\npacking_fraction = 0.5\nperiodic = [true, false, false]\n' + DENSE,
     "clump.0.periodic: is periodic along x, but the cell is not: set cell.periodic"),
    ('template = "dimer"\npacking_fraction = 0.5\nperiodic = [true, true, true]\n'
     + DENSE.replace("6, 6, 6", "6, 6, 5") + PERIODIC_CELL,
     "clump.0.max: along the periodic axis z the box must span the cell, [0, 6], got [0, 5] (min–max)"),
    ('template = "dimer"\npacking_fraction = 0.69\n' + DENSE.replace("6, 6, 6", "4, 4, 4"),
     "clump.0.packing_fraction: the dense packing jammed: the largest overlap is still "),
    ('template = "dimer"\npacking_fraction = 0.75\n' + DENSE,
     "clump.0.packing_fraction: asks for a solid fraction of 0.750; a dense packing of clumps reaches at most 0.7 "),
    ('template = "dimer"\ncount = 200\n' + DENSE,
     "clump.0.count: asks for a solid fraction of 0.818; a dense packing of clumps reaches at most 0.7 "),
])
def test_bad_clump_tables_are_one_line_naming_the_key(tmp_path, table, problem):
    from dem.cli import main
    from dem.runner import prepare
    from dem.schema import SceneError

    path = clump_scene(tmp_path, "[[clump]]\n" + table + "\n")
    with pytest.raises(SceneError) as error:
        prepare(path)
    message = str(error.value)
    assert message.startswith(f"{path}: {problem}") and "\n" not in message
    assert main([str(path), "--out", str(tmp_path / "run"), "--quiet"]) != 0
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("setting, key", [
    ("contact.k_pp=100.0;contact.substeps=3", "contact.substeps: the contacts of clumps are not sub-stepped"),
    ('contact.normal="jkr";contact.work_of_adhesion=0.1',
     "contact.normal: the 'jkr' law acts on particles and planes; mesh walls take"),
])
def test_what_clumps_do_not_touch_yet_is_refused_not_silently_wrong(tmp_path, setting, key):
    """Contact sub-steps, a JKR law with meshes (as for spheres): one line naming the key, rather
    than members passing through what they should touch. Planes and meshes are walls clumps
    touch, under DMT too."""
    from pathlib import Path

    from dem.runner import prepare
    from dem.schema import SceneError

    path = clump_scene(tmp_path, '[contact]\nk_pw = 100.0\n'
                                 '[[clump]]\ntemplate = "dimer"\nposition = [0, 0, 1]\n'
                                 '[[walls]]\npoint = [0, 0, 0]\nnormal = [0, 0, 1]\n')
    mesh = Path(__file__).resolve().parents[1] / "scenes" / "meshes" / "tube.stl"
    tube = f'mesh=[{{file = "{mesh}", rotate = [1.5707963267948966, 0.0, 0.0], translate = [0.0, 0.0, 5.0]}}]'
    for walls in ([], [tube]):   # planes, and a mesh too: clump_pw (adhesive_clump_pw under DMT)
        model = prepare(path, walls)[1]
        assert "clump_pw" in model.interactions and model.interactions["clump_pw"].meshes == bool(walls)
        model = prepare(path, walls + ['contact.normal="dmt"', "contact.work_of_adhesion=0.1"])[1]
        assert list(model.interactions) == ["adhesive_clump_pw", "walls"]
    with pytest.raises(SceneError, match=key) as error:
        prepare(path, setting.replace("MESH", str(mesh)).split(";") + [tube])
    assert "\n" not in str(error.value)


def test_vtk_writes_every_member_sphere_with_its_clump(tmp_path):
    from dem.builders.particles import read_vtk_points
    from dem.cli import main

    path = clump_scene(tmp_path, '[[clump]]\ntemplate = "rod"\nspheres = 3\naspect = 2.0\nradius = 0.25\n'
                                 'position = [1, 2, 3]\nangular_velocity = [0, 0, 2]\n')
    assert main([str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    snapshot = sorted((tmp_path / "run" / "vtk").glob("sites_*.vtp"))[-1]
    points, diameter, velocity = read_vtk_points(snapshot)
    assert len(points) == 3 and np.allclose(diameter, 0.5)
    assert np.allclose(np.linalg.norm(points - points.mean(axis=0), axis=1), [0.25, 0.0, 0.25], atol=1e-12)
    assert np.allclose(velocity[:, :2], 2.0 * np.stack([-(points[:, 1] - 2.0), points[:, 0] - 1.0], axis=1),
                       atol=1e-9)


# ---------------------------------------------------------------------------------------------
# clumps on plane walls (dem.interactions.clump_walls)
# ---------------------------------------------------------------------------------------------

FLOOR = """[fields]
gravity = [0.0, 0.0, -1.0]
[contact]
k_pw = 2e4
restitution = 0.5
friction = 0.5
poisson_ratio = 0.22
[[walls]]
point = [0.0, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]
"""
DIMER = '[[clump]]\ntemplate = "dimer"\nradius = 0.5\ndistance = 0.5\n'


def on_the_floor(tmp_path, clumps, overrides=(), parallel=None):
    """``(model, state, simulation)`` of clumps over the floor of `FLOOR` (g = 1, Hertz k_pw = 2e4,
    restitution 0.5, μ = 0.5), under `lgvi` with dt = 5e-4 (a twentieth of the critical step)."""
    from dem.runner import prepare

    _, model, state, _ = prepare(clump_scene(tmp_path, FLOOR + clumps), list(overrides))
    return model, state, Simulation(model, state, "lgvi", 5e-4, parallel=parallel)


def test_the_floor_pushes_a_member_at_its_contact_point():
    """A tilted dimer with its lower member sunk into a frictionless floor: the force on the body
    is the member's Hertz force plus the weight, the moment that force's about the centre of
    mass (its line passes through the member's centre), to round-off."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        model, state, _ = on_the_floor(Path(folder), DIMER + 'position = [0.3, -0.2, 0.55]\n'
                                       'rotation_vector = [0.0, 0.4, 0.1]\n', ["contact.friction=0.0"])
    members = member_positions(model, state)
    low = int(np.argmin(members[:, 2]))
    assert members[low, 2] < 0.5 < members[1 - low, 2]   # one member touches
    delta = 1.0 - members[low, 2] / 0.5
    push = np.array([0.0, 0.0, 2e4 / 0.5 * delta ** 1.5])
    expected_force = push - [0.0, 0.0, model.mass[0]]
    expected_moment = np.cross(members[low] - state.position[0], push)
    assert np.abs(state.force[0] - expected_force).max() < 1e-12 * np.abs(push).max()
    assert np.abs(state.moment[0] - expected_moment).max() < 1e-12 * np.abs(push).max()


@pytest.mark.parametrize("tilt", [0.0, 0.3])
def test_a_dimer_dropped_on_the_floor_comes_to_rest_on_both_spheres(tmp_path, tilt):
    """Dropped flat, or tilted by 0.3 rad so that one member lands first and it rocks down onto
    the other: at rest (speeds below 1e-9) on both members, sunk alike (their heights agree to
    1e-9), each carrying half the weight (the Hertz overlap of m g / 2: δ = (m g R/2K)^(2/3))."""
    model, state, sim = on_the_floor(tmp_path, DIMER + f'position = [0, 0, 0.7]\nrotation_vector = [0, {tilt}, 0]\n')
    sim.advance(60_000)   # t = 30
    members = member_positions(model, state)
    assert np.abs(state.velocity).max() < 1e-9 and np.abs(state.angular_velocity).max() < 1e-9
    assert abs(members[0, 2] - members[1, 2]) < 1e-9
    delta = (0.5 * model.mass[0] * 0.5 / 2e4) ** (2.0 / 3.0)
    assert np.allclose(members[:, 2], 0.5 * (1.0 - delta), rtol=1e-9)


def test_a_dimer_sliding_on_the_floor_decelerates_at_mu_g(tmp_path):
    """A dimer lying along x on the floor, launched along its axis at speed 1 with μ = 0.3:
    both members slide, its speed falls at μ g = 0.3 (to 0.1 %) and it does not pitch."""
    model, state, sim = on_the_floor(tmp_path, DIMER + 'position = [0, 0, 0.5]\nvelocity = [1, 0, 0]\n',
                                     ["contact.friction=0.3"])
    times, speeds = [], []
    for k in range(25):
        sim.advance(200)
        times.append(0.1 * (k + 1))
        speeds.append(state.velocity[0, 0])
    times, speeds = np.array(times), np.array(speeds)
    late = times >= 0.5
    slope = np.polyfit(times[late], speeds[late], 1)[0]
    assert abs(slope / -0.3 - 1.0) < 1e-3, slope
    assert np.abs(state.angular_velocity).max() < 1e-6


def test_a_rod_rolling_about_its_axis_down_an_incline_moves_like_a_cylinder(tmp_path):
    """A rod of four spheres (radius 0.5, aspect 3) lying across an incline of 0.2 rad (gravity
    tilted over the floor), released at rest on its four members: it rolls without slipping, as
    a cylinder of its mass m and axial moment I does, its centre accelerating down the slope at
    g sin θ / (1 + I / m r²) (to 1e-3; r the members' radius less their Hertz overlap) and spinning
    at v / r, without drifting along its axis or turning."""
    theta = 0.2
    g = [float(np.sin(theta)), 0.0, float(-np.cos(theta))]
    model, state, sim = on_the_floor(tmp_path, '[[clump]]\ntemplate = "rod"\nspheres = 4\naspect = 3.0\nradius = 0.5\n'
                                     f'position = [0, 0, 0.5]\nrotation_vector = [0, 0, {np.pi / 2}]\n',
                                     [f"fields.gravity={g}"])
    mass, axial = model.mass[0], model.inertia[0, 0]   # (the rod's axis: its body x, turned to y)
    sunk = (mass * np.cos(theta) / 4 * 0.5 / 2e4) ** (2.0 / 3.0) * 0.5   # each member's Hertz overlap
    state.position[0, 2] = 0.5 - sunk
    times, speeds, spins = [], [], []
    for k in range(30):
        sim.advance(200)
        times.append(0.1 * (k + 1))
        speeds.append(state.velocity[0, 0])
        spins.append(state.angular_velocity[0, 1])
    times, speeds, spins = np.array(times), np.array(speeds), np.array(spins)
    late = times >= 0.5
    slope = np.polyfit(times[late], speeds[late], 1)[0]
    radius = 0.5 - sunk
    expected = np.sin(theta) / (1.0 + axial / (mass * radius ** 2))
    assert abs(slope / expected - 1.0) < 1e-3, (slope, expected)
    assert np.abs(speeds[late] / (spins[late] * radius) - 1.0).max() < 1e-3
    assert abs(state.position[0, 1]) < 1e-8 and np.abs(state.angular_velocity[0, [0, 2]]).max() < 1e-8


def test_an_elastic_frictionless_dimer_bouncing_on_the_floor_keeps_its_energy(tmp_path):
    """No damping, no friction: a tilted dimer bounces and rocks on one member and the other; the
    total energy stays within 2e-5 of its start (the Hertz law's onset, at dt/dt_crit = 0.05)."""
    from dem.diagnostics import energy_budget

    model, state, sim = on_the_floor(tmp_path, DIMER + 'position = [0, 0, 0.7]\nrotation_vector = [0, 0.3, 0]\n',
                                     ["contact.friction=0.0", "contact.restitution=1.0"])
    energy0 = energy_budget(model, state)["total"]
    worst, contacts = 0.0, 0
    for _ in range(40):
        sim.advance(400)
        row = energy_budget(model, state)
        worst = max(worst, abs(row["total"] - energy0))
        contacts += row["hertz_pw"] > 0.0
    assert contacts > 0 and worst < 1e-4 * energy0


def raised_step(tmp_path, x, y, height, n=12, jitter=0.02):
    """The ``[[mesh]]`` table of a flat step of ``2 n²`` jittered triangles over ``x[0] … x[1]``,
    ``y[0] … y[1]`` at ``height`` above the floor, its file written into ``tmp_path``."""
    from support.surfaces import floor_mesh, write_surface

    points, faces = floor_mesh(n=n, size=1.0, jitter=jitter, seed=4)
    points = np.column_stack((x[0] + (x[1] - x[0]) * (points[:, 0] + 0.5), y[0] + (y[1] - y[0]) * (points[:, 1] + 0.5),
                              np.full(len(points), height)))
    write_surface(tmp_path / "step.stl", points, faces)
    return '[[mesh]]\nfile = "step.stl"\n'


def test_clumps_on_the_floor_are_the_same_bits_on_threads(tmp_path):
    """4 200 dimers (three chunks of rows) at random orientations and velocities dropped on a rough
    floor, a third of them onto a step raised 0.02 above it (a mesh), touching the floor, the step,
    its edge and one another (friction, rolling and twisting resistance): the serial and the
    parallel loop give the same bits."""
    rng = np.random.default_rng(5)
    grid = np.stack(np.meshgrid(np.arange(70), np.arange(60), indexing="ij"), axis=-1).reshape(-1, 2) * 1.6
    turns = rng.standard_normal((len(grid), 4))
    rows = np.column_stack([grid, np.full(len(grid), 0.8), turns / np.linalg.norm(turns, axis=1, keepdims=True),
                            rng.uniform(-1.0, 1.0, size=(len(grid), 2)), np.zeros(len(grid))])
    np.savetxt(tmp_path / "rows.csv", rows, delimiter=",", header="x,y,z,qw,qx,qy,qz,vx,vy,vz", comments="")
    overrides = ["contact.rolling_friction=0.1", "contact.twisting_friction=0.05", "contact.k_pp=2e4"]
    step = raised_step(tmp_path, (-1.0, 36.0), (-1.0, 96.0), 0.02)
    runs = []
    for parallel in (False, True):
        model, state, sim = on_the_floor(tmp_path, DIMER + 'rows = "rows.csv"\nvelocity = [0.3, 0.0, -1.0]\n' + step,
                                         overrides, parallel=parallel)
        sim.advance(400)
        runs.append(state)
        assert sim.energy_budget()["hertz_pp"] > 0.0   # dimers in contact
        own, walls = state.interactions["clump_pw"], state.interactions["walls"]
        assert (own.wall_key == 0).any() and (own.wall_key == 1).any()   # springs on the floor and on the step
        assert np.abs(walls.load[:, 2]).min() > 0.0
    assert model.n_bodies == 4200 and np.any(runs[0].angular_velocity != 0.0)
    for name in ("position", "velocity", "orientation", "angular_velocity", "force", "moment"):
        assert np.array_equal(getattr(runs[0], name), getattr(runs[1], name)), name
    for name in ("clump_pw", "walls"):
        for field, one, other in zip(runs[0].interactions[name]._fields, runs[0].interactions[name],
                                     runs[1].interactions[name]):
            assert np.array_equal(one, other), (name, field)


def restarted(tmp_path, path, settings, half, logs=("energy.csv",)):
    """Run the scene ``path`` straight through and in two pieces (stopped at t = ``half`` and
    restarted from its checkpoint): asserts the same ``logs`` and the same state, interactions' and
    scheme's arrays in the last checkpoints, to the last bit. Returns ``(simulation of the
    restarted run, the checkpoint at half-way, the last one)``."""
    from dem.checkpoint import load_checkpoint
    from dem.runner import run

    straight, pieces = tmp_path / "straight", tmp_path / "pieces"
    run(path, settings, straight, quiet=True)
    run(path, settings + [f"simulation.t_end={half}"], pieces, quiet=True)
    midway = load_checkpoint(pieces / "checkpoint.npz")
    sim, _ = run(path, settings, pieces, quiet=True, restart=pieces / "checkpoint.npz")
    for name in logs:
        assert (straight / name).read_text() == (pieces / name).read_text(), name
    first, second = load_checkpoint(straight / "checkpoint.npz"), load_checkpoint(pieces / "checkpoint.npz")
    assert first.keys() == second.keys()
    for name in first:
        if name.startswith(("state_", "interaction.", "scheme.")):
            assert np.array_equal(first[name], second[name]), name
    return sim, midway, first


def assert_occupancy(values, most, stride):
    """Each saved clump pair's occupancy bits (`dem.interactions.clump_contacts`: after its member
    pairs' columns, 32 a column) say which member pairs' columns hold anything, and some do."""
    from dem.interactions.clump_contacts import OCCUPANCY_BITS

    pairs = most * most
    held = (values[:, :pairs * stride].reshape(-1, pairs, stride) != 0.0).any(axis=2)
    words = values[:, pairs * stride:].astype(np.int64)
    assert words.shape[1] == -(-pairs // OCCUPANCY_BITS) and np.array_equal(words, values[:, pairs * stride:])
    q = np.arange(pairs)
    bits = (words[:, q // OCCUPANCY_BITS] >> (q % OCCUPANCY_BITS)) & 1
    assert held.any() and np.array_equal(bits == 1, held)


def test_clumps_on_the_floor_restart_exactly(tmp_path, capsys):
    """Tetrahedra and rods poured on a rough floor, half of it under a raised step (a mesh), with a
    moving wall, touching them and one another: a run stopped half-way and restarted from its
    checkpoint (the members' wall springs, on planes and mesh contacts, and the member pairs'
    springs in it) ends with the same bits as a run straight through (energy.csv, the state, the
    interactions' arrays)."""
    from dem.runfiles import read_snapshot, snapshot_spheres

    path = clump_scene(tmp_path, FLOOR + '[[walls]]\npoint = [3.5, 0, 0]\nnormal = [-1, 0, 0]\n'
                       'velocity = [-0.5, 0, 0]\n'
                       '[[clump]]\ntemplate = "tetrahedron"\nradius = 0.5\ncount = 10\nmin = [-2.5, -2.5, 0.2]\n'
                       'max = [2.5, 2.5, 5]\nattempts = 1000\nvelocity = [0.3, 0, -1]\n'
                       '[[clump]]\ntemplate = "rod"\nspheres = 4\naspect = 3.0\nradius = 0.4\ncount = 5\n'
                       'min = [-3, -3, 4.5]\nmax = [3, 3, 7]\nseed = 2\n'
                       + raised_step(tmp_path, (-8.0, 0.0), (-8.0, 8.0), 0.1, n=6))
    settings = ["simulation.dt=5e-4", "simulation.t_end=2.0", "output.vtk_every=400", "output.log_every=100",
                "contact.rolling_friction=0.1", "contact.twisting_friction=0.05", "contact.k_pp=2e4"]
    sim, midway, first = restarted(tmp_path, path, settings, 1.0)
    assert len(midway["contacts.history_keys.clump_pp"]) > 0   # springs held
    assert_occupancy(midway["contacts.history_values.clump_pp"], 4, 7)
    # a checkpoint whose clump pairs keep their member pairs' columns alone (no occupancy) is refused
    from dem.cli import main

    older = tmp_path / "older.npz"
    values = midway["contacts.history_values.clump_pp"]
    np.savez(older, **(midway | {"contacts.history_values.clump_pp": values[:, :-1]}))
    assert main(["run", str(path), "--out", str(tmp_path / "older"), "--quiet", "--restart", str(older)]
                + [f"--set={setting}" for setting in settings]) == 2
    err = capsys.readouterr().err
    assert "clump_pp contacts keep 112 history columns, this version 113" in err and "from the start" in err
    assert "interaction.clump_pw.wall_spring" in first
    keys = sim.state.interactions["clump_pw"].wall_key
    assert sim.energy_budget()["friction"] > 0 and (keys >= 0).any() and (keys == 2).any()   # (the step: wall 2)
    assert "interaction.clump_pw.mesh_contact" in first and (first["interaction.clump_pw.mesh_contact"] != 0).any()
    # `dem repose` reads a heap of clumps as their member spheres
    straight = tmp_path / "straight"
    position, diameter = snapshot_spheres(straight, read_snapshot(straight))
    assert np.allclose(position, member_positions(sim.model, sim.state), rtol=0.0, atol=1e-12)
    assert np.array_equal(diameter, 2.0 * sim.model.site_radius)


# ---------------------------------------------------------------------------------------------
# clumps on mesh walls (dem.interactions.clump_walls with dem.meshes)
# ---------------------------------------------------------------------------------------------

#: a floor's contact: damped (restitution 0.5), frictional, with rolling and twisting resistance
#: (their dashpots too)
ROUGH = {"k_pw": 2e4, "restitution": 0.5, "friction": 0.3, "rolling_friction": 0.05, "twisting_friction": 0.05,
         "poisson_ratio": 0.22}
#: a tilted frame, so that the floor's geometry carries round-off
TILT = quat_matrix(quat_from_rotvec(np.array([0.3, -0.4, 0.2])))
#: ``rotation_vector`` that turns the tetrahedral template's corner (1, 1, 1) to +z: a face down
FACE_DOWN = (0.6755108588560398, -0.6755108588560398, 0.0)


def clump_over(surface, template, start, turn, velocity=(0.0, 0.0, 0.0), spin=(0.0, 0.0, 0.0), frame=np.eye(3),
               contact=ROUGH, gravity=1.0):
    """One clump of ``template`` (density 1) at ``start`` with its template frame turned by the
    rotation vector ``turn``, moving at ``velocity`` and spinning at ``spin``, over the plane
    z = 0 (``surface`` None) or the mesh ``surface``, under ``gravity`` along −z; the whole turned
    by ``frame``: ``(model, state)``."""
    system = SystemBuilder()
    system.add_clumps(template, (frame @ np.asarray(start, float))[None],
                      orientation=quat_from_rotvec(frame @ np.asarray(turn, float)),
                      velocity=frame @ np.asarray(velocity, float), angular_velocity=frame @ np.asarray(spin, float))
    sections = {"contact": contact, "fields": {"gravity": frame @ (0.0, 0.0, -gravity)}}
    if surface is None:
        return system.finish([dict(point=(0.0, 0.0, 0.0), normal=frame @ (0.0, 0.0, 1.0))], **sections)
    points, faces = surface
    return system.finish([], [dict(vertices=points @ frame.T, faces=faces)], **sections)


@pytest.mark.parametrize("template, start, turn", [
    (built_in("dimer", 0.5, 0.5), (-0.6, -0.5, 0.56), (0.0, 0.15, 0.3)),   # tilted: one member lands first
    (built_in("tetrahedron", 0.5, 0.5), (-0.6, -0.5, 0.61), FACE_DOWN),    # lands on a face of three members
], ids=["dimer", "tetrahedron"])
def test_a_clump_on_a_floor_of_two_triangles_moves_as_on_the_plane(template, start, turn):
    """A dimer and a tetrahedral clump thrown spinning onto a flat floor of two triangles (the
    square z = 0 split along x + y = 0), with damping, friction, rolling and twisting resistance:
    they land, slide (a member slides across the shared edge) and roll on. Their positions,
    velocities and spins equal those over the plane z = 0 to 1e-12 of their scale at every
    recorded step (the same bits: a member's mesh springs step from the gap of a step ago as its
    plane springs do, `dem.interactions.wall_contact.mesh_springs`)."""
    from support.surfaces import floor_mesh

    runs = []
    for surface in (None, floor_mesh(n=1, size=6.0)):
        model, state = clump_over(surface, template, start, turn, (0.8, 0.6, -0.2), (0.2, -0.3, 0.5))
        sim = Simulation(model, state, "lgvi", 5e-4)
        rows, crossings = [], []
        for _ in range(600):
            sim.advance(10)
            rows.append(np.concatenate((state.position[0], state.velocity[0], state.angular_velocity[0])))
            members = member_positions(model, state)
            below = members - [0.0, 0.0, 0.5]  # the points of the floor under each member
            slip = state.velocity[0, :2] + np.cross(state.angular_velocity[0], below - state.position[0])[:, :2]
            crossings.append((below[:, 0] + below[:, 1] > 0.0, members[:, 2] < 0.5, np.hypot(*slip.T)))
        runs.append(np.array(rows))
        assert sim.energy_budget()["friction"] > 0.0
    plane, mesh = runs
    side = np.array([c[0] for c in crossings])
    crossed = (side[1:] != side[:-1]) & np.array([c[1] for c in crossings])[1:] \
        & (np.array([c[2] for c in crossings])[1:] > 0.3)
    assert np.array([c[1] for c in crossings])[:40].any()   # it landed by t = 0.2
    assert crossed.any()   # a member crossed the shared edge touching the floor, sliding at more than 0.3
    assert np.abs(plane[-1, 6:]).max() > 0.05   # still turning at t = 3
    worst = np.abs(mesh - plane).max() / np.abs(plane).max()
    assert worst <= 1e-12, worst


def test_a_frictionless_clump_bouncing_on_a_tilted_mesh_keeps_its_momentum_along_it_and_its_energy():
    """A tetrahedral clump tumbling over a tilted floor of 72 jittered triangles under g = 10,
    frictionless and elastic, bounces on one member after another on several triangles: floor
    and gravity push it along the floor's normal ``n`` only, so its momentum along the floor and
    its angular momentum about ``n`` stay put (to 1e-12 of their size; measured 1.4e-13 and
    2.4e-13), and its energy stays within 1e-4 of its start (measured 3.5e-5: the Hertz law's
    onset at dt/dt_crit ≈ 0.08)."""
    from support.surfaces import floor_mesh

    n = TILT @ (0.0, 0.0, 1.0)
    model, state = clump_over(floor_mesh(n=6, size=6.0, jitter=0.3), built_in("tetrahedron", 0.5, 0.5),
                              (-1.5, -1.0, 0.7), (0.4, 0.9, -0.3), (1.2, 0.8, -0.2), (1.5, -2.0, 1.0), TILT,
                              {"k_pw": 2e4}, gravity=10.0)
    sim = Simulation(model, state, "lgvi", 5e-4)

    def invariants():
        row = sim.energy_budget()
        momentum = np.array([row[k] for k in ("Px", "Py", "Pz")])
        return momentum - (momentum @ n) * n, np.array([row[k] for k in ("Lx", "Ly", "Lz")]) @ n, row

    along0, about0, row0 = invariants()
    worst = np.zeros(3)
    touched = set()
    for step in range(4000):
        sim.advance(1)
        own = state.interactions["clump_pw"]
        touched.update(own.mesh_feature[own.mesh_count > 0, 0].tolist())
        if step % 20 == 19:
            along, about, row = invariants()
            errors = np.abs(along - along0).max(), abs(about - about0), abs(row["total"] - row0["total"])
            worst = np.maximum(worst, errors)
    assert len(touched) >= 4   # on several triangles
    assert worst[0] < 1e-12 * np.linalg.norm(along0) and worst[1] < 1e-12 * abs(about0), worst
    assert worst[2] < 1e-4 * row0["total"], worst


def paddle_scene(tmp_path):
    """The tables, after `FLOOR`'s, of a paddle (a vertical plate of 18 jittered triangles from the
    z axis out to x = 3, 1.5 high: a mesh, its file written into ``tmp_path``) that turns about z
    at 0.4 and drifts along x, and a dimer and a tetrahedral clump resting in its way."""
    from support.surfaces import floor_mesh, write_surface

    points, faces = floor_mesh(n=3, size=1.0, jitter=0.05, seed=2)
    points = np.column_stack((3.0 * (points[:, 0] + 0.5), 0.0 * points[:, 2], 1.5 * (points[:, 1] + 0.5)))
    write_surface(tmp_path / "paddle.stl", points, faces)
    return (DIMER + 'position = [2.11, 1.15, 0.5]\nrotation_vector = [0, 0, 0.7]\n'
            '[[clump]]\ntemplate = "tetrahedron"\nradius = 0.5\ndistance = 0.5\nposition = [1.02, 0.95, 0.61]\n'
            f'rotation_vector = {list(FACE_DOWN)}\n'
            '[[mesh]]\nfile = "paddle.stl"\ncenter = [0.0, 0.0, 0.0]\nangular_velocity = [0.0, 0.0, 0.4]\n'
            'velocity = [0.05, 0.0, 0.0]\nrolling_friction = 0.1\n')


def test_a_turning_mesh_sweeping_clumps_takes_their_loads_and_closes_the_budget(tmp_path):
    """The paddle of `paddle_scene` sweeps the two clumps over the rough floor, its member contacts
    sliding and rolling on its face and its edges: at every sample the clumps' force and moment
    (about the origin) less their weight's are minus the loads booked on the floor and the paddle
    (what the clumps gain the walls lose, to 1e-12; measured 8e-16); the paddle's work ('walls')
    closes the budget, ``total`` constant to 5e-3 of it, falling as h (the dashpots and the slip;
    measured 2.3e-3, 1.1e-3, 5.6e-4 of 3.2 at h = 5e-4, 2.5e-4, 1.25e-4)."""
    from dem.runner import prepare

    path = clump_scene(tmp_path, FLOOR + paddle_scene(tmp_path))
    errors = []
    for dt in (5e-4, 2.5e-4):
        _, model, state, _ = prepare(path)
        sim = Simulation(model, state, "lgvi", dt)
        start, error, worst, swept = sim.energy_budget()["total"], 0.0, 0.0, 0
        weight = model.mass[:, None] * np.array([0.0, 0.0, -1.0])
        for _ in range(40):
            sim.advance(int(round(0.075 / dt)))
            walls = state.interactions["walls"]
            force = (state.force - weight).sum(axis=0)
            moment = (state.moment + np.cross(state.position, state.force - weight)).sum(axis=0)
            load = walls.load[:, :3].sum(axis=0)
            wall_moment = (walls.load[:, 3:6] + np.cross(walls.point, walls.load[:, :3])).sum(axis=0)
            scale = np.abs(walls.load[:, :3]).max()
            worst = max(worst, np.abs(force + load).max() / scale, np.abs(moment + wall_moment).max() / scale)
            error = max(error, abs(sim.energy_budget()["total"] - start))
            own = state.interactions["clump_pw"]
            swept += bool((own.mesh_count > 0).any())
        row = sim.energy_budget()
        assert worst < 1e-12, worst
        assert swept > 10 and row["walls"] < -0.1 and row["friction"] > 0.0   # the paddle pushed the clumps
        errors.append(error)
    assert errors[0] < 5e-3 * abs(row["walls"]), errors
    assert errors[1] < 0.6 * errors[0], errors


def test_a_member_touching_too_many_mesh_features_stops_the_run(tmp_path, capsys):
    """A fan of many thin triangles round a vertex, an upright dimer's lower member on the vertex:
    more contacts than slots is an error that names the clump and its member, as for a
    particle."""
    from support.surfaces import write_surface

    from dem.cli import main
    from dem.meshes import MAX_CONTACTS

    angles = np.linspace(0.0, 2 * np.pi, 4 * MAX_CONTACTS, endpoint=False)
    rim = np.column_stack((np.cos(angles), np.sin(angles), 0.8 + 0.0 * angles))  # a cone: every face concave
    faces = np.array([(0, 1 + k, 1 + (k + 1) % len(rim)) for k in range(len(rim))])
    write_surface(tmp_path / "cone.stl", np.concatenate(([[0.0, 0.0, 0.0]], rim)), faces)
    path = clump_scene(tmp_path, FLOOR.replace("[[walls]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n", "")
                       + DIMER + 'position = [0.0, 0.0, 0.7]\nrotation_vector = [0.0, 1.5707963267948966, 0.0]\n'
                       '[[mesh]]\nfile = "cone.stl"\n')
    code = main(["run", str(path), "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and f"clump 0's member 1 touched {len(faces)} mesh features at once" in err, err


# ---------------------------------------------------------------------------------------------
# clumps touching clumps and spheres (dem.interactions.clump_contacts)
# ---------------------------------------------------------------------------------------------

COLLISION = """[contact]
k_pp = 2e4
restitution = 0.5
friction = 0.5
poisson_ratio = 0.22
[[clump]]
template = "dimer"
radius = 0.5
distance = 0.5
position = [-0.9, 0.0, 0.0]
rotation_vector = [0.0, 0.3, 0.5]
velocity = [1.0, 0.05, 0.0]
angular_velocity = [0.0, 0.0, 1.0]
[[clump]]
template = "tetrahedron"
radius = 0.5
position = [0.9, 0.2, 0.1]
velocity = [-1.0, 0.0, 0.0]
[[sphere]]
position = [0.0, 2.0, 0.0]
diameter = 1.0
velocity = [0.0, -1.0, 0.0]
"""


def collide(tmp_path, overrides, dt, samples=40):
    """A dimer, a tetrahedron and a sphere thrown together (`COLLISION`, no gravity) for 10 time
    units under `lgvi`: ``(model, state, budgets)``, the energy budget at the start and at
    ``samples`` times evenly spaced (the last after every contact has opened)."""
    from dem.runner import prepare

    _, model, state, _ = prepare(clump_scene(tmp_path, COLLISION), list(overrides))
    sim = Simulation(model, state, "lgvi", dt)
    budgets = [energy_budget(model, state)]
    for _ in range(samples):
        sim.advance(int(round(10.0 / samples / dt)))
        budgets.append(energy_budget(model, state))
    return model, state, budgets


def test_colliding_clumps_conserve_momentum_and_close_the_energy_budget(tmp_path):
    """The dimer hits the tetrahedron (its members sliding, damped) and the sphere hits the dimer:
    linear momentum is kept to 1e-12 of its size, angular momentum to 1e-11 over the 10⁵ steps
    (the members' forces act at the contact points, in equal and opposite pairs: the battery of
    tests/test_interactions.py checks ΣF = 0 and Σ(x × F + τ) = 0 to 1e-13 at each evaluation;
    the rest is `lgvi`'s round-off, 4e-13 here); the energy budget (kinetic + contact energies +
    the booked dashpot and slip work) closes to first order in dt after the impacts, as the
    sphere pipeline's does; without damping and friction the energy stays within 1.5e-5 of its
    start through the impacts, the error second order in dt. Before any contact the members of
    one clump, which overlap, exert no force on each other."""
    from dem.runner import prepare

    _, model, state, _ = prepare(clump_scene(tmp_path, COLLISION), [])
    Simulation(model, state, "lgvi", 2e-4)
    assert list(model.interactions) == ["clump_pp"] and not state.force.any() and not state.moment.any()
    closing = []
    for dt in (2e-4, 1e-4):
        model, state, budgets = collide(tmp_path, [], dt)
        first, last = budgets[0], budgets[-1]
        momentum = np.linalg.norm([first[k] for k in ("Px", "Py", "Pz")])
        angular = np.linalg.norm([first[k] for k in ("Lx", "Ly", "Lz")])
        for row in budgets:
            assert max(abs(row[k] - first[k]) for k in ("Px", "Py", "Pz")) < 1e-12 * momentum
            assert max(abs(row[k] - first[k]) for k in ("Lx", "Ly", "Lz")) < 1e-11 * angular
        assert last["dissipated"] > 0.3 * first["total"] and last["friction"] > 0.05 * first["total"]
        assert last["hertz_pp"] == 0.0   # every contact has opened
        closing.append(abs(last["total"] - first["total"]) / first["total"])
    assert closing[0] < 3e-3 and 1.8 < closing[0] / closing[1] < 2.2, closing
    errors = []
    for dt in (2e-4, 1e-4):
        _, _, budgets = collide(tmp_path, ["contact.friction=0.0", "contact.restitution=1.0"], dt, samples=200)
        assert max(row["hertz_pp"] for row in budgets) > 1e-3 * budgets[0]["total"]   # caught in contact
        errors.append(max(abs(row["total"] - budgets[0]["total"]) for row in budgets) / budgets[0]["total"])
    assert errors[0] < 1.5e-5 and errors[0] / errors[1] > 3.5, errors


def test_a_sphere_pushes_a_clump_at_the_contact_point(tmp_path):
    """A sphere sunk into the end member of a tilted dimer (frictionless, at rest): the sphere and
    the clump get equal and opposite Hertz forces ``K/(r_a + r_b) δ^1.5`` along the line of the
    centres, the clump the moment of that force about its centre of mass (arm × f, the arm to the
    member's centre, on the force's line), to round-off; force and moment are minus the
    central-difference gradient of the contact energy in the clump's position and orientation."""
    from dem.engine import compute_forces
    from dem.rotations import quat_multiply
    from dem.runner import prepare

    scene = clump_scene(tmp_path, COLLISION.split("[[clump]]")[0] + DIMER + 'position = [0.1, -0.2, 0.3]\n'
                        'rotation_vector = [0.2, 0.5, -0.3]\n[[sphere]]\nposition = [0.9, 0.1, 0.6]\ndiameter = 0.8\n')
    _, model, state, _ = prepare(scene, ["contact.friction=0.0"])
    contacts = compute_forces(model, state)
    clump, sphere = (0, 1) if model.site_start[1] > 0 else (1, 0)
    members = member_positions(model, state)
    far = int(np.argmax(np.linalg.norm(members - state.position[sphere], axis=1)))
    near = members[1 - far]
    apart = near - state.position[sphere]
    distance = np.linalg.norm(apart)
    reach = 0.5 + 0.4
    assert np.linalg.norm(members[far] - state.position[sphere]) > reach > distance   # one member touches
    push = 2e4 / reach * (1.0 - distance / reach) ** 1.5 * apart / distance
    scale = np.abs(push).max()
    assert np.abs(state.force[clump] - push).max() < 1e-12 * scale
    assert np.abs(state.force[sphere] + push).max() < 1e-12 * scale
    assert np.abs(state.moment[clump] - np.cross(near - state.position[clump], push)).max() < 1e-12 * scale
    assert np.abs(state.moment[sphere]).max() < 1e-12 * scale

    def energy(position=state.position, turn=(1.0, 0.0, 0.0, 0.0)):
        turns = np.tile([1.0, 0.0, 0.0, 0.0], (2, 1))
        turns[clump] = turn
        moved = type(state).new(position, state.velocity, quat_multiply(turns, state.orientation),
                                state.angular_velocity, state.interactions)
        return energy_budget(model, moved, compute_forces(model, moved, contacts))["hertz_pp"]

    eps = 1e-6
    for c in range(3):
        step = np.zeros((2, 3))
        step[clump, c] = eps
        fd_force = -(energy(state.position + step) - energy(state.position - step)) / (2 * eps)
        fd_moment = -(energy(turn=quat_from_rotvec(step[clump])) - energy(turn=quat_from_rotvec(-step[clump]))) \
            / (2 * eps)
        assert abs(fd_force - push[c]) < 1e-6 * scale and abs(fd_moment - state.moment[clump, c]) < 1e-6 * scale


# ---------------------------------------------------------------------------------------------
# the contact network of clumps (dem.network): member pairs
# ---------------------------------------------------------------------------------------------

PILE = """[contact]
k_pp = 2e4
restitution = 0.6
friction = 0.4
rolling_friction = 0.1
twisting_friction = 0.05
poisson_ratio = 0.22
"""


def pressed_pile(seed, tmp_path, overrides=()):
    """Twelve clumps (dimers, tetrahedra, trimers) and four spheres, their centres at random in a
    2.4-wide box so that members of different bodies overlap, moving and spinning at random; only
    the contacts act (no gravity, no walls); ``overrides`` of the scene's keys. ``(model, state)``
    with the member pairs' loads kept (`keep_member_loads`, as a run writing the network)."""
    from dem.interactions.clump_contacts import keep_member_loads
    from dem.runner import prepare

    rng = np.random.default_rng(seed)
    tables = ""
    for k in range(16):
        x = rng.uniform(0.0, 2.4, 3)
        if k < 12:
            shape = ("dimer", "tetrahedron", "trimer")[k % 3]
            tables += f'[[clump]]\ntemplate = "{shape}"\nradius = 0.5\nposition = {x.tolist()}\n' \
                      f'rotation_vector = {rng.normal(size=3).tolist()}\n'
        else:
            tables += f'[[sphere]]\nposition = {x.tolist()}\ndiameter = 0.9\n'
    _, model, state, _ = prepare(clump_scene(tmp_path, PILE + tables), list(overrides))
    keep_member_loads(model)
    state.velocity[:] = rng.normal(size=(16, 3))
    state.angular_velocity[:] = rng.normal(size=(16, 3))
    return model, state


def read_lines(path):
    """``(points, {name: array})`` of a contacts VTK file's lines."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLPolyDataReader

    reader = vtkXMLPolyDataReader()
    reader.SetFileName(str(path))
    reader.Update()
    data = reader.GetOutput()
    cells = data.GetCellData()
    arrays = {cells.GetArrayName(k): vtk_to_numpy(cells.GetArray(k)) for k in range(cells.GetNumberOfArrays())}
    ends = vtk_to_numpy(data.GetLines().GetConnectivityArray()).reshape(-1, 2)
    points = vtk_to_numpy(data.GetPoints().GetData())
    return points[ends[:, 0]], points[ends[:, 1]], arrays


@pytest.mark.parametrize("adhesion", [[], ['contact.normal="jkr"', "contact.work_of_adhesion=2.0"]],
                         ids=["hertz", "jkr"])
def test_clump_network_lines_carry_each_bodys_contact_force_and_moment(tmp_path, adhesion):
    """Five force evaluations (dt 0.01) of a pressed pile of clumps and spheres, frictional, rolling,
    twisting, damped (and under the JKR law, `adhesive_clump_pp`): the VTK lines (member pair by
    member pair, between the member centres) read back add up to each body's contact force
    (``force`` on the member of ``i``, its negative on that of ``j``) and to its moment about its
    centre of mass (``(c − x) × f`` plus each member's own ``moment_i``/``moment_j``), to 1e-12 of
    the largest; the lines are exactly the member pairs of different bodies closer than their
    radii sum (computed here from the template geometry), their overlaps those of the member
    spheres; some slide, at the Coulomb limit."""
    from types import SimpleNamespace

    from dem.engine import compute_forces
    from dem.observers.vtk import VTKWriter

    model, state = pressed_pile(3, tmp_path, adhesion)
    assert list(model.interactions) == ["adhesive_clump_pp" if adhesion else "clump_pp"]
    contacts = compute_forces(model, state, dt=0.01)
    for _ in range(4):
        contacts = compute_forces(model, state, contacts, dt=0.01)
    VTKWriter(tmp_path / "run", 1, contacts=True).report(SimpleNamespace(model=model, state=state, contacts=contacts))
    start_points, end_points, arrays = read_lines(tmp_path / "run/vtk/contacts_000000000.vtp")
    i, j, force = arrays["i"], arrays["j"], arrays["force"]
    assert np.all(i < j) and len(i) > 30
    summed_force, summed_moment = np.zeros_like(state.force), np.zeros_like(state.moment)
    np.add.at(summed_force, i, force)
    np.add.at(summed_force, j, -force)
    np.add.at(summed_moment, i, np.cross(start_points - state.position[i], force) + arrays["moment_i"])
    np.add.at(summed_moment, j, np.cross(end_points - state.position[j], -force) + arrays["moment_j"])
    scale = np.abs(state.force).max()
    np.testing.assert_allclose(summed_force, state.force, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(summed_moment, state.moment, rtol=0, atol=1e-12 * scale)
    # the member pairs that touch, from the template geometry
    sites = member_positions(model, state)
    members, owner, local, radius = [], [], [], []
    for body in range(model.n_bodies):   # a clump's members are its sites; a sphere is one member at its centre
        first, last = model.site_start[body], model.site_start[body + 1]
        centres = sites[first:last] if last > first else state.position[body][None]
        members += list(centres)
        owner += [body] * len(centres)
        local += list(range(len(centres)))
        radius += list(model.site_radius[first:last]) if last > first else [0.5 * model.diameter[body]]
    members, owner, local, radius = np.array(members), np.array(owner), np.array(local), np.array(radius)
    d = np.linalg.norm(members[:, None] - members[None], axis=2)
    a, b = np.nonzero((d < radius[:, None] + radius[None]) & (owner[:, None] < owner[None]))
    order = np.lexsort((local[b], local[a], owner[b], owner[a]))
    a, b = a[order], b[order]
    np.testing.assert_array_equal(np.column_stack((i, j, arrays["member_i"], arrays["member_j"])),
                                  np.column_stack((owner[a], owner[b], local[a], local[b])))
    np.testing.assert_allclose(start_points, members[a], rtol=0, atol=1e-14)
    np.testing.assert_allclose(end_points, members[b], rtol=0, atol=1e-14)
    reach = radius[a] + radius[b]
    np.testing.assert_allclose(arrays["overlap"], reach - d[a, b], rtol=0, atol=1e-14)
    n = (start_points - end_points) / np.linalg.norm(start_points - end_points, axis=1)[:, None]
    np.testing.assert_allclose(arrays["normal_force"], np.einsum("mc,mc->m", force, n), rtol=0, atol=1e-12 * scale)
    assert 0 < arrays["sliding"].sum() < len(i)


def test_clump_network_across_a_periodic_face_is_the_network_inside(tmp_path):
    """The fabric's dimers and sphere, the second dimer across a periodic face of the cell (its
    centre at y = 5.01 in a cell periodic in y from −0.5 to 5.5, its nearest image at −0.99): the
    same three member-pair contacts, normals, overlaps and forces as with it at −0.99 in an open
    box, to round-off, and the same fabric tensor."""
    from dem.engine import compute_forces
    from dem.interactions.clump_contacts import keep_member_loads
    from dem.network import contact_network, fabric
    from dem.runner import prepare

    found = []
    for y, cell in ((-0.99, ""), (5.01, "[cell]\nperiodic = [false, true, false]\norigin = [-5.0, -0.5, -5.0]\n"
                                          "size = [10.0, 6.0, 10.0]\n")):
        tables = (DIMER + "position = [0.0, 0.0, 0.0]\n" + DIMER + f"position = [0.0, {y}, 0.0]\n"
                  "[[sphere]]\nposition = [1.23, 0.0, 0.0]\ndiameter = 1.0\n")
        _, model, state, _ = prepare(clump_scene(tmp_path, "[contact]\nk_pp = 2e4\n" + cell + tables), [])
        keep_member_loads(model)
        contacts = compute_forces(model, state)
        found.append((contact_network(model, state, contacts), fabric(model, state, contacts), state.force.copy()))
    (inside, inside_fabric, inside_force), (across, across_fabric, across_force) = found
    assert len(across.i) == 3 and across_fabric.contacts == 3
    for name in ("normal", "normal_force", "overlap", "force"):
        np.testing.assert_allclose(getattr(across, name), getattr(inside, name), rtol=0, atol=1e-12 * 2e4, err_msg=name)
    assert (across.overlap > 0.0).all()
    np.testing.assert_allclose(across_fabric.tensor, inside_fabric.tensor, rtol=0, atol=1e-12)
    np.testing.assert_allclose(across_force, inside_force, rtol=0, atol=1e-12 * np.abs(inside_force).max())


def test_clump_fabric_counts_member_pairs(tmp_path):
    """Two parallel dimers side by side, touching at both member pairs, and a sphere on the end
    of one: three contacts (member pairs), not two touching body pairs; N_p = 3 bodies,
    Z = 2·3/3 = 2, the sphere a rattler (one contact, so Z_m = (2·3 − 1)/(3 − 1) = 2.5); the fabric
    tensor is the mean of n⊗n: two normals along y, one along x, diag(1/3, 2/3, 0), anisotropy
    7.5 √(⅔ φ':φ') = 7.5 √(⅔ · 2/9) = 5/√3."""
    from dem.engine import compute_forces
    from dem.interactions.clump_contacts import keep_member_loads
    from dem.network import fabric
    from dem.runner import prepare

    tables = (DIMER + "position = [0.0, 0.0, 0.0]\n" + DIMER + "position = [0.0, 0.99, 0.0]\n"
              "[[sphere]]\nposition = [1.23, 0.0, 0.0]\ndiameter = 1.0\n")
    _, model, state, _ = prepare(clump_scene(tmp_path, "[contact]\nk_pp = 2e4\n" + tables), [])
    keep_member_loads(model)
    found = fabric(model, state, compute_forces(model, state))
    assert (found.contacts, found.particles, found.coordination, found.rattlers) == (3, 3, 2.0, 1)
    assert found.mechanical == 2.5
    np.testing.assert_allclose(found.tensor, np.diag([1 / 3, 2 / 3, 0.0]), rtol=0, atol=1e-12)
    assert abs(found.anisotropy - 5.0 / np.sqrt(3.0)) < 1e-12


def test_a_clump_run_writes_its_contact_network(tmp_path):
    """``[output] contacts = true`` with clumps: contacts.pvd lines between member centres and
    fabric.csv rows: a dimer resting on a dimer on the floor touches it at its two member pairs,
    two lines between bodies 0 and 1 pressed together (positive normal forces), two contacts."""
    import csv

    from dem.cli import main

    path = clump_scene(tmp_path, FLOOR.replace("k_pw", "k_pp = 2e4\nk_pw") + DIMER + "position = [0.0, 0.0, 0.4996]\n"
                       + DIMER + "position = [0.0, 0.0, 1.4989]\n", name="stack.toml")
    overrides = ["simulation.t_end=0.5", "output.vtk_every=100", "output.log_every=100", "output.contacts=true"]
    assert main([str(path), "--out", str(tmp_path / "run"), "--quiet"] + sum((["--set", o] for o in overrides), [])) \
        == 0
    snapshots = sorted((tmp_path / "run" / "vtk").glob("contacts_*.vtp"))
    assert (tmp_path / "run" / "contacts.pvd").is_file() and len(snapshots) == 6
    first, second, arrays = read_lines(snapshots[-1])
    assert list(zip(arrays["i"], arrays["j"], arrays["member_i"], arrays["member_j"])) == [(0, 1, 0, 0), (0, 1, 1, 1)]
    assert (arrays["normal_force"] > 0.0).all() and np.allclose(first[:, 2] - second[:, 2], -1.0, atol=1e-3)
    rows = list(csv.DictReader(open(tmp_path / "run" / "fabric.csv")))
    assert len(rows) == 6 and float(rows[-1]["contacts"]) == 2


# ---------------------------------------------------------------------------------------------
# adhesive clumps (dem.interactions.clump_contacts.ADHESIVE_CLUMP_PP)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("law, factor", [("jkr", 1.5), ("dmt", 2.0)])
def test_dimers_pulled_apart_quasi_statically_reach_the_pull_off_force(law, factor):
    """Two dimers end to end along x (members of radius 0.5, 0.5 apart), only their nearest
    members touching (R* = 0.25), pulled apart in small steps: the least force is the pull-off
    force of those two spheres, 1.5 π w R* (JKR) or 2 π w R* (DMT), to 1 %, along the axis
    through both centres of mass (no moment). A JKR member pair holds, stretched, until ξ_c
    (`jkr_theory`) and breaks there; pushed back, it does not form again before the members
    touch, and then at once on the JKR branch (−8/9 of the pull-off force at ξ = 0)."""
    from test_contact_models import assert_pull_off_curve, jkr_theory

    from dem.engine import compute_forces

    stiffness, work, radius = 1e4, 2.0, 0.5
    reach, reduced = 2.0 * radius, 0.5 * radius
    system = SystemBuilder()
    system.add_clumps(built_in("dimer", radius), [[0.0, 0.0, 0.0], [3 * radius - 0.02, 0.0, 0.0]])
    model, state = system.finish(contact={"normal": law, "k_pp": stiffness, "work_of_adhesion": work})
    assert list(model.interactions) == ["adhesive_clump_pp"]
    xi_break = jkr_theory(stiffness, reach, reduced, work)[3]
    overlaps = np.linspace(0.02, 1.5 * xi_break, 2001)
    forces, contacts = [], None

    def pull(xi):
        state.position[1, 0] = 3 * radius - xi   # the members at ±radius/2 about each centre of mass
        found = compute_forces(model, state, contacts)
        assert state.force[0, 0] == -state.force[1, 0] and not state.force[:, 1:].any()
        assert np.abs(state.moment).max() <= 1e-12 * abs(state.force[1, 0])
        return found

    for xi in overlaps:
        contacts = pull(xi)
        forces.append(state.force[1, 0])   # on the second dimer, away from the first: positive in compression
    pull_off = factor * np.pi * work * reduced
    assert_pull_off_curve(law, overlaps, np.array(forces), pull_off, xi_break)
    if law == "dmt":
        return
    for xi in (0.5 * xi_break, -1e-9 * reach):   # back towards touch: apart, it stays broken
        contacts = pull(xi)
        assert state.force[1, 0] == 0.0
    pull(reach * 1e-12)
    assert state.force[1, 0] == pytest.approx(-8 / 9 * pull_off, rel=1e-6)


def test_adhesive_clumps_colliding_keep_their_momenta_and_close_the_budget(tmp_path):
    """The dimer, the tetrahedron and the sphere of `COLLISION` thrown together under the JKR law
    (w = 0.05, elastic, frictionless): member pairs form, hold stretched and snap off; linear
    momentum is kept to 1e-12 of its size and angular momentum to 1e-11, and the energy budget
    (kinetic + Hertz + adhesion + the booked hysteresis) stays within 1e-3 of the kinetic energy
    at the start throughout (the hysteresis is the energy the JKR contacts lost forming and
    breaking, booked as they do)."""
    overrides = ['contact.normal="jkr"', "contact.work_of_adhesion=0.05", "contact.friction=0.0",
                 "contact.restitution=1.0"]
    model, state, budgets = collide(tmp_path, overrides, 2e-4, samples=100)
    assert list(model.interactions) == ["adhesive_clump_pp"]
    first = budgets[0]
    momentum = np.linalg.norm([first[k] for k in ("Px", "Py", "Pz")])
    angular = np.linalg.norm([first[k] for k in ("Lx", "Ly", "Lz")])
    kinetic = first["kinetic_translational"] + first["kinetic_rotational"]
    for row in budgets:
        assert max(abs(row[k] - first[k]) for k in ("Px", "Py", "Pz")) < 1e-12 * momentum
        assert max(abs(row[k] - first[k]) for k in ("Lx", "Ly", "Lz")) < 1e-11 * angular
        assert abs(row["total"] - first["total"]) < 1e-3 * kinetic, row
    assert min(row["adhesion"] for row in budgets) < 0.0 and budgets[-1]["hysteresis"] > 0.0


def test_adhesive_clumps_are_the_same_bits_on_threads(tmp_path):
    """2 400 dimers (two chunks of rows) in a block, each touching its neighbours end to end and
    side by side, moving at random under the JKR law with friction and rolling resistance: 100
    steps of the serial and the parallel loop give the same bits, and the same hysteresis (the
    per-chunk scratch rows left out: the serial loop runs its rows in one call)."""
    from dem.interactions import INTERACTIONS
    from dem.runner import prepare

    rng = np.random.default_rng(7)
    grid = np.stack(np.meshgrid(np.arange(10), np.arange(15), np.arange(16), indexing="ij"), axis=-1).reshape(-1, 3)
    position = grid * (1.48, 0.99, 0.99)
    rows = np.column_stack([position, rng.uniform(-0.5, 0.5, size=(len(grid), 3))])
    np.savetxt(tmp_path / "rows.csv", rows, delimiter=",", header="x,y,z,vx,vy,vz", comments="")
    scene = clump_scene(tmp_path, PILE + DIMER + 'rows = "rows.csv"\n')
    overrides = ['contact.normal="jkr"', "contact.work_of_adhesion=5.0"]
    runs = []
    for parallel in (False, True):
        _, model, state, _ = prepare(scene, overrides)
        sim = Simulation(model, state, "lgvi", 5e-4, parallel=parallel)
        sim.advance(100)
        runs.append((state, sim.energy_budget()))
    assert model.n_bodies == 2400
    (first, budget), (second, _) = runs
    assert budget["adhesion"] < 0.0 and budget["hysteresis"] > 0.0 and budget["friction"] > 0.0
    for name in ("position", "velocity", "orientation", "angular_velocity", "force", "moment"):
        assert np.array_equal(getattr(first, name), getattr(second, name)), name
    for field, one, other in zip(first.interactions["adhesive_clump_pp"]._fields,
                                 first.interactions["adhesive_clump_pp"], second.interactions["adhesive_clump_pp"]):
        assert field in INTERACTIONS["adhesive_clump_pp"].scratch_state or np.array_equal(one, other), field


def test_adhesive_clumps_restart_exactly(tmp_path):
    """The collision of `COLLISION` under the JKR law (w = 0.5, damped, frictional) stopped at
    t = 0.25 while a member pair's JKR contact is formed (its flag in the checkpoint) and
    restarted from its checkpoint ends at t = 0.3 with the same bits as a run straight through
    (energy.csv, the state, the interactions' arrays, the hysteresis booked)."""
    from dem.checkpoint import load_checkpoint
    from dem.runner import run

    path = clump_scene(tmp_path, COLLISION)
    settings = ["simulation.dt=2e-4", "simulation.t_end=0.3", "output.log_every=250", "output.vtk_every=0",
                'contact.normal="jkr"', "contact.work_of_adhesion=0.5"]
    straight, pieces = tmp_path / "straight", tmp_path / "pieces"
    run(path, settings, straight, quiet=True)
    run(path, settings + ["simulation.t_end=0.25"], pieces, quiet=True)
    stopped = load_checkpoint(pieces / "checkpoint.npz")
    most = 4   # (the tetrahedron's members: a member pair's formed flag is the last of its 8 columns)
    values = stopped["contacts.history_values.adhesive_clump_pp"]
    flags = values[:, :most * most * 8].reshape(-1, most * most, 8)[:, :, 7]
    assert (flags == 1.0).any() and stopped["interaction.adhesive_clump_pp.hysteresis"].sum() > 0.0
    assert_occupancy(values, most, 8)
    sim, _ = run(path, settings, pieces, quiet=True, restart=pieces / "checkpoint.npz")
    assert (straight / "energy.csv").read_text() == (pieces / "energy.csv").read_text()
    first, second = load_checkpoint(straight / "checkpoint.npz"), load_checkpoint(pieces / "checkpoint.npz")
    assert first.keys() == second.keys()
    for name in first:
        if name.startswith(("state_", "interaction.", "scheme.", "contacts.history")):
            assert np.array_equal(first[name], second[name]), name
    assert sim.energy_budget()["hysteresis"] > 0.0


# ---------------------------------------------------------------------------------------------
# adhesive clumps at walls (dem.interactions.clump_walls.ADHESIVE_CLUMP_PW)
# ---------------------------------------------------------------------------------------------

#: a JKR floor (k_pw = 1e4, w = 2, damped, rough) and a side wall, no gravity: the adhesive wall
#: tests share the interactions ``adhesive_clump_pw`` and ``walls`` (one set of compiled loops)
STICKY = """[contact]
k_pw = 1e4
normal = "jkr"
work_of_adhesion = 2.0
restitution = 0.5
friction = 0.3
rolling_friction = 0.05
twisting_friction = 0.05
poisson_ratio = 0.22
[[walls]]
point = [0.0, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]
[[walls]]
point = [3.0, 0.0, 0.0]
normal = [-1.0, 0.0, 0.0]
"""
FLOOR_PLANE = dict(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), size=0.0)


def dimer_over_a_floor(law, stiffness, work, height, velocity=(0.0, 0.0, 0.0), mesh=False):
    """``(model, state)``: a dimer (members of radius 0.5, 0.5 apart) lying along x with its centre
    ``height`` above a floor (a plane, or with ``mesh`` two triangles in its place), under the
    normal ``law`` (elastic, frictionless)."""
    from dem.clumps import built_in

    system = SystemBuilder()
    system.add_clumps(built_in("dimer", 0.5), [[0.0, 0.0, height]], velocity=velocity)
    floor = dict(vertices=np.array([[-5.0, -5.0, 0.0], [5.0, -5.0, 0.0], [5.0, 5.0, 0.0], [-5.0, 5.0, 0.0]]),
                 faces=np.array([[0, 1, 2], [0, 2, 3]]))
    return system.finish([] if mesh else [FLOOR_PLANE], [floor] if mesh else [],
                         contact={"normal": law, "k_pw": stiffness, "work_of_adhesion": work})


@pytest.mark.parametrize("law, factor", [("jkr", 1.5), ("dmt", 2.0)])
def test_a_dimer_pulled_off_an_adhesive_floor_quasi_statically_reaches_its_members_pull_off_force(law, factor):
    """A dimer lying on an adhesive plane, both members touching it (R* = R = 0.5), lifted in
    small steps: the least force is the pull-off force of its two members, 2 × 1.5 π w R (JKR) or
    2 × 2 π w R (DMT), to 1 %, straight up (no moment, no sideways force). The members' JKR
    contacts hold, stretched, until ξ_c (`jkr_theory`, the sphere's against a wall) and break
    there; pushed back, they do not form again before the members touch, and then at once on the
    JKR branch (−8/9 of the pull-off force at ξ = 0). A DMT dimer on a floor of two triangles (a
    mesh) feels the plane's forces to round-off."""
    from test_contact_models import assert_pull_off_curve, jkr_theory

    from dem.engine import compute_forces

    stiffness, work, radius = 1e4, 2.0, 0.5
    xi_break = jkr_theory(stiffness, radius, radius, work)[3]
    overlaps = np.linspace(0.02, 1.5 * xi_break, 2001)
    model, state = dimer_over_a_floor(law, stiffness, work, radius - 0.02)
    assert list(model.interactions) == ["adhesive_clump_pw", "walls"]

    pull_off = 2 * factor * np.pi * work * radius

    def lift(xi, model=model, state=state):
        state.position[0, 2] = radius - xi
        compute_forces(model, state)
        assert np.abs(state.force[0, :2]).max() <= 1e-12 * pull_off
        assert np.abs(state.moment).max() <= 1e-12 * pull_off
        return state.force[0, 2]   # up: positive in compression

    forces = np.array([lift(xi) for xi in overlaps])
    assert_pull_off_curve(law, overlaps, forces, pull_off, xi_break)
    if law == "dmt":
        on_mesh = dimer_over_a_floor(law, stiffness, work, radius - 0.02, mesh=True)
        assert list(on_mesh[0].interactions) == ["adhesive_clump_pw", "walls"] and on_mesh[0].interactions[
            "adhesive_clump_pw"].meshes
        meshed = np.array([lift(xi, *on_mesh) for xi in overlaps])
        assert np.abs(meshed - forces).max() <= 1e-12 * pull_off
        return
    for xi in (0.5 * xi_break, -1e-9 * radius):   # back towards touch: apart, they stay broken
        assert lift(xi) == 0.0
    assert lift(radius * 1e-12) == pytest.approx(-8 / 9 * pull_off, rel=1e-6)


@pytest.mark.parametrize("ratio", [0.8, 1.25])
def test_a_slow_dimer_sticks_to_a_jkr_floor_and_a_fast_one_rebounds(ratio):
    """A dimer (mass m, members of radius 0.5) falls flat onto a JKR plane, undamped, at
    ``ratio`` times its sticking velocity ``v_s = √(2 · 2ΔE/m)``, ``ΔE`` the hysteresis of one
    member's contact (`jkr_theory`): below it the dimer stays bound, above it leaves at
    ``√(v² − v_s²)`` to 1 %, having booked exactly 2ΔE as ``hysteresis`` (1e-12); the budget closes
    to 1e-3 of the kinetic energy, as a sphere's does."""
    from test_contact_models import jkr_theory

    stiffness, work, radius = 1e4, 1.0, 0.5
    _, _, _, xi_break, lost = jkr_theory(stiffness, radius, radius, work)
    model, state = dimer_over_a_floor("jkr", stiffness, work, radius + 1e-3)
    mass = model.mass[0]
    sticking = np.sqrt(4 * lost / mass)
    speed = ratio * sticking
    state.velocity[0, 2] = -speed
    sim = Simulation(model, state, "lgvi", 2e-5)
    start = sim.energy_budget()
    sim.advance(40000)
    budget = sim.energy_budget()
    bound = state.position[0, 2] < radius - xi_break
    assert bound == (ratio < 1) and np.abs(state.angular_velocity).max() < 1e-9
    if not bound:
        assert state.velocity[0, 2] == pytest.approx(np.sqrt(speed ** 2 - sticking ** 2), rel=1e-2)
        assert budget["hysteresis"] == pytest.approx(2 * lost, rel=1e-12)   # one cycle of each member
    assert abs(budget["total"] - start["total"]) < 1e-3 * start["kinetic_translational"]


THROWN = ('[[clump]]\ntemplate = "dimer"\nradius = 0.5\ndistance = 0.5\nposition = [-1.0, 0.0, 1.0]\n'
          'rotation_vector = [0.0, 0.4, 0.3]\nvelocity = [0.3, 0.0, -0.4]\nangular_velocity = [0.5, 0.0, 1.0]\n'
          '[[clump]]\ntemplate = "tetrahedron"\nradius = 0.5\nposition = [1.0, 0.5, 1.2]\n'
          'rotation_vector = [0.7, -0.2, 0.1]\nvelocity = [0.5, 0.0, -0.5]\nangular_velocity = [0.0, 2.0, 0.0]\n')


@pytest.mark.parametrize("rough", [False, True])
def test_clumps_thrown_at_a_jkr_floor_close_the_budget(tmp_path, rough):
    """A tilted dimer and a tetrahedron thrown spinning at the JKR floor and side wall of `STICKY`:
    their members' contacts form, hold stretched and snap off as they land, rock and bounce. Elastic
    and smooth, the budget (kinetic + Hertz + adhesion + the booked hysteresis) stays within 1e-3 of
    the kinetic energy at the start throughout, as a sphere's on a JKR plane; damped and rough
    (restitution 0.5, friction, rolling and twisting resistance), within 1e-2 of the work booked
    (dashpots, slip, hysteresis) at dt = 2e-4."""
    from dem.runner import prepare

    overrides = [] if rough else ["contact.restitution=1.0", "contact.friction=0.0", "contact.rolling_friction=0.0",
                                  "contact.twisting_friction=0.0"]
    _, model, state, _ = prepare(clump_scene(tmp_path, STICKY + THROWN), overrides)
    assert list(model.interactions) == ["adhesive_clump_pw", "walls"]
    sim = Simulation(model, state, "lgvi", 2e-4)
    budgets = [energy_budget(model, state)]
    for _ in range(40):
        sim.advance(250)
        budgets.append(energy_budget(model, state))
    first, last = budgets[0], budgets[-1]
    kinetic = first["kinetic_translational"] + first["kinetic_rotational"]
    booked = last["dissipated"] + last["friction"] + last["hysteresis"]
    worst = max(abs(row["total"] - first["total"]) for row in budgets)
    assert min(row["adhesion"] for row in budgets) < 0.0 and last["hysteresis"] > 0.0
    assert worst < (1e-2 * booked if rough else 1e-3 * kinetic), (worst, booked, kinetic)


def test_adhesive_clumps_on_a_floor_are_the_same_bits_on_threads(tmp_path):
    """2 500 dimers (two chunks of rows) at random orientations and velocities at the rough JKR
    floor of `STICKY`, the last row by its side wall: 400 steps of the serial loop and of the
    parallel loop on one and on two threads give the same bits (the state, the members' springs,
    JKR flags and booked work, the walls' loads)."""
    from support.threads import across_threads

    from dem.interactions import INTERACTIONS
    from dem.runner import prepare

    rng = np.random.default_rng(11)
    grid = np.stack(np.meshgrid(2.23 - 1.6 * np.arange(50), 1.6 * np.arange(50), indexing="ij"), axis=-1).reshape(-1, 2)
    turns = rng.standard_normal((len(grid), 4))
    rows = np.column_stack([grid, np.full(len(grid), 0.76), turns / np.linalg.norm(turns, axis=1, keepdims=True),
                            rng.uniform(-1.0, 1.0, size=(len(grid), 2)), np.full(len(grid), -0.5)])
    np.savetxt(tmp_path / "rows.csv", rows, delimiter=",", header="x,y,z,qw,qx,qy,qz,vx,vy,vz", comments="")
    scene = clump_scene(tmp_path, STICKY + DIMER + 'rows = "rows.csv"\n')

    def run(parallel):
        _, model, state, _ = prepare(scene)
        sim = Simulation(model, state, "lgvi", 5e-4, parallel=parallel)
        sim.advance(400)
        return model, state, sim.energy_budget()

    runs = across_threads(run)
    model, first, budget = runs[0]
    assert model.n_bodies == 2500
    own, walls = first.interactions["adhesive_clump_pw"], first.interactions["walls"]
    assert budget["adhesion"] < 0.0 and budget["hysteresis"] > 0.0 and budget["friction"] > 0.0
    assert own.adhered[:, 0].any() and (np.abs(walls.load[:, :3]).max(axis=1) > 0).all()
    for _, other, _ in runs[1:]:
        for name in ("position", "velocity", "orientation", "angular_velocity", "force", "moment"):
            assert np.array_equal(getattr(first, name), getattr(other, name)), name
        for name in ("adhesive_clump_pw", "walls"):
            for field, one, two in zip(first.interactions[name]._fields, first.interactions[name],
                                       other.interactions[name]):
                assert field in INTERACTIONS[name].scratch_state or np.array_equal(one, two), (name, field)


def test_adhesive_clumps_on_a_floor_restart_exactly(tmp_path):
    """Tetrahedra and dimers thrown at the rough JKR floor and side wall of `STICKY`: a run stopped
    half-way, while members' JKR contacts are formed (their flags in the checkpoint), and
    restarted from its checkpoint ends with the same bits as a run straight through (energy.csv,
    the state, the interactions' arrays, the hysteresis booked)."""
    path = clump_scene(tmp_path, STICKY + '[[clump]]\ntemplate = "tetrahedron"\nradius = 0.5\ncount = 10\n'
                       'min = [-2.5, -2.5, 0.6]\nmax = [2.5, 2.5, 4]\nattempts = 1000\nvelocity = [0.4, 0, -0.3]\n'
                       + DIMER + 'count = 10\nmin = [-3, -3, 0.6]\nmax = [2.5, 3, 4]\nseed = 2\n'
                       'velocity = [0.2, 0.1, -0.3]\n')
    settings = ["simulation.dt=5e-4", "simulation.t_end=5.0", "output.vtk_every=0", "output.log_every=100"]
    sim, midway, _ = restarted(tmp_path, path, settings, 3.0)
    assert midway["interaction.adhesive_clump_pw.adhered"].any()
    assert midway["interaction.adhesive_clump_pw.hysteresis"].sum() > 0.0
    assert sim.energy_budget()["friction"] > 0.0


# ---------------------------------------------------------------------------------------------
# clumps in a periodic cell (dem.cell; dem.interactions.clump_contacts takes the centres' image)
# ---------------------------------------------------------------------------------------------

#: two rods of four members (length 4, 0.44 of the cell's edge 9) thrown at each other, rough
#: (friction, rolling and twisting resistance), with no gravity
RODS = """[contact]
k_pp = 2e4
restitution = 0.5
friction = 0.5
rolling_friction = 0.1
twisting_friction = 0.05
poisson_ratio = 0.22
""" + 2 * '[[clump]]\ntemplate = "rod"\nspheres = 4\naspect = 4.0\nradius = 0.5\n{}\n'
RODS = RODS.format("position = [{a}, 4.5, 4.5]\nrotation_vector = [0.0, 0.2, 0.1]\nvelocity = [-0.5, 0.05, 0.0]\n"
                   "angular_velocity = [0.0, 0.0, 0.3]",
                   "position = [{b}, 4.2, 4.8]\nrotation_vector = [0.3, 0.0, 1.2]\nvelocity = [0.5, 0.0, -0.05]")
PERIODIC = "[cell]\nperiodic = [true, true, true]\nsize = [{edge}, 9.0, 9.0]\n"


def rods(tmp_path, a, b, cell=PERIODIC, edge=9.0):
    from dem.runner import prepare

    _, model, state, _ = prepare(clump_scene(tmp_path, cell.format(edge=edge) + RODS.format(a=a, b=b)), [])
    return model, state


def test_rods_colliding_across_a_face_collide_as_inside(tmp_path):
    """Two rods meet across the x face of the cell (their centres at x = 0.5 and 6.4, the second's
    nearest image at −2.6), and the same rods meet in the middle of the cell: the same collision
    (positions less the shift, velocities, spins, orientations and every column of the budget, to
    1e-11 of their scale: the round-off of ``x ± L`` through a frictional impact, measured 2.3e-12);
    in the middle of the cell it is the collision in an open box to the last bit. The rods are
    long (0.44 of the edge): their far members are nearer to images of the other rod than the one
    the centres pair them through (member 3 of the first, at about x = 2, and member 3 of the
    second, at about 7.8: 3.6 apart one way, 5.8 the other), which touch nothing
    (`dem.interactions.clump_contacts`: one image per body pair, the centres')."""
    runs = []
    for a, b, cell in ((0.5, 6.4, PERIODIC), (4.5, 1.4, PERIODIC), (4.5, 1.4, "")):
        model, state = rods(tmp_path, a, b, cell)
        sim = Simulation(model, state, "lgvi", 5e-4)
        touched = 0.0
        for _ in range(30):
            sim.advance(100)
            touched = max(touched, sim.energy_budget()["hertz_pp"])
        runs.append((state, sim.energy_budget(), touched))
    (across, budget, touched), (inside, expected, _), (open_box, _, _) = runs
    assert touched > 1e-2 * budget["total"] and budget["friction"] > 0.0 and budget["dissipated"] > 0.0
    assert budget["hertz_pp"] == 0.0   # they collided and parted
    for name in ("position", "velocity", "orientation", "angular_velocity"):
        assert np.array_equal(getattr(inside, name), getattr(open_box, name)), name
    scale = np.abs(across.velocity).max()
    shift = inside.position - across.position
    assert np.allclose(shift[:, 0], [4.0, -5.0], atol=1e-11) and np.abs(shift[:, 1:]).max() < 1e-11
    assert np.abs(inside.velocity - across.velocity).max() < 1e-11 * scale
    assert np.abs(inside.angular_velocity - across.angular_velocity).max() < 1e-11 * scale
    assert np.abs(inside.orientation - across.orientation).max() < 1e-11
    for key in ("kinetic_translational", "kinetic_rotational", "friction", "dissipated", "total", "Px", "Py", "Pz"):
        assert budget[key] == pytest.approx(expected[key], rel=1e-11, abs=1e-14), key


def test_a_cell_too_small_for_a_clump_is_refused(tmp_path):
    """A rod of length 4 (its list diameter) reaches two images of another in a cell of edge 8:
    one line naming ``cell.size``; at edge 9 the cell is accepted."""
    from dem.schema import SceneError

    with pytest.raises(SceneError, match=r"cell\.size: the periodic edge Lx = 8 must be more than twice .*a clump's "
                                         r"diameter") as error:
        rods(tmp_path, 0.5, 6.4, edge=8.0)
    assert "\n" not in str(error.value)
    assert rods(tmp_path, 0.5, 6.4)[0].has_clumps


#: two rods meeting across the y faces of a cube of edge 9: the second's nearest image at y = −1
ROD = '[[clump]]\ntemplate = "rod"\nspheres = 4\naspect = 4.0\nradius = 0.5\n'
ACROSS_Y = (RODS.split("[[clump]]")[0]
            + ROD + "position = [4.5, 1.0, 4.5]\nrotation_vector = [0.0, 0.2, 0.1]\nvelocity = [0.0, -1.5, 0.0]\n"
            + ROD + "position = [{x}, {y}, 4.6]\nrotation_vector = [0.3, 0.0, -0.1]\nvelocity = [{v}, 1.5, 0.0]\n")


def test_rods_colliding_across_a_sliding_face_collide_as_the_images_motion_says(tmp_path):
    """The rods meet across the y faces of a cell sheared at L_xy = 0.4 (Lees–Edwards: the image
    of the second rod, across the face, moves along x at w = −0.4 · 9 relative to the rod), and
    the same collision in an open box with the second rod where that image starts, moving at its
    velocity plus w: the first rod ends with the same position, velocity, spin and orientation,
    the second with its position plus the image's shift and its velocity plus w, to 1e-11 of their
    scales. In the sheared cell the pair's force works on the moving image (the budget's ``cell``
    column, −9.96 against 7.59 of dashpot and slip work), and the budget, that column in it,
    misses closing by what the box's misses, to 1e-9 of the booked work (measured 3e-14): 7.3e-3 of
    it at dt = 5e-4, the first order of the booked friction (3.6e-3 at half the step). Momentum is
    kept to 1e-12 in both."""
    from dem.runner import prepare

    runs = []
    for cell, x, y, v in ((PERIODIC.format(edge=9.0) + "shear_rate = 0.4\n", 4.7, 8.3, 0.0),
                          ("", 4.7, -0.7, -3.6)):
        _, model, state, _ = prepare(clump_scene(tmp_path, cell + ACROSS_Y.format(x=x, y=y, v=v)), [])
        sim = Simulation(model, state, "lgvi", 5e-4)
        start = sim.energy_budget()
        touched = 0.0
        for _ in range(20):
            sim.advance(100)
            touched = max(touched, sim.energy_budget()["hertz_pp"])
        budget = sim.energy_budget()
        assert touched > 0.1 and budget["hertz_pp"] == 0.0   # they collided (elastic energy 0.29 or more) and parted
        momentum = np.abs(model.mass[:, None] * state.velocity).sum()
        for c in "xyz":
            assert abs(budget[f"P{c}"] - start[f"P{c}"]) < 1e-12 * momentum
        runs.append((state, budget, budget["total"] - start["total"]))
    (sheared, budget, missed), (boxed, expected, boxed_missed) = runs
    booked = budget["dissipated"] + budget["friction"]
    scale = np.abs(boxed.velocity).max()
    shift = boxed.position - sheared.position
    assert np.abs(shift[0]).max() < 1e-11 and np.abs(shift[1] - [-0.4 * 9.0 * sheared.time, -9.0, 0.0]).max() < 1e-11
    assert np.abs(boxed.velocity - sheared.velocity - [[0.0, 0.0, 0.0], [-3.6, 0.0, 0.0]]).max() < 1e-11 * scale
    assert np.abs(boxed.angular_velocity - sheared.angular_velocity).max() < 1e-11 * scale
    assert np.abs(boxed.orientation - sheared.orientation).max() < 1e-11
    assert expected["cell"] == 0.0 and budget["cell"] < -booked, budget["cell"]
    assert abs(missed - boxed_missed) < 1e-9 * booked and abs(missed) < 1e-2 * booked, (missed, boxed_missed)


def periodic_floor(tmp_path, rows=40, seed=3):
    """``rows`` dimers and tetrahedra, alternately, at random orientations and velocities (a mean
    drift of (0.4, −0.3) along the floor) over a frictionless floor (the wall's own friction 0),
    in a cell periodic in x and y of edge 6: the path of its scene file."""
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(np.arange(4), np.arange(4), np.arange(5), indexing="ij"), axis=-1).reshape(-1, 3)
    place = grid[rng.permutation(len(grid))[:rows]] * np.array([1.5, 1.5, 1.4]) + np.array([0.75, 0.75, 0.9])
    turns = rng.standard_normal((rows, 4))
    velocity = rng.uniform(-1.0, 1.0, size=(rows, 3)) + np.array([0.4, -0.3, 0.0])
    text = FLOOR.replace("[[walls]]\n", "[[walls]]\nfriction = 0.0\n") + \
        "[cell]\nperiodic = [true, true, false]\nsize = [6.0, 6.0, 0.0]\n"
    for k, template in enumerate(("dimer", "tetrahedron")):
        picked = slice(k, None, 2)
        table = np.column_stack([place[picked], turns[picked] / np.linalg.norm(turns[picked], axis=1, keepdims=True),
                                 velocity[picked]])
        np.savetxt(tmp_path / f"rows{k}.csv", table, delimiter=",", header="x,y,z,qw,qx,qy,qz,vx,vy,vz",
                   comments="")
        text += f'[[clump]]\ntemplate = "{template}"\nradius = 0.5\ndistance = 0.5\nrows = "rows{k}.csv"\n'
    return clump_scene(tmp_path, text)


def test_a_periodic_pile_of_clumps_keeps_its_drift_and_closes_its_budget(tmp_path):
    """Dimers and tetrahedra thrown about over a frictionless floor in a cell periodic in x and y
    (rough contacts between them: friction, rolling and twisting resistance) for one time unit:
    they cross the faces and touch across them, and the momentum along the floor stays what it
    was to 1e-12 of the bodies' summed momenta (measured 1e-16: the pair forces are equal and
    opposite whatever image they act through; the floor pushes along z only); the energy budget
    closes to 2e-3 of the work booked to the dashpots and slips (measured 1.0e-3 at dt = 5e-4),
    to first order in dt (the error halves with dt: measured ratio 1.96), as the sphere
    pipeline's does. The serial and the parallel loop give the same bits."""
    from dem.runner import prepare

    overrides = ["contact.k_pp=2e4", "contact.rolling_friction=0.1", "contact.twisting_friction=0.05"]
    path = periodic_floor(tmp_path)
    runs, closing = [], []
    for dt, parallel in ((5e-4, False), (5e-4, True), (2.5e-4, False)):
        _, model, state, _ = prepare(path, overrides)
        sim = Simulation(model, state, "lgvi", dt, parallel=parallel)
        start = sim.energy_budget()
        sim.advance(int(round(1.0 / dt)))
        budget = sim.energy_budget()
        runs.append(state)
        scale = np.abs(model.mass[:, None] * state.velocity).sum()
        for c in "xy":
            assert abs(budget[f"P{c}"] - start[f"P{c}"]) < 1e-12 * scale
        assert budget["hertz_pp"] > 0.0 and budget["friction"] > 0.0 and budget["dissipated"] > 0.0
        assert (np.floor(state.position[:, :2] / 6.0) != 0).any()   # some crossed a face
        closing.append(abs(budget["total"] - start["total"]) / (budget["dissipated"] + budget["friction"]))
    assert closing[0] < 2e-3 and 1.8 < closing[0] / closing[2] < 2.2, closing
    for name in ("position", "velocity", "orientation", "angular_velocity", "force", "moment"):
        assert np.array_equal(getattr(runs[0], name), getattr(runs[1], name)), name


def test_a_periodic_pile_of_clumps_restarts_exactly(tmp_path):
    """The periodic pile run for one time unit straight through, and stopped half-way and
    restarted from its checkpoint (the member pairs' springs across the faces in it): the same
    energy.csv and the same state and interactions' arrays, to the last bit."""
    settings = ["simulation.dt=5e-4", "simulation.t_end=1.0", "output.vtk_every=1000", "output.log_every=100",
                "contact.k_pp=2e4", "contact.rolling_friction=0.1", "contact.twisting_friction=0.05"]
    _, midway, _ = restarted(tmp_path, periodic_floor(tmp_path), settings, 0.5)
    assert len(midway["contacts.history_keys.clump_pp"]) > 0   # springs held


# ---------------------------------------------------------------------------------------------
# clumps poured by [[insert]] sources and taken by [[outlet]]s (dem.feeding)
# ---------------------------------------------------------------------------------------------

def clump_pour(tmp_path, changes=(), **keys):
    """The pour of tests/support/feeding.py (a box open along y, a rough floor, gravity 1) with a
    source of tetrahedral clumps (``clump = "tetrahedron"``, member diameters 0.4–0.6, 200 a time
    unit until t = 1, every 0.05) under `lgvi`, rough contacts between them, and the outlet
    taking the floor's layer from t = 0.75; ``changes`` are (old, new) text replacements, ``keys``
    more keys of the source. Returns the scene's path."""
    from support.feeding import POUR, pour_file

    text = POUR.replace('integrator = "rrp2"', 'integrator = "lgvi"').replace("rate = 400.0", "rate = 200.0") \
        .replace("seed = 7", "seed = 7\nclump = \"tetrahedron\"\n" + "".join(f"{k} = {v}\n" for k, v in keys.items())) \
        .replace("friction = 0.5", "friction = 0.5\nrolling_friction = 0.1\npoisson_ratio = 0.22")
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    return pour_file(tmp_path, text)


def test_a_source_inserts_clumps_whose_members_overlap_nothing(tmp_path):
    """200 tetrahedral clumps a time unit, every 0.05: the count in play at each insertion is
    ⌊200 t⌋; no member of a new clump overlaps a member of another body in play or a wall; the
    clumps have the member diameters the source drew (0.4–0.6), the mass of the union of their
    members (scaled as d³ from the template's) and uniform random orientations (the mean of the
    body's z axis over 60 clumps within 0.25 of 0, no two alike)."""
    from support.feeding import insertions

    from dem.feeding import Feeder
    from dem.runner import prepare

    _, model, state, _ = prepare(clump_pour(tmp_path), ["simulation.t_end=0.3"])
    feeder = Feeder(model, 2e-4)
    sim = Simulation(model, state, "lgvi", 2e-4, observers=[feeder])
    owner = np.repeat(np.arange(model.n_bodies), np.diff(model.site_start))
    for playing, new in insertions(sim, feeder, 1500, 200.0):
        members = member_positions(model, state)
        r = model.site_radius
        mine, theirs = np.flatnonzero(np.isin(owner, new)), np.flatnonzero(np.isin(owner, playing))
        gap = np.linalg.norm(members[mine][:, None] - members[theirs][None], axis=2) - r[mine][:, None] - r[theirs]
        gap[owner[mine][:, None] == owner[theirs][None]] = np.inf
        assert gap.min(initial=np.inf) >= -1e-12
        assert (members[mine, 2] - r[mine]).min(initial=0) >= -1e-12
        assert (3.0 - np.abs(members[mine, 0]) - r[mine]).min(initial=0) >= -1e-12
    assert len(playing) == 60 and model.n_bodies == 200 and np.all(np.diff(model.site_start) == 4)
    diameter = 2.0 * r[model.site_start[:-1]]
    assert diameter.min() >= 0.4 and diameter.max() <= 0.6 and np.all(r.reshape(-1, 4) == r.reshape(-1, 4)[:, :1])
    unit = mass_properties(built_in("tetrahedron", 0.5), 1.0)
    assert np.allclose(model.mass, unit.mass * diameter ** 3, rtol=1e-9)
    axis = quat_matrix(state.orientation[playing])[:, :, 2]
    assert np.abs(axis.mean(axis=0)).max() < 0.25 and len(np.unique(np.round(axis, 6), axis=0)) == 60


def test_parked_clumps_are_out_of_adhesive_contacts_too(tmp_path):
    """Under the JKR law (`adhesive_clump_pp`, the floor without contacts) the parked clumps of the
    source have no list diameter, so none of their members is listed, and those in play have
    theirs (their enclosing spheres')."""
    from dem.feeding import Feeder
    from dem.interactions.clump_contacts import enclosing_diameters
    from dem.interactions.insertion import in_play
    from dem.runner import prepare

    _, model, state, _ = prepare(clump_pour(tmp_path), ["simulation.t_end=0.2", 'contact.normal="jkr"',
                                                         "contact.work_of_adhesion=0.1", "contact.k_pw=0.0"])
    assert "adhesive_clump_pp" in model.interactions and "clump_pp" not in model.interactions
    feeder = Feeder(model, 2e-4)
    sim = Simulation(model, state, "lgvi", 2e-4, observers=[feeder])
    sim.run(1000)
    playing = in_play(model, state)
    listed = model.interactions["adhesive_clump_pp"].list_diameter
    assert 0 < playing.sum() < model.n_bodies
    assert (listed[~playing] == 0.0).all()
    np.testing.assert_array_equal(listed[playing], enclosing_diameters(model)[playing])


def test_the_books_of_a_clump_stream_close_through_an_outlet(tmp_path):
    """No contacts: a stream of tetrahedra, spinning, falls from the source through an outlet
    plane. At every row the clumps in play are those inserted less those removed, exactly;
    ``total`` stays constant to 1e-12 of the energy brought in with gravity (the ``inserted`` and
    ``removed`` columns book the energy of each change, rotation included); without gravity the
    momentum in play is what came in less what left, to 1e-12."""
    from dem.runner import run

    changes = [("k_pp = 2e4", "k_pp = 0.0"), ("k_pw = 2e4", "k_pw = 0.0"),
               ('[[outlet]]\nshape = "box"\nmin = [-10.0, -10.0, -1.0]\nmax = [10.0, 10.0, 0.4]',
                '[[outlet]]\nshape = "plane"\npoint = [0.0, 0.0, -2.0]\nnormal = [0.0, 0.0, -1.0]'),
               ("velocity = [0.0, 0.0, -0.5]", "velocity = [0.3, -0.2, -4.0]"),
               ("angular_velocity = [0.0, 1.0, 0.0]", "angular_velocity = [2.0, 1.0, -3.0]")]
    for gravity in ("-1.0", "0.0"):
        scene = clump_pour(tmp_path, changes + [("gravity = [0.0, 0.0, -1.0]", f"gravity = [0.0, 0.0, {gravity}]")])
        out = tmp_path / f"g{gravity}"
        run(scene, ["simulation.t_end=2.0"], out, quiet=True)
        flow = np.genfromtxt(out / "flow.csv", delimiter=",", names=True)
        energy = np.genfromtxt(out / "energy.csv", delimiter=",", names=True)
        assert np.array_equal(energy["particles"], flow["inserted_0"] - flow["removed_0"])
        assert flow["removed_0"][-1] > 100 and flow["inserted_0"][-1] == 200
        scale = abs(energy["inserted"][-1])
        assert energy["kinetic_rotational"].max() > 0.01 * scale
        assert np.abs(energy["total"] - energy["total"][0]).max() < 1e-12 * scale
        if gravity == "0.0":
            for c in "xyz":
                book = energy[f"P{c}"] - energy[f"P{c}_in"] + energy[f"P{c}_out"]
                assert np.abs(book).max() < 1e-12 * np.abs(energy[f"P{c}_in"]).max()


def poured_clumps(tmp_path, dt, parallel=False, steps=7500):
    """`clump_pour` run for ``steps`` steps of ``dt``: ``(model, state, simulation)``."""
    from dem.feeding import Feeder
    from dem.runner import prepare

    _, model, state, _ = prepare(clump_pour(tmp_path), [f"simulation.dt={dt}"])
    sim = Simulation(model, state, "lgvi", dt, parallel=parallel, observers=[Feeder(model, dt)])
    sim.run(steps)
    return model, state, sim


def test_a_pour_of_clumps_closes_its_budget_and_threads_change_nothing(tmp_path):
    """The pour of tetrahedra into the box, landing on the rough floor and one another, the outlet
    taking those that reach the floor's layer: the budget (the energy brought in and taken out
    booked at each change) closes to 3 % of the work booked to the dashpots and slips at dt = 2e-4
    (measured 2.3 %), to first order in dt (the error halves with dt: measured ratio 2.2; the
    impacts of clumps, whose dashpots take the clump's mass, at 1.7 a time unit); the serial and the
    parallel loop give the same bits."""
    closing, runs = [], []
    for dt, parallel in ((2e-4, False), (2e-4, True), (1e-4, False)):
        model, state, sim = poured_clumps(tmp_path, dt, parallel, int(round(1.5 / dt)))
        budget = sim.energy_budget()
        own = state.interactions["insertion"]
        assert own.inserted_count[0] > 100 and own.removed_count[0] > 10
        assert budget["dissipated"] > 0.0 and budget["friction"] > 0.0
        closing.append(abs(budget["total"]) / (budget["dissipated"] + budget["friction"]))
        runs.append((state, budget))
    assert closing[0] < 3e-2 and 1.8 < closing[0] / closing[2] < 2.6, closing
    (serial, budget), (threads, again) = runs[:2]
    for name in ("position", "velocity", "orientation", "angular_velocity", "force", "moment"):
        assert np.array_equal(getattr(serial, name), getattr(threads, name)), name
    for name in ("clump_pw", "insertion"):
        for field, one, other in zip(serial.interactions[name]._fields, serial.interactions[name],
                                     threads.interactions[name]):
            assert np.array_equal(one, other), (name, field)
    assert budget == again


def test_a_pour_of_clumps_restarts_exactly_mid_filling(tmp_path):
    """The pour stopped at t = 0.8 (clumps still coming in, the outlet open) and restarted from its
    checkpoint ends at t = 1.5 with the same energy.csv, flow.csv, state and interactions' arrays
    as a run straight through, to the last bit (the list diameters of the clumps in play set anew
    from the checkpoint's, the orientations of those inserted after the restart drawn from the same
    seeded generator)."""
    _, midway, last = restarted(tmp_path, clump_pour(tmp_path), ["simulation.t_end=1.5", "output.vtk_every=2500"],
                                0.8, logs=("energy.csv", "flow.csv"))
    assert 50 < midway["interaction.insertion.inserted_count"][0] < last["interaction.insertion.inserted_count"][0]
    assert last["interaction.insertion.removed_count"][0] > 0


@pytest.mark.parametrize("change, problem", [
    ('clump = "tetrahedron"', 'insert.0.clump: must be one of'),
    ('clump = "rod"\nspheres = 3\naspect = 4.0', "insert.0.aspect: 3 spheres make a rod of aspect at most 3"),
    ('clump = "tetrahedron"', "insert.0.diameter: the region is narrower than its particles (a clump's span"),
])
def test_a_bad_source_of_clumps_is_one_line_naming_the_key(tmp_path, change, problem):
    """An unknown shape, a rod its spheres cannot make, clumps wider than the region: one line
    naming the file, the table and the key."""
    from dem.runner import prepare
    from dem.schema import SceneError

    changes = [("seed = 7\nclump = \"tetrahedron\"\n", "seed = 7\n" + change.replace("tetrahedron", "cube")
                if "must be one of" in problem else "seed = 7\n" + change + "\n")]
    if "narrower" in problem:   # member diameter 0.6: the tetrahedron spans 0.97, the region 0.9 high
        changes.append(("max = [3.0, 3.0, 3.0]", "max = [3.0, 3.0, 1.9]"))
    with pytest.raises(SceneError, match=re.escape(problem)) as error:
        prepare(clump_pour(tmp_path, changes))
    assert "\n" not in str(error.value) and "pour.toml" in str(error.value)


def bonded_dimers(tmp_path, rows, extra=""):
    """``(model, state)`` of dimers (members of radius 0.5, 0.5 apart along the template's x) at
    the rows ``(x, y, z, qw, qx, qy, qz, vx, vy, vz)``, bonded where they touch by three-spring
    binders of E = 100, G = 40 (λ = 0.5: a = 0.25), and ``extra`` scene text."""
    from dem.runner import prepare

    table = tmp_path / "rows.csv"
    np.savetxt(table, np.array(rows, float), delimiter=",", header="x,y,z,qw,qx,qy,qz,vx,vy,vz", comments="")
    path = clump_scene(tmp_path, extra + '[[clump]]\ntemplate = "dimer"\nradius = 0.5\nrows = "rows.csv"\n'
                       'bonded = true\nbinder_modulus = 100.0\nbinder_shear_modulus = 40.0\n')
    _, model, state, _ = prepare(path, [])
    return model, state


DIMER_VOLUME = 2 * 4 / 3 * np.pi * 0.5 ** 3 - np.pi * (4 * 0.5 + 0.5) * (2 * 0.5 - 0.5) ** 2 / 12   # minus the lens
BINDER_AREA = np.pi * 0.25 ** 2


def test_dimers_that_touch_are_bonded_between_their_centres_and_oscillate_at_the_bonds_frequency(tmp_path):
    """Three dimers end to end along x and a fourth apart: two bonds, between the centres of mass
    1.5 apart, with the binder material's closed forms K_a = E A r0, K_s = G A r0, K_m = E I/r0
    (A = π a², I = π a⁴/4, a = λ D/2 with the members' D = 1); the two outer dimers of a
    bonded pair pushed apart at ±v0 oscillate along x at ω = √(K_a/(r0² μ)), μ = m/2 with m the
    union's mass (two unit spheres less their lens), to 1e-4 in period and amplitude."""
    still = (1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    model, state = bonded_dimers(tmp_path, [(0.0, 0.0, 0.0, *still), (1.5, 0.0, 0.0, *still),
                                            (3.0, 0.0, 0.0, *still), (3.0, 5.0, 0.0, *still)])
    bonds, r0 = model.bonds, 1.5
    assert bonds.i.tolist() == [0, 1] and bonds.j.tolist() == [1, 2]
    np.testing.assert_allclose(bonds.k_axial, 100.0 * BINDER_AREA * r0, rtol=1e-13)
    np.testing.assert_allclose(bonds.k_shear, 40.0 * BINDER_AREA * r0, rtol=1e-13)
    np.testing.assert_allclose(bonds.k_bending, 100.0 * np.pi * 0.25 ** 4 / 4 / r0, rtol=1e-13)
    v0 = 0.01
    model, state = bonded_dimers(tmp_path, [(0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -v0, 0.0, 0.0),
                                            (1.5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, v0, 0.0, 0.0)])
    np.testing.assert_allclose(model.mass, DIMER_VOLUME, rtol=1e-13)
    omega = np.sqrt(100.0 * BINDER_AREA * r0 / r0 ** 2 / (0.5 * DIMER_VOLUME))
    sim = Simulation(model, state, "lgvi", 1e-3)
    times, stretch = [0.0], [0.0]
    while times[-1] < 2.2 * 2 * np.pi / omega:
        sim.advance(5)
        times.append(state.time)
        stretch.append(state.position[1, 0] - state.position[0, 0] - r0)
    times, stretch = np.array(times), np.array(stretch)
    down = np.flatnonzero((stretch[:-1] > 0) & (stretch[1:] <= 0))   # the crossings from above
    crossing = times[down] - stretch[down] * (times[down + 1] - times[down]) / (stretch[down + 1] - stretch[down])
    assert len(crossing) == 2
    assert abs((crossing[1] - crossing[0]) * omega / (2 * np.pi) - 1) < 1e-4
    assert abs(stretch.max() * omega / (2 * v0) - 1) < 1e-4
    assert abs(state.position[:, 1:]).max() < 1e-15 and abs(state.angular_velocity).max() < 1e-15


def tumbling_chain(tmp_path, dt, extra="", pull=0.0):
    """An L of three bonded dimers (the third turned a quarter about z, touching the second's end)
    thrown spinning, for 2 time units: ``(first budget, budgets)``, ``pull`` the outer dimers'
    speeds apart along x."""
    model, state = bonded_dimers(tmp_path, [
        (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.1 - pull, 0.02, -0.03),
        (1.5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -0.05, 0.04, 0.01),
        (2.75, 0.25, 0.0, np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4), pull, -0.03, 0.05)], extra)
    assert model.bonds.i.tolist() == [0, 1] and model.bonds.j.tolist() == [1, 2]
    state.angular_velocity[:] = [[0.3, -0.2, 0.5], [0.0, 0.4, -0.1], [-0.2, 0.1, 0.2]]
    sim = Simulation(model, state, "lgvi", dt)
    budgets = [energy_budget(model, state)]
    for _ in range(40):
        sim.advance(int(round(0.05 / dt)))
        budgets.append(energy_budget(model, state))
    return model, budgets


def test_a_tumbling_chain_of_bonded_dimers_keeps_its_momenta_and_its_energy_to_second_order(tmp_path):
    """The bonds' loads act between the clumps in equal and opposite pairs (moments about the
    centres of mass included): momentum and angular momentum kept to 1e-12 of their sizes; the
    springs loaded (axial, shear and bending energy all above 1e-4 of the total); the energy
    error second order in dt (`lgvi`: 5.3e-6 of the total at dt = 2e-3, 1.3e-6 at 1e-3)."""
    errors = []
    for dt in (2e-3, 1e-3):
        _, budgets = tumbling_chain(tmp_path, dt)
        first = budgets[0]
        momentum = np.linalg.norm([first[k] for k in ("Px", "Py", "Pz")])
        angular = np.linalg.norm([first[k] for k in ("Lx", "Ly", "Lz")])
        for row in budgets:
            assert max(abs(row[k] - first[k]) for k in ("Px", "Py", "Pz")) < 1e-12 * momentum
            assert max(abs(row[k] - first[k]) for k in ("Lx", "Ly", "Lz")) < 1e-12 * angular
        for column in ("axial", "shear", "bending"):
            assert max(row[column] for row in budgets) > 1e-4 * first["total"], column
        errors.append(max(abs(row["total"] - first["total"]) for row in budgets) / first["total"])
    assert errors[0] < 2e-5 and 3.5 < errors[0] / errors[1] < 4.5, errors


def test_bonded_dimers_pulled_apart_break_and_book_the_bonds_energy(tmp_path):
    """The outer dimers of the tumbling L pulled apart at 0.3: both bonds pass the tension limit
    (axial strain 0.01, `[breakage]`) and break; the budget books their energy (`broken`, 3.6 %
    of the total) and closes to 1e-6 of it (2.6e-8 measured), the momenta kept to 1e-12."""
    model, budgets = tumbling_chain(tmp_path, 1e-3, "[breakage]\ntension = 0.01\n", pull=0.3)
    first, last = budgets[0], budgets[-1]
    assert last["broken"] > 0.0 and last["axial"] == last["shear"] == last["bending"] == 0.0
    assert last["broken"] > 0.02 * first["total"] and abs(last["total"] - first["total"]) < 1e-6 * first["total"]
    momentum = np.linalg.norm([first[k] for k in ("Px", "Py", "Pz")])
    assert max(abs(last[k] - first[k]) for k in ("Px", "Py", "Pz")) < 1e-12 * momentum


def test_the_stress_of_clumps_in_a_periodic_cell_sums_their_member_contacts(tmp_path):
    """40 dimers and tetrahedra thrown about in a cube periodic along x, y and z: the run writes
    cell.csv, whose solid fraction is the members' unions' (closed-form dimers' and tetrahedra's by
    quadrature, to its 1e-5, over the cell's volume) and whose contact stress
    (`dem.stress.homogenised_stress`, from each body pair's load) equals Σ d ⊗ f over the touching
    member pairs of the contact network (``d`` the bodies' nearest-image separation) to 1e-12 of its
    largest component, at each of 10 states with contacts."""
    from dem.network import contact_network
    from dem.runner import prepare, run
    from dem.stress import homogenised_stress

    rng = np.random.default_rng(5)
    grid = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    place = grid[rng.permutation(len(grid))[:40]] * 1.5 + 0.75
    text = RODS.split("[[clump]]")[0] + "[cell]\nperiodic = [true, true, true]\nsize = [6.0, 6.0, 6.0]\n"
    for k, template in enumerate(("dimer", "tetrahedron")):
        turns = rng.standard_normal((20, 4))
        table = np.column_stack([place[k::2], turns / np.linalg.norm(turns, axis=1, keepdims=True),
                                 rng.uniform(-2.0, 2.0, size=(20, 3))])
        np.savetxt(tmp_path / f"rows{k}.csv", table, delimiter=",", header="x,y,z,qw,qx,qy,qz,vx,vy,vz",
                   comments="")
        text += f'[[clump]]\ntemplate = "{template}"\nradius = 0.5\nrows = "rows{k}.csv"\n'
    path = clump_scene(tmp_path, text)
    run(path, ["simulation.t_end=0.2", "output.log_every=100"], tmp_path / "run", quiet=True)
    log = np.genfromtxt(tmp_path / "run" / "cell.csv", delimiter=",", names=True)
    volume = sum(20 * mass_properties(built_in(shape, 0.5)).volume for shape in ("dimer", "tetrahedron"))
    assert abs(log["solid_fraction"][-1] * 216.0 / volume - 1.0) < 1e-5   # (the quadrature's error, turned)
    _, model, state, _ = prepare(path, ["output.contacts=true"])   # (the network needs the member pairs' loads)
    sim = Simulation(model, state, "lgvi", 5e-4)
    compared = 0
    while compared < 10:
        sim.advance(20)
        network = contact_network(model, state, sim.contacts)
        if not len(network.i):
            continue
        d = cell_image(state.position[network.i] - state.position[network.j], state.cell)
        expected = np.einsum("mi,mj->ij", d, network.force) / 216.0
        stress = homogenised_stress(model, state, sim.contacts)["contact"]
        assert np.abs(stress - expected).max() <= 1e-12 * np.abs(expected).max() and np.abs(expected).max() > 0.0
        compared += 1


def test_the_rheology_of_sheared_clumps_takes_their_volume_equivalent_diameter(tmp_path):
    """`scenes/clump_shear.toml` with 170 dimers in a cell 8 × 12 × 8 whose servo squeezes y ten
    times faster, sheared at 0.5 for 3 time units: `dem rheology`'s inertial number is
    γ̇ d / √(p/ρ) with ``d`` the diameter of the sphere of a dimer's volume (the closed form of two
    overlapping spheres) and ``ρ`` = 1, the table's density, to 1e-9."""
    from dem.rheology import steady_flow
    from dem.runner import run

    overrides = ["cell.size=[8.0, 12.0, 8.0]", "cell.servo_gain=1.0", "cell.shear_rate=0.5", "clump.0.count=170",
                 "clump.0.max=[8.0, 12.0, 8.0]", "simulation.t_end=3.0", "output.log_every=20"]
    run(ROOT / "scenes" / "clump_shear.toml", overrides, tmp_path / "run", quiet=True)
    flow = steady_flow(tmp_path / "run")
    diameter = np.cbrt(6.0 * DIMER_VOLUME / np.pi)
    assert flow.pressure > 0.0 and flow.shear_rate == pytest.approx(0.5, rel=1e-12)
    assert flow.inertial_number == pytest.approx(0.5 * diameter / np.sqrt(flow.pressure), rel=1e-9)
