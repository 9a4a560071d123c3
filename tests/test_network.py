"""The contact network (`dem.network`): its VTK lines (``contacts.pvd``) read back carry every
particle's contact force, frictionless and frictional; the fabric of an FCC block and of a
chain; ``[output] contacts`` in a run (``contacts.pvd``, ``fabric.csv``), the same on two MPI
ranks, and its bad values."""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkIOXML import vtkXMLPolyDataReader

from dem.cli import main
from dem.engine import compute_forces, new_contacts
from dem.network import SLIDING, contact_network, fabric, touching_pairs
from dem.observers.vtk import VTKWriter, read_collection
from dem.packing import lattice_packing
from dem.runner import run
from dem.system import SystemBuilder

ROOT = Path(__file__).resolve().parents[1]
MPIEXEC = Path(sys.executable).with_name("mpiexec")
#: the column collapse shrunk to 100 spheres in a column of diameter 5, logged and drawn often
SMALL_COLUMN = ["output.vtk_every=200", "output.log_every=100", "output.contacts=true", "assembly.0.n_particles=100",
                "assembly.0.diameter=5.0", "assembly.0.height=6.0", "assembly.0.center=[0.0, 0.0, 3.01]"]
LINE_ARRAYS = {"force": 3, "normal_force": 1, "tangential_force": 1, "overlap": 1, "sliding": 1, "i": 1, "j": 1}


def cloud(seed, **contact):
    """30 polydisperse spheres packed so that about a hundred pairs overlap, moving and spinning
    at random; only the particle–particle contacts act."""
    rng = np.random.default_rng(seed)
    system = SystemBuilder()
    system.add_bodies(rng.uniform(0.0, 2.6, size=(30, 3)), mass=rng.uniform(0.5, 2.0, 30), inertia=0.1,
                      diameter=rng.uniform(0.8, 1.3, 30))
    model, state = system.finish(contact={"k_pp": 50.0, **contact})
    state.velocity[:] = rng.normal(size=(30, 3))
    state.angular_velocity[:] = rng.normal(size=(30, 3))
    return model, state


def written_lines(tmp_path, model, state, contacts):
    """The contact lines the VTK writer makes of ``state``, read back: ``(i, j, points, arrays)``."""
    VTKWriter(tmp_path, 1, contacts=True).report(SimpleNamespace(model=model, state=state, contacts=contacts))
    reader = vtkXMLPolyDataReader()
    reader.SetFileName(str(tmp_path / "vtk/contacts_000000000.vtp"))
    reader.Update()
    data = reader.GetOutput()
    cells = data.GetCellData()
    arrays = {cells.GetArrayName(k): vtk_to_numpy(cells.GetArray(k)) for k in range(cells.GetNumberOfArrays())}
    assert {name: cells.GetArray(name).GetNumberOfComponents() for name in arrays} == LINE_ARRAYS
    ends = vtk_to_numpy(data.GetLines().GetConnectivityArray()).reshape(-1, 2)
    np.testing.assert_array_equal(ends, np.column_stack((arrays["i"], arrays["j"])))
    return arrays["i"], arrays["j"], vtk_to_numpy(data.GetPoints().GetData()), arrays


