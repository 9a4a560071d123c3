"""Assemblies (SPEC §5): parallel kernels against brute-force references, conservation in free
flight, and an energy budget that closes with breakage and damping booked."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from dem import Simulation
from dem.cli import prepare, run
from dem.diagnostics import energy_budget
from dem.interactions import compute_forces
from dem.neighbors import NeighborList

SCENE = """\
[simulation]
dt = 1e-3
t_end = 0.5

[output]
log_every = 10

[contact]
k_pp = 1e4
k_pw = 1e4

[[walls]]
point = [0.0, 0.0, 0.0]
normal = [1.0, 0.0, 0.0]

[[assembly]]
shape = "sphere"
diameter = 9.0
center = [4.6, 0.0, 0.0]
lattice = "random"
packing_fraction = 0.55
distribution = "uniform"
diameter_min = 0.7
diameter_max = 1.3
seed = 3
velocity = [-2.0, 0.0, 0.0]
angular_velocity = [0.3, -0.2, 0.5]
bond_gap_tolerance = 0.05
k_axial = 200.0
k_shear = 200.0
k_bending = 10.0
"""


@pytest.fixture
def scene_file(tmp_path):
    path = tmp_path / "granule.toml"
    path.write_text(SCENE)
    return path


def brute_force_forces(model, state):
    """Hertz (all pairs, O(N²)), walls and binders from the SPEC §3 formulas, in numpy."""
    x, q = state.position, state.orientation
    rotation = Rotation.from_quat(q[:, [1, 2, 3, 0]])
    force = np.zeros_like(x)
    moment = np.zeros_like(x)
    d = x[:, None, :] - x[None, :, :]
    r = np.linalg.norm(d, axis=2)
    reach = 0.5 * (model.diameter[:, None] + model.diameter[None, :])
    np.fill_diagonal(r, np.inf)
    delta = np.clip(1 - r / reach, 0, None)
    magnitude = model.k_pp / reach * delta ** 1.5
    force += np.sum((magnitude / r)[:, :, None] * d, axis=1)
    for p, n in zip(model.wall_point, model.wall_normal):
        radius = 0.5 * model.diameter
        delta = np.clip(1 - (x - p) @ n / radius, 0, None)
        force += (model.k_pw / radius * delta ** 1.5)[:, None] * n
    b = model.bonds
    i, j = b.i, b.j
    d = x[i] - x[j]
    r = np.linalg.norm(d, axis=1)
    n = d / r[:, None]
    strain = r / b.rest_length - 1
    f = -(b.k_axial * strain / b.rest_length)[:, None] * n
    a_i = rotation[i].apply(b.rest_dir_i)
    a_j = rotation[j].apply(b.rest_dir_j)
    c_i = 1 - np.sum(a_i * n, axis=1)
    c_j = 1 - np.sum(a_j * n, axis=1)
    f += (b.k_shear / r)[:, None] * (c_i[:, None] * (a_i - (1 - c_i)[:, None] * n)
                                     + c_j[:, None] * (a_j - (1 - c_j)[:, None] * n))
    rest = Rotation.from_quat(b.rest_relative[:, [1, 2, 3, 0]])
    theta = (rotation[j] * rest * rotation[i].inv()).as_rotvec()
    tau_i = (b.k_shear * c_i)[:, None] * np.cross(a_i, n) + b.k_bending[:, None] * theta
    tau_j = (b.k_shear * c_j)[:, None] * np.cross(a_j, n) - b.k_bending[:, None] * theta
    np.add.at(force, i, f)
    np.add.at(force, j, -f)
    np.add.at(moment, i, tau_i)
    np.add.at(moment, j, tau_j)
    return force, moment


def test_parallel_kernels_equal_brute_force(scene_file):
    _, model, state, _ = prepare(scene_file)
    assert model.n_bodies > 300 and len(set(np.round(model.diameter, 6))) > 100  # polydisperse
    rng = np.random.default_rng(5)
    state.position += 0.02 * rng.normal(size=state.position.shape)  # overlaps and stretched bonds
    state.position[:, 0] -= 0.65  # pressed into the wall
    state.orientation[:] = Rotation.from_rotvec(0.05 * rng.normal(size=(model.n_bodies, 3))).as_quat()[:, [3, 0, 1, 2]]
    compute_forces(model, state, NeighborList(model.n_bodies), parallel=True)
    force, moment = brute_force_forces(model, state)
    scale = np.abs(force).max()
    assert scale > 1.0
    assert np.abs(state.force - force).max() < 1e-11 * scale
    assert np.abs(state.moment - moment).max() < 1e-11 * np.abs(moment).max()


def test_free_flight_conserves_momenta(scene_file):
    _, model, state, _ = prepare(scene_file, ["walls=[]"])
    sim = Simulation(model, state, "rrp2", 1e-3, parallel=True)
    start = energy_budget(model, state)
    sim.advance(2000)
    end = sim.energy_budget()
    for names in (("Px", "Py", "Pz"), ("Lx", "Ly", "Lz")):
        before = np.array([start[k] for k in names])
        after = np.array([end[k] for k in names])
        assert np.abs(after - before).max() < 1e-12 * np.linalg.norm(before)
    assert end["hertz_pp"] > 0  # the spinning granule's particles do touch


def max_budget_error(scene_file, tmp_path, dt):
    sim, out = run(scene_file, [f"simulation.dt={dt}", "contact.restitution=0.6", "breakage.tension=0.003",
                                "breakage.shear=0.003", "output.vtk_every=0", "output.log_every=5"],
                   tmp_path / f"run{dt}", quiet=True)
    rows = np.genfromtxt(out / "energy.csv", delimiter=",", names=True)
    booked = rows["broken"][-1] + rows["dissipated"][-1]
    return np.abs(rows["total"] - rows["total"][0]).max() / rows["total"][0], booked / rows["total"][0], sim


def test_energy_budget_closes_with_breakage_and_damping(scene_file, tmp_path):
    coarse, booked, sim = max_budget_error(scene_file, tmp_path, 1e-3)
    fine, _, _ = max_budget_error(scene_file, tmp_path, 5e-4)
    assert np.count_nonzero(sim.model.bonds.broken) > 10 and booked > 0.05  # energy really left the budget
    assert coarse < 5e-3 and fine < coarse  # closes to the integrator's error, which falls with dt
