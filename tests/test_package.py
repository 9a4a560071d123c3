"""The package's layering: no import cycles between `dem`'s modules, nothing below the command
line imports it, the command line imports no package that only some commands use, and the public
API is what `dem/__init__.py` exports."""

import ast
import subprocess
import sys
from pathlib import Path

import dem

PACKAGE = Path(dem.__file__).resolve().parent


def module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports():
    """``{module: {dem modules it imports}}`` from the sources (relative imports resolved; a
    ``from package import name`` counts as importing the package, or the submodule ``name``)."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[:len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    edges.add(target if target in modules else base)
            elif isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def test_the_import_graph_has_no_cycle():
    graph = imports()
    # a package's __init__ imports its submodules: the package and its submodules are one node
    # only when a submodule imports its own package back, which is exactly a cycle we forbid
    state = {}

    def visit(node, path):
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                raise AssertionError("import cycle: " + " -> ".join(path + [node, target]))
            if target not in state:
                visit(target, path + [node])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert len(graph) > 30


def test_nothing_below_the_command_line_imports_it():
    importers = [name for name, targets in imports().items() if "dem.cli" in targets and name != "dem.__main__"]
    assert importers == []


def test_the_layers_point_down():
    """Numerics (rotations, interactions, integrators, contacts, engine, step order) import nothing
    of the scene, the builders, the runner or the observers."""
    graph = imports()
    numerics = [n for n in graph if n.startswith(("dem.rotations", "dem.interactions", "dem.integrators",
                                                  "dem.contacts", "dem.neighbors", "dem.engine", "dem.step",
                                                  "dem.state"))]
    upper = ("dem.scene", "dem.builders", "dem.system", "dem.runner", "dem.observers", "dem.simulation")
    for name in numerics:
        assert not {t for t in graph[name] if t.startswith(upper)}, name


def test_the_command_line_leaves_out_what_only_some_commands_use():
    """``python -m dem``'s imports leave out scipy's spatial and sparse packages (0.1 s; the sources
    of `dem.feeding`, the fragments of bonded runs and some builders import them when they run),
    matplotlib (plots), dask (sweeps) and mpi4py (runs under MPI)."""
    leave_out = ("scipy.spatial", "scipy.sparse", "matplotlib", "dask", "mpi4py")
    code = f"import sys, dem.cli; print(*sorted(m for m in sys.modules if m.startswith({leave_out!r})))"
    imported = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True,
                              check=True).stdout.split()
    assert imported == []


def test_the_command_line_ends_with_its_status_its_log_and_its_files_whole(tmp_path):
    """``python -m dem`` ends its process as soon as `main` returns (`dem.cli.script`: no teardown
    of the imported libraries): the status, the last log line and every file the run wrote are
    whole (the log's last row at t_end, the series' closing tags, a checkpoint that loads); a bad
    scene still exits 2 with its one line."""
    from dem.checkpoint import load_checkpoint

    out = tmp_path / "torus"
    done = subprocess.run([sys.executable, "-m", "dem", "run", "scenes/torus_impact.toml", "--out", str(out),
                           "--set", "simulation.t_end=0.3"], cwd=PACKAGE.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    last = done.stderr.rstrip().splitlines()[-1]
    assert last.startswith("dem: 300 steps in ") and last.endswith(f" s; outputs in {out}/")
    assert (out / "energy.csv").read_text().splitlines()[-1].startswith("300,0.3,")
    for series in ("particles", "bonds", "walls"):
        assert (out / f"{series}.pvd").read_text().endswith("</VTKFile>\n"), series
    assert load_checkpoint(out / "checkpoint.npz")["step"] == 300
    bad = subprocess.run([sys.executable, "-m", "dem", "run", str(tmp_path / "none.toml")], cwd=PACKAGE.parent,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "none.toml" in bad.stderr


def test_the_public_api():
    assert set(dem.__all__) <= set(dir(dem))
    assert {"Simulation", "SystemBuilder", "Interaction", "register", "load_scene"} <= set(dem.__all__)
