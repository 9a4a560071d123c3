"""dem's ParaView recipe: a run's particles, bonds, walls and rigid bodies drawn for a picture.

A ParaView GUI macro and the module behind ``tools/paraview_state.py``. Needs ParaView ≥ 5.10
(tested with 5.11); uses ``paraview.simple`` only.

**In the ParaView GUI.** Once: *Macros ▸ Import new macro…* and choose this file (ParaView copies
it into its settings; it appears as ``dem_paraview_macro`` in the *Macros* menu and toolbar).
Then, for a run: *File ▸ Open* its ``particles.pvd``, *Apply*, and click the macro. It opens the
run's other series (``bonds.pvd``, ``walls.pvd``, ``meshes.pvd``, ``sites.pvd``, those present) next to it and
builds the pipeline below in the active view at the current time, looking across the run's
gravity (`default_view`); the filters stay in the Pipeline Browser to adjust, and play with the
time controls. Without a ``particles.pvd`` opened
it says so in the Output Messages window.

**What it draws** (``show_run``):

* particles with a diameter as sphere glyphs of that diameter, coloured by ``speed`` (range
  ``[0, max]``); shrunk to half their size when the run has bonds, so that the bonds between
  touching spheres show (ball and stick);
* intact bonds as tubes coloured by ``axial_strain`` on a range symmetric about 0 (blue
  compression, red tension); broken ones hidden, or (``show_broken``) coloured by why they broke
  (tension, compression, shear, bending) with the intact ones in grey;
* bodies on a pivot (pendulum, top; particle point = pivot) as a rod from the pivot to
  ``center_of_mass`` with a ball there and a dot at the pivot;
* clumps (``sites.pvd`` with a ``diameter`` for their member spheres) as their member spheres,
  sphere glyphs of that diameter coloured by speed, so that each clump shows its shape; rigid
  clusters of point sites (``diameter`` 0, or none) as their sites (small spheres coloured by
  speed) and the edges joining them;
* other bodies without a diameter as small spheres with their body axes ``axis_1``, ``axis_2``,
  ``axis_3`` as red, green and blue arrows;
* walls as translucent squares with a dark outline (a line when seen edge-on), mesh walls as
  translucent surfaces with their sharp edges (``FeatureEdges``) drawn dark;
* on request (``contacts``, the scripted route's ``--contacts``) the contact network
  (``contacts.pvd``) as force chains: compressed contacts as tubes coloured by their normal
  force, thicker the larger it is, over particles veiled in light grey (`_draw_chains`),
  optionally in a slab through the middle of the scene (``slab``).

Colour ranges are those of the shown snapshot: ``[0, max]`` for speed and for the contacts'
normal force, ``[-max, max]`` of ``|axial_strain|`` for bonds, where max is the 99th percentile
once there are 200 values or more (the few beyond get the end colours), so that a handful of
outliers does not wash the rest out. A field that is round-off at the shown time (the largest
speed would move a body by less than a billionth of the scene over the run; strains below 1e-12)
is drawn in a solid colour, with no colour bar. Spheres use a glyph resolution fitted to their size on the screen.
"""

import math
import tomllib
from pathlib import Path
from xml.etree import ElementTree

from paraview import servermanager
import paraview.simple as pvs

SERIES = ("particles", "bonds", "walls", "meshes", "sites")
#: camera direction (focal point to camera) and view-up of each view; the axis views use a
#: parallel projection, "iso" a perspective one
VIEWS = {
    "xy": ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0)),
    "xz": ((0.0, -1.0, 0.0), (0.0, 0.0, 1.0)),
    "yz": ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "iso": ((1.0, -1.0, 0.8), (0.0, 0.0, 1.0)),
}
#: why a bond broke (`broken` codes of dem.interactions.binder) and its colour
BREAKAGE = ((1, "tension", (0.89, 0.10, 0.11)), (2, "compression", (0.22, 0.49, 0.72)),
            (3, "shear", (1.00, 0.50, 0.00)), (4, "bending", (0.60, 0.31, 0.64)))
