"""Documentation that is generated from, or runs against, the code: docs/scenes.md and
tools/paraview_state.py."""

import importlib.util
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from dem.builders import BUILDERS
from dem.reference import scene_reference
from dem.scene import MESH_KEYS, SCHEMA, WALL_KEYS

ROOT = Path(__file__).resolve().parents[1]
SCENES_MD = ROOT / "docs" / "scenes.md"
PARAVIEW_SCRIPT = ROOT / "tools" / "paraview_state.py"
REGENERATE = "python -m dem.reference > docs/scenes.md"


def _sections(text):
    """``{heading: body}`` of the ``## `…` `` sections of the reference."""
    sections = {}
    for block in text.split("\n## ")[1:]:
        heading, _, body = block.partition("\n")
        sections[heading.strip().strip("`")] = body
    return sections


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


def test_paraview_script_compiles(tmp_path):
    py_compile.compile(str(PARAVIEW_SCRIPT), cfile=str(tmp_path / "paraview_state.pyc"), doraise=True)


@pytest.mark.skipif(importlib.util.find_spec("paraview") is not None, reason="ParaView is importable here")
def test_paraview_script_needs_pvpython(tmp_path):
    result = subprocess.run([sys.executable, str(PARAVIEW_SCRIPT), str(tmp_path)], capture_output=True, text=True,
                            encoding="utf-8", timeout=60)
    assert result.returncode != 0
    assert "run this with pvpython from ParaView ≥ 5.10" in result.stderr
    assert "Traceback" not in result.stderr
