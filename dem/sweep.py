"""Parameter studies: one run per point of a grid of scene overrides, on a Dask cluster.

    python -m dem sweep SCENE --grid KEY=[v1,v2,...] [--grid ...] [--set PATH=VALUE ...]
                        [--workers N | --scheduler ADDRESS] --out DIR

The points are the Cartesian product of the ``--grid`` lists, the first ``--grid`` varying
slowest. Each point is the run ``python -m dem run SCENE --set PATH=VALUE ... --set KEY=v ...
--out DIR/FOLDER`` (the ``--set`` overrides first, then the point's grid values), made on a Dask
worker by `dem.runner.run`; its outputs are those of that run made alone. ``DIR/sweep.csv`` has one
row per point (`COLUMNS`) and is rewritten as each point finishes.

Before anything is started or written, every point's scene is validated (`load_scene`); a bad
``--grid`` is a `SceneError` naming it. A point whose run fails (``SimulationError`` or any
other exception, or a worker that dies) is recorded with status ``failed`` and its error; the
other points go on. Running the same command again skips the points that are done: status ``ok``
in ``sweep.csv`` and a folder whose checkpoint reached ``t_end`` with the same scene text and
overrides; the others (failed, interrupted, changed) are run again from a fresh folder.

Point folders are named after the point, ``KEY=VALUE`` joined by commas
(``simulation.dt=0.001,contact.k_pp=2100``); characters other than letters, digits and
``. _ = , + -`` become ``_`` and such a name (or one over 100 characters) gets ``-`` and 8
hexadecimal digits of a hash of the exact overrides, so names stay unique and do not depend on
the other points of the grid.

Dask (the optional dependency ``dask[distributed]``: ``pip install ".[dask]"``) is imported only
when a sweep runs.
"""

import csv
import hashlib
import itertools
import logging
import math
import os
import re
import shutil
import signal
import sys
import threading
import time
import tomllib
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .checkpoint import CheckpointError, load_checkpoint
from .interactions import DRIVEN_COLUMNS
from .runner import CHECKPOINT, run
from .scene import load_scene, parse_override
from .schema import SceneError, printable, show, toml_text

log = logging.getLogger("dem")

INSTALL_DASK = "pip install \"dask[distributed]\"  (in dem's repository: pip install \".[dask]\")"
SWEEP_CSV = "sweep.csv"
#: the columns of sweep.csv after one column per grid key
COLUMNS = ("folder", "status", "final_energy_error", "max_energy_error", "wall_time", "error", "warnings")
#: longest readable part of a folder name
NAME_LIMIT = 100
#: how long ``--scheduler`` tries to reach the scheduler
CONNECT_TIMEOUT = "30s"


@dataclass(frozen=True)
class Grid:
    """One ``--grid KEY=[v1,v2,...]``: the dotted key, its values, and the argument as given."""

    key: str
    values: tuple
    text: str


@dataclass(frozen=True)
class Point:
    """One run of a sweep: its grid values (one per `Grid`), the ``KEY=VALUE`` overrides that make
    it, its folder name (in the sweep's folder) and its number of steps."""

    values: tuple
    overrides: tuple
    folder: str
    n_steps: int


@dataclass(frozen=True)
class Sweep:
    """A validated sweep: the scene, the grids, the ``--set`` overrides every point shares, the
    points and the sweep's folder."""

    scene_path: Path
    scene_text: str
    grids: tuple
    overrides: tuple
    points: tuple
    out: Path

    def point_overrides(self, point):
        return list(self.overrides) + list(point.overrides)


def csv_text(value):
    """A grid value as ``sweep.csv`` and the folder names show it: a string as it is, anything
    else as TOML."""
    return value if isinstance(value, str) else toml_text(value)


def _toml_or_bare(text):
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except (ValueError, RecursionError):  # tomllib.TOMLDecodeError is a ValueError
        return text.strip()


