"""The heap-slope measurement (`dem.repose`, ``python -m dem repose RUN``)."""

import numpy as np
import pytest

from dem.cli import main
from dem.repose import heap_slope


def cone(angle, base=15.0, spacing=0.5, seed=0, up=(0.0, 0.0, 1.0)):
    """Spheres of diameter ``spacing`` filling a cone of slope ``angle`` (degrees), jittered."""
    rng = np.random.default_rng(seed)
    axis = np.arange(-base, base + 1e-9, spacing)
    points = []
    for x in axis:
        for y in axis:
            top = (base - np.hypot(x, y)) * np.tan(np.radians(angle))
            points += [(x, y, z) for z in np.arange(0.5 * spacing, max(top, 0.0) + 0.5 * spacing, spacing)]
    points = np.array(points) + rng.uniform(-0.05, 0.05, (len(points), 3)) * spacing
    if up != (0.0, 0.0, 1.0):   # the same heap, turned so that its vertical is `up`
        z = np.asarray(up) / np.linalg.norm(up)
        x = np.cross(z, [0.0, 1.0, 0.0] if abs(z[1]) < 0.9 else [1.0, 0.0, 0.0])
        x /= np.linalg.norm(x)
        points = points @ np.stack([x, np.cross(z, x), z])
    return points, np.full(len(points), spacing)


@pytest.mark.parametrize("angle", [15.0, 25.0, 35.0])
def test_the_slope_of_a_cone(angle):
    position, diameter = cone(angle)
    slope = heap_slope(position, diameter)
    assert slope.angle == pytest.approx(angle, abs=1.5)
    # the highest sphere's top lies within one spacing (0.5) of the cone's apex, jitter aside
    assert slope.height == pytest.approx(15.0 * np.tan(np.radians(angle)), abs=0.55)
    assert slope.rings >= 5


def test_any_vertical():
    position, diameter = cone(25.0, up=(1.0, 1.0, 0.0))
    assert heap_slope(position, diameter, up=(1.0, 1.0, 0.0)).angle == pytest.approx(25.0, abs=1.5)


def test_a_layer_spread_flat_has_no_slope():
    rng = np.random.default_rng(1)
    position = np.column_stack([rng.uniform(-20, 20, (1500, 2)), 0.5 + rng.uniform(0, 0.05, 1500)])
    assert heap_slope(position, np.ones(1500)).angle < 1.0


def test_command_line(tmp_path, capsys):
    scene = tmp_path / "heap.toml"
    rows = "\n".join(f"{x:.6g},{y:.6g},{z:.6g},0.5" for x, y, z in cone(30.0, base=5.0)[0])
    (tmp_path / "heap.csv").write_text("x,y,z,diameter\n" + rows + "\n", encoding="utf-8")
    scene.write_text('[simulation]\ndt = 1e-3\nt_end = 2e-3\n[fields]\ngravity = [0.0, -1.0, 0.0]\n'
                     '[[particles]]\nfile = "heap.csv"\nshift = [0.0, 0.0, 0.0]\noverlap_tolerance = 0.2\n', encoding="utf-8")
    # the vertical comes from the run's gravity (−y here), unless --up says otherwise
    assert main([str(scene), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["repose", str(tmp_path / "run"), "--up", "0,0,1", "--profile"]) == 0
    out = capsys.readouterr().out
    assert "slope angle" in out and "rho,surface_height" in out
    angle = float(out.split("slope angle ")[1].split("°")[0])
    assert angle == pytest.approx(30.0, abs=2.0)
    assert main(["repose", str(tmp_path / "run")]) == 0   # measured along y: no heap that way
    assert float(capsys.readouterr().out.split("slope angle ")[1].split("°")[0]) != pytest.approx(30.0, abs=5.0)


@pytest.mark.parametrize("arguments, message", [
    (["repose", "nowhere"], "no particles.pvd with snapshots"),
    (["repose", ".", "--up", "0,0"], "--up 0,0: expected three numbers"),
])
def test_bad_command_line(tmp_path, monkeypatch, capsys, arguments, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vtk").mkdir()
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