#: a field whose largest magnitude is below FLOOR × its natural scale is drawn in a solid colour
FLOOR = 1e-9
STRAIN_FLOOR = 1e-12
BODY_COLOR = (0.55, 0.62, 0.72)
EDGE_COLOR = (0.25, 0.25, 0.28)
PATH_COLOR = (0.85, 0.35, 0.1)
INTACT_COLOR = (0.72, 0.72, 0.74)
SPEED_PRESET = "Viridis (matplotlib)"
STRAIN_PRESET = "Cool to Warm"
FORCE_PRESET = "Inferno (matplotlib)"
#: particles under the contact network: light grey and this opaque
VEILED_OPACITY = 0.12
#: the contact lines' tube radius, as a fraction of the smallest particle diameter, at zero and at
#: the largest normal force (the 99th percentile once there are 200 lines or more)
CHAIN_RADII = (0.02, 0.25)


# ---------------------------------------------------------------------------------------------
# helpers that hide differences between ParaView versions
# ---------------------------------------------------------------------------------------------


def _values(prop):
    """A ParaView vector property as a list of floats (a one-element one reads as a number)."""
    try:
        return [float(v) for v in prop]
    except TypeError:
        return [float(prop)]


def _set_enum(proxy, name, *choices):
    """Set an enumeration property to the first of ``choices`` this ParaView accepts (their
    spelling changed between versions, e.g. 'Upper Left Corner' / 'UpperLeftCorner')."""
    for choice in choices:
        try:
            setattr(proxy, name, choice)
            return True
        except (ValueError, AttributeError, RuntimeError):
            continue
    return False


def _solid(display, color):
    """Colour a display in one colour (``ColorBy(display, None)`` fails on ParaView 5.11)."""
    display.ColorArrayName = ["POINTS", ""]
    display.AmbientColor = list(color)
    display.DiffuseColor = list(color)


def _range(source, association, name):
    """``(min, max)`` of a point or cell array of ``source`` at its last update, or None."""
    arrays = source.PointData if association == "POINTS" else source.CellData
    if name not in arrays.keys():
        return None
    return tuple(arrays[name].GetRange(0))


def _bounds(source):
    """Bounds ``(xmin, xmax, ymin, ymax, zmin, zmax)`` of a source's data, or None when empty."""
    info = source.GetDataInformation()
    if info.GetNumberOfPoints() == 0:
        return None
    return tuple(info.GetBounds())


def _union(boxes):
    boxes = [b for b in boxes if b is not None]
    if not boxes:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return tuple(min(b[k] for b in boxes) if k % 2 == 0 else max(b[k] for b in boxes) for k in range(6))


def _span(box):
    return max(box[1] - box[0], box[3] - box[2], box[5] - box[4])


def _sphere_glyph(source, name, scale_array, scale_factor, resolution):
    glyph = pvs.Glyph(registrationName=name, Input=source, GlyphType="Sphere")
    glyph.OrientationArray = ["POINTS", "No orientation array"]
    glyph.ScaleArray = ["POINTS", scale_array] if scale_array else ["POINTS", "No scale array"]
    glyph.ScaleFactor = scale_factor
    glyph.GlyphMode = "All Points"
    glyph.GlyphType.ThetaResolution = resolution
    glyph.GlyphType.PhiResolution = resolution
    return glyph


def _spheres_of_diameter(source, name, largest, scale, pixels, view, veiled, speed_displays):
    """Sphere glyphs of ``scale`` times each point's ``diameter`` (``largest`` the largest drawn;
    ``pixels`` per length unit fit the resolution), shown in ``view``: veiled in light grey
    (``veiled``: the contact network is the picture), else added to ``speed_displays``."""
    spheres = _sphere_glyph(source, name, "diameter", scale, int(min(64, max(16, pixels * largest / 3.0))))
    display = pvs.Show(spheres, view)
    _shiny(display)
    if veiled:
        _solid(display, INTACT_COLOR)
        display.Opacity = VEILED_OPACITY
    else:
        speed_displays.append(display)
    return spheres


def _threshold(source, name, association, array, lower, upper):
    threshold = pvs.Threshold(registrationName=name, Input=source)
    threshold.Scalars = [association, array]
    _set_enum(threshold, "ThresholdMethod", "Between")
    threshold.LowerThreshold = lower
    threshold.UpperThreshold = upper
    return threshold


def _tubes(source, name, radius):
    tube = pvs.Tube(registrationName=name, Input=pvs.ExtractSurface(registrationName=f"{name} lines", Input=source))
    tube.Radius = radius
    tube.NumberofSides = 12
    tube.Capping = 1
    _set_enum(tube, "VaryRadius", "Off")
    return tube


