"""One step, and one force evaluation: the order of their stages, written once.

Every loop runs a step as the stages of `STEP`, in this order, and a force evaluation as those of
`FORCES`: the compiled CPU loop (`dem.engine`, serial or on threads) writes each stage's code into
the step's hole of its text, an MPI rank (`dem.distributed.RankLoop`) and the GPU
(`dem.gpu.DeviceLoop`) call a method per stage (`stage_methods`, which refuses a loop that lacks
one). A plain step runs the scheme's maps (`dem.integrators`), a sub-stepped one the stages of
contact sub-stepping (`dem.integrators.respa`) where the plain step has ``before`` and ``after``;
a loop decides before each step which it runs (some contact active at the last force
evaluation). docs/theory.md §2 gives the maps (§2.8 the sub-steps); docs/guide.md, "The
generated loop", lists the stages.
"""

import functools
from typing import NamedTuple

#: when a stage runs: in every step, in a plain step only, in a sub-stepped step only
ALWAYS, PLAIN, SUBSTEPPED = "always", "plain", "substepped"


class Stage(NamedTuple):
    name: str
    runs: str  # `ALWAYS`, `PLAIN` or `SUBSTEPPED`
    does: str


STEP = (
    Stage("before", PLAIN, "the scheme's before_forces on every body: the half kick, the drift and the rotation "
                           "(the first body whose rotation fails is kept)"),
    Stage("open", SUBSTEPPED, "the slow and first fast half kicks, the first drift and the rotation (at a call's "
                              "first step, the fast force of the current configuration first)"),
    Stage("inner", SUBSTEPPED, "the sub-steps between: the neighbour list rebuilt when a body moved more than half "
                               "the skin, the fast force, a fast kick and a drift, to the last drift"),
    Stage("hooks", ALWAYS, "the interactions' advance hooks: the walls' and the cell's prescribed or servo motion "
                           "to the new time"),
    Stage("check", ALWAYS, "stop at a body whose rotation failed"),
    Stage("forces", ALWAYS, "the force evaluation, `FORCES`"),
    Stage("after", PLAIN, "the scheme's after_forces: the closing half kick"),
    Stage("close", SUBSTEPPED, "the closing fast and slow half kicks and the spin"),
    Stage("sample", ALWAYS, "at every step whose number is a multiple of the sampling interval: stop at a "
                            "non-finite state, else write the log's values of the state"),
)

FORCES = (
    Stage("refresh", ALWAYS, "the neighbour list rebuilt if a body moved more than half the skin, every contact "
                             "history carried across"),
    Stage("updates", ALWAYS, "each history interaction's update over all its rows (after its prepare pass over "
                             "them, where it has one)"),
    Stage("rows", ALWAYS, "one pass over the bodies sets each force and moment from the row kernels"),
    Stage("bonds", ALWAYS, "the bond kernels add their loads colour by colour (and their fast force)"),
    Stage("globals", ALWAYS, "the global kernels add theirs, serially"),
)


@functools.cache  # (asked for at every step of a loop that runs its stages from Python)
def stages(order, substepped):
    """The stages of ``order`` (`STEP` or `FORCES`) that a step runs, plain or ``substepped``."""
    return tuple(stage for stage in order if stage.runs in (ALWAYS, SUBSTEPPED if substepped else PLAIN))


def branches(order, substeps):
    """``order`` as the compiled loop writes it: a list of `Stage` (the stages every step runs)
    and of pairs ``(sub-stepped stages, plain stages)`` (written as ``if substepped: … else: …``);
    without ``substeps``, the plain stages alone."""
    out = []
    for stage in order:
        if stage.runs == ALWAYS or not substeps:
            if stage.runs != SUBSTEPPED:
                out.append(stage)
            continue
        if not out or isinstance(out[-1], Stage):
            out.append(([], []))
        out[-1][0 if stage.runs == SUBSTEPPED else 1].append(stage)
    return out


def stage_methods(loop, order, prefix="_"):
    """``{name: method}``: ``loop``'s method ``prefix + name`` for each stage of ``order``; a
    loop that lacks one is refused (a stage added to the order must be given to every loop)."""
    missing = [stage.name for stage in order if not callable(getattr(loop, prefix + stage.name, None))]
    if missing:
        raise TypeError(f"{type(loop).__name__} runs no stage {', '.join(missing)} of the step (dem.step)")
    return {stage.name: getattr(loop, prefix + stage.name) for stage in order}


def run_step(methods, substepped, *arguments):
    """One step of a loop that runs its stages from Python (`stage_methods`): each stage's
    method in order, with ``arguments``; the first that returns something other than None stops
    the step, and that is returned."""
    for stage in stages(STEP, substepped):
        stop = methods[stage.name](*arguments)
        if stop is not None:
            return stop
    return None
