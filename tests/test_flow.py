"""Silo discharge (`dem.flow`) on synthetic run folders, no simulation: the steady rate of a
discharge with a start-up and an end read back exactly, a rate that falls with the fill seen in
the ratio of the window's halves, the fill height of known beds, a rate that does or does not
depend on the fill above one silo width told apart, Beverloo's C and k recovered from exact and
noisy rates, bad folders refused in one line, and ``python -m dem flow`` on a sweep folder
(orifices and silo width from the runs' checkpoints) and on runs whose orifice is unknown."""

import csv
from dataclasses import replace

import numpy as np
import pytest
from vtkmodules.util import numpy_support
from vtkmodules.vtkCommonCore import vtkPoints
from vtkmodules.vtkCommonDataModel import vtkPolyData
from vtkmodules.vtkIOXML import vtkXMLPolyDataWriter

from dem.cli import main
from dem.flow import Discharge, beverloo_rate, fill_heights, fill_verdict, fit_beverloo, steady_discharge
from dem.runfiles import RunFolderError

PARTICLE_MASS = 0.01
SCENE = """[simulation]
dt = 1e-4
t_end = 10.0

[fields]
gravity = [0.0, 0.0, -9.81]

[[mesh]]
file = "meshes/orifice_plate.stl"
scale = 1.0

[[walls]]
point = [-8.0, 0.0, 0.0]
normal = [1.0, 0.0, 0.0]

[[walls]]
point = [8.0, 0.0, 0.0]
normal = [-1.0, 0.0, 0.0]

[[walls]]
point = [0.0, -6.0, 0.0]
normal = [0.0, 1.0, 0.0]

[[walls]]
point = [0.0, 6.0, 0.0]
normal = [0.0, -1.0, 0.0]
"""


def discharge_mass(t, rate, t_open=1.0, ramp=1.0, steady=6.0):
    """A discharge opened at ``t_open``: a start-up ramp ``rate τ²/2ramp``, the steady
    ``rate`` for ``steady``, an end ramp back to zero rate, then nothing."""
    tau = np.clip(t - t_open, 0.0, None)
    start = rate * np.minimum(tau, ramp) ** 2 / (2.0 * ramp)
    middle = rate * np.clip(tau - ramp, 0.0, steady)
    u = np.clip(tau - ramp - steady, 0.0, ramp)
    return start + middle + rate * (u - u ** 2 / (2.0 * ramp))


