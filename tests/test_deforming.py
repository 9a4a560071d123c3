"""Deforming periodic cells (`dem.cell`, `dem.interactions.deformation`): the nearest image and the
neighbour list of a cell sheared along xy, xz and yz against brute force; the lattice's motion; a
collision across each pair of sliding faces equals the same collision inside; a sheared gas keeps
its linear profile; the energy budget closes in a driven cell and the servo holds its stress; μ(I)
read back; a bonded FCC lattice pulled with free sides has the lattice's moduli, and the shipped
RVE the binder's; bad deformations refused."""

from pathlib import Path

import numpy as np
import pytest

from support.threads import across_threads

from dem import Simulation, SystemBuilder
from dem.builders.assembly import KEYS as ASSEMBLY_KEYS
from dem.builders.assembly import assembly_arrays
from dem.cell import (GRADIENT, INITIAL, MOTION, PERIOD, SHEAR, SHEARS, SPAN, STRAIN, TILT, box_cell, cell_image,
                      deform, minimum_image)
from dem.cli import main
from dem.neighbors import NeighborList
from dem.packing import lattice_cell
from dem.rheology import Flow, fit_mu_of_i, mu_of_i, steady_flow
from dem.rig import analyse
from dem.runner import prepare, run
from dem.schema import defaults
from dem.stress import CellServo, homogenised_stress

ROOT = Path(__file__).resolve().parents[1]
SHEAR_SCENE = ROOT / "scenes/simple_shear.toml"
TENSION_SCENE = ROOT / "scenes/periodic_tension.toml"


def sheared_cell(tilts, edges=(7.0, 9.0, 8.0)):
    cell = box_cell(edges)
    cell[TILT] = tilts
    return cell


def lattice(cell):
    """The cell's lattice vectors as the columns of ``H``."""
    (lx, ly, lz), (xy, xz, yz) = cell[PERIOD], cell[TILT]
    return np.array([[lx, xy, xz], [0.0, ly, yz], [0.0, 0.0, lz]])