def _place(bar, slot):
    """Put a colour bar in the lower (slot 0) or upper (slot 1) right-hand corner."""
    bar.ScalarBarLength = 0.33
    if slot == 0:
        _set_enum(bar, "WindowLocation", "Lower Right Corner", "LowerRightCorner")
    else:
        _set_enum(bar, "WindowLocation", "Upper Right Corner", "UpperRightCorner")


def _shiny(display):
    display.Specular = 0.35
    display.SpecularPower = 40.0


def _color_by(display, view, association, array, lo, hi, preset, title):
    """Colour ``display`` by ``array`` on the fixed range ``[lo, hi]`` with a colour bar."""
    pvs.ColorBy(display, (association, array))
    lut = pvs.GetColorTransferFunction(array)
    lut.ApplyPreset(preset, True)
    _set_enum(lut, "AutomaticRescaleRangeMode", "Never")
    lut.RescaleTransferFunction(lo, hi)
    pvs.GetOpacityTransferFunction(array).RescaleTransferFunction(lo, hi)
    bar = pvs.GetScalarBar(lut, view)
    bar.Title = title
    bar.ComponentTitle = ""
    bar.Visibility = 1
    return bar


# ---------------------------------------------------------------------------------------------
# the pipeline
# ---------------------------------------------------------------------------------------------


def open_run(run_dir):
    """The run's ``PVDReader`` of each series present, ``{series: reader}``, reusing readers
    already open in the session (the GUI user opened ``particles.pvd``)."""
    run_dir = Path(run_dir).resolve()
    open_readers = {}
    for source in pvs.GetSources().values():
        file_name = getattr(source, "FileName", None)
        if isinstance(file_name, str) and file_name.endswith(".pvd"):
            open_readers[Path(file_name).resolve()] = source
    readers = {}
    for series in SERIES:
        path = run_dir / f"{series}.pvd"
        if path.is_file():
            readers[series] = open_readers.get(path) or _reader(path, f"{series}.pvd")
    if "particles" not in readers:
        raise FileNotFoundError(f"{run_dir}: no particles.pvd (is this the output folder of a dem run?)")
    return readers


def _reader(path, name):
    return pvs.PVDReader(registrationName=name, FileName=str(path))


def run_gravity(run_dir):
    """The run's gravity ``[gx, gy, gz]`` (``[fields] gravity`` of its scene with its ``--set``
    overrides, which its ``checkpoint.npz`` keeps, text and all), or None when the folder has no
    readable checkpoint or the scene sets none."""
    import numpy

    try:
        with numpy.load(Path(run_dir) / "checkpoint.npz") as checkpoint:
            scene = tomllib.loads(str(checkpoint["scene_text"]))
            overrides = [str(text) for text in checkpoint["overrides"]]
    except (OSError, KeyError, ValueError, tomllib.TOMLDecodeError):
        return None
    for text in overrides:  # as dem.scene applies them: PATH=VALUE, VALUE in TOML or a bare string
        path, _, raw = text.partition("=")
        keys = path.strip().split(".")
        try:
            value = tomllib.loads(f"value = {raw}")["value"]
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        node = scene
        try:
            for key in keys[:-1]:
                node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
            node[int(keys[-1]) if isinstance(node, list) else keys[-1]] = value
        except (IndexError, ValueError, TypeError, AttributeError):
            continue  # (the run accepted it: a path this reading does not follow, not gravity's)
    gravity = scene.get("fields", {}).get("gravity") if isinstance(scene.get("fields"), dict) else None
    return [float(g) for g in gravity] if isinstance(gravity, list) and len(gravity) == 3 else None


def default_view(run_dir):
    """The view across the run's gravity (`run_gravity`), so that down is down: ``xz`` (looking
    along y, z up) when gravity is mostly along z, else ``xy`` (looking down z; gravity along x
    or y lies in the picture, along y pointing down), also without gravity."""
    gravity = run_gravity(run_dir)
    if gravity is None or not any(gravity):
        return "xy"
    return "xz" if max(range(3), key=lambda c: abs(gravity[c])) == 2 else "xy"


def snapshot_times(reader):
    return _values(reader.TimestepValues)


