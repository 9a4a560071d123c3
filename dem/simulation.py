"""`Simulation`: owns the model, the state, the contact table, the scheme and the observers, and
runs the loop.

Loop order (`Simulation.run`): find the next step at which some observer is due (or at most
`Simulation.max_chunk` steps ahead); advance to it with compiled steps (`dem.engine`, no Python
per step); then every due observer reports, in the order given. Step 0 is reported before the
first step; a restarted run reports from its next due step on. Between chunks the loop honours a
stop request (`Simulation.request_stop`, set by the command line's signal handlers), leaving the
state at a whole step.
"""

import logging
import time

import numpy as np

from .diagnostics import energy_budget
from .engine import (
    FAILED,
    NOT_FINITE,
    OK,
    advance_module,
    arguments,
    compile_estimate,
    new_contacts,
    record_compile_time,
    store_contacts,
)
from .integrators import SCHEMES

log = logging.getLogger("dem")


class SimulationError(RuntimeError):
    """A run that cannot go on (instability, invalid step); the message suggests a remedy."""


#: below this many bodies the kernels run serially (threading overhead would dominate)
PARALLEL_THRESHOLD = 4096


class Simulation:
    """Advance ``state`` under ``model`` with ``integrator`` (a name of `dem.integrators.SCHEMES`).

    ``observers`` have ``every`` (steps; 0 = never except at the start and the end), ``report(sim)``
    and ``close(sim)``. Kernels run on numba's threads (``numba.set_num_threads``) when there are
    at least `PARALLEL_THRESHOLD` bodies; ``parallel`` forces the choice. Results are the same,
    bit for bit, whatever the choice and the number of threads. ``restored`` is what
    `dem.checkpoint.restore` returns, to continue a run.
    """

    def __init__(self, model, state, integrator="rrp2", dt=1e-3, observers=(), parallel=None, restored=None):
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
        #: appended to instability messages (the runner's: the step against its critical estimate)
        self.instability_hint = f"reduce simulation.dt (now {self.dt:g}) or the stiffnesses"
        self.max_chunk = max(100, 20_000_000 // max(model.n_bodies, 1))  # ~ a second of stepping
        self.bodies = model.body_arrays()
        self.contacts = new_contacts(model)
        self._energy_row = (None, None)
        self._engine = None
        if restored is None:
            self.aux = scheme.aux(state, self.bodies)
            self._step(0, 0.0)  # the forces of the initial configuration (no work booked)
        else:
            # a checkpoint's state carries its forces; the contact table is rebuilt where the
            # interrupted run last built it, so contact sums keep their order
            aux, contacts = restored
            self.aux = scheme.aux(state, self.bodies)
            if set(aux) == set(self.aux._fields):  # the same scheme: continue bit for bit
                self.aux = type(self.aux)(**aux)
            self.contacts.restore(contacts, model.diameter)

    def energy_budget(self):
        """The log row of the current state (`dem.diagnostics.energy_budget`), computed once per
        step however many observers ask."""
        step, row = self._energy_row
        if step != self.state.step:
            row = energy_budget(self.model, self.state, self.contacts, self.bodies)
            self._energy_row = (self.state.step, row)
        return row

    def request_stop(self, reason):
        """Ask `run` to stop after the current chunk of steps."""
        self.stop_requested = reason

    def advance(self, n_steps):
        """Run ``n_steps`` steps in compiled code; raise `SimulationError` if the run breaks down."""
        if n_steps <= 0:
            return
        status, body, done = self._step(n_steps, self.dt)
        self.state.step += done
        self.state.time = self.state.step * self.dt
        if status == FAILED:
            raise SimulationError(f"step {self.state.step + 1}: body {body} {self.scheme.failure}; "
                                  f"{self.instability_hint}")
        if status == NOT_FINITE:
            raise SimulationError(f"step {self.state.step}: body {body} has a non-finite position or velocity (the "
                                  f"run went unstable); {self.instability_hint}")
        assert status == OK

    def _step(self, n_steps, h):
        """The compiled loop (`dem.engine`): ``n_steps`` steps of size ``h`` (0 steps: the forces
        of the current state). Returns ``(status, body, steps done)``."""
        names = tuple(self.model.interactions)
        estimate = None
        if self._engine is None:
            self._engine = advance_module(self.scheme, names, self.parallel).advance
            estimate = compile_estimate(self.scheme, names, self.parallel)
            if estimate is not None:
                log.info("compiling the %s stepping loop for %s, %s (first run of this kind of scene on this "
                         "machine: about %.0f s; cached for later runs)", self.scheme.name,
                         ", ".join(names) or "free bodies", "parallel" if self.parallel else "serial", estimate)
        started = time.perf_counter()
        histories, parameters = arguments(self.model, self.state, self.contacts)
        status, body, done, *carried = self._engine(
            n_steps, h, self.state.arrays(), self.bodies, self.aux, self.contacts.arrays(), self.contacts.index,
            *histories, *parameters,
        )
        store_contacts(self.model, self.contacts, carried)
        if estimate is not None:
            record_compile_time(self.scheme, names, self.parallel, time.perf_counter() - started)
        return status, body, done

    def run(self, end_step, progress=None):
        """Advance to step ``end_step``, letting observers report when due; ``progress`` is an
        optional callable ``progress(step)`` called once the start is reported and after each
        chunk. Returns False if a stop
        was requested before the end (the last chunk is then not reported), True otherwise."""
        try:
            if self.state.step == 0:
                self._report(due_only=False)
            if progress is not None:
                progress(self.state.step)
            while self.state.step < end_step:
                if self.stop_requested:
                    return False
                target = min([end_step, self.state.step + self.max_chunk]
                             + [self._next_due(o) for o in self.observers])
                self.advance(target - self.state.step)
                self._report(due_only=self.state.step < end_step)
                if progress is not None:
                    progress(self.state.step)
            return True
        finally:
            for observer in self.observers:
                observer.close(self)

    def _next_due(self, observer):
        every = observer.every
        if every <= 0:
            return np.iinfo(np.int64).max
        return (self.state.step // every + 1) * every

    def _report(self, due_only):
        for observer in self.observers:
            if not due_only or (observer.every > 0 and self.state.step % observer.every == 0):
                observer.report(self)
