"""Periodic cells (`dem.cell`): the neighbour list against brute force on a torus; collisions and
bonds across a face equal the same ones inside the box; packings and bonds that wrap; a homogeneous
cooling gas that follows Haff's law; bitwise threads; bad cells refused."""

from pathlib import Path

import numpy as np
import pytest

from support.threads import across_threads

from dem import Simulation, SystemBuilder
from dem.builders.assembly import KEYS as ASSEMBLY_KEYS
from dem.builders.assembly import assembly_arrays
from dem.cell import (OPEN, PERIOD, TILT, TILTED, UPRIGHT, box_cell, image_kind, minimum_image, minimum_image_array,
                      with_inverse, wrapped)
from dem.cli import main
from dem.engine import compute_forces
from dem.neighbors import NeighborList
from dem.packing import lattice_cell, random_packing
from dem.runner import prepare
from dem.schema import SceneError, defaults
from dem.stress import homogenised_stress

ROOT = Path(__file__).resolve().parents[1]
GAS = ROOT / "scenes/granular_gas.toml"


def torus_pairs(position, diameter, extra, period):
    """All pairs i < j closer than (D_i + D_j)/2 + extra through their nearest images, O(N²)."""
    d = minimum_image_array((position[:, None, :] - position[None, :, :]).reshape(-1, 3), period)
    distance2 = np.sum(d * d, axis=1).reshape(len(position), len(position))
    reach = 0.5 * (diameter[:, None] + diameter[None, :]) + extra
    i, j = np.nonzero(np.triu(distance2 < reach * reach, k=1))
    return set(zip(i.tolist(), j.tolist()))


@pytest.mark.parametrize("edges", [(9.0, 7.0, 12.0), (9.0, 3.7, 12.0)], ids=["wide", "two cells across y"])
def test_the_list_finds_every_pair_through_the_faces(edges):
    rng = np.random.default_rng(3)
    n = 500
    period = np.array([edges[0], edges[1], 0.0])  # periodic along x and y only
    cell = box_cell(period, (1.0, -2.0, 0.0))
    diameter = rng.uniform(0.5, 1.2, n)
    position = cell[1] + rng.uniform(0, 1, size=(n, 3)) * [edges[0], edges[1], edges[2]]
    position[::7, :2] += period[:2] * rng.integers(-3, 4, size=(len(position[::7]), 2))  # unwrapped images
    skin = 0.3
    neighbors = NeighborList(n)
    neighbors.update(position, diameter, skin, cell=cell)
    listed = set(map(tuple, neighbors.pairs().tolist()))
    assert listed == torus_pairs(position, diameter, skin, period)
    assert any(abs(position[i, 0] - position[j, 0]) > edges[0] / 2 for i, j in listed)  # some pairs cross x


def pair_system(across, bonded=False):
    """Two spheres colliding obliquely with spin (friction, rolling resistance), in the middle of a
    periodic box or across its x face; or two spheres bonded across it (or not)."""
    system = SystemBuilder()
    x0 = 5.5 if across else 2.0
    first = x0 + 1.0 if bonded else x0 + 1.5
    second = first - 6.0 if across else first
    velocity = [(1.0, 0.0, 0.2), (-1.0, 0.1, 0.0)] if not bonded else [(0.3, -0.2, 0.1), (-0.1, 0.4, 0.0)]
    system.add_bodies([(x0, 2.0, 2.0), (second, 2.3, 2.0)], mass=1.0, inertia=0.1, diameter=1.0, velocity=velocity,
                      angular_velocity=[(0.0, 0.0, 1.0), (0.5, 0.0, 0.0)])
    if bonded:
        system.add_bond(0, 1, k_axial=300.0, k_shear=200.0, k_bending=20.0)
    contact = {"k_pp": 1e4, "friction": 0.5, "rolling_friction": 0.1, "restitution": 0.7}
    return system.finish([], contact=contact, cell={"periodic": [True, True, True], "size": [6.0, 5.0, 5.0]})


