"""Documentation that is generated from, or runs against, the code: docs/scenes.md,
tools/paraview_state.py and the ParaView macro tools/dem_paraview_macro.py; and the repository
standing on its own (no file names a path outside it)."""

import importlib.util
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


@pytest.mark.parametrize("case", sorted(PICTURES))
def test_paraview_script_saves_a_picture(tmp_path, display, case):
    scene, overrides, options = PICTURES[case]
    run_dir = tmp_path / case
    run(ROOT / "scenes" / scene, overrides=overrides, out=run_dir, quiet=True)
    result = _pvbatch([PARAVIEW_SCRIPT, run_dir, "--size", 800, 500, *options], tmp_path, display)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(run_dir / "paraview.png")
    _assert_picture(run_dir / "paraview.png")


def test_paraview_default_view_looks_across_gravity(tmp_path, display):
    """The default view is xz (looking along y, z up) for gravity along z, read from the run's
    checkpoint with its --set overrides; xy for gravity along y and without gravity."""
    runs = {"z": ("pendulum.toml", []), "y": ("pendulum.toml", ["fields.gravity=[0.0, -1.0, 0.0]"]),
            "none": ("torus_impact.toml", [])}
    for name, (scene, overrides) in runs.items():
        run(ROOT / "scenes" / scene, overrides=["simulation.t_end=0.1", *overrides], out=tmp_path / name, quiet=True)
    driver = tmp_path / "views.py"
    driver.write_text(f"""
import sys
sys.path.insert(0, {str(PARAVIEW_MACRO.parent)!r})
import dem_paraview_macro as recipe
print([recipe.default_view({str(tmp_path)!r} + "/" + name) for name in ("z", "y", "none")])
""", encoding="utf-8")
    result = _pvbatch([driver], tmp_path, display)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "['xz', 'xy', 'xy']"


def test_paraview_contacts_need_the_network(tmp_path, display):
    run(ROOT / "scenes" / "torus_impact.toml", overrides=["simulation.t_end=0.1"], out=tmp_path / "torus", quiet=True)
    result = _pvbatch([PARAVIEW_SCRIPT, tmp_path / "torus", "--contacts"], tmp_path, display)
    assert result.returncode == 2
    assert "no contacts.pvd (run the scene with [output] contacts = true)" in result.stderr


def test_paraview_script_refuses_a_folder_without_a_run(tmp_path, display):
    result = _pvbatch([PARAVIEW_SCRIPT, tmp_path], tmp_path, display)
    assert result.returncode == 2
    assert "no particles.pvd" in result.stderr


def test_paraview_macro_as_the_gui_runs_it(tmp_path, display):
    """The GUI runs a macro as a script (``__name__ == "__main__"``) in its interpreter, after the
    user opened particles.pvd."""
    run_dir = tmp_path / "torus"
    run(ROOT / "scenes" / "torus_impact.toml", overrides=["simulation.t_end=0.2", "output.vtk_every=100"],
        out=run_dir, quiet=True)
    driver = tmp_path / "gui.py"
    driver.write_text(f"""
import paraview.simple as pvs
view = pvs.CreateView("RenderView")
view.ViewSize = [800, 500]
pvs.SetActiveView(view)
pvs.SetActiveSource(pvs.PVDReader(FileName={str(run_dir / "particles.pvd")!r}))
exec(compile(open({str(PARAVIEW_MACRO)!r}).read(), "dem_paraview_macro.py", "exec"), {{"__name__": "__main__"}})
names = {{name for name, _ in pvs.GetSources()}}
assert {{"particle spheres", "bond tubes", "bonds.pvd", "walls.pvd"}} <= names, names
assert "particles.pvd" not in names, names  # the reader the user opened is used, not a second one
pvs.SaveScreenshot({str(tmp_path / "gui.png")!r}, view, ImageResolution=[800, 500])
pvs.Disconnect()
""", encoding="utf-8")
    result = _pvbatch([driver], tmp_path, display)
    assert result.returncode == 0, result.stdout + result.stderr
    _assert_picture(tmp_path / "gui.png")


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
