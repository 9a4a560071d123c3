"""Render a `dem` run with ParaView and save a picture (docs/guide.md, "ParaView").

    xvfb-run -a pvbatch tools/paraview_state.py RUN_DIR [--out PNG] [--time T] [--view xy|xz|yz|iso]
                                                [--size W H] [--sphere-scale S] [--show-broken]
                                                [--contacts] [--cut] [--slab W] [--no-path] [--dark]
    pvbatch tools/paraview_state.py RUN_DIR ...            (on a machine with a display)

Opens the run's ``particles.pvd``, ``bonds.pvd``, ``walls.pvd``, ``meshes.pvd`` and ``sites.pvd``
(those present) and draws them as ``tools/dem_paraview_macro.py`` describes (the same recipe is a
macro for the ParaView GUI): particles as smooth spheres coloured by ``speed``, shrunk to half their
diameter when there are bonds so that the bonds show; intact bonds as tubes coloured by
``axial_strain`` on a range symmetric about 0; bodies on a pivot as rod and ball with the path of
their centre of mass; clumps as their member spheres; rigid clusters of point sites as their sites
and edges; walls as translucent squares with an outline, mesh walls as translucent surfaces with
their sharp edges. ``--contacts`` draws the contact network (``contacts.pvd``, written with
``[output] contacts = true``) over veiled particles: the compressed contacts as tubes coloured by
their normal force, thicker the larger it is (force chains); ``--slab W`` keeps a slice of
thickness W through the middle of the scene, across the view, so that the chains of one layer
show.
Fields that are round-off at the shown time are drawn in a solid colour. The axis views (``xy``
looks down z; ``xz``; ``yz``) use a parallel projection, ``iso`` a perspective one; the default
looks across the run's gravity (``xz`` for gravity along z, else ``xy``).
It goes to the last snapshot (or the one nearest ``--time``), writes ``RUN_DIR/paraview.png`` (or
``--out``) on a white background (``--dark``: ParaView's dark one), prints its path and exits 0;
2 for a folder that is not a run.

``pvbatch`` (or ``pvpython``) comes with ParaView ≥ 5.10; tested with ParaView 5.11 (Debian 12's
``apt-get install paraview xvfb``). Without a display run it under ``xvfb-run -a``; ParaView
builds with EGL or OSMesa offscreen rendering need no X server and run it as plain ``pvbatch``.
Plain ``python`` has no ParaView and stops with a message.
"""

import argparse
import sys
from pathlib import Path

try:
    import paraview.simple as pvs

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import dem_paraview_macro as recipe

    PARAVIEW_MISSING = None
except ImportError as error:  # plain python: say how to run it instead of a traceback
    PARAVIEW_MISSING = error

NEEDS_PVPYTHON = ("paraview_state.py: error: paraview.simple is not importable here: run this with pvbatch "
                  "(or pvpython) from ParaView ≥ 5.10, e.g.\n"
                  "    xvfb-run -a pvbatch tools/paraview_state.py output/torus_impact\n"
                  "(pvbatch is in ParaView's bin/ folder; Debian/Ubuntu: apt-get install paraview xvfb)")

VIEW_NAMES = ("xy", "xz", "yz", "iso")