def _center_of_mass_paths(run_dir, shown, bodies):
    """``{body: [x, y, z, ...]}`` of the centres of mass of ``bodies`` in every particles
    snapshot up to time ``shown`` (read directly from the .vtp files)."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLPolyDataReader

    root = ElementTree.parse(Path(run_dir) / "particles.pvd").getroot()
    reader = vtkXMLPolyDataReader()
    points = {body: [] for body in bodies}
    for dataset in root.iter("DataSet"):
        if float(dataset.get("timestep")) > shown + 1e-12 * max(1.0, abs(shown)):
            continue
        reader.SetFileName(str(Path(run_dir) / dataset.get("file")))
        reader.Update()
        centre = vtk_to_numpy(reader.GetOutput().GetPointData().GetArray("center_of_mass"))
        for body in bodies:
            points[body].extend(float(c) for c in centre[body])
    return points


def show_run(run_dir, view=None, time=None, direction=None, sphere_scale=None, show_broken=False, trace=True,
             cut=False, contacts=False, slab=None):
    """Draw the run in ``run_dir`` in ``view`` (default: the active render view) at the snapshot
    nearest ``time`` (default: the last) and point the camera along ``direction`` (a key of
    `VIEWS`; default `default_view`). ``sphere_scale``: sphere diameter / particle diameter
    (default 0.5 with bonds, 1 without). ``trace``: draw the path of the centre of mass of bodies
    on a pivot. ``cut``: drop the bodies, bonds, sites and contacts on the camera's side of the
    plane through the middle of the scene (perpendicular to the view), to see inside a granule.
    ``slab``: keep only those within ``slab / 2`` of that plane (a slice of that thickness).
    ``contacts``: draw the contact network (``contacts.pvd``) as force chains over veiled
    particles (`_draw_chains`), the camera fitted to the particles. Returns the time shown."""
    run_dir = Path(run_dir).resolve()
    readers = open_run(run_dir)
    if contacts:
        path = run_dir / "contacts.pvd"
        if not path.is_file():
            raise FileNotFoundError(f"{run_dir}: no contacts.pvd (run the scene with [output] contacts = true)")
        readers["contacts"] = _reader(path, "contacts.pvd")
    direction = direction or default_view(run_dir)
    view = view or pvs.GetActiveViewOrCreate("RenderView")
    particles = readers["particles"]
    times = snapshot_times(particles)
    shown = times[-1] if time is None else min(times, key=lambda t: abs(t - time))
    scene = pvs.GetAnimationScene()
    scene.UpdateAnimationUsingDataTimeSteps()
    scene.AnimationTime = shown
    for reader in readers.values():
        reader.UpdatePipeline(shown)
        pvs.Hide(reader, view)

    # scales: the scene's extent, the particles' diameters, what counts as zero speed
    box = _union([_bounds(reader) for reader in readers.values() if reader is not readers.get("walls")])
    diameters = _range(particles, "POINTS", "diameter") or (0.0, 0.0)
    extent = _span(box) + diameters[1]
    extent = extent if extent > 0.0 else 1.0
    duration = times[-1] - times[0] if times[-1] > times[0] else 1.0
    speed_floor = FLOOR * extent / duration
    width, height = _values(view.ViewSize) if view.ViewSize else (1600.0, 1000.0)
    pixels = min(width, height) / extent  # pixels per length unit, roughly

    sources = dict(readers)
    centre = [0.5 * (box[2 * k] + box[2 * k + 1]) for k in range(3)]
    toward = [c / math.sqrt(sum(d * d for d in VIEWS[direction][0])) for c in VIEWS[direction][0]]
    planes = [("cut", centre, toward)] if cut else []  # (name, point, normal): what lies beyond is dropped
    if slab is not None:
        planes += [("slab front", [c + 0.5 * slab * d for c, d in zip(centre, toward)], toward),
                   ("slab back", [c - 0.5 * slab * d for c, d in zip(centre, toward)], [-d for d in toward])]
    for name, point, normal in planes:
        for series in ("particles", "bonds", "sites", "contacts"):
            if series in sources:
                clip = pvs.Clip(registrationName=f"{series} {name}", Input=sources[series])
                _set_enum(clip, "ClipType", "Plane")
                clip.ClipType.Origin = point
                clip.ClipType.Normal = normal
                clip.Crinkleclip = 1  # whole bodies and bonds, not cut ones
                _set_enum(clip, "Invert", 1)
                clip.UpdatePipeline(shown)
                sources[series] = clip
    particles = sources["particles"]
    speed_max = _robust_max([_array_values(particles, "POINTS", "speed")]
                            + ([_array_values(sources["sites"], "POINTS", "speed")] if "sites" in sources else []))
    shown_sources = []
    speed_displays = []

    # particles with a diameter: spheres
    if diameters[1] > 0.0:
        with_diameter = particles
        if diameters[0] <= 0.0:
            with_diameter = _threshold(particles, "particles with a diameter", "POINTS", "diameter",
                                       FLOOR * diameters[1], 2.0 * diameters[1])
        scale = sphere_scale if sphere_scale is not None else (0.5 if "bonds" in readers else 1.0)
        shown_sources.append(_spheres_of_diameter(with_diameter, "particle spheres", diameters[1] * scale, scale,
                                                  pixels, view, contacts, speed_displays))

    # bodies without a diameter: on a pivot (rod and ball), or free (ball and body axes)
    if diameters[0] <= 0.0:
        bare = particles
        if diameters[1] > 0.0:
            bare = _threshold(particles, "bodies without a diameter", "POINTS", "diameter", -1.0, 0.0)
        arms = pvs.Calculator(registrationName="arms", Input=bare)
        _set_enum(arms, "AttributeType", "Point Data")
        arms.ResultArrayName = "arm"
        arms.Function = "center_of_mass-coords" if "center_of_mass" in particles.PointData.keys() else "0*coords"
        arm_lengths = pvs.Calculator(registrationName="arm lengths", Input=arms)
        _set_enum(arm_lengths, "AttributeType", "Point Data")
        arm_lengths.ResultArrayName = "arm_length"
        arm_lengths.Function = "mag(arm)"
        arm_lengths.UpdatePipeline(shown)
        arm_max = (_range(arm_lengths, "POINTS", "arm_length") or (0.0, 0.0))[1]
        if arm_max > FLOOR * extent:
            pinned = _threshold(arm_lengths, "bodies on a pivot", "POINTS", "arm_length", FLOOR * extent, 2.0 * arm_max)
            shown_sources += _draw_pivoted(pinned, view, arm_max)
            pinned.UpdatePipeline(shown)
            n_pinned = pinned.GetDataInformation().GetNumberOfPoints()
            if trace and len(times) > 2 and n_pinned <= 16:
                ids = _fetch_ids(pinned)
                for body, path in _center_of_mass_paths(run_dir, shown, ids).items():
                    line = pvs.PolyLineSource(registrationName=f"path of body {body}", Points=path)
                    line_display = pvs.Show(line, view)
                    _solid(line_display, PATH_COLOR)
                    line_display.LineWidth = 2.0
                    shown_sources.append(line)
        if "sites" not in readers:
            free = _threshold(arm_lengths, "free bodies", "POINTS", "arm_length", -1.0, FLOOR * extent)
            free.UpdatePipeline(shown)
            if free.GetDataInformation().GetNumberOfPoints() > 0:
                size = 0.05 * extent
                ball = _sphere_glyph(free, "bodies", None, size, 48)
                ball_display = pvs.Show(ball, view)
                _shiny(ball_display)
                speed_displays.append(ball_display)
                shown_sources.append(ball)
                for k, color in enumerate(((0.85, 0.2, 0.2), (0.2, 0.7, 0.2), (0.2, 0.4, 0.9)), start=1):
                    arrows = pvs.Glyph(registrationName=f"axis {k}", Input=free, GlyphType="Arrow")
                    arrows.OrientationArray = ["POINTS", f"axis_{k}"]
                    arrows.ScaleArray = ["POINTS", "No scale array"]
                    arrows.ScaleFactor = 2.0 * size
                    arrows.GlyphMode = "All Points"
                    arrows.GlyphType.TipResolution = 32
                    arrows.GlyphType.ShaftResolution = 32
                    _solid(pvs.Show(arrows, view), color)
                    shown_sources.append(arrows)

    # clumps: their member spheres; rigid clusters of point sites: the sites and the edges between them
    members = (0.0, 0.0)
    if "sites" in readers:
        sites = sources["sites"]
        members = _range(sites, "POINTS", "diameter") or (0.0, 0.0)
        if members[1] > 0.0:
            clumps = _threshold(sites, "clump members", "POINTS", "diameter", FLOOR * members[1], 2.0 * members[1])
            scale = sphere_scale if sphere_scale is not None else 1.0
            shown_sources.append(_spheres_of_diameter(clumps, "member spheres", members[1] * scale, scale, pixels,
                                                      view, contacts, speed_displays))
        if members[0] <= 0.0:   # point sites (every site, without clumps)
            points = sites
            if members[1] > 0.0:   # the sites of no clump, and the edges all of whose ends are such sites
                points = _threshold(sites, "point sites", "POINTS", "diameter", -1.0, 0.0)
                points.AllScalars = 1
            edge_length = _mean_edge_length(readers["sites"]) or 0.05 * extent
            site_spheres = _sphere_glyph(points, "site spheres", None, 0.3 * edge_length, 32)
            display = pvs.Show(site_spheres, view)
            _shiny(display)
            speed_displays.append(display)
            edges = _tubes(points, "cluster edges", 0.05 * edge_length)
            _solid(pvs.Show(edges, view), EDGE_COLOR)
            shown_sources += [site_spheres, edges]

    for display in speed_displays:
        if speed_max > speed_floor:
            bar = _color_by(display, view, "POINTS", "speed", 0.0, speed_max, SPEED_PRESET, "speed")
            _place(bar, 0)
        else:
            _solid(display, BODY_COLOR)

    # bonds: intact ones as tubes by axial strain (grey with show_broken); broken ones by why
    if "bonds" in readers:
        bonds = sources["bonds"]
        radius = 0.12 * (diameters[0] if diameters[0] > 0.0 else max(diameters[1], 0.01 * extent))
        intact = _tubes(_threshold(bonds, "intact bonds", "CELLS", "broken", 0, 0), "bond tubes", radius)
        intact.UpdatePipeline(shown)
        display = pvs.Show(intact, view)
        _shiny(display)
        strain = _array_values(bonds, "CELLS", "axial_strain")
        broken = _array_values(bonds, "CELLS", "broken")
        limit = _robust_max([abs(strain[broken == 0])]) if strain is not None and broken is not None else 0.0
        if limit > STRAIN_FLOOR and not show_broken:
            bar = _color_by(display, view, "CELLS", "axial_strain", -limit, limit, STRAIN_PRESET,
                            "axial strain r/r0 - 1")
            _place(bar, 1)
        else:
            _solid(display, INTACT_COLOR)
        shown_sources.append(intact)
        if show_broken and broken is not None and broken.any():
            broken_tubes = _tubes(_threshold(bonds, "broken bonds", "CELLS", "broken", 1, 4), "broken bond tubes",
                                  radius)
            broken_display = pvs.Show(broken_tubes, view)
            pvs.ColorBy(broken_display, ("CELLS", "broken"))
            lut = pvs.GetColorTransferFunction("broken")
            lut.InterpretValuesAsCategories = 1
            lut.Annotations = [str(v) for code, name, _ in BREAKAGE for v in (code, name)]
            lut.IndexedColors = [c for _, _, color in BREAKAGE for c in color]
            bar = pvs.GetScalarBar(lut, view)
            bar.Title = "bond broken by"
            bar.ComponentTitle = ""
            bar.Visibility = 1
            _place(bar, 1)

    if contacts:
        sizes = [low if low > 0.0 else high for low, high in (diameters, members) if high > 0.0]  # spheres, members
        smallest = min(sizes) if sizes else 0.01 * extent
        _draw_chains(sources["contacts"], view, CHAIN_RADII[0] * smallest, CHAIN_RADII[1] * smallest, shown)
    framed = list(shown_sources)  # (with the contact network: the particles fill the picture, not the walls)

    # walls: translucent squares with a dark outline; meshes: translucent surfaces, sharp edges dark
    for series, edges, width in (("walls", "wall outlines", 3.0), ("meshes", "mesh edges", 2.0)):
        if series in readers:
            surface = pvs.Show(readers[series], view)
            _solid(surface, (0.55, 0.55, 0.58))
            surface.Opacity = 0.25
            outline = pvs.Show(pvs.FeatureEdges(registrationName=edges, Input=readers[series]), view)
            _solid(outline, EDGE_COLOR)
            outline.LineWidth = width
            shown_sources.append(readers[series])

    point_camera(view, framed if contacts else shown_sources, direction, shown)
    return shown


def _draw_chains(lines, view, thin, thick, time):
    """The compressed contacts of ``lines`` (``contacts.pvd``) as tubes whose radius grows
    linearly with the normal force from ``thin`` to ``thick`` at the largest force (the 99th
    percentile from 200 contacts on; stronger ones are drawn as that), coloured by it: the force
    chains. Each line first gets points of its own (``Shrink`` by a factor 1), so that the force
    of a line becomes the point scalar of its two ends alone, which the tube's radius follows."""
    force = _array_values(lines, "CELLS", "normal_force")
    if force is None or not (force > 0.0).any():
        return
    top = _robust_max([force[force > 0.0]])
    compressed = _threshold(lines, "compressed contacts", "CELLS", "normal_force", 0.0, float(force.max()))
    apart = pvs.Shrink(registrationName="contacts apart", Input=compressed)
    apart.ShrinkFactor = 1.0
    ends = pvs.CellDatatoPointData(registrationName="contact forces at their ends", Input=apart)
    capped = pvs.Calculator(registrationName="chain forces", Input=ends)
    _set_enum(capped, "AttributeType", "Point Data")
    capped.ResultArrayName = "chain"
    capped.Function = f"min(normal_force, {top!r})"
    tube = pvs.Tube(registrationName="force chains", Input=pvs.ExtractSurface(Input=capped))
    tube.Scalars = ["POINTS", "chain"]
    _set_enum(tube, "VaryRadius", "By Scalar")
    tube.Radius = thin
    tube.RadiusFactor = thick / thin
    tube.NumberofSides = 10
    tube.Capping = 1
    tube.UpdatePipeline(time)
    display = pvs.Show(tube, view)
    _place(_color_by(display, view, "POINTS", "chain", 0.0, top, FORCE_PRESET, "normal force"), 1)
    pvs.GetColorTransferFunction("chain").InvertTransferFunction()  # strong chains dark on white, weak ones pale


