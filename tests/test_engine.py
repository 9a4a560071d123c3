"""The compiled loop (`dem.engine`) and numba's cache (`dem._numba_cache`): generated from the
registry, compiled once per kind of scene on a machine, cached for every copy of the source."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dem
from dem import engine
from dem.integrators import SCHEMES
from dem.runner import describe

ROOT = Path(__file__).resolve().parents[1]


def test_the_loop_calls_exactly_the_interactions_a_scene_uses():
    text = "\n".join(describe(ROOT / "scenes/torus_impact.toml", show_loop=True))
    assert "interactions binder, hertz_pp, hertz_pw" in text
    for kernel in ("binder_forces", "hertz_pp_forces", "hertz_pw_forces", "before_forces", "after_forces"):
        assert f"import {kernel}" in text or f"as {kernel}" in text, kernel
    assert "gravity" not in text and "lennard_jones" not in text and "prange(" not in text  # serial, nothing else


def test_serial_loops_pass_kernels_the_parallel_loops_argument_types():
    """A serial loop calls each kernel with an int64 first row, as the parallel loops' chunks do: a
    literal 0 would be typed Literal[int](0), and numba would compile every kernel it reaches a
    second time (the frictional pipeline's update: a minute on 2 cores)."""
    import re

    from dem.integrators import SCHEMES

    for names in (("binder", "hertz_pp", "hertz_pw", "walls"), ("contact_pp", "contact_pw", "gravity", "walls")):
        text = engine.loop_source(SCHEMES["rrp2"], names, False) + engine.loop_source(SCHEMES["lgvi"], names, False)
        assert engine.FIRST in text
        calls = re.findall(r"\b\w+\(0, ", text)
        assert not calls, calls


def test_a_kernel_that_reads_its_row_sums_back_comes_first():
    """`dem.interactions.contact`'s update leaves each row's sums in the force and moment; its row
    kernel reads them back, so a registry that puts another row kernel before it is refused."""
    import pytest
    from dem.interactions import INTERACTIONS

    pipeline, walls, gravity = INTERACTIONS["contact_pp"], INTERACTIONS["contact_pw"], INTERACTIONS["gravity"]
    assert pipeline.row_sums and engine.row_loops([pipeline, walls, gravity]) == [[pipeline], [walls], [gravity]]
    with pytest.raises(ValueError, match="contact_pp"):
        engine.row_loops([gravity, pipeline])


def test_compile_times_are_remembered_per_loop(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "generated_folder", lambda: tmp_path)
    names = ("binder", "hertz_pp", "hertz_pw", "walls")
    typical = engine.TYPICAL_SECONDS_PER_INTERACTION
    assert engine.compile_estimate(SCHEMES["rrp2"], names, False) == 4 * typical[False]
    assert engine.compile_estimate(SCHEMES["rrp2"], (), False) == typical[False]  # the bare loop: one's worth
    engine.record_compile_time(SCHEMES["rrp2"], names, False, 12.0)
    engine.record_compile_time(SCHEMES["rrp"], names[:2], False, 2.0)
    engine.record_compile_time(SCHEMES["rrp1"], names[:1], False, 4.0)
    assert engine.compile_estimate(SCHEMES["rrp2"], names, False) is None  # compiled: no message
    # another loop of the same kind: the median seconds per interaction timed here (1, 3, 4 s)
    assert engine.compile_estimate(SCHEMES["lgvi"], names + ("gravity", "damping"), False) == 6 * 3.0
    assert engine.compile_estimate(SCHEMES["rrp"], names, True) == 4 * typical[True]


PROBE = """
import sys, dem, dem.rotations as r
r.rrp_matrix([[0.1, 0.2, 0.3]])
print(dem.__file__, sum(r._map_matrix.stats.cache_hits.values()), sum(r._map_matrix.stats.cache_misses.values()))
"""


def test_every_copy_of_the_same_source_shares_one_cache(tmp_path):
    """The source tree and an installed copy (or one in another folder) compile once between them."""
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    results = []
    for copy in ("a", "b"):
        shutil.copytree(Path(dem.__file__).parent, tmp_path / copy / "dem", ignore=shutil.ignore_patterns("__pycache__"))
        out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path / copy, env=environment,
                             capture_output=True, text=True, check=True).stdout.split()
        results.append(out)
    assert results[0][0].startswith(str(tmp_path / "a")) and results[1][0].startswith(str(tmp_path / "b"))
    assert results[0][1:] == ["0", "1"]  # the first copy compiles
    assert results[1][1:] == ["1", "0"]  # the second loads what the first compiled
