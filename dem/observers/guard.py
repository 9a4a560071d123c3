"""Observer that stops a run whose energy error grows past a tolerance."""

import numpy as np

from ..interactions import energy_columns
from ..simulation import SimulationError

class EnergyGuard:
    """Stops a run (raising `dem.simulation.SimulationError`) once ``|E − E(0)|`` exceeds ``tolerance`` times
    the energy scale (the sum of the magnitudes of the budget's components at the start), naming
    the step and the fastest body. ``reference`` is ``(E(0), scale)`` from a checkpoint."""

    def __init__(self, every, tolerance, reference=None):
        self.every = every
        self.tolerance = tolerance
        self.reference = reference

    def report(self, sim):
        row = sim.energy_budget()
        if self.reference is None:
            self.reference = (row["total"], sum(abs(row[name]) for name in energy_columns()) or 1.0)
        energy0, scale = self.reference
        error = abs(row["total"] - energy0) / scale
        if self.tolerance > 0 and not error <= self.tolerance:
            speed = np.linalg.norm(sim.state.velocity, axis=1)
            body = int(np.argmax(speed))
            raise SimulationError(
                f"step {sim.state.step} (t = {sim.state.time:.6g}): the energy error {error:.3g} exceeds "
                f"simulation.energy_tolerance = {self.tolerance:g} (fastest body: {body}, |v| = {speed[body]:.3g}); "
                f"reduce simulation.dt (now {sim.dt:g}) or raise the tolerance"
            )

    def close(self, sim):
        pass
