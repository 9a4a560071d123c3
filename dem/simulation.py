"""`Simulation`: owns the model, the state, the contact table, the scheme and the observers, and
runs the loop.

Loop order (`Simulation.run`): find the next step at which some observer is due (or at most
`Simulation.max_chunk` steps ahead); advance to it with compiled steps (`dem.engine`, no Python
per step); then every due observer reports, in the order given. Observers that read only what
the loop samples (``sampled = True``: the logs and the energy guard) are not waited for: the
loop samples the state at their steps (`dem.diagnostics.Sample`) and they ``record`` the rows
after the chunk, in order, so that a log row costs no call from Python; they report at a chunk's
end like the others (on the sample of that step, taken in the loop). A model with invariants
(functions of the state, in Python) is sampled from Python, a chunk per row. Step 0 is reported
before the first step; a restarted run reports from its next due step on. Between chunks the
loop honours a stop request (`Simulation.request_stop`, set by the command line's signal
handlers), leaving the state at a whole step.
"""

import logging
import math
import time

import numpy as np

from .diagnostics import read_sample, sample
from .engine import (
    FAILED,
    NOT_FINITE,
    OK,
    advance_module,
    arguments,
    compile_estimate,
    new_contacts,
    record_compile_time,
    sample_width,
    store_contacts,
)
from .feeding import run_bodies
from .integrators import SCHEMES
from .interactions import list_diameters

log = logging.getLogger("dem")


class SimulationError(RuntimeError):
    """A run that cannot go on (instability, invalid step); the message suggests a remedy."""


#: below this many bodies the kernels run serially (threading overhead would dominate)
PARALLEL_THRESHOLD = 4096