def _draw_pivoted(pinned, view, arm_max):
    """Rod from each pivot to the centre of mass (array ``arm``), a ball there, a dot at the
    pivot; returns the sources shown."""
    rods = pvs.Glyph(registrationName="pivot rods", Input=pinned, GlyphType="Line")
    rods.GlyphType.Point1 = [0.0, 0.0, 0.0]
    rods.GlyphType.Point2 = [1.0, 0.0, 0.0]
    rods.OrientationArray = ["POINTS", "arm"]
    rods.ScaleArray = ["POINTS", "arm_length"]
    rods.ScaleFactor = 1.0
    rods.GlyphMode = "All Points"
    rod_tubes = _tubes(rods, "pivot rod tubes", 0.012 * arm_max)
    _solid(pvs.Show(rod_tubes, view), EDGE_COLOR)
    bobs = pvs.Calculator(registrationName="centres of mass", Input=pinned)
    _set_enum(bobs, "AttributeType", "Point Data")
    bobs.CoordinateResults = 1
    bobs.Function = "center_of_mass"
    ball = _sphere_glyph(bobs, "bobs", None, 0.25 * arm_max, 64)
    ball_display = pvs.Show(ball, view)
    _solid(ball_display, BODY_COLOR)
    _shiny(ball_display)
    pivots = _sphere_glyph(pinned, "pivots", None, 0.06 * arm_max, 32)
    _solid(pvs.Show(pivots, view), EDGE_COLOR)
    return [rod_tubes, ball, pivots]


