"""ParaView output (`dem.observers.vtk`) read back with the vtk package, and the energy plot."""

import os
from pathlib import Path
from types import SimpleNamespace
from xml.etree import ElementTree

import numpy as np
import pytest
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkCommonCore import vtkSMPTools
from vtkmodules.vtkIOXML import vtkXMLPolyDataReader

from dem.builders.tetra_chain import TETRAHEDRON
from dem.observers.vtk import VTKWriter, _settle_thread_count
from dem.plotting import SCENE_UNITS, plot_energy, units_of
from dem.plotting import components as budget_components
from dem.rotations import quat_from_rotvec_one, quat_matrix, quat_matrix_one
from dem.runner import prepare, run
from dem.simulation import Simulation
from dem.system import SystemBuilder

SCENES = Path(__file__).resolve().parent.parent / "scenes"
SCENE = SCENES / "torus_impact.toml"

PARTICLE_ARRAYS = {
    "id": 1, "body": 1, "diameter": 1, "velocity": 3, "speed": 1, "angular_velocity": 3, "orientation": 4,
    "axis_1": 3, "axis_2": 3, "axis_3": 3, "force": 3, "moment": 3, "center_of_mass": 3,
}
BOND_ARRAYS = {"axial_strain": 1, "shear": 1, "bending_angle": 1, "axial_force": 1, "broken": 1}


def _read(path):
    reader = vtkXMLPolyDataReader()
    reader.SetFileName(str(path))
    reader.Update()
    return reader.GetOutput()


def _collection(path):
    """``[(timestep, file)]`` of a .pvd."""
    root = ElementTree.parse(path).getroot()
    assert root.get("type") == "Collection"
    return [(float(d.get("timestep")), d.get("file")) for d in root.iter("DataSet")]


def _arrays(data):
    return {data.GetArrayName(k): data.GetArray(k) for k in range(data.GetNumberOfArrays())}


@pytest.fixture(scope="module")
def torus_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("torus")
    run(SCENE, overrides=["simulation.t_end=0.3", "output.vtk_every=100"], out=out, quiet=True)
    return out


def test_collections_list_the_snapshots(torus_run):
    for series in ("particles", "bonds", "walls"):
        entries = _collection(torus_run / f"{series}.pvd")
        assert [t for t, _ in entries] == pytest.approx([0.0, 0.1, 0.2, 0.3], abs=1e-12)
        steps = (0, 0, 0, 0) if series == "walls" else (0, 100, 200, 300)  # a fixed wall is written once
        assert [f for _, f in entries] == [f"vtk/{series}_{step:09d}.vtp" for step in steps]
        for _, name in entries:
            assert (torus_run / name).is_file()
        assert not (torus_run / f"{series}.pvd.tmp").exists()
    assert len(list((torus_run / "vtk").glob("walls_*.vtp"))) == 1


def test_refilled_snapshots_equal_fresh_ones(tmp_path):
    """The writer refills one set of VTK objects per series: its files are byte for byte those a
    new writer makes of the same state (values, and the ranges VTK caches, are current)."""
    _, model, state, _ = prepare(SCENE, ["simulation.t_end=1.0"])
    sim = Simulation(model, state, "rrp2", 1e-3)
    kept = VTKWriter(tmp_path / "kept", 1)
    for k in range(3):
        sim.advance(300)  # the ring hits the wall: every array changes
        kept.report(sim)
        VTKWriter(tmp_path / f"new{k}", 1).report(sim)
        for series in ("particles", "bonds"):
            name = f"vtk/{series}_{sim.state.step:09d}.vtp"
            assert (tmp_path / "kept" / name).read_bytes() == (tmp_path / f"new{k}" / name).read_bytes(), name


