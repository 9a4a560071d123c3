"""Runs scenes under ``mpiexec`` for `test_distributed.py`:
``mpiexec -n R python tests/support/mpi_job.py JOBS.json``, where the file lists jobs ``{"scene", "out",
"settings", "restart", "probe"}`` (``probe``: with the history probe of `history_probe`
registered). Rank 0 prints one JSON line per job: its output folder, the bodies that changed
rank at rebuilds and the rebalancings of the boxes."""

import json
import sys
from pathlib import Path

# the probe as `support.history_probe`, its name in the test process: numba's cache records the
# types of its parameters by module name, and a rank loads what the test process compiled; and the
# `dem` of this checkout, which the test process (``python -m pytest`` in it) imports, not an
# installed one
sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]
from support.history_probe import PROBE  # noqa: E402

from dem import distributed
from dem.interactions import register, unregister
from dem.runner import run

for job in json.loads(open(sys.argv[1], encoding="utf-8").read()):
    if job.get("probe"):
        register(PROBE)
    try:
        sim, _ = run(job["scene"], job["settings"], job["out"], quiet=True, restart=job.get("restart"))
    finally:
        if job.get("probe"):
            unregister(PROBE.name)
    if distributed.rank() == 0:
        decomposition = getattr(sim, "decomposition", None)  # (None: one process)
        print(json.dumps({"out": job["out"], "migrated": getattr(decomposition, "migrated", 0),
                          "rebalanced": getattr(decomposition, "rebalanced", 0)}), flush=True)