class Simulation:
    """Advance ``state`` under ``model`` with ``integrator`` (a name of `dem.integrators.SCHEMES`).

    ``observers`` have ``every`` (steps; 0 = never except at the start and the end), ``report(sim)``
    and ``close(sim)``; those with ``sampled = True`` read only `sample` and also have
    ``record(sim, step, time, sample)``, for a row sampled in the loop before the state's step.
    Kernels run on numba's threads (``numba.set_num_threads``) when there are at least
    `PARALLEL_THRESHOLD` bodies; ``parallel`` forces the choice. Results are the same,
    bit for bit, whatever the choice and the number of threads. ``restored`` is what
    `dem.checkpoint.restore` returns, to continue a run. ``device = "cuda"`` runs the steps on a
    GPU (`dem.gpu`; `dem.gpu.GPUError` where it cannot). The steps are run by ``loop``
    (`CompiledLoop`; under MPI, `dem.distributed.RankLoop`).
    """

    def __init__(self, model, state, integrator="rrp2", dt=1e-3, observers=(), parallel=None, restored=None,
                 device="cpu"):
        scheme = self._configure(model, state, integrator, dt, observers, parallel)
        self._configure_device(device)
        self.bodies = run_bodies(model, state)  # (the sources' bodies not in play parked: `dem.feeding`)
        self.contacts = new_contacts(model)
        self._sample = (None, None)  # (step, the Sample of that step)
        walls = state.interactions["walls"].point.shape[0] if "walls" in model.interactions else 0
        self._sample_width = sample_width(walls)
        #: what runs the steps (`CompiledLoop`; an MPI rank's, `dem.distributed.RankLoop`)
        self.loop = CompiledLoop(self)
        if restored is None:
            self.aux = scheme.aux(state, self.bodies)
            self.recompute_forces()
        else:
            # a checkpoint's state carries its forces; the contact table is rebuilt where the
            # interrupted run last built it, so contact sums keep their order
            aux, contacts = restored
            self.aux = scheme.aux(state, self.bodies)
            if set(aux) == set(self.aux._fields):  # the same scheme: continue bit for bit
                self.aux = type(self.aux)(**aux)
            self.contacts.restore(contacts, list_diameters(model, self.bodies), state.cell)

    def _configure(self, model, state, integrator, dt, observers, parallel):
        """Check and set what every simulation has; returns the scheme."""
        if integrator not in SCHEMES:
            raise ValueError(f"unknown integrator {integrator!r}; choose one of {', '.join(SCHEMES)}")
        scheme = SCHEMES[integrator]
        if scheme.spherical and not model.spherical:
            raise ValueError(f"integrator {integrator!r} needs spherical inertia (J1 = J2 = J3) for every body")
        if not dt > 0.0:
            raise ValueError(f"dt must be positive, got {dt}")
        self.model = model
        self.state = state
        self.integrator = integrator
        self.scheme = scheme
        self.dt = float(dt)
        self.observers = list(observers)
        self.parallel = model.n_bodies >= PARALLEL_THRESHOLD if parallel is None else bool(parallel)
        self.stop_requested = None
        self._running = False  # inside `run` (only observers, which read, act between its chunks)
        #: set by an observer that changed the state between steps (`dem.feeding.Feeder`)
        self.altered = False
        #: appended to instability messages (the runner's: the step against its critical estimate)
        self.instability_hint = f"reduce simulation.dt (now {self.dt:g}) or the stiffnesses"
        self.max_chunk = max(100, 20_000_000 // max(model.n_bodies, 1))  # ~ a second of stepping
        return scheme

    def _configure_device(self, device):
        """Check that the GPU loop runs this system (`dem.gpu`); its chunks are longer."""
        if device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
        self.device = device
        if device == "cuda":
            from .device import GPUError
            from .gpu import problem
            refused = problem(self.model, self.integrator)
            if refused is not None:
                raise GPUError(f"device = 'cuda': {refused}")
            self.max_chunk = max(1000, 2_000_000_000 // max(self.model.n_bodies, 1))  # ~ a second on the GPU

    #: whether `_step` can sample the state in the loop (`run`)
    samples_in_loop = True

    def sample(self):
        """The `dem.diagnostics.Sample` of the current state, taken once per step however many
        observers ask (or in the loop, `run`)."""
        step, taken = self._sample
        if step != self.state.step:
            taken = sample(self.model, self.state, self.contacts, self.bodies)
            self._sample = (self.state.step, taken)
        return taken

    def forget_sample(self):
        """Drop the sample of the current step: the state or its books changed between steps
        (`dem.feeding`), so `sample` takes it anew."""
        self._sample = (None, None)

    def energy_budget(self):
        """The log row of the current state (`dem.diagnostics.energy_budget`)."""
        return self.sample().budget

    def request_stop(self, reason):
        """Ask `run` to stop after the current chunk of steps."""
        self.stop_requested = reason

    def stop_pending(self):
        """Whether a stop was requested (`dem.distributed`: by any process)."""
        return bool(self.stop_requested)

    def snapshot(self):
        """The simulation as one process sees the whole system, for writers: this one
        (`dem.distributed`: the state gathered on rank 0, None on the others)."""
        return self

    def advance(self, n_steps):
        """Run ``n_steps`` steps in compiled code; raise `SimulationError` if the run breaks down."""
        self._advance(n_steps, 0)

    def _advance(self, n_steps, every):
        """`advance`, sampling the state after every step whose number is a multiple of ``every``
        (> 0) for the observers that read samples (`_record`), also when the run breaks down."""
        if n_steps <= 0:
            return
        first = self.state.step
        status, body, done, rows = self._step(n_steps, self.dt, every)
        self.state.step += done
        self.state.time = self.state.step * self.dt
        self._record(first, every, rows)
        if status == FAILED:
            raise SimulationError(f"step {self.state.step + 1}: body {body} {self.scheme.failure}; "
                                  f"{self.instability_hint}")
        if status == NOT_FINITE:
            raise SimulationError(f"step {self.state.step}: body {body} has a non-finite position or velocity (the "
                                  f"run went unstable); {self.instability_hint}")
        assert status == OK

    def _record(self, first, every, rows):
        """Hand the ``rows`` the loop sampled after step ``first`` to the observers that read
        samples, in order, then let them flush what they wrote; the row of the current step is
        kept for `sample` (the step's observers report on it)."""
        for k, row in enumerate(rows):
            step = (first // every + 1 + k) * every
            taken = read_sample(row)
            if step == self.state.step:
                self._sample = (step, taken)
                continue
            for observer in self.observers:
                if getattr(observer, "sampled", False) and observer.every > 0 and step % observer.every == 0:
                    observer.record(self, step, step * self.dt, taken)
        for observer in self.observers:
            if getattr(observer, "sampled", False) and hasattr(observer, "flush"):
                observer.flush()

    def _step(self, n_steps, h, every=0):
        """``n_steps`` steps of size ``h`` by the `loop` (0 steps: the forces of the current
        state), sampling after every step whose number is a multiple of ``every`` > 0. Returns
        ``(status, body, steps done, sampled rows)``."""
        return self.loop.advance(n_steps, h, every)

    def recompute_forces(self):
        """The forces of the current configuration, after a change between steps (no work
        booked): the start of a run, a body inserted or removed (`dem.feeding`)."""
        self._step(0, 0.0)

    def run(self, end_step, progress=None):
        """Advance to step ``end_step``, letting observers report when due; ``progress`` is an
        optional callable ``progress(step)`` called once the start is reported and after each
        chunk. Returns False if a stop
        was requested before the end (the last chunk is then not reported), True otherwise."""
        every = self._sampling()
        self._running = True
        try:
            if self.state.step == 0:
                self.report_due(due_only=False)
            if progress is not None:
                progress(self.state.step)
            while self.state.step < end_step:
                if self.stop_pending():
                    return False
                target = min([end_step, self.state.step + self.max_chunk]
                             + [self._next_due(o) for o in self.observers
                                if not (every and getattr(o, "sampled", False))])
                self._advance(target - self.state.step, every)
                self.report_due(due_only=self.state.step < end_step)
                if progress is not None:
                    progress(self.state.step)
            return True
        finally:
            self._running = False
            for observer in self.observers:
                observer.close(self)

    def _sampling(self):
        """The steps between the loop's samples: the greatest common divisor of the intervals of
        the observers that read samples; 0 when there are none, when the model logs invariants or
        when the loop cannot sample (`samples_in_loop`)."""
        if not self.samples_in_loop or self.model.invariants:
            return 0
        return math.gcd(*[o.every for o in self.observers if getattr(o, "sampled", False) and o.every > 0])

    def _next_due(self, observer):
        every = observer.every
        if every <= 0:
            return np.iinfo(np.int64).max
        return (self.state.step // every + 1) * every

    def _due(self, due_only):
        """The observers to report now: all, or those whose step it is."""
        return [observer for observer in self.observers
                if not due_only or (observer.every > 0 and self.state.step % observer.every == 0)]

    def report_due(self, due_only):
        """Let the observers report: all, or those whose step it is (``due_only``)."""
        for observer in self._due(due_only):
            observer.report(self)


class CompiledLoop:
    """The steps of ``sim`` (a `Simulation`) in one call of the compiled loop (`dem.engine`) or
    of the GPU's (`dem.gpu.DeviceLoop`), built at the first call (``engine``: its ``advance``)."""

    def __init__(self, sim):
        self.sim = sim
        self.engine = None

    def advance(self, n_steps, h, every):
        """`Simulation._step`."""
        sim = self.sim
        names = tuple(sim.model.interactions)
        estimate = None
        if self.engine is None:
            if sim.device == "cuda":
                from .gpu import DeviceLoop
                self.engine = DeviceLoop(sim.scheme, names).advance
            else:
                self.engine = advance_module(sim.scheme, names, sim.parallel).advance
                estimate = compile_estimate(sim.scheme, names, sim.parallel)
            if estimate is not None:
                log.info("compiling the %s stepping loop for %s, %s (first run of this kind of scene on this "
                         "machine: about %.0f s; cached for later runs)", sim.scheme.name,
                         ", ".join(names) or "free bodies", "parallel" if sim.parallel else "serial", estimate)
        if sim.device == "cuda":  # the state stays on the GPU between the chunks of `run`
            self.engine.__self__.resident = sim._running
        started = time.perf_counter()
        histories, parameters = arguments(sim.model, sim.state, sim.contacts)
        rows = np.empty((n_steps // every + 1 if every > 0 else 0, sim._sample_width))
        status, body, done, sampled, *carried = self.engine(
            n_steps, h, sim.state.step, every, rows, sim.state.arrays(), sim.bodies, sim.aux,
            sim.contacts.arrays(), sim.contacts.index, *histories, *parameters,
        )
        store_contacts(sim.model, sim.contacts, carried)
        if estimate is not None:
            record_compile_time(sim.scheme, names, sim.parallel, time.perf_counter() - started)
        return status, body, done, rows[:sampled]