def test_a_writer_in_the_background_writes_the_same_files_and_raises_its_errors(tmp_path):
    """A background writer copies each snapshot at its step and writes it while the run steps on:
    its files and collections are, byte for byte, those of a writer that writes at once. A write
    that fails there is raised at ``close`` (or the next ``report``), and no collection names its
    file."""
    _, model, state, _ = prepare(SCENE, ["simulation.t_end=1.0"])
    sim = Simulation(model, state, "rrp2", 1e-3)
    writers = {"now": VTKWriter(tmp_path / "now", 1), "later": VTKWriter(tmp_path / "later", 1, background=True)}
    failing = VTKWriter(tmp_path / "failing", 1, collection_interval=1e9, background=True)  # (indexed at close)
    for k in range(3):
        sim.advance(300)  # the ring hits the wall: every array changes while the last snapshot is written
        if k == 2:  # a folder where the particles' file goes: the write fails
            (tmp_path / "failing/vtk" / f"particles_{sim.state.step:09d}.vtp").mkdir(parents=True)
        for writer in (*writers.values(), failing):
            writer.report(sim)
    for writer in writers.values():
        writer.close(sim)
    files = {name: sorted(path.relative_to(tmp_path / name) for path in (tmp_path / name).rglob("*") if path.is_file())
             for name in writers}
    assert files["now"] == files["later"] and len(files["now"]) == 3 * 2 + 1 + 3  # particles, bonds, a wall, .pvd
    for path in files["now"]:
        assert (tmp_path / "now" / path).read_bytes() == (tmp_path / "later" / path).read_bytes(), path
    with pytest.raises(IsADirectoryError):
        failing.close(sim)
    assert (tmp_path / "failing/vtk/particles_000000600.vtp").is_file()  # written, but not indexed after the failure
    assert [f for _, f in _collection(tmp_path / "failing/particles.pvd")] == ["vtk/particles_000000300.vtp"]


def test_the_writers_leave_vtks_threads_as_they_found_them(torus_run):
    """The writers give VTK's std::thread backend the thread count it takes by default, the
    processors' (or ``VTK_SMP_MAX_THREADS``); the backend in use and its count stay."""
    before = vtkSMPTools.GetBackend(), vtkSMPTools.GetEstimatedNumberOfThreads()
    _settle_thread_count.__wrapped__()
    assert (vtkSMPTools.GetBackend(), vtkSMPTools.GetEstimatedNumberOfThreads()) == before
    assert vtkSMPTools.SetBackend("STDThread")
    try:
        given = int(os.environ.get("VTK_SMP_MAX_THREADS") or os.cpu_count())
        assert vtkSMPTools.GetEstimatedNumberOfThreads() == min(given, os.cpu_count())
    finally:
        vtkSMPTools.SetBackend(before[0])


def test_log_rows_sampled_in_the_loop_are_the_budget_of_the_state_at_their_step(tmp_path):
    """A run returns to Python only at its snapshots (every 100 steps); the loop samples the rows
    of energy.csv and walls.csv (every 10) on the way. Each row is, bit for bit, what the state at
    its step gives when it is stepped to there from Python and asked (`Simulation.energy_budget`),
    through the impact (first contact at t = 0.5)."""
    out = tmp_path / "run"
    run(SCENE, overrides=["simulation.t_end=0.8", "output.vtk_every=100"], out=out, quiet=True)
    energy = np.genfromtxt(out / "energy.csv", delimiter=",", names=True)
    walls = np.genfromtxt(out / "walls.csv", delimiter=",", names=True)
    assert list(energy["step"]) == list(walls["step"]) == list(range(0, 801, 10))
    scene, model, state, _ = prepare(SCENE)
    sim = Simulation(model, state, "rrp2", scene.simulation["dt"])
    for k, step in enumerate(energy["step"]):
        sim.advance(int(step) - sim.state.step)
        budget = sim.energy_budget()
        assert [energy[name][k] for name in budget] == list(budget.values()), step
        wall = state.interactions["walls"]
        assert [walls[f"w0_{c}"][k] for c in ("x", "y", "z", "fx", "fy", "fz")] == [*wall.point[0], *wall.load[0, :3]]
    assert walls["w0_fx"].min() < 0.0 and energy["hertz_pw"].max() > 0.0  # the impact is in the rows


def _arrays_with(data, expected, count):
    """The arrays of ``data``, checked to hold ``expected`` (name -> components) with ``count``
    tuples each."""
    arrays = _arrays(data)
    for array_name, components in expected.items():
        assert arrays[array_name].GetNumberOfComponents() == components, array_name
        assert arrays[array_name].GetNumberOfTuples() == count
    return arrays


