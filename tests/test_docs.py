"""Documentation that is generated from, or runs against, the code: docs/scenes.md,
tools/paraview_state.py and the ParaView macro tools/dem_paraview_macro.py; and the repository
standing on its own (no file names a path outside it)."""

import importlib.util
import json
import os
import re
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dem.builders import BUILDERS
from dem.reference import scene_reference
from dem.runner import run
from dem.scene import MESH_KEYS, SCHEMA, WALL_KEYS

ROOT = Path(__file__).resolve().parents[1]
SCENES_MD = ROOT / "docs" / "scenes.md"
PARAVIEW_SCRIPT = ROOT / "tools" / "paraview_state.py"
PARAVIEW_MACRO = ROOT / "tools" / "dem_paraview_macro.py"
PVBATCH = shutil.which("pvbatch")
REGENERATE = "python -m dem.reference > docs/scenes.md"


def _sections(text):
    """``{heading: body}`` of the ``## `…` `` sections of the reference."""
    sections = {}
    for block in text.split("\n## ")[1:]:
        heading, _, body = block.partition("\n")
        sections[heading.strip().strip("`")] = body
    return sections


#: what would send a reader outside the repository: the specification and the papers' copies that the
#: project's first sessions worked from (the theory is docs/theory.md, the papers are cited there); written
#: in pieces, so that this file does not name them itself
OUTSIDE = re.compile("|".join(re.escape(a + b) for a, b in (("../", "shared"), ("shared/", "seeds"), ("SP", "EC.md"),
                                                             ("SP", "EC §"))))


def test_no_file_names_a_path_outside_the_repository():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    texts = [name for name in tracked if name.endswith((".py", ".md", ".toml", ".txt", ".cfg")) or "/" not in name]
    found = [f"{name}:{number}" for name in texts if (ROOT / name).is_file()
             for number, line in enumerate((ROOT / name).read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if OUTSIDE.search(line)]
    assert not found, f"these lines name a path outside the repository: {', '.join(found)}"


def test_scenes_md_is_up_to_date():
    assert SCENES_MD.is_file(), f"docs/scenes.md is missing: generate it with `{REGENERATE}`"
    written = SCENES_MD.read_text(encoding="utf-8")
    assert written.rstrip("\n") == scene_reference().rstrip("\n"), (
        f"docs/scenes.md is stale (a scene key, default, unit or doc changed): regenerate it with `{REGENERATE}`"
    )


def test_reference_lists_every_key():
    sections = _sections(scene_reference())
    tables = {f"[{name}]": keys for name, keys in SCHEMA.items()}
    tables["[[walls]]"] = WALL_KEYS
    tables["[[mesh]]"] = MESH_KEYS
    tables.update({f"[[{name}]]": builder.keys for name, builder in BUILDERS.items()})
    for table, keys in tables.items():
        assert table in sections, f"no section for {table} in the reference"
        for key in keys:
            assert f"\n| `{key}` |" in sections[table], f"{table} {key} is missing from the reference"


def test_reference_rows_show_required_choices_and_units():
    sections = _sections(scene_reference())
    simulation = sections["[simulation]"]
    assert "| `dt` | float | **REQUIRED** | time |" in simulation
    for name in SCHEMA["simulation"]["integrator"].choices:
        assert f'`"{name}"`' in simulation
    assert "Must be positive." in simulation
    assert "| `end_position` | vec3 | — | length |" in sections["[[tetra_chain]]"]


@pytest.mark.parametrize("script", [PARAVIEW_SCRIPT, PARAVIEW_MACRO], ids=lambda path: path.name)
def test_paraview_scripts_compile(tmp_path, script):
    py_compile.compile(str(script), cfile=str(tmp_path / "script.pyc"), doraise=True)


@pytest.mark.skipif(importlib.util.find_spec("paraview") is not None, reason="ParaView is importable here")
def test_paraview_script_needs_pvpython(tmp_path):
    result = subprocess.run([sys.executable, str(PARAVIEW_SCRIPT), str(tmp_path)], capture_output=True, text=True,
                            encoding="utf-8", timeout=60)
    assert result.returncode != 0
    assert "run this with pvbatch (or pvpython) from ParaView ≥ 5.10" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def display():
    """Environment for pvbatch: the caller's display, or an Xvfb server of our own (``-displayfd``
    picks a free display number) that is stopped afterwards."""
    if PVBATCH is None:
        pytest.skip("ParaView's pvbatch is not installed (apt-get install paraview xvfb)")
    if os.environ.get("DISPLAY"):
        yield dict(os.environ)
        return
    if shutil.which("Xvfb") is None:
        pytest.skip("no display and no Xvfb (apt-get install xvfb)")
    read, write = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
                              pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    try:
        if not number:
            pytest.skip("Xvfb did not start")
        yield {**os.environ, "DISPLAY": f":{number}"}
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _pvbatch(arguments, cwd, environment):
    """Run pvbatch; again (up to three times) when it could not connect to the X server, which
    some sandboxes refuse now and then ("bad X server connection")."""
    for _ in range(3):
        result = subprocess.run([PVBATCH, *map(str, arguments)], capture_output=True, text=True, encoding="utf-8",
                                errors="replace", timeout=300, cwd=cwd, env=environment)
        if "bad X server connection" not in result.stderr:
            break
    return result


def _assert_picture(path):
    """A PNG with something drawn on it (not one flat colour)."""
    import matplotlib.image

    assert path.is_file() and path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)[:, :, :3]
    background = image[0, -1]  # a corner
    drawn = (abs(image - background).sum(axis=2) > 0.05).mean()
    assert drawn > 0.002, f"{path.name}: only {drawn:.2%} of the pixels differ from the background"