def _fetch_ids(source):
    """The ``id`` point array of a (small) source as a list of ints."""
    from vtkmodules.util.numpy_support import vtk_to_numpy

    data = servermanager.Fetch(source)
    return [int(i) for i in vtk_to_numpy(data.GetPointData().GetArray("id"))]


def _array_values(source, association, name):
    """A point or cell array of ``source`` at its last update as a numpy array (fetched to the
    client), or None."""
    from vtkmodules.util.numpy_support import vtk_to_numpy

    data = servermanager.Fetch(source)
    arrays = data.GetPointData() if association == "POINTS" else data.GetCellData()
    array = arrays.GetArray(name) if arrays is not None else None
    return vtk_to_numpy(array) if array is not None else None


def _robust_max(arrays):
    """The largest value of ``arrays`` (each a numpy array or None), or their 99th percentile
    when they hold 200 values or more, so that a few outliers do not wash out the colours."""
    import numpy

    values = numpy.concatenate([a.ravel() for a in arrays if a is not None and a.size] or [numpy.zeros(1)])
    return float(numpy.percentile(values, 99.0) if values.size >= 200 else values.max())


def _mean_edge_length(sites):
    """Mean length of the lines of the sites data (one cluster's edges), or None."""
    from vtkmodules.util.numpy_support import vtk_to_numpy

    data = servermanager.Fetch(sites)
    if data is None or data.GetNumberOfLines() == 0:
        return None
    points = vtk_to_numpy(data.GetPoints().GetData())
    lines = vtk_to_numpy(data.GetLines().GetConnectivityArray()).reshape(-1, 2)
    lengths = ((points[lines[:, 0]] - points[lines[:, 1]]) ** 2).sum(axis=1) ** 0.5
    return float(lengths.mean())