@pytest.mark.parametrize("edges, tilts, kind", [
    ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), OPEN), ((9.0, 0.0, 0.0), (0.0, 0.0, 0.0), UPRIGHT),
    ((9.0, 7.0, 0.0), (0.0, 0.0, 0.0), UPRIGHT), ((9.0, 7.0, 12.0), (0.0, 0.0, 0.0), UPRIGHT),
    ((9.0, 7.0, 12.0), (2.5, 0.0, 0.0), TILTED), ((9.0, 7.0, 12.0), (0.0, -3.0, 1.5), TILTED),
], ids=["open", "x", "x and y", "all three", "tilted xy", "tilted xz and yz"])
def test_each_kind_of_cell_takes_the_nearest_image_to_the_bit(edges, tilts, kind):
    """`dem.cell.image_kind` names what the nearest image needs, and `minimum_image` of that kind
    gives the bits of the general arithmetic (`TILTED`'s): a separation as it is in a cell without a
    periodic axis, each axis on its own in an upright cell."""
    cell = box_cell(np.array(edges))
    cell[TILT] = tilts
    assert image_kind(cell) == kind
    rng = np.random.default_rng(7)
    d = rng.uniform(-25.0, 25.0, size=(2000, 3))
    d[:40] = 0.0  # coincident centres
    d[40:80] = np.round(d[40:80])
    general = np.array([minimum_image(*row, cell, TILTED) for row in d])
    by_kind = np.array([minimum_image(*row, cell, kind) for row in d])
    assert np.array_equal(by_kind.view(np.int64), general.view(np.int64))
    if kind == OPEN:
        assert np.array_equal(by_kind, d)
    if kind == UPRIGHT:
        assert np.allclose(by_kind, minimum_image_array(d, cell[PERIOD]), rtol=0.0, atol=1e-12)


def test_a_collision_across_a_face_is_the_collision_inside():
    runs = []
    for across in (False, True):
        model, state = pair_system(across)
        sim = Simulation(model, state, "rrp2", 1e-3)
        sim.advance(1500)  # they meet at about t = 0.25 and part
        runs.append((state, sim.energy_budget()))
    (inside, budget_inside), (across, budget_across) = runs
    shift = inside.position - across.position
    assert np.allclose(shift[:, 0], [-3.5, 2.5], atol=1e-12) and np.abs(shift[:, 1:]).max() < 1e-12
    scale = np.abs(inside.velocity).max()
    assert np.abs(inside.velocity - across.velocity).max() < 1e-13 * scale  # measured 3e-14: round-off of x ± L
    assert np.abs(inside.angular_velocity - across.angular_velocity).max() < 1e-13 * scale
    assert budget_inside["friction"] > 0 and budget_inside["dissipated"] > 0  # it slid and was damped
    for key in ("kinetic_translational", "kinetic_rotational", "friction", "dissipated", "total", "Px", "Py", "Pz"):
        assert budget_across[key] == pytest.approx(budget_inside[key], rel=1e-11, abs=1e-14)  # friction: 2.6e-12


def test_a_bond_across_a_face_is_the_bond_inside():
    loads = []
    for across in (False, True):
        model, state = pair_system(across, bonded=True)
        rng = np.random.default_rng(5)
        state.position += 0.02 * rng.normal(size=(2, 3))  # stretched, sheared, bent and twisted
        state.orientation += 0.05 * rng.normal(size=(2, 4))
        state.orientation /= np.linalg.norm(state.orientation, axis=1, keepdims=True)
        compute_forces(model, state)
        budget = Simulation(model, state, "rrp2", 1e-3).energy_budget()
        loads.append((state.force.copy(), state.moment.copy(), budget))
    (f_in, m_in, e_in), (f_across, m_across, e_across) = loads
    assert np.abs(f_in).max() > 1.0  # loaded
    assert np.abs(f_in - f_across).max() < 1e-12 * np.abs(f_in).max()
    assert np.abs(m_in - m_across).max() < 1e-12 * np.abs(m_in).max()
    for key in ("axial", "shear", "bending"):
        assert e_across[key] == pytest.approx(e_in[key], rel=1e-12) and e_in[key] > 0


