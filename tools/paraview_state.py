"""Render a `dem` run with ParaView and save a picture (docs/guide.md, "ParaView").

    pvpython tools/paraview_state.py RUN_DIR [--out PNG] [--time T] [--view xy|xz|yz|iso]
                                             [--size W H] [--grey-bonds] [--show-broken]
    pvpython --force-offscreen-rendering tools/paraview_state.py RUN_DIR      (no display)

Opens ``RUN_DIR/particles.pvd``, ``bonds.pvd`` and ``walls.pvd`` (those present), draws each
particle as a sphere of its own diameter (Glyph filter, sphere glyphs scaled by the point array
``diameter`` with scale factor 1) coloured by ``speed``, the intact bonds as lines coloured by
``axial_strain`` (or grey; broken ones hidden by a Threshold on ``broken`` unless
``--show-broken``), the walls as semi-transparent squares; fits the camera to the scene, goes to
the last snapshot (or the one nearest ``--time``) and saves ``RUN_DIR/paraview.png`` (or
``--out``). Uses only the ``paraview.simple`` API of ParaView >= 5.10; run it with ``pvpython``
(plain ``python`` has no ParaView and stops with a message). The same pipeline, built by hand in
the ParaView GUI, is described in docs/guide.md.
"""

import argparse
import sys
from pathlib import Path

try:
    from paraview.simple import *  # noqa: F401,F403  (pvpython's scripting API)

    PARAVIEW_MISSING = None
except ImportError as error:  # plain python: say how to run it instead of a traceback
    PARAVIEW_MISSING = error

NEEDS_PVPYTHON = ("paraview_state.py: error: paraview.simple is not importable here: run this with pvpython "
                  "from ParaView ≥ 5.10, e.g.\n    pvpython tools/paraview_state.py output/torus_impact\n"
                  "(pvpython is in ParaView's bin/ folder; add --force-offscreen-rendering without a display)")

SERIES = ("particles", "bonds", "walls")
#: camera direction (from the focal point to the camera) and view-up of each --view
VIEWS = {
    "xy": ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0)),
    "xz": ((0.0, -1.0, 0.0), (0.0, 0.0, 1.0)),
    "yz": ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "iso": ((1.0, -1.0, 0.8), (0.0, 0.0, 1.0)),
}


def _parser():
    parser = argparse.ArgumentParser(
        prog="pvpython tools/paraview_state.py",
        description="Render a dem run (particles.pvd, bonds.pvd, walls.pvd) with ParaView and save a PNG.",
    )
    parser.add_argument("run_dir", type=Path, help="output folder of a run (holds particles.pvd)")
    parser.add_argument("--out", type=Path, help="image to write (default RUN_DIR/paraview.png)")
    parser.add_argument("--time", type=float, help="simulation time to show (nearest snapshot; default: the last)")
    parser.add_argument("--view", choices=tuple(VIEWS), default="xy",
                        help="look down z (xy, default), along y (xz), along x (yz), or obliquely (iso)")
    parser.add_argument("--size", type=int, nargs=2, default=(1600, 1000), metavar=("W", "H"),
                        help="image size in pixels (default 1600 1000)")
    parser.add_argument("--grey-bonds", action="store_true", help="draw bonds grey instead of by axial_strain")
    parser.add_argument("--show-broken", action="store_true",
                        help="draw broken bonds too (coloured by 'broken') instead of hiding them")
    return parser


def _values(prop):
    """A ParaView vector property as a list (a one-element property reads as a bare number)."""
    try:
        return [float(v) for v in prop]
    except TypeError:
        return [float(prop)]


def _array_range(source, association, name):
    """``(min, max)`` of a point or cell array of ``source`` at the current time, or None."""
    arrays = source.PointData if association == "POINTS" else source.CellData
    if name not in arrays.keys():
        return None
    return arrays[name].GetRange()


def _grey(display, level=0.6):
    ColorBy(display, None)
    display.AmbientColor = [level] * 3
    display.DiffuseColor = [level] * 3