def test_snapshots_load_with_all_arrays(torus_run):
    for _, name in _collection(torus_run / "particles.pvd"):
        particles = _read(torus_run / name)
        assert particles.GetNumberOfPoints() == 80
        assert particles.GetNumberOfVerts() == 80
        arrays = _arrays_with(particles.GetPointData(), PARTICLE_ARRAYS, 80)
        orientation = vtk_to_numpy(arrays["orientation"])
        axes = np.stack([vtk_to_numpy(arrays[f"axis_{k}"]) for k in (1, 2, 3)], axis=-1)
        np.testing.assert_allclose(axes, quat_matrix(orientation), atol=1e-15)
        np.testing.assert_array_equal(vtk_to_numpy(arrays["id"]), np.arange(80))
    for _, name in _collection(torus_run / "bonds.pvd"):
        bonds = _read(torus_run / name)
        assert bonds.GetNumberOfPoints() == 80
        assert bonds.GetNumberOfLines() == 80
        _arrays_with(bonds.GetCellData(), BOND_ARRAYS, 80)
    for _, name in _collection(torus_run / "walls.pvd"):
        walls = _read(torus_run / name)
        assert walls.GetNumberOfPolys() == 1
        assert walls.GetNumberOfPoints() == 4
        assert "wall" in _arrays(walls.GetCellData())
        corners = vtk_to_numpy(walls.GetPoints().GetData())
        np.testing.assert_allclose(corners[:, 0], 0.0, atol=1e-15)  # in the plane x = 0


def test_initial_snapshot_is_the_rest_state(torus_run):
    particles = _arrays(_read(torus_run / "vtk/particles_000000000.vtp").GetPointData())
    np.testing.assert_array_equal(vtk_to_numpy(particles["velocity"]), np.tile([-1.0, 0.0, 0.0], (80, 1)))
    np.testing.assert_array_equal(vtk_to_numpy(particles["speed"]), 1.0)
    bonds = _arrays(_read(torus_run / "vtk/bonds_000000000.vtp").GetCellData())
    for name in ("axial_strain", "shear", "bending_angle", "axial_force"):
        assert np.max(np.abs(vtk_to_numpy(bonds[name]))) < 1e-12, name
    assert not np.any(vtk_to_numpy(bonds["broken"]))


def test_files_are_compressed_binary(torus_run):
    for path in (torus_run / "vtk").glob("*.vtp"):
        header = path.read_bytes()[:4096].decode("ascii", errors="replace")
        assert 'compressor="vtkLZ4DataCompressor"' in header
        assert 'format="appended"' in header or 'format="binary"' in header
        assert 'format="ascii"' not in header


def test_bond_measures_of_a_known_deformation(tmp_path):
    """Two bonded bodies: bond stretched by 10 %, body j turned by 0.3 rad about z."""
    system = SystemBuilder()
    system.add_body((0.0, 0.0, 0.0), mass=1.0, inertia=1.0, diameter=1.0)
    system.add_body((-1.0, 0.0, 0.0), mass=1.0, inertia=1.0, diameter=1.0)
    system.add_bond(0, 1, k_axial=200.0, k_shear=50.0, k_bending=10.0)
    model, state = system.finish(walls=[dict(point=(0.0, 0.0, -2.0), normal=(0.0, 0.0, 1.0), size=0.0)])
    state.position[1] = (-1.1, 0.0, 0.0)
    state.orientation[1] = quat_from_rotvec_one(np.array((0.0, 0.0, 0.3)))
    state.orientation[0] = quat_from_rotvec_one(np.array((0.4, -0.2, 0.1)))
    state.step, state.time = 7, 0.07
    writer = VTKWriter(tmp_path, 1)
    sim = SimpleNamespace(model=model, state=state)
    writer.report(sim)
    writer.report(sim)  # the same step again: skipped
    writer.close(sim)
    assert [f for _, f in _collection(tmp_path / "bonds.pvd")] == ["vtk/bonds_000000007.vtp"]

    bonds = _arrays(_read(tmp_path / "vtk/bonds_000000007.vtp").GetCellData())
    assert vtk_to_numpy(bonds["axial_strain"])[0] == pytest.approx(0.1, rel=1e-12)
    assert vtk_to_numpy(bonds["axial_force"])[0] == pytest.approx(200.0 * 0.1 / 1.0, rel=1e-12)
    # relative rotation R_j R_iᵀ (rest: identity), shear from each end's turned rest direction
    r_i = quat_matrix_one(state.orientation[0])
    r_j = quat_matrix_one(state.orientation[1])
    angle = np.arccos(np.clip((np.trace(r_j @ r_i.T) - 1.0) / 2.0, -1.0, 1.0))
    assert vtk_to_numpy(bonds["bending_angle"])[0] == pytest.approx(angle, rel=1e-10)
    n = np.array((1.0, 0.0, 0.0))
    shear = max(1.0 - (r_i @ n) @ n, 1.0 - (r_j @ n) @ n)
    assert vtk_to_numpy(bonds["shear"])[0] == pytest.approx(shear, rel=1e-12)

    particles = _arrays(_read(tmp_path / "vtk/particles_000000007.vtp").GetPointData())
    for k in (1, 2, 3):
        axis = vtk_to_numpy(particles[f"axis_{k}"])
        np.testing.assert_allclose(axis[0], r_i[:, k - 1], atol=1e-15)
        np.testing.assert_allclose(axis[1], r_j[:, k - 1], atol=1e-15)

    walls = _read(tmp_path / "vtk/walls_000000007.vtp")
    corners = vtk_to_numpy(walls.GetPoints().GetData())
    np.testing.assert_allclose(corners[:, 2], -2.0)
    np.testing.assert_allclose(corners.mean(axis=0), (-0.55, 0.0, -2.0), atol=1e-15)
    edge = np.linalg.norm(corners[1] - corners[0])
    assert edge == pytest.approx(1.2 * 2.1)  # spheres span x ∈ [-1.6, 0.5]
    normal = np.cross(corners[1] - corners[0], corners[2] - corners[1])
    np.testing.assert_allclose(normal / np.linalg.norm(normal), (0.0, 0.0, 1.0), atol=1e-15)


