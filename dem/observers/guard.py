"""Observer that stops a run whose energy error grows far beyond the energy in play: a blow-up."""

from ..interactions import DRIVEN_COLUMNS, energy_columns
from ..simulation import SimulationError


class EnergyGuard:
    """Stops a run (raising `dem.simulation.SimulationError`) once ``|E − E(0)|`` exceeds
    ``tolerance`` times the energy scale: the sum of the magnitudes of the budget's components
    at the start (or, for a system that starts with no energy at all, when energy first enters
    it), plus the work moving walls and a deforming cell have done so far (``|walls|``,
    ``|cell|``: energy they put in is in play too). ``total`` books damping, breakage, friction,
    wall and cell work, so it is constant but for the integration error: a well-resolved run
    stays orders of magnitude below the default tolerance of 10, an unstable one (``dt`` above
    the critical step) passes it within a few oscillations. The message names the step, the
    fastest body and ``hint`` (the critical step and the remedy). ``reference`` is ``(E(0),
    scale)`` from a checkpoint. It reads only the state's `dem.diagnostics.Sample` (``sampled``:
    the loop samples it, `dem.simulation`)."""

    sampled = True

    def __init__(self, every, tolerance, reference=None, hint=""):
        self.every = every
        self.tolerance = tolerance
        self.reference = reference
        self.hint = hint

    def report(self, sim):
        self.record(sim, sim.state.step, sim.state.time, sim.sample())

    def record(self, sim, step, time, sample):
        row = sample.budget
        if self.reference is None or self.reference[1] == 0.0:
            scale = sum(abs(row[name]) for name in energy_columns())
            self.reference = (row["total"] if self.reference is None else self.reference[0], scale)
        energy0, scale0 = self.reference
        if self.tolerance <= 0 or scale0 == 0.0:
            return
        scale = scale0 + sum(abs(row[name]) for name in DRIVEN_COLUMNS)
        error = abs(row["total"] - energy0) / scale
        if not error <= self.tolerance:
            body, speed = sample.fastest
            raise SimulationError(
                f"step {step} (t = {time:.6g}): the energy error {error:.3g} is more than "
                f"simulation.energy_tolerance = {self.tolerance:g} times the initial energy scale: the run went "
                f"unstable (fastest body: {body}, |v| = {speed:.3g}); {self.hint or 'reduce simulation.dt'}"
            )

    def close(self, sim):
        pass