def render(run_dir, out=None, time=None, view_name="xy", size=(1600, 1000), grey_bonds=False, show_broken=False):
    """Build the pipeline for ``run_dir`` and save a screenshot; returns the image path."""
    run_dir = Path(run_dir).resolve()
    readers = {series: PVDReader(registrationName=f"{series}.pvd", FileName=str(run_dir / f"{series}.pvd"))
               for series in SERIES if (run_dir / f"{series}.pvd").is_file()}
    if "particles" not in readers:
        raise FileNotFoundError(f"{run_dir}: no particles.pvd (is this the output folder of a dem run?)")
    out = Path(out) if out is not None else run_dir / "paraview.png"

    # time: the last snapshot, or the one nearest --time
    times = _values(readers["particles"].TimestepValues)
    shown = times[-1] if time is None else min(times, key=lambda t: abs(t - time))
    scene = GetAnimationScene()
    scene.UpdateAnimationUsingDataTimeSteps()
    scene.AnimationTime = shown

    view = GetActiveViewOrCreate("RenderView")
    view.ViewSize = list(size)
    view.ViewTime = shown
    view.OrientationAxesVisibility = 1
    for reader in readers.values():
        reader.UpdatePipeline(shown)

    # particles: spheres of their own diameter (the sphere glyph has diameter 1 at scale 1)
    particles = readers["particles"]
    spheres = Glyph(registrationName="particle spheres", Input=particles, GlyphType="Sphere")
    spheres.OrientationArray = ["POINTS", "No orientation array"]
    spheres.GlyphMode = "All Points"
    diameters = _array_range(particles, "POINTS", "diameter")
    if diameters is not None and diameters[1] > 0.0:
        spheres.ScaleArray = ["POINTS", "diameter"]
        spheres.ScaleFactor = 1.0
    else:  # bodies without a contact diameter (pendulum, top, rigid clusters): small markers
        bounds = particles.GetDataInformation().GetBounds()
        extent = max(bounds[1] - bounds[0], bounds[3] - bounds[2], bounds[5] - bounds[4])
        spheres.ScaleArray = ["POINTS", "No scale array"]
        spheres.ScaleFactor = 0.05 * extent if extent > 0.0 else 0.1
    spheres.GlyphType.ThetaResolution = 16
    spheres.GlyphType.PhiResolution = 12
    sphere_display = Show(spheres, view)
    ColorBy(sphere_display, ("POINTS", "speed"))
    sphere_display.RescaleTransferFunctionToDataRange(True, False)
    sphere_display.SetScalarBarVisibility(view, True)

    # bonds: lines between the particle centres; broken ones hidden unless asked for
    if "bonds" in readers:
        bonds = readers["bonds"]
        if show_broken:
            shown_bonds = bonds
        else:
            shown_bonds = Threshold(registrationName="intact bonds", Input=bonds)
            shown_bonds.Scalars = ["CELLS", "broken"]
            shown_bonds.LowerThreshold = 0
            shown_bonds.UpperThreshold = 0
        bond_display = Show(shown_bonds, view)
        bond_display.SetRepresentationType("Wireframe")
        bond_display.LineWidth = 2.0
        if grey_bonds:
            _grey(bond_display, 0.4)
        else:
            array = "broken" if show_broken else "axial_strain"
            ColorBy(bond_display, ("CELLS", array))
            bond_display.RescaleTransferFunctionToDataRange(True, False)
            bond_display.SetScalarBarVisibility(view, True)

    # walls: semi-transparent grey squares
    if "walls" in readers:
        wall_display = Show(readers["walls"], view)
        _grey(wall_display, 0.75)
        wall_display.Opacity = 0.3

    label = Text(registrationName="time label", Text=f"t = {shown:g}")
    label_display = Show(label, view)
    label_display.WindowLocation = "Upper Left Corner"

    # camera: the chosen direction, fitted to everything shown
    direction, up = VIEWS[view_name]
    bounds = particles.GetDataInformation().GetBounds()
    centre = [0.5 * (bounds[2 * k] + bounds[2 * k + 1]) for k in range(3)]
    view.CameraFocalPoint = centre
    view.CameraPosition = [c + d for c, d in zip(centre, direction)]
    view.CameraViewUp = list(up)
    view.ResetCamera()
    Render(view)
    out.parent.mkdir(parents=True, exist_ok=True)
    SaveScreenshot(str(out), view, ImageResolution=list(size))
    return out


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if PARAVIEW_MISSING is not None and not {"-h", "--help"} & set(argv):
        print(NEEDS_PVPYTHON, file=sys.stderr)
        return 2
    args = _parser().parse_args(argv)
    try:
        out = render(args.run_dir, args.out, args.time, args.view, tuple(args.size), args.grey_bonds,
                     args.show_broken)
    except FileNotFoundError as error:
        print(f"paraview_state.py: error: {error}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