def test_rigid_cluster_sites(tmp_path):
    """Tetrahedra (four equal point masses): six edges per body of the builder's lengths at every
    snapshot, the sites' centroid at the body's centre of mass, site velocity v + Ω × arm."""
    first, second = np.triu_indices(4, 1)
    lengths = np.linalg.norm(TETRAHEDRON[first] - TETRAHEDRON[second], axis=1)  # edge a = 1
    run(SCENES / "tetra_chain.toml", overrides=["simulation.t_end=0.2", "output.vtk_every=100",
                                                "tetra_chain.0.n_bodies=3"], out=tmp_path, quiet=True)
    entries = _collection(tmp_path / "sites.pvd")
    assert [f for _, f in entries] == [f"vtk/sites_{step:09d}.vtp" for step in (0, 100, 200)]
    for _, name in entries:
        sites = _read(tmp_path / name)
        particles = _read(tmp_path / name.replace("sites", "particles"))
        body = _arrays(particles.GetPointData())
        centre = vtk_to_numpy(particles.GetPoints().GetData())
        velocity = vtk_to_numpy(body["velocity"])
        omega = vtk_to_numpy(body["angular_velocity"])
        assert sites.GetNumberOfPoints() == 12 and sites.GetNumberOfVerts() == 12
        assert sites.GetNumberOfLines() == 3 * 6
        point = _arrays(sites.GetPointData())
        owner = vtk_to_numpy(point["id"])
        np.testing.assert_array_equal(owner, np.repeat(np.arange(3), 4))
        np.testing.assert_array_equal(vtk_to_numpy(point["site"]), np.tile(np.arange(4), 3))
        np.testing.assert_array_equal(vtk_to_numpy(point["body"]), 0)
        x = vtk_to_numpy(sites.GetPoints().GetData())
        np.testing.assert_allclose(x.reshape(3, 4, 3).mean(axis=1), centre, atol=1e-12)
        arm = x - centre[owner]
        np.testing.assert_allclose(vtk_to_numpy(point["velocity"]), velocity[owner] + np.cross(omega[owner], arm),
                                   atol=1e-12)
        lines = vtk_to_numpy(sites.GetLines().GetConnectivityArray()).reshape(-1, 2)
        assert np.all(owner[lines[:, 0]] == owner[lines[:, 1]])
        np.testing.assert_allclose(np.linalg.norm(x[lines[:, 0]] - x[lines[:, 1]], axis=1), np.tile(lengths, 3),
                                   rtol=1e-12)
        np.testing.assert_array_equal(vtk_to_numpy(_arrays(sites.GetCellData())["id"]),
                                      np.concatenate((owner, np.repeat(np.arange(3), 6))))
    assert not (tmp_path / "bonds.pvd").exists()