def write_flow(folder, t, mass, sources=True):
    """``folder/flow.csv`` of one source (its 3000 particles inserted by t = 0.5) and one outlet."""
    folder.mkdir(parents=True, exist_ok=True)
    removed = np.floor(mass / PARTICLE_MASS + 1e-9).astype(int)
    rate = np.concatenate([[0.0], np.diff(mass) / np.diff(t)])
    header = ["step", "t"] + (["inserted_0", "waiting_0"] if sources else []) + ["removed_0", "mass_0", "rate_0"]
    with open(folder / "flow.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        for step, row in enumerate(zip(t, removed, mass, rate)):
            inserted = [int(3000 * min(row[0] / 0.5, 1.0)), 0] if sources else []
            writer.writerow([step * 100, repr(float(row[0]))] + inserted + [row[1], repr(float(row[2])),
                                                                            repr(float(row[3]))])


def write_snapshots(folder, diameter=1.0, density=2.0, n=50, beds=None):
    """``particles.pvd`` with a snapshot of ``n`` spheres and a last one of none (the silo empty),
    or of ``beds``: ``[(t, positions, diameters)]``."""
    (folder / "vtk").mkdir(parents=True, exist_ok=True)
    if beds is None:
        beds = [(0.0, np.arange(3.0 * n).reshape(-1, 3), np.full(n, diameter)), (10.0, np.zeros((0, 3)), np.zeros(0))]
    entries = []
    for t, position, diameters in beds:
        step = int(round(t / 1e-4))
        count = len(position)
        poly = vtkPolyData()
        points = vtkPoints()
        points.SetData(numpy_support.numpy_to_vtk(np.asarray(position, float), deep=True))
        poly.SetPoints(points)
        for name, values in (("velocity", np.zeros((count, 3))), ("mass", density * np.pi / 6.0 * diameters ** 3),
                             ("diameter", np.asarray(diameters, float))):
            array = numpy_support.numpy_to_vtk(values, deep=True)
            array.SetName(name)
            poly.GetPointData().AddArray(array)
        name = f"vtk/particles_{step:09d}.vtp"
        writer = vtkXMLPolyDataWriter()
        writer.SetFileName(str(folder / name))
        writer.SetInputData(poly)
        writer.Write()
        entries.append(f'<DataSet timestep="{step * 1e-4!r}" group="" part="0" file="{name}"/>')
    (folder / "particles.pvd").write_text('<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1">\n'
                                          '<Collection>\n' + "\n".join(entries) + '\n</Collection>\n</VTKFile>\n')


def bed(height, half_widths=(8.0, 6.0), level=0.0, jitter=0.0, seed=0):
    """Unit spheres (diameters 0.9–1.1 with ``jitter``) on a square lattice of spacing 1 filling
    the box ``|x|, |y| < half_widths`` above the plate at ``level`` up to ``height`` above it: the
    highest layer's tops at ``level + height`` (without jitter); the lattice goes on a few layers
    below the plate (grains in the orifice, not the bed). ``(positions, diameters)``."""
    rng = np.random.default_rng(seed)
    x, y = (np.arange(-w + 0.5, w) for w in half_widths)
    z = level + height - 0.5 - np.arange(int(np.ceil(height)) + 3)
    position = np.stack(np.meshgrid(x, y, z, indexing="ij"), axis=-1).reshape(-1, 3)
    position += rng.uniform(-jitter, jitter, position.shape)
    return position, 1.0 + rng.uniform(-jitter, jitter, len(position))


def write_checkpoint(folder, overrides):
    """The part of a ``checkpoint.npz`` that `dem.flow` reads: the scene and its overrides."""
    np.savez(folder / "checkpoint.npz", scene_text=SCENE, scene_path="scenes/silo.toml",
             overrides=np.array(overrides, dtype=str))


T = np.linspace(0.0, 10.0, 201)


def test_the_steady_rate_of_a_discharge_with_a_start_and_an_end_is_read_back_exactly(tmp_path):
    write_flow(tmp_path, T, discharge_mass(T, 3.7))
    discharge = steady_discharge(tmp_path)
    assert discharge.rate == pytest.approx(3.7, rel=1e-9, abs=0.0)
    assert discharge.r_squared == pytest.approx(1.0, abs=1e-12) and discharge.rate_error < 1e-9
    assert discharge.half_ratio == pytest.approx(1.0, rel=1e-9)
    assert discharge.t_from == pytest.approx(2.9, abs=0.06) and discharge.t_to == pytest.approx(7.1, abs=0.06)
    assert discharge.t_first_removal == pytest.approx(1.1)  # the first row with a particle out
    assert discharge.removed == int(7.0 * 3.7 / PARTICLE_MASS + 1e-6) and discharge.removed_mass == pytest.approx(25.9)
    assert discharge.orifice_diameter is None and discharge.fill_from is None  # (no plate level given)


def test_a_rate_that_falls_as_the_silo_empties_shows_in_the_halves(tmp_path):
    write_flow(tmp_path, T, 20.0 * (1.0 - np.exp(-T / 3.0)))  # a leaking tank, not a silo
    discharge = steady_discharge(tmp_path)
    assert discharge.half_ratio < 0.8 and discharge.r_squared < 0.999


def test_the_fill_height_of_a_bed_is_its_top_above_the_plate():
    """A bed of 16 × 12 columns of spheres up to 10.0 above a plate at z = 2: its height to
    round-off; jittered by 0.1 (and sizes 0.9–1.1), with grains flying above it and a shallow
    crater over the orifice, within a particle diameter; an empty silo: 0."""
    exact = bed(10.0, level=2.0)
    assert fill_heights([dict(position=exact[0], diameter=exact[1])], 2.0)[0] == pytest.approx(10.0, abs=1e-12)
    position, diameter = bed(10.0, level=2.0, jitter=0.1, seed=4)
    crater = np.hypot(position[:, 0], position[:, 1]) < 2.5
    position[crater, 2] -= 2.0  # (a cylinder of the bed sunk by two layers, a fifth of the cross-section)
    flying = np.array([[-6.0, -4.0, 25.0], [5.0, 0.0, 30.0], [0.5, 4.5, 19.0]])
    snapshots = [dict(position=np.concatenate((position, flying)), diameter=np.concatenate((diameter, np.ones(3)))),
                 dict(position=np.zeros((0, 3)), diameter=np.zeros(0))]
    full, empty = fill_heights(snapshots, 2.0)
    assert abs(full - 10.0) < 1.0 and empty == 0.0


def discharge_beds(folder, t, mass, height, width_cuts=None):
    """``flow.csv`` of ``mass(t)`` and snapshots every 0.5 of beds whose height is ``height(t)``."""
    write_flow(folder, t, mass)
    times = np.arange(0.0, 10.01, 0.5)
    write_snapshots(folder, beds=[(time, *bed(height(time))) for time in times])
    return times


def test_the_fill_heights_and_whether_the_rate_depends_on_them(tmp_path):
    """A silo 12 wide whose bed sinks from 20 to 5 in proportion to the mass out, at a steady
    rate: the fill heights at the steady window's ends are the beds' and the rate does not depend
    on the fill above one width (the windows with a fill of 12 or more). A tank that leaks at a
    rate proportional to its fill (height 25 e^(−t/3)): the rate changes over the fill above one
    width as the fill does, and the verdict says that it depends on it."""
    def height(time):
        return 20.0 - 15.0 * discharge_mass(np.asarray(time), 3.7) / 25.9

    discharge_beds(tmp_path / "silo", T, discharge_mass(T, 3.7), height)
    steady = steady_discharge(tmp_path / "silo", level=0.0, width=12.0)
    assert steady.fill_from == pytest.approx(height(steady.t_from), abs=1e-9)
    assert steady.fill_to == pytest.approx(height(steady.t_to), abs=1e-9)
    assert steady.fill_from > 12.0 > steady.fill_to
    assert all(fill >= 12.0 for _, _, fill, _ in steady.windows[:steady.above_windows])
    assert steady.above_windows >= 3 and abs(steady.above_change) < 1e-6
    assert [rate for _, _, _, rate in steady.windows] == pytest.approx([3.7] * len(steady.windows), rel=1e-9)
    assert "does not depend on the fill" in fill_verdict(steady)

    discharge_beds(tmp_path / "tank", T, 20.0 * (1.0 - np.exp(-T / 3.0)), lambda time: 25.0 * np.exp(-time / 3.0))
    leaking = steady_discharge(tmp_path / "tank", level=0.0, width=12.0)
    fills = np.array([fill for _, _, fill, _ in leaking.windows if fill >= 12.0])
    assert leaking.above_windows == len(fills) >= 3  # a rate proportional to the fill: changes as the fill does
    assert leaking.above_change == pytest.approx((fills.max() - fills.min()) / fills.mean(), rel=0.05)
    assert leaking.above_change > 10.0 * leaking.above_change_error
    assert "the rate depends on the fill" in fill_verdict(leaking)


@pytest.mark.parametrize("change, error, verdict", [
    (0.01, 0.015, "does not depend on the fill"),   # 1 % + 2 × 1.5 % within 5 %
    (0.04, 0.01, "the data do not tell"),           # within 5 %, but not with two standard errors added
    (0.08, 0.05, "the data do not tell"),           # beyond 5 %, but within two standard errors of 0
    (-0.2, 0.05, "the rate depends on the fill"),   # beyond both
])
def test_the_verdict_on_the_fill_weighs_the_change_against_5_percent_and_its_error(change, error, verdict):
    windows = [(30.0 + k, 31.0 + k, 24.0 - k, 5.0) for k in range(4)]
    discharge = Discharge(run="silo", outlet=0, orifice_diameter=5.0, rate=5.0, rate_error=0.1, r_squared=0.99,
                          intercept=0.0, t_first_removal=25.0, t_from=30.0, t_to=34.0, rows=20, half_ratio=1.0,
                          removed=100, removed_mass=50.0, fill_from=24.0, fill_to=20.0, silo_width=16.0,
                          above_windows=4, above_change=change, above_change_error=error,
                          fill=(np.array([30.0, 34.0]), np.array([24.0, 20.0])), windows=windows)
    line = fill_verdict(discharge)
    assert verdict in line and "H = 24 to 21 (19% of L)" in line
    assert fill_verdict(replace(discharge, silo_width=None)) is None


def test_beverloo_c_and_k_are_recovered():
    d, bulk, g = 0.8, 1.5, 9.81
    diameters = np.array([4.0, 5.0, 6.5, 8.0, 10.0])
    exact = fit_beverloo(diameters, beverloo_rate(diameters, 0.58, 1.4, d, bulk, g), d, bulk, g)
    assert (exact.c, exact.k) == pytest.approx((0.58, 1.4), rel=1e-9)
    assert exact.r_squared == pytest.approx(1.0, abs=1e-12) and exact.c_error < 1e-9 and exact.k_error < 1e-9
    noise = 1.0 + 0.01 * np.random.default_rng(3).standard_normal((200, len(diameters)))
    fits = [fit_beverloo(diameters, beverloo_rate(diameters, 0.58, 1.4, d, bulk, g) * f, d, bulk, g) for f in noise]
    c, k = np.array([f.c for f in fits]), np.array([f.k for f in fits])
    assert abs(c.mean() - 0.58) < 0.01 and abs(k.mean() - 1.4) < 0.1
    # the propagated standard errors are those of the scatter over noisy samples
    assert np.median([f.c_error for f in fits]) == pytest.approx(c.std(), rel=0.3)
    assert np.median([f.k_error for f in fits]) == pytest.approx(k.std(), rel=0.3)
    with pytest.raises(ValueError, match="three distinct"):
        fit_beverloo([4.0, 4.0, 5.0], [1.0, 1.1, 2.0], d, bulk, g)


def no_outlet(folder):
    folder.mkdir()
    (folder / "flow.csv").write_text("step,t,inserted_0,waiting_0\n0,0.0,0,0\n100,0.1,10,0\n")


@pytest.mark.parametrize("make, problem", [
    (lambda folder: folder.mkdir(), "flow.csv: no such file"),
    (no_outlet, "no column mass_0"),
    (lambda folder: write_flow(folder, T, 0.0 * T), "nothing left through outlet 0"),
    (lambda folder: write_flow(folder, T[::40], discharge_mass(T[::40], 1.0)), "fewer than 5 rows"),
], ids=["no flow.csv", "no outlet", "nothing removed", "too few rows"])
def test_a_bad_folder_is_one_line(tmp_path, capsys, make, problem):
    make(tmp_path / "run")
    with pytest.raises(RunFolderError, match=problem) as error:
        steady_discharge(tmp_path / "run")
    assert "\n" not in str(error.value) and "flow.csv" in str(error.value)
    assert main(["flow", str(tmp_path / "run")]) == 2
    message = capsys.readouterr().err
    assert message.startswith("dem: error: ") and problem in message and message.count("\n") == 1


def test_the_command_on_a_sweep_fits_beverloo(tmp_path, capsys):
    c, k, d, density, g = 0.6, 1.5, 1.0, 2.0, 9.81
    sweep = tmp_path / "silo_sweep"
    scales = [2.5, 3.0, 4.0, 5.0]
    for scale in scales:
        folder = sweep / f"scale_{scale}"
        rate = float(beverloo_rate(2.0 * scale, c, k, d, 0.6 * density, g))
        write_flow(folder, T, discharge_mass(T, rate))
        write_snapshots(folder, d, density)
        write_checkpoint(folder, [f"mesh.0.scale={scale}"])
    (sweep / "failed").mkdir()  # a point that wrote nothing: left out
    (sweep / "sweep.csv").write_text("mesh.0.scale,folder,status\n" + "".join(
        f"{s},scale_{s},ok\n" for s in scales) + "6.0,failed,error\n")
    assert main(["flow", str(sweep)]) == 0
    out = capsys.readouterr().out
    assert "C = 0.600 ± 0.000" in out and "k = 1.50 ± 0.00" in out and "Beverloo et al. 1961" in out
    with open(sweep / "discharge.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [float(row["orifice_diameter"]) for row in rows] == [2.0 * s for s in scales]
    assert [float(row["rate"]) for row in rows] == pytest.approx(
        beverloo_rate(2.0 * np.array(scales), c, k, d, 0.6 * density, g), rel=1e-9)
    assert all(int(row["removed"]) > 0 and float(row["half_ratio"]) == pytest.approx(1.0) for row in rows)
    assert all(float(row["silo_width"]) == 12.0 for row in rows)  # (the walls' gap along y)
    for name in ("discharge.png", "beverloo.png"):
        assert (sweep / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["flow", str(sweep), "--bulk-density", str(2.0 * 0.6 * density), "--out", str(tmp_path / "half")]) == 0
    assert "C = 0.300" in capsys.readouterr().out  # twice the bulk density: half of C


def test_runs_of_unknown_orifice_are_measured_without_a_fit(tmp_path, capsys):
    runs = [tmp_path / name for name in ("a", "b", "c")]
    for rate, run in zip((1.0, 2.0, 3.0), runs):
        write_flow(run, T, discharge_mass(T, rate), sources=False)
    assert main(["flow", *map(str, runs), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "Beverloo fit skipped" in out and out.count("orifice diameter unknown") == 3
    with open(tmp_path / "out" / "discharge.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [row["orifice_diameter"] for row in rows] == ["", "", ""] and rows[0]["fill_from"] == ""
    assert out.count("fill height unknown") == 3
    assert (tmp_path / "out" / "discharge.png").is_file() and not (tmp_path / "out" / "beverloo.png").exists()