def brute_force_image(d, cell):
    """The shortest of ``d + H k`` over the images ``k ∈ {−3, …, 3}³`` of the cell's lattice."""
    k = np.stack(np.meshgrid(*[np.arange(-3, 4)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    candidates = d[:, None, :] + (k @ lattice(cell).T)[None, :, :]
    return candidates[np.arange(len(d)), np.argmin(np.sum(candidates ** 2, axis=2), axis=1)]


TILTS = [(0.0, 0.0, 0.0), (2.3, 0.0, 0.0), (-3.4, 0.0, 0.0), (0.0, 3.1, 0.0), (0.0, 0.0, -4.4), (2.3, -3.5, 4.1),
         (-3.4, 3.5, -4.5)]


@pytest.mark.parametrize("tilts", TILTS)
def test_the_nearest_image_of_a_sheared_cell_is_the_shortest(tilts):
    cell = sheared_cell(tilts)
    rng = np.random.default_rng(1)
    d = rng.uniform(-30.0, 30.0, size=(8000, 3))
    expected = brute_force_image(d, cell)
    near = np.linalg.norm(expected, axis=1) < 3.0  # within reach: less than half the shortest edge
    assert near.sum() > 400
    assert np.allclose(cell_image(d, cell)[near], expected[near], atol=1e-12)
    compiled = np.array([minimum_image(*row, cell) for row in d[near]])
    assert np.allclose(compiled, expected[near], atol=1e-12)


@pytest.mark.parametrize("tilts, edges", [((2.6, 0.0, 0.0), (9.0, 11.0, 8.0)), ((-3.1, 0.0, 0.0), (9.0, 11.0, 8.0)),
                                          ((2.6, -4.1, 3.9), (9.0, 11.0, 8.0)), ((-3.1, 4.4, -5.4), (9.0, 11.0, 8.0)),
                                          ((1.7, 2.0, -1.5), (5.0, 4.6, 4.3))],
                         ids=["xy right", "xy left", "all three", "all three, other way", "two cells a side"])
def test_the_list_of_a_sheared_cell_finds_every_pair(tilts, edges):
    cell = sheared_cell(tilts, edges)
    n = 600
    rng = np.random.default_rng(4)
    diameter = rng.uniform(0.6, 1.2, n)
    position = rng.uniform(0.0, 1.0, size=(n, 3)) * cell[PERIOD]
    for axis in range(3):  # unwrapped through the faces
        position[axis::4] += np.outer(rng.integers(-3, 4, len(position[axis::4])), lattice(cell)[:, axis])
    skin = 0.25
    neighbors = NeighborList(n)
    neighbors.update(position, diameter, skin, cell=cell)
    i, j = np.triu_indices(n, 1)
    d = cell_image(position[i] - position[j], cell)
    close = np.sum(d * d, axis=1) < (0.5 * (diameter[i] + diameter[j]) + skin) ** 2
    assert set(map(tuple, neighbors.pairs().tolist())) == set(zip(i[close].tolist(), j[close].tolist()))
    rows = np.repeat(np.arange(n), np.diff(neighbors.start))
    assert len(set(zip(rows.tolist(), neighbors.index[:neighbors.start[-1]].tolist()))) == neighbors.start[-1]  # once
    crossing = np.abs(position[i[close], 2] - position[j[close], 2]) > 0.5 * edges[2]
    assert crossing.sum() > n // 60  # pairs that meet through the z faces


def test_the_list_of_a_small_sheared_cell_lists_a_pair_once():
    cell = sheared_cell((1.7, 0.0, 0.0), (9.0, 7.0, 8.0))
    position = np.array([(4.0, 6.6, 4.0), (2.6, 0.2, 4.1), (8.0, 3.0, 1.0)])  # 0 meets 1 through the y faces
    neighbors = NeighborList(3)
    neighbors.update(position, np.ones(3), 0.2, cell=cell)
    assert neighbors.pairs().tolist() == [[0, 1]]
    assert neighbors.start.tolist() == [0, 1, 2, 2]  # 1 in 0's row once, 0 in 1's (a grid of 3 × 2 × 2 cells)


def test_the_lattice_moves_with_the_gradient_and_the_tilts_stay_within_half_an_edge():
    """``Ḣ = L H`` step by step (``L`` upper triangular), the tilts reduced by lattice vectors:
    the same lattice as ``H`` integrated without reduction (an integer change of basis of
    determinant 1), the shear strains ``∫ L_ab dt``, the images' motion bound ``Σ |L_ab| SPAN_b``."""
    cell = box_cell((10.0, 8.0, 6.0))
    gradient = np.array([[0.01, 0.7, -0.3], [0.0, -0.01, 0.5], [0.0, 0.0, 0.02]])
    cell[GRADIENT] = np.diag(gradient)
    cell[SHEAR] = [gradient[a, b] for a, b in SHEARS]
    cell[SPAN] = (12.0, 9.0, 7.0)
    h, steps = 1e-3, 5000
    unreduced = lattice(cell)
    for _ in range(steps):
        unreduced = unreduced + h * gradient @ unreduced
        deform(h, cell)
        assert np.all(np.abs(cell[TILT]) <= 0.5 * cell[PERIOD][[0, 0, 1]] * (1.0 + 1e-12))
    basis = np.linalg.solve(lattice(cell), unreduced)
    assert np.abs(basis - np.rint(basis)).max() < 1e-10 and round(np.linalg.det(np.rint(basis))) == 1
    assert np.abs(np.rint(basis) - np.eye(3)).max() >= 1  # the tilts were reduced
    assert np.allclose(np.diag(lattice(cell)), np.diag(unreduced), rtol=1e-13)
    assert cell[STRAIN] == pytest.approx([0.7 * h * steps, -0.3 * h * steps, 0.5 * h * steps], rel=1e-12)
    assert cell[MOTION, 0] == pytest.approx(h * steps * np.sum(np.abs(gradient) @ cell[SPAN]), rel=1e-12)


RATE = 0.4  # the images across the y faces slide at RATE L_y = 4 along x


def shear_pair(across, component):
    """Two frictional spheres with spin meeting obliquely: across the sliding face of a cell sheared
    along ``component`` (``(a, b)`` of `SHEARS`: the upper one along ``b`` meets the image of the
    lower one, which moves at RATE L_b along ``a``), or the same two inside a cell that does not
    deform (the lower one moved to where that image is, with its velocity)."""
    a, b = SHEARS[component]
    axes = [a, b, 3 - a - b]  # the pair's frame: x, y, z of the xy case are a, b and the third axis

    def placed(vector):
        out = np.empty(3)
        out[axes] = vector
        return out

    top, bottom = placed((5.0, 9.2, 5.0)), placed((5.3, 0.6, 5.2))
    v_top, v_bottom = placed((0.2, 1.0, 0.1)), placed((-4.1, -0.9, 0.0))
    if not across:
        bottom = bottom + 10.0 * np.eye(3)[b]
        v_bottom = v_bottom + RATE * 10.0 * np.eye(3)[a]
    system = SystemBuilder()
    system.add_bodies([tuple(top), tuple(bottom)], mass=1.0, inertia=0.1, diameter=1.0,
                      velocity=[tuple(v_top), tuple(v_bottom)], angular_velocity=[(0.0, 0.0, 1.0), (0.5, 0.0, 0.0)])
    contact = {"k_pp": 1e4, "friction": 0.5, "rolling_friction": 0.1, "restitution": 0.7}
    cell = {"periodic": [True, True, True], "size": [10.0, 10.0, 10.0]}
    if across:
        cell["shear_rate"] = RATE if component == 0 else list(RATE * np.eye(3)[component])
    else:
        cell["origin"] = list(5.0 * np.eye(3)[b])
    return system.finish([], contact=contact, cell=cell)


@pytest.mark.parametrize("component", range(3), ids=["xy", "xz", "yz"])
def test_a_collision_across_the_sliding_faces_is_the_collision_inside(component):
    runs = []
    for across in (False, True):
        model, state = shear_pair(across, component)
        sim = Simulation(model, state, "rrp2", 2e-4)
        start = sim.energy_budget()
        sim.advance(2500)  # they meet at about t = 0.2 and part
        runs.append((state, start, sim.energy_budget()))
    (inside, _, budget_inside), (across, start, budget_across) = runs
    image = across.velocity.copy()
    image[1, SHEARS[component][0]] += RATE * 10.0  # the lower sphere seen through the face
    scale = np.abs(inside.velocity).max()
    assert np.abs(inside.velocity[0] - inside.velocity[1]).max() > 0.1  # they collided (and parted)
    assert np.abs(image - inside.velocity).max() < 1e-11 * scale
    assert np.abs(across.angular_velocity - inside.angular_velocity).max() < 1e-11 * scale
    for key in ("friction", "dissipated"):
        assert budget_across[key] == pytest.approx(budget_inside[key], rel=1e-9) and budget_inside[key] > 0
    for c in "xyz":  # the pair's forces are equal and opposite: the lab momentum is kept
        assert budget_across[f"P{c}"] == pytest.approx(start[f"P{c}"], abs=1e-13)
    # the cell put in what the lab-frame kinetic energy gained beyond what the pair lost
    assert budget_across["cell"] != 0.0
    assert abs(budget_across["total"] - start["total"]) < 1e-3 * abs(budget_across["cell"])


def test_a_sheared_dilute_gas_keeps_the_linear_profile():
    """Frictionless (`hertz_pp`: the other contact law that reads relative velocities) and nearly
    elastic, at a solid fraction of 0.1."""
    _, model, state, _ = prepare(SHEAR_SCENE, ["cell.stress_control=[false,false,false]", "cell.target_stress=[0,0,0]",
                                               "assembly.0.packing_fraction=0.1", "contact.restitution=0.95",
                                               "contact.friction=0.0", "assembly.0.velocity_spread=0.05"])
    rate = 0.1
    state.velocity[:, 0] += rate * (state.position[:, 1] - 5.0)
    sim = Simulation(model, state, "rrp2", 1e-3)
    sim.advance(20000)  # a shear strain of 2: many collisions per particle, many crossings
    cell = state.cell
    assert cell[STRAIN, 0] == pytest.approx(2.0, rel=1e-9)
    crossed = np.floor(state.position[:, 1] / 10.0)
    assert np.abs(crossed).max() >= 1  # some have crossed the sliding faces (positions are unwrapped)
    y = state.position[:, 1] - 10.0 * crossed  # seen in the cell: each crossing slides by rate L_y
    vx = state.velocity[:, 0] - rate * 10.0 * crossed
    slope, intercept = np.polyfit(y, vx, 1)
    assert slope == pytest.approx(rate, rel=0.05)
    assert abs(intercept + 5.0 * rate) < 0.02
    peculiar = state.velocity - (rate * (state.position[:, 1] - 5.0))[:, None] * [1.0, 0.0, 0.0]
    assert np.abs(peculiar.mean(axis=0)).max() < 0.02  # no drift in the co-moving frame


def test_a_driven_cell_closes_its_budget_and_the_servo_holds_the_stress(tmp_path):
    out = tmp_path / "shear"
    sim, _ = run(SHEAR_SCENE, ["simulation.t_end=6", "output.log_every=100"], out, quiet=True)
    budget = sim.energy_budget()
    energy = np.genfromtxt(out / "energy.csv", delimiter=",", names=True)
    work = abs(budget["cell"])
    assert work > 100.0 and budget["friction"] > 0.5 * work  # the cell drove it, friction took most of it
    assert np.abs(energy["total"] - energy["total"][0]).max() < 1e-3 * work  # measured 7.7e-4 over t = 5
    log = np.genfromtxt(out / "cell.csv", delimiter=",", names=True)
    steady = log["t"] >= 3.0
    assert log["s_yy"][steady].mean() == pytest.approx(1.0, rel=0.15)  # the servo's target
    assert log["shear_strain_xy"][-1] == pytest.approx(0.6, rel=1e-9)
    assert log["L_y"][-1] != 10.0 and log["L_x"][-1] == 10.0  # the servo moved the y edge alone
    flow = steady_flow(out, skip=0.5)
    assert flow.inertial_number == pytest.approx(0.1 / np.sqrt(flow.pressure), rel=0.01)  # d = 1, rho = 1
    assert 0.3 < flow.mu < 0.6  # a frictional granular flow at I = 0.1


def test_threads_do_not_change_a_sheared_servoed_run():
    """Friction and rolling resistance between pairs across the faces of a sheared, servoed cell:
    serial and on 1 and 2 threads, the same bits."""
    def run(parallel):
        _, model, state, _ = prepare(SHEAR_SCENE, ["cell.shear_rate=[0.5, 0.3, 0.5]", "contact.rolling_friction=0.1"])
        sim = Simulation(model, state, "rrp2", 5e-4, parallel=parallel, observers=[CellServo(model)])
        sim.run(600)  # the servo sets the rate 31 times; the images slide by 1.5 across y, 1.5 and 0.9 across z
        return state, sim.energy_budget()

    results = across_threads(run)
    for other, budget in results[1:]:
        for name in ("position", "velocity", "angular_velocity", "force", "moment", "cell"):
            assert np.array_equal(getattr(results[0][0], name), getattr(other, name)), name
        assert budget == results[0][1]
    assert results[0][1]["cell"] < 0.0


def test_a_periodic_fcc_lattice_pulled_with_free_sides_has_the_lattice_moduli():
    """A periodic FCC block of touching spheres joined to their 12 neighbours by axial springs
    (``K_a``, spring constant ``k = K_a/d²``), pulled slowly along a cube axis with its other
    edges servoed to zero stress: the compliances from the cell's strains and stresses are the
    lattice's, ``S11 = 3a/4k`` (``E = 4k/3a``) and ``S12 = −a/4k`` (``ν = 1/3``), ``a = √2 d``
    (``C11 = 2k/a``, ``C12 = C44 = k/a``)."""
    a = lattice_cell("fcc", 1.0)[0][0]
    edges = np.full(3, 3 * a)
    k_axial = 50.0
    table = {**defaults(ASSEMBLY_KEYS), "size": tuple(edges), "center": tuple(0.5 * edges), "particle_diameter": 1.0,
             "periodic": (True, True, True), "bond_gap_tolerance": 1e-6, "k_axial": k_axial, "k_shear": 0.0,
             "k_bending": 0.0}
    arrays = assembly_arrays(table)
    system = SystemBuilder()
    system.add_bodies(arrays["position"], mass=1.0, inertia=0.1, diameter=1.0)
    system.add_bonds(arrays["bonds"][:, 0], arrays["bonds"][:, 1], **arrays["bond_properties"])
    cell = {"periodic": [True, True, True], "size": tuple(edges), "strain_rate": (2e-5, 0.0, 0.0),
            "stress_control": (False, True, True), "target_stress": (0.0, 0.0, 0.0), "servo_stress": 0.5,
            "servo_gain": 1e-2, "servo_interval": 10}
    model, state = system.finish([], cell=cell, damping={"local": 0.7})
    sim = Simulation(model, state, "rrp2", 0.02, observers=[CellServo(model)])
    start = sim.energy_budget()
    sim.run(2500)  # t = 50: a strain of 1e-3
    stress = -homogenised_stress(model, state, sim.contacts)["total"]  # tension positive
    strain = np.log(state.cell[PERIOD] / state.cell[INITIAL])
    assert strain[0] == pytest.approx(1e-3, rel=1e-3) and stress[0, 0] > 0.04
    assert abs(stress[1, 1]) < 0.02 * stress[0, 0] and abs(stress[2, 2]) < 0.02 * stress[0, 0]  # the servo's zero
    # eps_xx = S11 s_xx + S12 (s_yy + s_zz), eps_yy = S12 (s_xx + s_zz) + S11 s_yy: two equations, two unknowns
    s11, s12 = np.linalg.solve([[stress[0, 0], stress[1, 1] + stress[2, 2]],
                                [stress[1, 1], stress[0, 0] + stress[2, 2]]], strain[:2])
    k = k_axial  # the springs' constant at r0 = d = 1
    assert 1.0 / s11 == pytest.approx(4.0 * k / (3.0 * a), rel=0.02)
    assert -s12 / s11 == pytest.approx(1.0 / 3.0, abs=0.02)
    budget = sim.energy_budget()
    assert abs(budget["total"] - start["total"]) < 1e-3 * abs(budget["cell"])


@pytest.mark.slow
def test_the_shipped_periodic_tension_gives_the_binders_moduli(tmp_path):
    """The shipped tension scene (parallel bonds, Mindlin contacts, damping) pulled to before its
    peak: its moduli, free sides and budget. Slow: a loop compiled for it alone; the default
    suite measures the moduli of a pulled cell on the FCC lattice
    (`test_a_periodic_fcc_lattice_pulled_with_free_sides_has_the_lattice_moduli`)."""
    out = tmp_path / "tension"
    run(TENSION_SCENE, ["simulation.t_end=2.0", "output.vtk_every=4000"], out, quiet=True)  # before the peak
    result = analyse(out)
    assert result["test"] == "periodic" and result["sense"] == "tension"
    assert 6e3 < result["young_modulus"] < 9e3 and 0.05 < result["poisson_ratio"] < 0.25  # measured 7.24e3, 0.12
    log = np.genfromtxt(out / "cell.csv", delimiter=",", names=True)
    assert np.abs(log["s_yy"][-1]) < 0.05 * np.abs(log["s_xx"][-1])  # free sides
    energy = np.genfromtxt(out / "energy.csv", delimiter=",", names=True)
    assert energy["broken"][-1] == 0.0  # no bond broke yet
    assert abs(energy["total"][-1] - energy["total"][0]) < 1e-3 * abs(energy["cell"][-1])  # measured 2.9e-4


def test_the_mu_of_i_fit_recovers_a_known_law():
    inertial = np.array([0.003, 0.01, 0.03, 0.1, 0.3, 1.0])
    flows = [Flow("run", i, i, mu_of_i(i, 0.35, 0.8, 0.4), 0.002, 0.0, 1.0, 0.6, 0.0, 1.0, 10) for i in inertial]
    (mu_s, mu_2, i_0), errors = fit_mu_of_i(flows)
    assert (mu_s, mu_2, i_0) == pytest.approx((0.35, 0.8, 0.4), rel=1e-6)
    assert np.all(errors > 0) and errors[0] < 0.01  # the standard errors of a fit weighted by 0.002


def test_a_cell_squeezed_below_two_contact_reaches_stops_and_keeps_its_outputs(tmp_path, capsys):
    settings = ["cell.shear_rate=0.0", "cell.stress_control=[false,false,false]", "cell.target_stress=[0,0,0]",
                "cell.strain_rate=[-0.3,0.0,0.0]", "assembly.0.packing_fraction=0.05", "simulation.t_end=10"]
    out = tmp_path / "squeezed"
    code = main([str(SHEAR_SCENE), "--out", str(out), "--quiet"] + [a for s in settings for a in ("--set", s)])
    err = capsys.readouterr().err
    assert code == 1 and "the cell's edge Lx = " in err and "twice the contact reach" in err, err
    log = np.genfromtxt(out / "cell.csv", delimiter=",", names=True)
    assert log["L_x"][-1] < 3.0 and (out / "checkpoint.npz").is_file()  # 10 e^(-0.3 t); twice the reach: 2.9


@pytest.mark.parametrize("settings, key, problem", [
    (["cell.periodic=[true, true, false]", "cell.size=[10.0, 10.0, 0.0]", "assembly.0.periodic=[true, true, false]",
      "cell.strain_rate=[0.0, 0.0, 0.1]"], "cell.strain_rate", "not periodic along z"),
    (["cell.target_stress=[1.0, 1.0, 0.0]"], "cell.target_stress", "which is strain-controlled"),
    (["cell.strain_rate=[0.0, 0.1, 0.0]"], "cell.strain_rate", "stress-controlled"),
    (["cell.servo_gain=0.0"], "cell.servo_gain", "must be positive"),
    (["cell.stress_control=[false, false, false]", "cell.target_stress=[0,0,0]", "cell.periodic=[false, true, true]",
      "cell.size=[0.0, 10.0, 10.0]", "assembly.0.periodic=[false, true, true]"], "cell.shear_rate",
     "periodic along x and y"),
    (["cell.stress_control=[false, false, false]", "cell.target_stress=[0,0,0]", "cell.periodic=[true, true, false]",
      "cell.size=[10.0, 10.0, 0.0]", "assembly.0.periodic=[true, true, false]", "cell.shear_rate=[0.0, 0.0, 0.1]"],
     "cell.shear_rate", "periodic along y and z"),
    (["cell.shear_rate=[0.1, 0.2]"], "cell.shear_rate", "must be a number or a list of 3 numbers"),
    (["contact.substeps=3"], "contact.substeps", "do not follow a deforming cell"),
    (["cell.target_stress=[0.0, 0.0, 0.0]"], "cell.servo_stress", "is required when every target stress is 0"),
    (["cell.periodic=[true, true, false]", "cell.size=[10.0, 10.0, 0.0]", "assembly.0.periodic=[true, true, false]"],
     "cell.stress_control", "make the cell periodic along x, y and z"),
], ids=["axis not periodic", "target on a strained axis", "rate on a servoed axis", "no gain", "shear needs x and y",
        "shear needs y and z", "two shear rates",
        "sub-steps", "no stress scale", "servo without a volume"])
def test_a_bad_deformation_is_one_line_and_nothing_written(tmp_path, capsys, settings, key, problem):
    code = main([str(SHEAR_SCENE), "--out", str(tmp_path / "out")] + [a for s in settings for a in ("--set", s)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{key}: " in err and problem in err, err
    assert not (tmp_path / "out").exists()
