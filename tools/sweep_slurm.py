"""Run a `dem` parameter sweep on a SLURM cluster through dask-jobqueue (docs/guide.md,
"Parameter sweeps (Dask)").

    python tools/sweep_slurm.py SCENE --grid KEY=[v1,v2,...] [--grid ...] [--set PATH=VALUE ...] --out DIR
                                [--jobs J] [--cores C] [--memory 4GB] [--walltime 02:00:00]
                                [--partition NAME] [--account NAME] [--dry-run]

The same sweep as ``python -m dem sweep`` (`dem.sweep.plan_sweep`, `dem.sweep.run_sweep`: the
same point folders, ``sweep.csv``, failures recorded, re-runs skipping the points done), with the
Dask workers in SLURM jobs instead of on this machine. Every point is validated before any job is
submitted. Then up to J jobs are submitted (``sbatch``), each of C cores running C Dask worker
processes of one thread each and one numba thread each (``NUMBA_NUM_THREADS=1``); the jobs end
when the sweep does. Run this script where ``sbatch`` works (a login node, in ``tmux`` or
``screen``, or inside a small SLURM job of its own): the Dask scheduler runs in this process, and
the sweep stops if it stops (run it again to go on). DIR and the scene must be on a filesystem
the compute nodes share, and the compute nodes must run the same Python environment (this
script's interpreter) with `dem` installed. ``--dry-run`` validates the sweep, prints the job
script and submits nothing.

Needs ``pip install "dem[dask]" dask-jobqueue``. Written against dask-jobqueue 0.9's documented
``SLURMCluster``; checked here with ``--dry-run`` only, not yet run on a real SLURM cluster:
partition, account, memory and time limits depend on the site.
"""

import argparse
import logging
import math
import sys
from contextlib import contextmanager

from dem.scene import SceneError
from dem.sweep import plan_sweep, run_sweep

INSTALL = 'pip install "dem[dask]" dask-jobqueue'


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scene", help="scene file (TOML)")
    parser.add_argument("--grid", dest="grids", action="append", default=[], metavar="KEY=[v1,v2,...]",
                        help="values of one scene key, as for python -m dem sweep; repeat for more keys")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                        help="override a scene value for every point")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder of the sweep (on a shared filesystem)")
    parser.add_argument("--jobs", type=int, default=4, help="most SLURM jobs at once (default 4)")
    parser.add_argument("--cores", type=int, default=4, help="cores per job = Dask workers per job (default 4)")
    parser.add_argument("--memory", default="4GB", help="memory per job (default 4GB)")
    parser.add_argument("--walltime", default="02:00:00", help="time limit per job (default 02:00:00)")
    parser.add_argument("--partition", help="SLURM partition (sbatch -p)")
    parser.add_argument("--account", help="SLURM account (sbatch -A)")
    parser.add_argument("--dry-run", action="store_true", help="print the job script; submit nothing")
    return parser.parse_args()


def slurm_cluster(args):
    from dask_jobqueue import SLURMCluster

    return SLURMCluster(cores=args.cores, processes=args.cores, memory=args.memory, walltime=args.walltime,
                        queue=args.partition, account=args.account, python=sys.executable,
                        job_script_prologue=["export NUMBA_NUM_THREADS=1"], job_name="dem-sweep")


@contextmanager
def slurm_client(args, n_points):
    """A ``distributed.Client`` on SLURM jobs enough for ``n_points`` points (at most ``--jobs``)."""
    from distributed import Client

    with slurm_cluster(args) as cluster, Client(cluster) as client:
        cluster.scale(jobs=min(args.jobs, math.ceil(n_points / args.cores)))
        yield client


def main():
    args = parse_arguments()
    logging.basicConfig(level=logging.INFO, format="dem: %(message)s", stream=sys.stderr)
    try:
        import dask_jobqueue  # noqa: F401
    except ImportError:
        sys.exit(f"sweep_slurm.py: error: dask-jobqueue is not installed: {INSTALL}")
    logging.getLogger("distributed").setLevel(logging.WARNING)  # after Dask has set up its loggers
    try:
        sweep = plan_sweep(args.scene, args.grids, args.out, args.overrides)
    except SceneError as error:
        sys.exit(f"dem: error: {error}")
    if args.dry_run:
        with slurm_cluster(args) as cluster:
            print(cluster.job_script())
        print(f"{len(sweep.points)} points; nothing submitted (--dry-run)", file=sys.stderr)
        return 0
    rows = run_sweep(sweep, lambda n_points: slurm_client(args, n_points))
    return 1 if any(row["status"] != "ok" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
