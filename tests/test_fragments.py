"""Fragments (`dem.fragments`, ``python -m dem fragments RUN``): connected components of intact
bonds, counted exactly on constructed systems (two bonded clusters, a cluster split by a broken
bond, a lone particle), the CSV and the plot, the ``fragment`` point array of the snapshots, the
snapshot chosen by ``--time``, a run that breaks, and bad input."""

from types import SimpleNamespace

import numpy as np
import pytest

from dem import SystemBuilder
from dem.cli import main
from dem.fragments import COLUMNS
from dem.interactions.bonds import fragment_labels
from dem.observers.vtk import VTKWriter
from dem.runfiles import read_snapshot
from dem.runner import run

#: particles 0–3: a three-spring chain; 4–6: a parallel-bonded triangle; 7–10: a three-spring chain
#: whose middle bond 8–9 breaks; 11: alone
SEED_BONDS = [(0, 1), (1, 2), (2, 3), (7, 8), (8, 9), (9, 10)]
PARALLEL_BONDS = [(4, 5), (5, 6), (6, 4)]
INTACT_FRAGMENTS = [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9, 10], [11]]
BROKEN_FRAGMENTS = [[0, 1, 2, 3], [4, 5, 6], [7, 8], [9, 10], [11]]


def test_fragment_labels_on_constructed_graphs():
    i, j = np.array([0, 1, 2, 4, 5, 6, 7, 8, 9]), np.array([1, 2, 3, 5, 6, 4, 8, 9, 10])
    intact = np.ones(9, bool)
    assert list(fragment_labels(12, i, j, intact)) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3]
    intact[7] = False   # 8–9
    assert list(fragment_labels(12, i, j, intact)) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4]
    intact[5] = False   # 6–4: the triangle stays one piece
    assert list(fragment_labels(12, i, j, intact)) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4]
    assert list(fragment_labels(3, [2], [1], [True])) == [0, 1, 1]   # numbered by smallest particle
    assert list(fragment_labels(3, [], [], [])) == [0, 1, 2]


def system():
    rng = np.random.default_rng(7)
    builder = SystemBuilder()
    for k in range(12):
        builder.add_body(rng.normal(size=3) + [3.0 * (k // 4), 0, 0], mass=1.0 + k, inertia=0.1, diameter=0.5,
                         velocity=rng.normal(size=3))
    for i, j in SEED_BONDS:
        builder.add_bond(i, j, k_axial=10.0)
    for i, j in PARALLEL_BONDS:
        builder.add_bond(i, j, law="parallel_bond", modulus=1.0, shear_modulus=1.0, radius=0.2,
                         tensile_strength=0.0, shear_strength=0.0)
    return builder.finish()


def snapshots(folder):
    """Two snapshots: every bond intact at t = 0, bond 8–9 broken at t = 1."""
    model, state = system()
    sim = SimpleNamespace(model=model, state=state)
    writer = VTKWriter(folder, every=1)
    writer.report(sim)
    bonds = model.bonds
    seed = bonds.block("three_spring")
    index = next(b for b in range(seed.start, seed.stop) if {bonds.i[b], bonds.j[b]} == {8, 9})
    state.interactions["binder"].broken[index - seed.start] = 1
    state.step, state.time = 10, 1.0
    writer.report(sim)
    writer.close(sim)
    return model, state


def expected_rows(fragments, model, state):
    rows = []
    for k, members in enumerate(fragments):
        mass = model.mass[members]
        rows.append([k, len(members), mass.sum(), *(mass @ state.position[members] / mass.sum()),
                     *(mass @ state.velocity[members] / mass.sum())])
    return np.array(rows)


@pytest.mark.parametrize("time, fragments", [(None, BROKEN_FRAGMENTS), (0.2, INTACT_FRAGMENTS),
                                             (0.9, BROKEN_FRAGMENTS)])
def test_fragments_command_counts_sizes_masses_centres_velocities(tmp_path, capsys, time, fragments):
    model, state = snapshots(tmp_path)
    arguments = ["fragments", str(tmp_path)] + ([] if time is None else ["--time", str(time)])
    assert main(arguments) == 0
    shown_time = 0 if time == 0.2 else 1
    assert capsys.readouterr().out.startswith(f"{len(fragments)} fragments at t = {shown_time} (step "
                                              f"{10 * shown_time}): ")
    table = np.genfromtxt(tmp_path / "fragments.csv", delimiter=",", names=True)
    assert table.dtype.names == COLUMNS
    assert list(table["particles"]) == [len(f) for f in fragments]
    assert list(table["mass"]) == [float(sum(1 + k for k in f)) for f in fragments]   # exact
    rows = np.array([list(row) for row in table])
    assert np.allclose(rows, expected_rows(fragments, model, state), rtol=1e-14, atol=1e-14)
    assert (tmp_path / "fragments.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_snapshots_carry_the_fragment_ids(tmp_path):
    snapshots(tmp_path)
    from vtkmodules.util import numpy_support
    from vtkmodules.vtkIOXML import vtkXMLPolyDataReader

    for name, fragments in (("particles_000000000.vtp", INTACT_FRAGMENTS),
                            ("particles_000000010.vtp", BROKEN_FRAGMENTS)):
        reader = vtkXMLPolyDataReader()
        reader.SetFileName(str(tmp_path / "vtk" / name))
        reader.Update()
        ids = numpy_support.vtk_to_numpy(reader.GetOutput().GetPointData().GetArray("fragment"))
        assert list(ids) == [k for k, members in enumerate(fragments) for _ in members]
    snapshot = read_snapshot(tmp_path, 0.0)
    assert snapshot["step"] == 0 and len(snapshot["bonds"]) == 9 and not snapshot["broken"].any()


def test_a_run_whose_chain_breaks(tmp_path):
    """A chain of three parallel-bonded spheres, the first held, pulled at the last harder than its
    bond holds: the last bond breaks, two fragments fly apart."""
    scene = tmp_path / "pull.toml"
    scene.write_text("""
[simulation]
dt = 1e-4
t_end = 0.05

[output]
vtk_every = 100

[[chain]]
n_particles = 3
particle_diameter = 1.0
end_force = [50.0, 0.0, 0.0]
binder = "parallel_bond"
binder_modulus = 1e4
binder_shear_modulus = 4e3
binder_tensile_strength = 30.0
""")
    sim, out = run(scene, out=tmp_path / "run", quiet=True)
    assert main(["fragments", str(out)]) == 0
    table = np.genfromtxt(out / "fragments.csv", delimiter=",", names=True)
    assert list(table["particles"]) == [2, 1]
    assert table["velocity_x"][1] > 0.5 and abs(table["velocity_x"][0]) < 0.1


def test_a_folder_without_snapshots_is_one_line(tmp_path, capsys):
    assert main(["fragments", str(tmp_path / "nowhere")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("dem: error: ") and "no particles.pvd" in error and error.count("\n") == 1
    assert not (tmp_path / "nowhere").exists()