def point_camera(view, sources, direction, time):
    """Look along ``direction`` (a key of `VIEWS`) at everything in ``sources``, filling the view:
    parallel projection for the axis views, perspective for "iso"."""
    toward, up = VIEWS[direction]
    for source in sources:
        source.UpdatePipeline(time)
    box = _union([_bounds(source) for source in sources])
    centre = [0.5 * (box[2 * k] + box[2 * k + 1]) for k in range(3)]
    norm = math.sqrt(sum(c * c for c in toward))
    toward = [c / norm for c in toward]
    size = max(_span(box), 1e-12)
    view.CameraFocalPoint = centre
    view.CameraPosition = [c + 4.0 * size * d for c, d in zip(centre, toward)]
    view.CameraViewUp = list(up)
    view.CameraParallelProjection = 0 if direction == "iso" else 1
    pvs.ResetCamera(view)  # (fits everything shown, and centres on it: the sources' centre again)
    distance = math.dist(_values(view.CameraPosition), _values(view.CameraFocalPoint))
    view.CameraFocalPoint = centre
    view.CameraPosition = [c + distance * d for c, d in zip(centre, toward)]
    if direction != "iso":
        # fit the box projected on the screen's axes (ResetCamera fits the bounding sphere)
        right = [toward[1] * up[2] - toward[2] * up[1], toward[2] * up[0] - toward[0] * up[2],
                 toward[0] * up[1] - toward[1] * up[0]]
        corners = [(box[i], box[2 + j], box[4 + k]) for i in (0, 1) for j in (0, 1) for k in (0, 1)]
        half_width = max(abs(sum((p[a] - centre[a]) * right[a] for a in range(3))) for p in corners)
        half_height = max(abs(sum((p[a] - centre[a]) * up[a] for a in range(3))) for p in corners)
        width, height = _values(view.ViewSize) if view.ViewSize else (1600.0, 1000.0)
        view.CameraParallelScale = 1.08 * max(half_height, half_width * height / width, 1e-12)


# ---------------------------------------------------------------------------------------------
# GUI macro
# ---------------------------------------------------------------------------------------------


def _run_dir_of_active_source():
    candidates = [pvs.GetActiveSource()] + list(pvs.GetSources().values())
    for source in candidates:
        file_name = getattr(source, "FileName", None) if source is not None else None
        if isinstance(file_name, str) and file_name.endswith(".pvd") and (Path(file_name).parent / "particles.pvd").is_file():
            return Path(file_name).parent
    return None


def macro():
    """Draw the run whose ``.pvd`` is open (the active source first) in the active view."""
    run_dir = _run_dir_of_active_source()
    if run_dir is None:
        print("dem_paraview_macro: no dem run is open: open a run's particles.pvd (File > Open, Apply) and run "
              "the macro again. For a picture from the command line: "
              "xvfb-run -a pvbatch tools/paraview_state.py RUN_DIR")
        return
    view = pvs.GetActiveViewOrCreate("RenderView")
    current = pvs.GetAnimationScene().AnimationTime
    show_run(run_dir, view, time=current)
    pvs.Render(view)


if __name__ == "__main__":  # the GUI runs a macro as a script (paraview.fromGUI is not set in 5.11)
    macro()