PICTURES = {  # scene, overrides, options of paraview_state.py
    "torus": ("torus_impact.toml", ["simulation.t_end=0.3", "output.vtk_every=100"],
              ["--view", "iso", "--show-broken", "--cut"]),
    "pendulum": ("pendulum.toml", ["simulation.t_end=1.0", "output.vtk_every=10"], []),
    "tetra_chain": ("tetra_chain.toml", ["simulation.t_end=0.2", "output.vtk_every=100"], ["--view", "xz"]),
    "clumps": ("clump_heap.toml", ["simulation.t_end=0.02", "clump.0.count=30", "clump.1.count=30"], []),
    "force chains": ("column_collapse.toml", ["simulation.t_end=0.2", "output.contacts=true",
                                              "assembly.0.n_particles=100", "assembly.0.diameter=5.0",
                                              "assembly.0.height=6.0", "assembly.0.center=[0.0, 0.0, 3.01]"],
                     ["--contacts", "--slab", "3"]),
}
#: the runs whose default view `test_paraview_default_view_looks_across_gravity` reads: gravity
#: along z, along y, none
GRAVITY_RUNS = {"z": ("pendulum.toml", []), "y": ("pendulum.toml", ["fields.gravity=[0.0, -1.0, 0.0]"]),
                "none": ("torus_impact.toml", [])}

#: what `paraview_session` does in one pvbatch process, after the runs: each case of `PICTURES`
#: through ``paraview_state.main`` (its status, stdout and stderr), the refusals, the default
#: views, and the GUI macro run as the GUI runs it (a script, ``__name__ == "__main__"``, after
#: the user opened particles.pvd); the session is reset between them
SESSION = """
import contextlib, io, json, sys, traceback
sys.path.insert(0, {tools!r})
import paraview.simple as pvs
import dem_paraview_macro as recipe
import paraview_state

results = {{}}
for name, argv in {calls!r}.items():
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = paraview_state.main(argv)
    except Exception:
        status = traceback.format_exc()
    results[name] = [status, out.getvalue(), err.getvalue()]
    pvs.ResetSession()
results["views"] = [recipe.default_view(path) for path in {views!r}]
view = pvs.CreateView("RenderView")
view.ViewSize = [800, 500]
pvs.SetActiveView(view)
pvs.SetActiveSource(pvs.PVDReader(FileName={particles!r}))
exec(compile(open({macro!r}).read(), "dem_paraview_macro.py", "exec"), {{"__name__": "__main__"}})
results["gui"] = sorted(name for name, _ in pvs.GetSources())
pvs.SaveScreenshot({gui!r}, view, ImageResolution=[800, 500])
with open({results!r}, "w") as file:
    json.dump(results, file)
pvs.Disconnect()
"""


@pytest.fixture(scope="module")
def paraview_session(tmp_path_factory, display):
    """The runs of `PICTURES` and `GRAVITY_RUNS`, and one pvbatch process that draws and checks
    them (`SESSION`: ParaView's start-up, about 1.5 s, paid once): ``(folder, results)``."""
    folder = tmp_path_factory.mktemp("paraview")
    runs = {case: (scene, overrides) for case, (scene, overrides, _) in PICTURES.items()}
    runs.update({f"gravity {name}": (scene, ["simulation.t_end=0.1", *overrides])
                 for name, (scene, overrides) in GRAVITY_RUNS.items()})
    for case, (scene, overrides) in runs.items():
        run(ROOT / "scenes" / scene, overrides=overrides, out=folder / case, quiet=True)
    calls = {case: [str(folder / case), "--size", "800", "500", *options]
             for case, (_, _, options) in PICTURES.items()}
    calls["contacts without a network"] = [str(folder / "gravity none"), "--contacts"]
    calls["not a run"] = [str(folder)]
    driver = folder / "session.py"
    driver.write_text(SESSION.format(tools=str(PARAVIEW_SCRIPT.parent), calls=calls,
                                     views=[str(folder / f"gravity {name}") for name in GRAVITY_RUNS],
                                     particles=str(folder / "torus" / "particles.pvd"), macro=str(PARAVIEW_MACRO),
                                     gui=str(folder / "gui.png"), results=str(folder / "results.json")),
                      encoding="utf-8")
    result = _pvbatch([driver], folder, display)
    assert result.returncode == 0, result.stdout + result.stderr
    return folder, json.loads((folder / "results.json").read_text(encoding="utf-8"))


