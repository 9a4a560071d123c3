"""The ``[[outlet]]`` builder: a region whose particles leave the run (`dem.feeding`): a box, a
cylinder or the far side of a plane. It builds no body."""

from ..feeding import REGION_KEYS, region_problem

KEYS = dict(REGION_KEYS)


def check(p):
    return region_problem(p, source=False)


def build(system, p):
    """Nothing to build: the outlet goes to `dem.feeding.Feeder` (through the ``insertion``
    interaction's inputs)."""
    system.append_input("insertion", "outlets", dict(p))