def _parser():
    parser = argparse.ArgumentParser(
        prog="pvbatch tools/paraview_state.py",
        description="Render a dem run (particles.pvd, bonds.pvd, walls.pvd, meshes.pvd, sites.pvd, contacts.pvd) with "
                    "ParaView and save a PNG.",
    )
    parser.add_argument("run_dir", type=Path, help="output folder of a run (holds particles.pvd)")
    parser.add_argument("--out", type=Path, help="image to write (default RUN_DIR/paraview.png)")
    parser.add_argument("--time", type=float, help="simulation time to show (nearest snapshot; default: the last)")
    parser.add_argument("--view", choices=VIEW_NAMES,
                        help="look down z (xy), along y (xz), along x (yz): parallel projection; or obliquely in "
                             "perspective (iso); default: across the run's gravity (xz for gravity along z), "
                             "else xy")
    parser.add_argument("--size", type=int, nargs=2, default=(1600, 1000), metavar=("W", "H"),
                        help="image size in pixels (default 1600 1000)")
    parser.add_argument("--sphere-scale", type=float, metavar="S",
                        help="sphere diameter / particle diameter (default 0.5 when the run has bonds, else 1)")
    parser.add_argument("--show-broken", action="store_true",
                        help="draw broken bonds too, thin and coloured by why they broke")
    parser.add_argument("--contacts", action="store_true",
                        help="draw the contact network (contacts.pvd) as force chains: tubes coloured by the normal "
                             "force, thicker the larger it is, over veiled particles")
    parser.add_argument("--cut", action="store_true",
                        help="leave out what lies between the camera and the middle of the scene, to see inside "
                             "a granule (whole particles and bonds, not sliced ones)")
    parser.add_argument("--slab", type=float, metavar="W",
                        help="draw only the particles, bonds and contacts within W/2 of the plane through the middle "
                             "of the scene, across the view (a slice: one layer of force chains)")
    parser.add_argument("--no-path", action="store_true",
                        help="do not draw the path of the centre of mass of bodies on a pivot")
    parser.add_argument("--dark", action="store_true", help="ParaView's dark background instead of white")
    return parser


def _white_background(view):
    """White background, dark text (the palette's names differ between ParaView versions)."""
    for palette in ("WhiteBackground", "Print", "PrintBackground"):
        try:
            pvs.LoadPalette(paletteName=palette)
            break
        except Exception:  # noqa: BLE001  (an unknown palette name raises different errors by version)
            continue
    if hasattr(view, "UseColorPaletteForBackground"):
        view.UseColorPaletteForBackground = 0
    view.Background = [1.0, 1.0, 1.0]
    if hasattr(view, "OrientationAxesLabelColor"):
        view.OrientationAxesLabelColor = [0.1, 0.1, 0.1]


def render(run_dir, out=None, time=None, view_name=None, size=(1600, 1000), sphere_scale=None, show_broken=False,
           path=True, dark=False, cut=False, contacts=False, slab=None):
    """Draw the run and save a screenshot; returns the image path."""
    run_dir = Path(run_dir).resolve()
    out = Path(out) if out is not None else run_dir / "paraview.png"
    view = pvs.CreateView("RenderView")
    view.ViewSize = list(size)
    view.OrientationAxesVisibility = 1
    if hasattr(view, "UseFXAA"):
        view.UseFXAA = 1
    if not dark:
        _white_background(view)
    text_color = [1.0, 1.0, 1.0] if dark else [0.1, 0.1, 0.1]
    shown = recipe.show_run(run_dir, view, time=time, direction=view_name, sphere_scale=sphere_scale,
                            show_broken=show_broken, trace=path, cut=cut, contacts=contacts, slab=slab)
    for representation in view.Representations:  # the colour bars show_run made
        if representation.GetXMLName() == "ScalarBarWidgetRepresentation":
            representation.TitleColor = text_color
            representation.LabelColor = text_color
    label = pvs.Text(registrationName="time label", Text=f"{run_dir.name}   t = {shown:g}")
    label_display = pvs.Show(label, view)
    label_display.Color = text_color
    label_display.FontSize = 16
    recipe._set_enum(label_display, "WindowLocation", "Upper Left Corner", "UpperLeftCorner")
    pvs.Render(view)
    out.parent.mkdir(parents=True, exist_ok=True)
    pvs.SaveScreenshot(str(out), view, ImageResolution=list(size))
    return out


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if PARAVIEW_MISSING is not None and not {"-h", "--help"} & set(argv):
        print(NEEDS_PVPYTHON, file=sys.stderr)
        return 2
    args = _parser().parse_args(argv)
    try:
        out = render(args.run_dir, args.out, args.time, args.view, tuple(args.size), args.sphere_scale,
                     args.show_broken, not args.no_path, args.dark, args.cut, args.contacts, args.slab)
    except FileNotFoundError as error:
        print(f"paraview_state.py: error: {error}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    status = main()
    if PARAVIEW_MISSING is None:
        # release the render window before the interpreter exits: ParaView 5.11 under Xvfb
        # otherwise fails in its exit handlers (GLXBadContext) and turns a success into status 1
        pvs.Disconnect()
    sys.exit(status)