def _parse_list(raw):
    """``[v1, v2, ...]`` as TOML, or with bare strings (``[rrp,rrp2]``); None if it is not a list."""
    raw = raw.strip()
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
    except (ValueError, RecursionError):
        inner = raw[1:-1]
        if not (raw.startswith("[") and raw.endswith("]")) or any(c in inner for c in "[]{}\"'"):
            return None
        items = [item.strip() for item in inner.split(",")]
        if items and not items[-1]:
            items.pop()  # a trailing comma, as TOML allows
        if not all(items):
            return None
        return [_toml_or_bare(item) for item in items]
    return value if isinstance(value, list) else None


def parse_grid(text):
    """``KEY=[v1,v2,...]`` -> `Grid`; raises `SceneError` naming the argument."""
    shown = f"--grid {printable(text)}"
    key, equals, raw = text.partition("=")
    key = key.strip()
    if not equals or not all(key.split(".")):
        raise SceneError(f"{shown}: expected KEY=[v1,v2,...], e.g. --grid simulation.dt=[0.001,0.002]")
    if key == "output.dir":
        raise SceneError(f"{shown}: the sweep chooses each point's folder (inside --out)")
    values = _parse_list(raw)
    if values is None:
        raise SceneError(f"{shown}: the values must be a list [v1,v2,...] (TOML, or bare strings: [rrp,rrp2])")
    if not values:
        raise SceneError(f"{shown}: the list of values is empty")
    seen = set()
    for value in values:
        written = toml_text(value)
        if written in seen:
            raise SceneError(f"{shown}: the value {show(value)} appears twice")
        seen.add(written)
        if toml_text(parse_override(f"{key}={written}")[1]) != written:
            raise SceneError(f"{shown}: the value {show(value)} cannot be passed on as --set {key}=VALUE")
    return Grid(key, tuple(values), text)


def folder_name(grids, values, overrides):
    """The folder of one point: ``KEY=VALUE`` joined by commas, made safe (see the module docstring)."""
    name = ",".join(f"{grid.key}={value if isinstance(value, str) else toml_text(value).replace(', ', ',')}"
                    for grid, value in zip(grids, values))
    safe = re.sub(r"[^A-Za-z0-9._=,+-]", "_", name)
    if safe == name and len(name) <= NAME_LIMIT:
        return name
    digest = hashlib.sha1("\n".join(overrides).encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe[:NAME_LIMIT]}-{digest}"


def _problem(scene_path, overrides):
    try:
        load_scene(scene_path, overrides)
    except SceneError as error:
        return str(error)
    return None


def plan_sweep(scene_path, grid_texts, out, overrides=()):
    """Parse the grids and validate every point's scene; returns a `Sweep`. Starts and writes
    nothing. Raises `SceneError`: a bad ``--grid`` is named, with the value (or the point) that
    fails and the validation message."""
    scene_path, overrides = Path(scene_path), tuple(overrides)
    if not grid_texts:
        raise SceneError("sweep: give at least one --grid KEY=[v1,v2,...]")
    grids = tuple(parse_grid(text) for text in grid_texts)
    keys = [grid.key for grid in grids]
    for key in keys:
        if keys.count(key) > 1:
            raise SceneError(f"--grid {printable(key)}: the key is given twice; list all its values in one --grid")
    base = _problem(scene_path, overrides)
    points, folders = [], {}
    for values in itertools.product(*(grid.values for grid in grids)):
        point_overrides = tuple(f"{grid.key}={toml_text(value)}" for grid, value in zip(grids, values))
        try:
            scene = load_scene(scene_path, overrides + point_overrides)
        except SceneError as error:
            raise _grid_error(scene_path, overrides, grids, values, point_overrides, str(error), base) from None
        folder = folder_name(grids, values, point_overrides)
        if folder in folders:
            raise SceneError(f"--grid: the points {folders[folder]} and {', '.join(point_overrides)} would share "
                             f"the folder {folder}")
        folders[folder] = ", ".join(point_overrides)
        points.append(Point(values, point_overrides, folder, scene.n_steps))
    scene_text = scene_path.read_text(encoding="utf-8")
    return Sweep(scene_path, scene_text, grids, overrides, tuple(points), Path(out))