def test_a_particle_that_crosses_keeps_its_momentum_and_energy_and_is_drawn_inside():
    system = SystemBuilder()
    system.add_bodies([(0.5, 0.5, 0.5)], mass=2.0, inertia=0.2, diameter=1.0, velocity=(-3.0, 7.0, 1.0))
    model, state = system.finish([], contact={"k_pp": 1e4}, fields={"gravity": (0.0, 0.0, -1.0)},
                                 cell={"periodic": [True, True, False], "size": [4.0, 4.0, 0.0]})
    sim = Simulation(model, state, "rrp2", 1e-2)
    before = sim.energy_budget()
    sim.advance(300)  # across the x face once and the y face five times
    after = sim.energy_budget()
    assert state.velocity[0, :2].tolist() == [-3.0, 7.0]  # no force along the periodic axes
    assert after["total"] == pytest.approx(before["total"], rel=1e-13)  # falling: gravity's energy continuous
    assert after["Px"] == before["Px"] and after["Py"] == before["Py"]
    shown = wrapped(state.position, state.cell)
    assert (shown[:, :2] >= 0).all() and (shown[:, :2] < 4.0).all()
    assert np.allclose(shown[0, :2], np.mod(state.position[0, :2], 4.0))


def test_periodic_packings_and_bonds_wrap():
    # a random packing of a fully periodic box: no overlap through the faces
    x, d = random_packing("box", size=(8.0, 8.0, 8.0), packing_fraction=0.5, particle_diameter=1.0, seed=2,
                          periodic=(True, True, True))
    assert (np.abs(x) <= 4.0).all()
    pairs = torus_pairs(x, d, 0.0, np.full(3, 8.0))
    gap = [np.linalg.norm(minimum_image_array(x[[i]] - x[[j]], np.full(3, 8.0))) for i, j in pairs]
    assert min(gap, default=1.0) > 1.0 - 2e-4  # overlaps below the packer's tolerance, across the faces too
    assert any(np.abs(x[i] - x[j]).max() > 4.0 for i, j in pairs)  # and some neighbours are across them
    # an FCC block that tiles a periodic box: every sphere has its 12 bonds, 6 per sphere in all
    a = lattice_cell("fcc", 1.0)[0][0]
    table = {**defaults(ASSEMBLY_KEYS), "size": (3 * a, 3 * a, 2 * a), "center": (0.0, 0.0, 0.0),
             "particle_diameter": 1.0, "periodic": (True, True, True), "bond_gap_tolerance": 1e-6,
             "k_axial": 1.0, "k_shear": 1.0, "k_bending": 1.0}
    arrays = assembly_arrays(table)
    n = len(arrays["position"])
    assert n == 4 * 3 * 3 * 2
    assert np.bincount(arrays["bonds"].ravel(), minlength=n).tolist() == [12] * n
    with pytest.raises(ValueError, match="whole number of fcc cells"):
        assembly_arrays({**table, "size": (3.1 * a, 3 * a, 2 * a)})
    with pytest.raises(ValueError, match="only a box can be periodic"):
        random_packing("sphere", shape_diameter=8.0, n_particles=10, particle_diameter=1.0, periodic=(True,) * 3)


def haff_temperature(model, t, e, temperature0):
    """Haff's law T(t) = T0/(1 + t/τ)², τ = 2/(ζ0 √T0), ζ0 = (4/3)(1 − e²) n d² g(φ) √(π/m) with
    Enskog's collision rate and Carnahan–Starling's g(φ) = (1 − φ/2)/(1 − φ)³ (unit diameter)."""
    volume = np.prod(model.sections["cell"]["size"])
    n = model.n_bodies / volume
    phi = n * np.pi / 6.0
    g = (1.0 - 0.5 * phi) / (1.0 - phi) ** 3
    zeta = 4.0 / 3.0 * (1.0 - e * e) * n * g * np.sqrt(np.pi / model.mass[0])
    return temperature0 / (1.0 + 0.5 * zeta * np.sqrt(temperature0) * t) ** 2


