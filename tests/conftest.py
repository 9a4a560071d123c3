import os

import pytest
from hypothesis import settings

# The suite's workers share the cores (pytest-xdist), and the thread tests run numba's OpenMP threads
# in each: idle threads then sleep instead of spinning through a core the other worker needs
# (GNU OpenMP reads this when numba first runs a parallel loop, after this import).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# The first call of a numba function compiles it; hypothesis' per-example deadline would count it.
settings.register_profile("dem", deadline=None, max_examples=200, derandomize=True)
settings.load_profile("dem")


@pytest.fixture(autouse=True)
def no_compile_notice(monkeypatch):
    """The first run's compile notice (`dem.runner.announce_compiling`) would go to whichever test
    builds the first scene in the worker that created numba's cache folder (an empty cache: a
    clean clone's suite), and add a line to what that test reads; the test of the notice turns it
    on itself."""
    from dem import _numba_cache

    monkeypatch.setattr(_numba_cache, "FRESH", False)


#: the files that take longest, longest first (the ParaView pictures, the simulated GPU, the fuzzing,
#: the MPI runs, the finite-difference battery, …): collected first, so that pytest-xdist's workers,
#: which take whole files in turn (in collection order: pyproject.toml's ``--no-loadscope-reorder``;
#: xdist would otherwise order the files by their number of tests), end together instead of one
#: waiting for the other's last long file
FIRST = ("test_docs.py", "test_gpu.py", "test_scene_fuzz.py", "test_distributed.py", "test_interactions.py",
         "test_clumps.py", "test_sweep.py", "test_walls.py", "test_deforming.py", "test_restart.py")


def pytest_collection_modifyitems(items):
    first = {name: k for k, name in enumerate(FIRST)}
    items.sort(key=lambda item: first.get(item.path.name, len(FIRST)))  # (stable: the others keep their order)