def _grid_error(scene_path, overrides, grids, values, point_overrides, problem, base):
    """The `SceneError` for a point that does not validate, naming the ``--grid`` arguments that
    make it fail: those whose value fails alone, or all of them when only the combination does."""
    if problem == base:
        return SceneError(problem)  # the scene or a --set is wrong whatever the grid
    for override in point_overrides:  # the --grid argument is named instead of the --set it became
        problem = problem.removeprefix(f"--set {printable(override)}: ")
    culprits = [k for k, override in enumerate(point_overrides)
                if _problem(scene_path, overrides + (override,)) not in (None, base)]
    if len(culprits) == 1:
        k = culprits[0]
        return SceneError(f"--grid {printable(grids[k].text)}: value {show(values[k])}: {problem}")
    culprits = culprits or range(len(grids))
    named = " ".join(f"--grid {printable(grids[k].text)}" for k in culprits)
    return SceneError(f"{named}: point {', '.join(printable(point_overrides[k]) for k in culprits)}: {problem}")


def energy_errors(path):
    """``(final, maximum)`` of ``|E − E(0)|/(|E(0)| + |W|)`` (column ``total``; ``W`` the work moving
    walls and a deforming cell have put in by that row, columns ``walls`` and ``cell``: the energy
    they bring is in play too) over the rows of a run's ``energy.csv``; ``(None, None)`` without
    rows, NaN when the scale is 0 or a row is not finite."""
    try:
        with open(path, encoding="utf-8", newline="") as file:
            rows = list(csv.reader(file))
    except OSError:
        return None, None
    if len(rows) < 2 or "total" not in rows[0]:
        return None, None
    columns = [rows[0].index(name) for name in ("total",) + DRIVEN_COLUMNS if name in rows[0]]
    try:
        values = np.array([[float(row[c]) for c in columns] for row in rows[1:] if len(row) == len(rows[0])])
    except ValueError:
        return None, None
    if len(values) == 0:
        return None, None
    total = values[:, 0]
    scale = abs(total[0]) + np.abs(values[:, 1:]).sum(axis=1)
    if not scale.all():
        return math.nan, math.nan
    error = np.abs(total - total[0]) / scale
    return float(error[-1]), float(np.max(error))  # NaN if any row is NaN