def test_a_cooling_granular_gas_follows_haffs_law_and_enskogs_pressure():
    scene, model, state, _ = prepare(GAS)
    e = scene.sections["contact"]["restitution"]
    sim = Simulation(model, state, "rrp2", scene.simulation["dt"])

    def temperature():
        return 2.0 * sim.energy_budget()["kinetic_translational"] / (3.0 * model.n_bodies)

    t0, start = temperature(), sim.energy_budget()["total"]
    volume = np.prod(model.sections["cell"]["size"])
    phi = model.n_bodies * np.pi / 6.0 / volume
    compressibility = []  # P / n T, sampled every 25 steps (a collision lasts about 40)
    for t in (2.0, 6.0):  # a third of a Haff time: the temperature falls by a third
        while sim.state.time < t - 0.5 * sim.dt:
            sim.advance(25)
            stress = homogenised_stress(model, sim.state, sim.contacts)
            kinetic = np.trace(stress["kinetic"]) / 3.0
            compressibility.append(np.trace(stress["total"]) / 3.0 / kinetic)
            assert np.abs(stress["total"] - stress["total"].T).max() < 1e-12 * kinetic  # symmetric (central forces)
        assert temperature() == pytest.approx(haff_temperature(model, t, e, t0), rel=0.02)  # measured 0.5 %
    # Enskog's equation of state for inelastic hard spheres: P = n T (1 + 2 (1 + e) φ g(φ)). Measured:
    # 3.9 % below it (± 1.5 %; an elastic gas, e = 1: 1.7 % below 4 φ g, the soft contacts' overlap)
    g = (1.0 - 0.5 * phi) / (1.0 - phi) ** 3
    assert np.mean(compressibility) - 1.0 == pytest.approx(2.0 * (1.0 + e) * phi * g, rel=0.08)
    budget = sim.energy_budget()
    assert abs(budget["Px"]) + abs(budget["Py"]) + abs(budget["Pz"]) < 1e-12 * model.n_bodies
    # the budget closes: what the kinetic energy lost went to the damping (second order in dt)
    assert abs(budget["total"] - start) < 5e-3 * budget["dissipated"]


@pytest.mark.slow
def test_threads_do_not_change_a_periodic_run():
    """A frictional gas with rolling resistance across the faces of a fixed cell, serial and on 1
    and 2 threads. Slow: its parallel loop is compiled for it alone; the default suite checks the
    same on a sheared cell (test_deforming's `test_threads_do_not_change_a_sheared_servoed_run`)."""
    def run(parallel):
        _, model, state, _ = prepare(GAS, ["contact.friction=0.5", "contact.rolling_friction=0.1"])
        Simulation(model, state, "rrp2", 5e-4, parallel=parallel).advance(400)
        return state

    results = across_threads(run)
    for other in results[1:]:
        for name in ("position", "velocity", "angular_velocity", "force", "moment"):
            assert np.array_equal(getattr(results[0], name), getattr(other, name)), name


def test_a_periodic_bonded_run_is_drawn_inside_its_cell(tmp_path):
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLPolyDataReader

    out = tmp_path / "gas"
    settings = ["simulation.t_end=0.01", "assembly.0.bonded=true", "assembly.0.bond_gap_tolerance=0.5",
                "assembly.0.k_axial=10.0", "assembly.0.k_shear=10.0", "assembly.0.k_bending=1.0",
                "output.contacts=true"]
    assert main([str(GAS), "--out", str(out), "--quiet"] + [a for s in settings for a in ("--set", s)]) == 0

    def read(name):
        reader = vtkXMLPolyDataReader()
        reader.SetFileName(str(sorted((out / "vtk").glob(f"{name}_*.vtp"))[-1]))
        reader.Update()
        data = reader.GetOutput()
        points = vtk_to_numpy(data.GetPoints().GetData())
        lines = vtk_to_numpy(data.GetLines().GetConnectivityArray()).reshape(-1, 2) if data.GetNumberOfLines() \
            else np.zeros((0, 2), int)
        return points, lines

    particles, _ = read("particles")
    assert (particles >= 0).all() and (particles < 20.0).all()  # wrapped into the cell
    for name in ("bonds", "contacts"):
        points, lines = read(name)
        length = np.linalg.norm(points[lines[:, 0]] - points[lines[:, 1]], axis=1)
        assert len(lines) > 0 and length.max() < 2.0  # pairs reach at most 1.5: no line across the cell (~20)
        crossing = np.any((points[lines[:, 1]] < 0) | (points[lines[:, 1]] >= 20.0), axis=1)
        assert crossing.any()  # some pairs are across a face: drawn sticking out of it