def test_center_of_mass_of_a_pendulum(tmp_path):
    """The pendulum's point is its pivot; ``center_of_mass`` is the bob, at |Rρ| = 1 from it."""
    run(SCENES / "pendulum.toml", overrides=["simulation.t_end=0.5", "output.vtk_every=10"], out=tmp_path,
        quiet=True)
    for _, name in _collection(tmp_path / "particles.pvd"):
        particles = _read(tmp_path / name)
        pivot = vtk_to_numpy(particles.GetPoints().GetData())[0]
        arrays = _arrays(particles.GetPointData())
        bob = vtk_to_numpy(arrays["center_of_mass"])[0]
        np.testing.assert_allclose(pivot, 0.0, atol=0.0)
        assert np.linalg.norm(bob - pivot) == pytest.approx(1.0, rel=1e-12)
        np.testing.assert_allclose(bob, vtk_to_numpy(arrays["axis_3"])[0], atol=1e-15)  # ρ = (0, 0, 1)
    assert not (tmp_path / "sites.pvd").exists()


def test_a_fresh_run_replaces_the_previous_snapshots(tmp_path):
    system = SystemBuilder()
    system.add_body((0.0, 0.0, 0.0), mass=1.0, inertia=1.0, diameter=1.0)
    model, state = system.finish()
    sim = SimpleNamespace(model=model, state=state)
    first = VTKWriter(tmp_path, 1)
    for step in (0, 1, 2):
        state.step, state.time = step, 0.1 * step
        first.report(sim)
    first.close(sim)
    assert len(_collection(tmp_path / "particles.pvd")) == 3
    assert not (tmp_path / "bonds.pvd").exists()
    assert not (tmp_path / "walls.pvd").exists()
    # a restart at step 2 keeps steps 0 and 1
    restart = VTKWriter(tmp_path, 1)
    state.step, state.time = 2, 0.2
    restart.report(sim)
    restart.close(sim)
    assert [t for t, _ in _collection(tmp_path / "particles.pvd")] == pytest.approx([0.0, 0.1, 0.2])
    # a new run from step 0 starts over
    again = VTKWriter(tmp_path, 1)
    state.step, state.time = 0, 0.0
    again.report(sim)
    again.close(sim)
    assert [f for _, f in _collection(tmp_path / "particles.pvd")] == ["vtk/particles_000000000.vtp"]
    assert sorted(p.name for p in (tmp_path / "vtk").iterdir()) == ["particles_000000000.vtp"]


def test_plot_energy_writes_a_png(torus_run, tmp_path):
    out = plot_energy(torus_run)
    assert out == torus_run / "energy.png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    other = plot_energy(torus_run, tmp_path / "sub" / "budget.png")
    assert other.is_file() and other.stat().st_size > 10_000


def test_the_plotted_budget_holds_every_energy_column_of_the_total():
    """Friction's booked work and springs and a moving wall's work are part of ``total``: the
    budget panel stacks the non-negative ones and draws the signed ones, so that what it shows
    adds up to ``total`` (a frictional heap's largest booked term is ``friction``)."""
    t = np.linspace(0.0, 1.0, 5)
    log = {"t": t, "kinetic_translational": 2.0 - 0.4 * t, "gravity": -t, "friction": t, "tangential": 0.5 * t,
           "walls": -0.1 * t, "twisting": 0.0 * t, "dissipated": 0.0 * t, "total": 2.0 + 0.0 * t}
    stacked, signed, zero = budget_components(log)
    assert [name for name, _ in stacked] == ["kinetic_translational", "tangential", "friction"]
    assert [name for name, _ in signed] == ["gravity", "walls"]
    assert set(zero) == {"dissipated", "twisting"}
    shown = sum(log[name] for name, _ in stacked + signed)
    assert np.allclose(shown, log["total"])


def test_plot_energy_units(torus_run, tmp_path):
    assert units_of(None) == dict.fromkeys(("time", "energy", "momentum", "angular momentum"), SCENE_UNITS)
    assert units_of("SI")["energy"] == "J"
    assert units_of({"time": "ms"}) == {"time": "ms", "energy": SCENE_UNITS, "momentum": SCENE_UNITS,
                                        "angular momentum": SCENE_UNITS}
    with pytest.raises(ValueError, match="unknown unit system"):
        units_of("imperial")
    with pytest.raises(ValueError, match="unknown quantities"):
        units_of({"length": "m"})
    assert plot_energy(torus_run, tmp_path / "si.png", units="SI").stat().st_size > 10_000