def test_paraview_script_saves_a_picture_from_the_command_line(tmp_path, display):
    """The script as a user runs it: its own pvbatch process, which exits 0 after the picture."""
    run_dir = tmp_path / "pendulum"
    scene, overrides, options = PICTURES["pendulum"]
    run(ROOT / "scenes" / scene, overrides=overrides, out=run_dir, quiet=True)
    result = _pvbatch([PARAVIEW_SCRIPT, run_dir, "--size", 800, 500, *options], tmp_path, display)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(run_dir / "paraview.png")
    _assert_picture(run_dir / "paraview.png")


@pytest.mark.parametrize("case", sorted(PICTURES))
def test_paraview_script_saves_a_picture(paraview_session, case):
    folder, results = paraview_session
    status, out, err = results[case]
    assert status == 0, out + err
    assert out.strip().splitlines()[-1] == str(folder / case / "paraview.png")
    _assert_picture(folder / case / "paraview.png")


def test_paraview_default_view_looks_across_gravity(paraview_session):
    """The default view is xz (looking along y, z up) for gravity along z, read from the run's
    checkpoint with its --set overrides; xy for gravity along y and without gravity."""
    _, results = paraview_session
    assert results["views"] == ["xz", "xy", "xy"]


def test_paraview_contacts_need_the_network(paraview_session):
    _, results = paraview_session
    status, _, err = results["contacts without a network"]
    assert status == 2
    assert "no contacts.pvd (run the scene with [output] contacts = true)" in err


def test_paraview_script_refuses_a_folder_without_a_run(paraview_session):
    _, results = paraview_session
    status, _, err = results["not a run"]
    assert status == 2
    assert "no particles.pvd" in err


def test_paraview_macro_as_the_gui_runs_it(paraview_session):
    """The macro builds the recipe's pipeline on the reader the user opened (not a second one)."""
    folder, results = paraview_session
    names = set(results["gui"])
    assert {"particle spheres", "bond tubes", "bonds.pvd", "walls.pvd"} <= names, names
    assert "particles.pvd" not in names, names
    _assert_picture(folder / "gui.png")


#: the concrete ``python -m dem …`` commands of the README and the guide (a command's name alone,
#: placeholders in capitals, optional parts in brackets and a checkpoint a run must have written
#: first are not concrete)
COMMAND = re.compile(r"python -m dem ([^`|\n]*)")


def _documented_commands():
    commands = set()
    for path in (ROOT / "README.md", ROOT / "docs" / "guide.md"):
        for match in COMMAND.finditer(path.read_text(encoding="utf-8")):
            for part in match.group(1).split("&&"):
                text = part.split("  #")[0].replace("python -m dem ", "").strip()
                concrete = not re.search(r"[A-Z]{3,}|\[--|\[run\]|\.\.\.|--restart", text)
                if (" " in text or text.endswith(".toml")) and concrete:
                    commands.add(text)
    return sorted(commands)


@pytest.mark.parametrize("command", _documented_commands())
def test_a_documented_command_still_runs(command, tmp_path):
    """Each command the docs show still parses, and the scene it names (with its ``--set``
    overrides, and for a sweep each point of its grid) still validates; nothing is run or
    written (``validate`` builds the scene; the analyses only need their arguments)."""
    import shlex

    from dem.cli import _parser
    from dem.runner import describe
    from dem.sweep import plan_sweep

    argv = shlex.split(command)
    if argv[0] not in ("run", "validate", "plot", "fragments", "rig", "repose", "rheology", "flow", "sweep"):
        argv = ["run"] + argv
    args = _parser().parse_args(argv)
    if argv[0] == "sweep":
        plan_sweep(ROOT / args.scene, args.grids, tmp_path, args.overrides)
    elif argv[0] in ("run", "validate"):
        assert describe(ROOT / args.scene, args.overrides, tmp_path / "out")