def assert_lines_carry_the_contact_forces(model, state, lines):
    """Each particle's lines add up to its contact force (``force`` on ``i``, its negative on
    ``j``), to 1e-12 of the largest; the lines' normal and tangential forces and overlaps are
    those of their ends."""
    i, j, points, arrays = lines
    assert np.all(i < j) and len(i) > 50
    force = arrays["force"]
    summed = np.zeros_like(state.force)
    np.add.at(summed, i, force)
    np.add.at(summed, j, -force)
    scale = np.abs(state.force).max()
    np.testing.assert_allclose(summed, state.force, rtol=0.0, atol=1e-12 * scale)
    d = points[i] - points[j]
    r = np.linalg.norm(d, axis=1)
    n = d / r[:, None]
    np.testing.assert_allclose(arrays["normal_force"], np.einsum("mc,mc->m", force, n), rtol=0, atol=1e-12 * scale)
    tangential = np.linalg.norm(force - (force * n).sum(axis=1)[:, None] * n, axis=1)
    np.testing.assert_allclose(arrays["tangential_force"], tangential, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(arrays["overlap"], 0.5 * (model.diameter[i] + model.diameter[j]) - r, rtol=0,
                               atol=1e-14)
    assert arrays["overlap"].min() > 0.0


def test_frictionless_lines_carry_the_hertz_forces(tmp_path):
    """``hertz_pp`` alone, damped (restitution 0.6): the lines' forces, computed by the network,
    add up to every particle's force from `compute_forces`; all normal, none sliding."""
    model, state = cloud(1, restitution=0.6)
    assert list(model.interactions) == ["hertz_pp"]
    contacts = compute_forces(model, state)
    lines = written_lines(tmp_path, model, state, contacts)
    assert_lines_carry_the_contact_forces(model, state, lines)
    arrays = lines[3]
    assert np.abs(arrays["tangential_force"]).max() <= 1e-12 * np.abs(arrays["normal_force"]).max()
    assert not arrays["sliding"].any()
    assert arrays["normal_force"].min() < 0.0 < arrays["normal_force"].max()  # damping pulls separating pairs


@pytest.mark.parametrize("adhesion", [0.0, 0.3])
def test_frictional_lines_carry_the_pipeline_forces(tmp_path, adhesion):
    """``contact_pp`` (friction, rolling, twisting, damping; with ``adhesion``, ``adhesive_pp``
    under the DMT law of that work of adhesion): five force evaluations of 0.05 each stretch the
    tangential springs until some slide; the lines, read from the pipeline's pair scratch, add
    up to every particle's force, and a line is flagged sliding exactly where its tangential force
    is at the Coulomb limit μ (F_e + 2 F_pull-off), F_pull-off = 2π w R*."""
    mu = 0.4
    law = {"normal": "dmt", "work_of_adhesion": adhesion} if adhesion else {}
    model, state = cloud(2, friction=mu, rolling_friction=0.1, twisting_friction=0.05, restitution=0.7,
                         poisson_ratio=0.3, **law)
    assert list(model.interactions) == ["adhesive_pp" if adhesion else "contact_pp"]
    contacts = new_contacts(model)
    contacts.rebuild(state.position, model.diameter, state.cell)
    for _ in range(5):
        compute_forces(model, state, contacts, dt=0.05)
    lines = written_lines(tmp_path, model, state, contacts)
    assert_lines_carry_the_contact_forces(model, state, lines)
    i, j, points, arrays = lines
    r = np.linalg.norm(points[i] - points[j], axis=1)
    reach = 0.5 * (model.diameter[i] + model.diameter[j])
    elastic = 50.0 / reach * (1.0 - r / reach) ** 1.5  # Hertz (DMT: less the pull-off force, which the limit adds twice)
    radius_i, radius_j = 0.5 * model.diameter[i], 0.5 * model.diameter[j]
    ratio = arrays["tangential_force"] / (mu * (elastic + 2 * np.pi * adhesion * radius_i * radius_j / (radius_i + radius_j)))
    sliding = arrays["sliding"] == 1
    assert 0 < sliding.sum() < len(sliding)
    np.testing.assert_allclose(ratio[sliding], 1.0, rtol=1e-9)
    assert ratio[~sliding].max() < SLIDING


def test_fabric_of_an_fcc_block_is_isotropic():
    """63 spheres of an FCC block (2 × 2 × 2 cells with their faces: cubic symmetry) pressed by
    0.1 % so that nearest neighbours touch: the 13 inside have 12 contacts each, and the fabric
    tensor is I/3 (trace 1, deviator 0) to 1e-12; the touching pairs are those within a diameter."""
    position, diameter = lattice_packing("fcc", 1.0, "box", size=(4.0, 4.0, 4.0))
    position *= 1.0 - 1e-3
    system = SystemBuilder()
    system.add_bodies(position, mass=1.0, inertia=0.1, diameter=diameter)
    model, state = system.finish(contact={"k_pp": 1.0})
    contacts = new_contacts(model)
    contacts.rebuild(state.position, model.diameter, state.cell)
    first, second, _, _ = touching_pairs(model, state, contacts)
    distance = np.linalg.norm(position[:, None] - position[None], axis=2)
    expected = np.argwhere(np.triu(distance < 1.0, 1))
    np.testing.assert_array_equal(np.column_stack((first, second)), expected)
    count = np.bincount(np.concatenate((first, second)), minlength=63)
    edge = np.sqrt(2.0) * (1.0 - 1e-3)  # the cell
    low, high = position.min(axis=0) + 0.5 * edge - 1e-9, position.max(axis=0) - 0.5 * edge + 1e-9
    inside = np.all((position >= low) & (position <= high), axis=1)
    assert inside.sum() == 13 and np.all(count[inside] == 12) and np.all(count[~inside] < 12)
    found = fabric(model, state, contacts)
    assert found.contacts == len(expected) and found.particles == 63
    assert found.coordination == 2.0 * len(expected) / 63
    assert abs(np.trace(found.tensor) - 1.0) < 1e-12
    assert np.abs(found.tensor - np.eye(3) / 3.0).max() < 1e-12
    assert found.anisotropy < 1e-11
    assert found.rattlers == 0 and found.mechanical == found.coordination


def test_fabric_of_a_chain():
    """Five touching spheres along x: N_c = 4, Z = 8/5; the two ends are rattlers (one contact),
    Z_m = (8 − 2)/(5 − 2) = 2; φ = e_x⊗e_x, whose anisotropy a = (15/2)√(⅔ φ':φ') is 5 (for an
    axisymmetric fabric a = 5 (φ_axis − φ_side))."""
    system = SystemBuilder()
    system.add_bodies(np.column_stack((0.999 * np.arange(5), np.zeros(5), np.zeros(5))), mass=1.0, inertia=0.1,
                      diameter=1.0)
    system.add_body((0.0, 5.0, 0.0), mass=1.0, inertia=0.1)  # no diameter: not a particle
    model, state = system.finish(contact={"k_pp": 1.0})
    contacts = new_contacts(model)
    contacts.rebuild(state.position, model.diameter, state.cell)
    found = fabric(model, state, contacts)
    assert (found.contacts, found.particles, found.rattlers) == (4, 5, 2)
    assert found.coordination == 1.6 and found.mechanical == 2.0
    np.testing.assert_allclose(found.tensor, np.diag([1.0, 0.0, 0.0]), atol=1e-15)
    assert found.anisotropy == pytest.approx(5.0, rel=1e-14)
    network = contact_network(model, state, contacts)
    np.testing.assert_array_equal(network.i, [0, 1, 2, 3])
    np.testing.assert_allclose(network.overlap, 1e-3, rtol=1e-9)


def test_a_run_writes_the_network_and_the_fabric_log(tmp_path):
    """The column collapse, 100 spheres in a narrower column, for 0.3 time units with
    ``[output] contacts``: ``contacts.pvd`` lists a network at every snapshot, ``fabric.csv`` a row
    at every log row, and where they meet the row counts the snapshot's lines."""
    out = tmp_path / "run"
    run(ROOT / "scenes/column_collapse.toml", ["simulation.t_end=0.3", *SMALL_COLUMN], out=out, quiet=True)
    entries = read_collection(out / "contacts.pvd")
    assert [step for step, _, _ in entries] == [0, 200, 400, 600]
    log = np.genfromtxt(out / "fabric.csv", delimiter=",", names=True)
    assert list(log["step"]) == list(range(0, 601, 100))
    reader = vtkXMLPolyDataReader()
    for step, _, name in entries:
        reader.SetFileName(str(out / name))
        reader.Update()
        assert reader.GetOutput().GetNumberOfLines() == log["contacts"][list(log["step"]).index(step)]
    assert log["contacts"][-1] > 50
    np.testing.assert_allclose(log["phi_xx"] + log["phi_yy"] + log["phi_zz"], 1.0, rtol=1e-12)
    assert np.all(log["coordination"] == 2.0 * log["contacts"] / 100)


@pytest.mark.skipif(not MPIEXEC.exists(), reason="needs the mpi extra (mpi4py, mpiexec): pip install '.[mpi]'")
def test_two_ranks_write_the_network_of_one_process(tmp_path):
    """On two MPI ranks the gathered snapshot carries the contact pipeline's pair loads: the
    contact files and fabric.csv are those of one process, byte for byte (the small column
    without its tube: MPI takes fixed walls only)."""
    scene, settings = ROOT / "scenes/column_collapse.toml", ["simulation.t_end=0.3", "mesh=[]", *SMALL_COLUMN]
    run(scene, settings, out=tmp_path / "one", quiet=True)
    done = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "dem", str(scene), "--quiet", "--out",
                           str(tmp_path / "two"), *[f"--set={s}" for s in settings]],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    files = ["fabric.csv", "contacts.pvd"] + [name for _, _, name in read_collection(tmp_path / "one/contacts.pvd")]
    assert len(files) == 6
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    reader = vtkXMLPolyDataReader()
    reader.SetFileName(str(tmp_path / "two" / files[-1]))
    reader.Update()
    assert np.abs(vtk_to_numpy(reader.GetOutput().GetCellData().GetArray("force"))).max() > 0.0


PENDULUM = """[simulation]
dt = 0.01
t_end = 1.0

[output]
contacts = {value}

[[pendulum]]
mass = 1.0
inertia = 1.0
"""


@pytest.mark.parametrize("value, problem", [
    ('"yes"', "output.contacts: must be true or false, got 'yes'"),
    ("true", ("output.contacts: asks for the contact network, but particle–particle contacts are off: "
              "contact.k_pp is 0")),
], ids=["not a boolean", "no contacts"])
def test_bad_contacts_key_gives_one_line(tmp_path, capsys, value, problem):
    scene = tmp_path / "bad.toml"
    scene.write_text(PENDULUM.format(value=value))
    code = main([str(scene), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err == f"dem: error: {scene}: {problem}"
    assert not (tmp_path / "out").exists()