@pytest.mark.parametrize("settings, key, problem", [
    (["cell.size=[2.0, 20.0, 20.0]", "assembly.0.size=[2.0, 20.0, 20.0]", "assembly.0.center=[1.0, 10.0, 10.0]"],
     "cell.size", "more than twice the largest contact reach"),
    (["cell.periodic=[true, false]"], "cell.periodic", "a list of 3 booleans"),
    (["cell.periodic=[false, false, false]"], "assembly.0.periodic", "but the cell is not"),
    (["cell.origin=[1.0, 0.0, 0.0]"], "assembly.0.size", "the box must span the cell"),
    (["walls=[{point=[0.0,0.0,0.0], normal=[1.0,0.0,1.0]}]"], "walls.0.normal", "parallel to every periodic axis"),
], ids=["too small", "not three flags", "cell not periodic", "box not spanning", "plane across"])
def test_a_bad_cell_is_one_line_and_nothing_written(tmp_path, capsys, settings, key, problem):
    code = main([str(GAS), "--out", str(tmp_path / "out")] + [a for s in settings for a in ("--set", s)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{GAS}: {key}: " in err and problem in err
    assert not (tmp_path / "out").exists()


def test_a_periodic_cell_needs_its_size():
    system = SystemBuilder()
    system.add_bodies([(0.0, 0.0, 0.0)], mass=1.0, inertia=0.1, diameter=1.0)
    with pytest.raises(SceneError, match="cell.size: is required when an axis is periodic"):
        system.finish([], cell={"periodic": [True, False, False]})


def test_the_stress_of_a_strained_periodic_lattice_is_that_of_its_springs():
    a = lattice_cell("fcc", 1.0)[0][0]
    edges = np.array([3 * a, 3 * a, 2 * a])
    table = {**defaults(ASSEMBLY_KEYS), "size": tuple(edges), "center": tuple(0.5 * edges), "particle_diameter": 1.0,
             "periodic": (True, True, True), "bond_gap_tolerance": 1e-6, "k_axial": 50.0, "k_shear": 0.0,
             "k_bending": 0.0}
    arrays = assembly_arrays(table)
    system = SystemBuilder()
    system.add_bodies(arrays["position"], mass=1.0, inertia=0.1, diameter=1.0)
    system.add_bonds(arrays["bonds"][:, 0], arrays["bonds"][:, 1], **arrays["bond_properties"])
    model, state = system.finish([], cell={"periodic": [True, True, True], "size": tuple(edges)})
    strain = np.array([2e-3, -5e-4, 1e-3])  # a small affine strain of the particles and the cell
    state.position *= 1.0 + strain
    state.cell[0] *= 1.0 + strain
    with_inverse(state.cell)
    stress = homogenised_stress(model, state, compute_forces(model, state))
    # the springs' own law: U = ½ K (r/r0 − 1)², the force on i −K (r/r0 − 1)/r0 d/r, σ = Σ d ⊗ f / V
    bonds = model.bonds
    d = minimum_image_array(state.position[bonds.i] - state.position[bonds.j], state.cell[0])
    r = np.linalg.norm(d, axis=1)
    f = (-bonds.k_axial * (r / bonds.rest_length - 1.0) / bonds.rest_length / r)[:, None] * d
    expected = np.einsum("mi,mj->ij", d, f) / np.prod(state.cell[0])
    assert np.abs(expected).max() > 0.1 and expected[0, 0] < 0  # stretched along x: tension
    assert np.abs(stress["bond"] - expected).max() < 1e-10 * np.abs(expected).max()
    assert np.abs(stress["contact"]).max() == 0.0 and np.abs(stress["kinetic"]).max() == 0.0
