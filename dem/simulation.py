"""`Simulation`: owns the model, the state, the contact table, the scheme and the observers, and
runs the loop.

Loop order (`Simulation.run`): find the next step at which some observer is due (or at most
`Simulation.max_chunk` steps ahead); advance to it with compiled steps (`dem.engine`, no Python
per step); then every due observer reports, in the order given. Step 0 is reported before the
first step; a restarted run reports from its next due step on. Between chunks the loop honours a
stop request (`Simulation.request_stop`, set by the command line's signal handlers), leaving the
state at a whole step.
"""

import numpy as np

from .diagnostics import energy_budget
from .engine import FAILED, NOT_FINITE, OK, advance_module, arguments, compute_forces, new_contacts, store_contacts
from .integrators import SCHEMES


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
        self.max_chunk = max(100, 20_000_000 // max(model.n_bodies, 1))  # ~ a second of stepping
        self.bodies = model.body_arrays()
        self.contacts = new_contacts(model)
        self._energy_row = (None, None)
        self._engine = None
        if restored is None:
            self.aux = scheme.aux(state, self.bodies)
            self.compute_forces()
        else:
            # a checkpoint's state carries its forces; the contact table is rebuilt where the
            # interrupted run last built it, so contact sums keep their order
            aux, contacts = restored
            self.aux = scheme.aux(state, self.bodies)
            if set(aux) == set(self.aux._fields):  # the same scheme: continue bit for bit
                self.aux = type(self.aux)(**aux)
            self.contacts.restore(contacts, model.diameter)

    def compute_forces(self, dt=0.0):
        """Evaluate every interaction at the current state (``dt`` books non-conservative work;
        0: none), updating the contact table."""
        compute_forces(self.model, self.state, self.contacts, self.bodies, dt, self.parallel)

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
        if self._engine is None:
            self._engine = advance_module(self.scheme, tuple(self.model.interactions), self.parallel).advance
        histories, parameters = arguments(self.model, self.state, self.contacts)
        status, body, done, *carried = self._engine(
            n_steps, self.dt, self.state.arrays(), self.bodies, self.aux, self.contacts.arrays(), self.contacts.index,
            *histories, *parameters,
        )
        store_contacts(self.model, self.contacts, carried)
        self.state.step += done
        self.state.time = self.state.step * self.dt
        if status == FAILED:
            raise SimulationError(f"step {self.state.step + 1}: body {body} {self.scheme.failure}; "
                                  f"reduce simulation.dt (now {self.dt:g})")
        if status == NOT_FINITE:
            raise SimulationError(
                f"step {self.state.step}: body {body} has a non-finite position or velocity "
                f"(the run went unstable); reduce simulation.dt (now {self.dt:g}) or the stiffnesses"
            )
        assert status == OK

    def run(self, end_step, progress=None):
        """Advance to step ``end_step``, letting observers report when due; ``progress`` is an
        optional callable ``progress(step)`` called after each chunk. Returns False if a stop
        was requested before the end (the last chunk is then not reported), True otherwise."""
        try:
            if self.state.step == 0:
                self._report(due_only=False)
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
