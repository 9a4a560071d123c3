"""Stability guards: an estimate of the critical time step before a run (docs/theory.md §2; explicit
Verlet-type maps are stable for ``ω_max h < 2``) and a memory estimate.

Each interaction contributes its stiffest linear oscillator (`Interaction.critical_step`: the
binder's axial and bending springs, a Hertz contact at the overlap the fastest particle could
reach, Lennard-Jones at the bottom of its well); rotation adds the RRP limit ``h |Ω| < 1``.
"""

from dataclasses import dataclass

import numpy as np

from .interactions import INTERACTIONS, history_width, list_diameters, loads_width

#: a run whose dt exceeds this fraction of the critical estimate is warned about
SAFE_FRACTION = 0.25


@dataclass
class CriticalStep:
    dt: float
    limited_by: str
    body: int

    def describe(self, dt):
        return (f"critical time step ≈ {self.dt:.3g} ({self.limited_by}, body {self.body}); "
                f"dt = {dt:g} is {dt / self.dt:.2g} of it")


def critical_time_step(model, state):
    """The smallest of the per-interaction estimates, as a `CriticalStep`."""
    candidates = [CriticalStep(np.inf, "nothing stiff", -1)]
    for name, params in model.interactions.items():
        estimate = INTERACTIONS[name].critical_step
        if estimate is not None:
            candidates += [CriticalStep(*c) for c in estimate(model, state, params)]
    spin = np.linalg.norm(state.angular_velocity, axis=1)
    if spin.max() > 0:
        k = int(np.argmax(spin))
        candidates.append(CriticalStep(1.0 / spin[k], "RRP rotation increment h|Ω| < 1", k))
    return min(candidates, key=lambda c: c.dt)


def _nbytes(value):
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    return 0


def memory_estimate(model, state):
    """Bytes the run will hold: model and state arrays (the interactions' own state too),
    the lgvi momenta, the neighbour list (14 entries per contact body assumed, a dense
    packing's count with its Verlet skin) and the per-contact histories (one slot per listed
    pair, `dem.contacts`: 7 per contact body, of the history and its pair scratch, 1/16 spare)."""
    n = model.n_bodies
    arrays = [v for v in vars(model).values() if isinstance(v, np.ndarray)]
    arrays += [v for v in vars(model.bonds).values() if isinstance(v, np.ndarray)]
    arrays += [v for law in model.bonds.law_parameters.values() for v in law.values()]
    total = sum(a.nbytes for a in arrays)
    total += sum(_nbytes(own) for own in state.interactions.values())
    total += n * (5 * 24 + 32)  # state: x, v, Ω, F, τ; the quaternion
    total += n * (24 + 24 + 32)  # lgvi momenta, inverse mass and inertia
    contact = int(np.count_nonzero(list_diameters(model, model) > 0))
    total += contact * 14 * 4 * 1.25 + n * (24 + 8 + 8 + 16 + 4)  # neighbour rows, owner offsets and cells
    widths = [history_width(name, params) + loads_width(name, params) for name, params in model.interactions.items()]
    total += contact * 7 * sum(widths) * 8 * 17 / 16
    return int(total)


__all__ = ["CriticalStep", "SAFE_FRACTION", "critical_time_step", "memory_estimate"]
