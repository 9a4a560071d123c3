"""One step order (`dem.step`): every loop runs the stages of `STEP` and `FORCES`, and the compiled
loop writes them in that order. That the loops give the same bits is checked where they run:
threads (`test_parallel.py`), MPI ranks (`test_distributed.py`), the GPU (`test_gpu.py`)."""

import re

import pytest

from dem.distributed import RankLoop
from dem.engine import StepWriter, loop_source
from dem.gpu import DeviceLoop
from dem.integrators import SCHEMES
from dem.step import FORCES, PLAIN, STEP, SUBSTEPPED, Stage, branches, stage_methods, stages


@pytest.mark.parametrize("loop", [StepWriter, RankLoop, DeviceLoop])
def test_every_loop_runs_every_stage(loop):
    assert list(stage_methods(loop, STEP)) == [stage.name for stage in STEP]
    if loop is DeviceLoop:  # (the others run the force evaluation in one compiled call)
        assert list(stage_methods(loop, FORCES)) == [stage.name for stage in FORCES]


def test_a_loop_without_a_stage_is_refused():
    lacking = type("Lacking", (), {f"_{stage.name}": lambda self: None for stage in STEP if stage.name != "hooks"})
    with pytest.raises(TypeError, match=r"Lacking runs no stage hooks of the step \(dem.step\)"):
        stage_methods(lacking(), STEP)


def test_a_step_is_plain_or_sub_stepped():
    plain, substepped = ([stage.name for stage in stages(STEP, flag)] for flag in (False, True))
    assert plain == ["before", "hooks", "check", "forces", "after", "sample"]
    assert substepped == ["open", "inner", "hooks", "check", "forces", "close", "sample"]
    assert all(stage.runs != SUBSTEPPED for stage in branches(STEP, False))
    pairs = [branch for branch in branches(STEP, True) if not isinstance(branch, Stage)]
    assert [([s.name for s in sub], [s.name for s in plain]) for sub, plain in pairs] == \
        [(["open", "inner"], ["before"]), (["close"], ["after"])]
    assert all(s.runs == SUBSTEPPED for sub, _ in pairs for s in sub)
    assert all(s.runs == PLAIN for _, plain in pairs for s in plain)


#: a line of the compiled step that only the stage runs
MARKERS = {"open": r"open_kick\(", "inner": r"for sub in range\(substeps - 1\)", "before": r"before_forces\(",
           "hooks": r"walls_advance\(", "check": r"if failed\[chunk\] >= 0", "forces": r"out = _forces\(substepped",
           "close": r"close_kick\(", "after": r"after_forces\(", "sample": r"sample\(st, bodies"}


@pytest.mark.parametrize("parallel", [False, True])
def test_the_compiled_step_follows_the_order(parallel):
    """The torus's loop (the sub-stepped and the plain stages, a wall's hook): each stage's code
    appears once in the step, in the order of `STEP` (the sub-stepped stages of a branch before
    the plain ones, under ``if substepped: … else: …``)."""
    names = ("binder", "hertz_pp", "hertz_pw", "walls")
    text = loop_source(SCHEMES["rrp2"], names, parallel)
    step = text[text.index("    for k in range(n_steps):"):]
    found = {name: [m.start() for m in re.finditer(marker, step)] for name, marker in MARKERS.items()}
    assert all(len(at) == 1 for at in found.values()), found
    written = sorted(found, key=lambda name: found[name][0])
    expected = [stage.name for branch in branches(STEP, True)
                for stage in ((branch,) if isinstance(branch, Stage) else branch[0] + branch[1])]
    assert written == expected
