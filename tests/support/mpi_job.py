"""Runs scenes under ``mpiexec`` for `test_distributed.py`:
``mpiexec -n R python tests/support/mpi_job.py JOBS.json``, where the file lists jobs ``{"scene", "out",
"settings", "restart", "probe"}`` (``probe``: with the history probe of `history_probe`
registered). Rank 0 prints one JSON line per job: its output folder, the bodies that changed
rank at rebuilds and the rebalancings of the boxes."""

import json
import sys

from history_probe import PROBE

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
        print(json.dumps({"out": job["out"], "migrated": getattr(sim, "migrated", 0),
                          "rebalanced": getattr(sim, "rebalanced", 0)}), flush=True)
