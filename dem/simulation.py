"""`Simulation`: owns the model, the state, the integrator and the observers, and runs the loop.

Loop order (`Simulation.run`): find the next step at which some observer is due (or at most
`Simulation.max_chunk` steps ahead); advance to it with compiled steps
(`dem.integrators._advance_kernel`, no Python per step); then every due observer reports, in the
order given. Step 0 is reported before the first step; a restarted run reports from its next due
step on. Between chunks the loop honours a stop request (`Simulation.request_stop`, set by the
command line's signal handlers), leaving the state at a whole step.
"""

import numba
import numpy as np

from .diagnostics import energy_budget
from .integrators import (
    INTEGRATORS, NEWTON_FAILED, NOT_FINITE, OK, RRP_LIMIT, _advance_kernel, _angular_momentum_kernel,
)
from .interactions import compute_forces
from .neighbors import N_BUILDS, NeighborList


class SimulationError(RuntimeError):
    """A run that cannot go on (instability, invalid step); the message suggests a remedy."""


#: below this many bodies the kernels run serially (threading overhead would dominate)
PARALLEL_THRESHOLD = 4096


class Simulation:
    """Advance ``state`` under ``model`` with ``integrator`` (a name of `INTEGRATORS`).

    ``observers`` have ``every`` (steps; 0 = never except at the start and the end), ``report(sim)``
    and ``close(sim)``. Kernels run on numba's threads (``numba.set_num_threads``) when there are
    at least `PARALLEL_THRESHOLD` bodies; ``parallel`` forces the choice. Results are the same,
    bit for bit, whatever the choice and the number of threads.
    """

    def __init__(self, model, state, integrator="rrp2", dt=1e-3, observers=(), parallel=None, restored=None):
        if integrator not in INTEGRATORS:
            raise ValueError(f"unknown integrator {integrator!r}; choose one of {', '.join(INTEGRATORS)}")
        scheme, spherical_only, _ = INTEGRATORS[integrator]
        if spherical_only and not model.spherical:
            raise ValueError(f"integrator {integrator!r} needs spherical inertia (J1 = J2 = J3) for every body")
        if not dt > 0.0:
            raise ValueError(f"dt must be positive, got {dt}")
        self.model = model
        self.state = state
        self.integrator = integrator
        self.dt = float(dt)
        self.observers = list(observers)
        self._scheme = scheme
        self._model_arrays = model.arrays()
        self.neighbors = NeighborList(model.n_bodies)
        self.parallel = model.n_bodies >= PARALLEL_THRESHOLD if parallel is None else bool(parallel)
        self.stop_requested = None
        self.max_chunk = max(100, 20_000_000 // max(model.n_bodies, 1))  # ~ a second of stepping
        self._energy_row = (None, None)
        # spatial angular momenta, integrated by lgvi for anisotropic bodies (Ω follows from them)
        self.angular_momentum = np.zeros((model.n_bodies, 3))
        if restored is None:
            _angular_momentum_kernel(state.arrays(), self._model_arrays, self.angular_momentum)
            compute_forces(model, state, self.neighbors, self._model_arrays, parallel=self.parallel)
        else:
            # a checkpoint's state carries its forces; the neighbour list is rebuilt at the reference
            # positions of the interrupted run's last build, so contact sums keep their order
            self.angular_momentum[:], reference, builds = restored
            if builds > 0 and model.k_pp > 0:
                self.neighbors.update(reference, model.diameter, model.skin, parallel=self.parallel)
                self.neighbors.counters[N_BUILDS] = builds

    def energy_budget(self):
        """The log row of the current state (`dem.diagnostics.energy_budget`), computed once per
        step however many observers ask."""
        step, row = self._energy_row
        if step != self.state.step:
            row = energy_budget(self.model, self.state, self.neighbors, self._model_arrays)
            self._energy_row = (self.state.step, row)
        return row

    def request_stop(self, reason):
        """Ask `run` to stop after the current chunk of steps."""
        self.stop_requested = reason

    def advance(self, n_steps):
        """Run ``n_steps`` steps in compiled code; raise `SimulationError` if the run breaks down."""
        if n_steps <= 0:
            return
        parallel = self.parallel and numba.get_num_threads() > 1
        status, body, done, self.neighbors.index = _advance_kernel(
            n_steps, self._scheme, self.dt, parallel, self.state.arrays(), self._model_arrays, self.angular_momentum,
            *self.neighbors.arrays(),
        )
        self.state.step += done
        self.state.time = self.state.step * self.dt
        if status == RRP_LIMIT:
            raise SimulationError(
                f"step {self.state.step + 1}: body {body} would turn by π/2 or more in one step "
                f"(h²|Ω + hτ/2J|² ≥ 1, the limit of the 'rrp' map, seed 001 eq. 16); "
                f"reduce simulation.dt (now {self.dt:g})"
            )
        if status == NEWTON_FAILED:
            raise SimulationError(
                f"step {self.state.step + 1}: the 'lgvi' rotation update of body {body} has no solution "
                f"(Newton did not converge: the body would turn too far in one step); "
                f"reduce simulation.dt (now {self.dt:g})"
            )
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