class _Warnings(logging.Handler):
    """Collects the warnings that the ``dem`` logger gives in this thread (e.g. a time step above
    the safe fraction of the critical one)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.messages = []

    def emit(self, record):
        if record.thread == self.thread:
            self.messages.append(record.getMessage())


def run_point(scene_path, overrides, folder):
    """Run one point into ``folder`` (what an earlier attempt left there is removed first) and
    summarise it: a dict of the `COLUMNS` ``status``, ``final_energy_error``,
    ``max_energy_error``, ``wall_time`` (s), ``error`` and ``warnings`` (the run's log warnings,
    which go there instead of the worker's terminal). Runs on a Dask worker; never raises."""
    folder = Path(folder)
    started = time.perf_counter()
    status, error = "ok", ""
    warnings = _Warnings()
    log.addHandler(warnings)
    try:
        if folder.exists():
            shutil.rmtree(folder)
        sim, _ = run(scene_path, overrides, folder, quiet=True)
        if sim.stop_requested:
            status, error = "failed", f"stopped by {sim.stop_requested} at step {sim.state.step}"
    except Exception as failure:  # noqa: BLE001 — every failure is recorded; none stops the sweep
        status, error = "failed", printable(f"{type(failure).__name__}: {failure}", limit=1000)
    finally:
        log.removeHandler(warnings)
    wall_time = time.perf_counter() - started
    final, maximum = energy_errors(folder / "energy.csv")
    return {"status": status, "final_energy_error": final, "max_energy_error": maximum, "wall_time": wall_time,
            "error": error, "warnings": printable(" | ".join(warnings.messages), limit=1000)}


def is_done(sweep, point, row):
    """Whether ``point`` need not run again: its ``sweep.csv`` ``row`` says ok and its folder's
    checkpoint reached ``t_end`` with the same scene text and overrides."""
    folder = sweep.out / point.folder
    if row is None or row.get("status") != "ok" or not (folder / "energy.csv").is_file():
        return False
    try:
        checkpoint = load_checkpoint(folder / CHECKPOINT)
    except CheckpointError:
        return False
    return (int(checkpoint["step"]) == point.n_steps
            and [str(text) for text in checkpoint["overrides"]] == sweep.point_overrides(point)
            and str(checkpoint["scene_text"]) == sweep.scene_text)


def read_sweep_csv(path):
    """The rows of an earlier ``sweep.csv`` by folder (empty if there is none)."""
    try:
        with open(path, encoding="utf-8", newline="") as file:
            return {row["folder"]: row for row in csv.DictReader(file) if row.get("folder")}
    except (OSError, KeyError, csv.Error, UnicodeDecodeError):
        return {}


def write_sweep_csv(sweep, rows):
    """Write ``DIR/sweep.csv`` atomically: one row per point, grid keys then `COLUMNS`."""
    path = sweep.out / SWEEP_CSV
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow([grid.key for grid in sweep.grids] + list(COLUMNS))
        for point in sweep.points:
            row = rows[point.folder]
            cells = ["" if row.get(name) is None else row[name] for name in COLUMNS]
            writer.writerow([csv_text(value) for value in point.values]
                            + [repr(cell) if isinstance(cell, float) else cell for cell in cells])
    os.replace(temporary, path)


def pending_points(sweep):
    """``(rows, pending)``: the ``sweep.csv`` rows by folder (kept for the points done, ``pending``
    for the others) and the points to run."""
    previous = read_sweep_csv(sweep.out / SWEEP_CSV)
    rows, pending = {}, []
    for point in sweep.points:
        old = previous.get(point.folder)
        if is_done(sweep, point, old):
            rows[point.folder] = {name: old.get(name) for name in COLUMNS}
        else:
            rows[point.folder] = {"folder": point.folder, "status": "pending"}
            pending.append(point)
    return rows, pending


def run_sweep(sweep, connect, quiet=False):
    """Run the points of ``sweep`` that are not done on Dask and keep ``DIR/sweep.csv`` up to
    date; returns its rows (dicts of `COLUMNS`, in point order). ``connect(n)`` returns a context
    manager yielding a ``distributed.Client`` for ``n`` points to run; it is called only if some
    point is to run."""
    rows, pending = pending_points(sweep)
    done = len(sweep.points) - len(pending)
    if done:
        log.info("%d of %d points already done in %s/ (skipped)", done, len(sweep.points), sweep.out)
    if not pending:
        write_sweep_csv(sweep, rows)
        return [rows[point.folder] for point in sweep.points]
    from distributed import as_completed

    if sweep.out.exists() and not sweep.out.is_dir():
        raise SceneError(f"--out {sweep.out}: is a file, not a folder")
    with connect(len(pending)) as client:
        sweep.out.mkdir(parents=True, exist_ok=True)
        write_sweep_csv(sweep, rows)
        log.info("%d points to run on %s (%d workers now)", len(pending), client.scheduler.address,
                 len(client.nthreads()))
        scene_path, tag = str(sweep.scene_path.resolve()), uuid.uuid4().hex[:8]
        futures = {client.submit(run_point, scene_path, sweep.point_overrides(point),
                                 str((sweep.out / point.folder).resolve()), key=f"dem-{tag}-{point.folder}",
                                 pure=False): point
                   for point in pending}
        failed = 0
        with tqdm(total=len(sweep.points), initial=done, unit="point", disable=quiet, desc=sweep.scene_path.stem,
                  dynamic_ncols=True) as bar:
            for future in as_completed(futures):
                point = futures[future]
                try:
                    result = future.result()
                except Exception as failure:  # noqa: BLE001 — e.g. the worker died (KilledWorker)
                    result = {"status": "failed", "error": printable(f"{type(failure).__name__}: {failure}", 1000)}
                rows[point.folder].update(result)
                write_sweep_csv(sweep, rows)
                failed += result["status"] != "ok"
                bar.set_postfix_str(f"{failed} failed", refresh=False)
                bar.update(1)
    return [rows[point.folder] for point in sweep.points]


def default_workers():
    """One worker process per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@contextmanager
def local_cluster(workers):
    """A ``distributed.Client`` on a local cluster of ``workers`` processes with one thread each
    (and one numba thread each, so that they do not oversubscribe the cores)."""
    from distributed import Client, LocalCluster

    # The worker processes start with Ctrl-C ignored: it stops the sweep here, which then stops them.
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    try:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               env={"NUMBA_NUM_THREADS": "1"})
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)
    with cluster, Client(cluster) as client:
        yield client


@contextmanager
def scheduler_client(address):
    """A ``distributed.Client`` connected to the running ``dask scheduler`` at ``address``."""
    from distributed import Client

    try:
        client = Client(address, timeout=CONNECT_TIMEOUT)
    except OSError as error:
        raise SceneError(f"--scheduler {printable(address)}: cannot connect ({printable(error)})") from None
    with client:
        yield client


def add_sweep_command(commands):
    """The ``sweep`` subcommand's arguments, on ``commands`` (argparse sub-parsers)."""
    sweep = commands.add_parser(
        "sweep", help="run a scene at every point of a parameter grid, on Dask",
        description="Run SCENE once per point of the grid (all combinations of the --grid values) on a Dask "
                    "cluster; each point's outputs go to DIR/KEY=VALUE,.../ and DIR/sweep.csv lists the points. "
                    "Running the same command again skips the points already done. Needs Dask: " + INSTALL_DASK)
    sweep.add_argument("scene", type=Path, help="scene file (TOML)")
    sweep.add_argument("--grid", dest="grids", action="append", default=[], metavar="KEY=[v1,v2,...]",
                       help="values of one scene key, e.g. simulation.dt=[0.001,0.002] (TOML list; bare strings "
                            "allowed: simulation.integrator=[rrp,rrp2]); repeat for more keys")
    sweep.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                       help="override a scene value for every point, as for run")
    sweep.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder of the sweep")
    where = sweep.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N",
                       help=f"worker processes of the local Dask cluster (default: one per core, here "
                            f"{default_workers()}; at most one per point)")
    where.add_argument("--scheduler", metavar="ADDRESS", help="use a running dask scheduler, e.g. tcp://host:8786")
    verbosity = sweep.add_mutually_exclusive_group()
    verbosity.add_argument("--quiet", action="store_true", help="warnings and errors only, no progress bar")
    verbosity.add_argument("--verbose", action="store_true", help="also report details")


def sweep_command(args):
    """``python -m dem sweep``: exit status 0 when every point ran to t_end, 1 when some failed,
    2 (a `SceneError` raised to `dem.cli.main`) for bad input; nothing is written then."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise SceneError(f"sweep needs Dask, which is not installed: {INSTALL_DASK}") from None
    if args.workers is not None and args.workers < 1:
        raise SceneError(f"--workers {args.workers}: must be at least 1")
    sweep = plan_sweep(args.scene, args.grids, args.out, args.overrides)
    if args.scheduler:
        def connect(_n_points):
            return scheduler_client(args.scheduler)
    else:
        def connect(n_points):
            return local_cluster(min(args.workers or default_workers(), n_points))
    if not args.verbose:
        logging.getLogger("distributed").setLevel(logging.WARNING)  # its start and stop reports
    started = time.perf_counter()
    try:
        rows = run_sweep(sweep, connect, args.quiet)
    except KeyboardInterrupt:
        print(f"dem: sweep interrupted; {SWEEP_CSV} in {sweep.out}/ lists the points done; run the same command "
              f"again to run the others", file=sys.stderr)
        return 130
    failed = sum(row["status"] != "ok" for row in rows)
    warned = sum(bool(row.get("warnings")) for row in rows)
    (log.warning if failed else log.info)(
        "%d points: %d ok, %d failed, %d with warnings (%.1f s); see %s", len(rows), len(rows) - failed, failed,
        warned, time.perf_counter() - started, sweep.out / SWEEP_CSV)
    return 1 if failed else 0
