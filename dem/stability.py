"""Stability guards: an estimate of the critical time step before a run, and the energy check
during one (SPEC §2; explicit Verlet-type maps are stable for ``ω_max h < 2``).

The estimate takes the stiffest linear oscillator of the model: a bond's axial spring
``K_a/r0²`` between its two masses and its bending spring ``K_m`` between the two inertias; a
Hertz contact at the overlap ``δ*`` that the fastest particle's kinetic energy would reach
(``(2/5) K δ*^{5/2} = ½ m v²``, at least 1 %); Lennard-Jones at the bottom of its well
(``57.1 ε/σ²`` on a site mass). Rotation adds the RRP limit ``h |Ω| < 1``. The shear binder is
quartic in the shear angle (``1 − s ≈ γ²/2``) and adds no linear stiffness.
"""

from dataclasses import dataclass

import numpy as np

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
    inverse_mass = np.where(model.pinned, 0.0, 1.0 / model.mass)
    inverse_inertia = np.where(model.clamped[:, None], 0.0, 1.0 / model.inertia).max(axis=1)
    b = model.bonds
    if len(b):
        axial = b.k_axial / b.rest_length ** 2 * (inverse_mass[b.i] + inverse_mass[b.j])
        bending = b.k_bending * (inverse_inertia[b.i] + inverse_inertia[b.j])
        for name, omega2 in (("binder axial", axial), ("binder bending", bending)):
            k = int(np.argmax(omega2))
            if omega2[k] > 0:
                candidates.append(CriticalStep(2.0 / np.sqrt(omega2[k]), name, int(b.i[k])))
    contact = model.diameter > 0
    if contact.any() and (model.k_pp > 0 or model.k_pw > 0):
        energy = 0.5 * model.mass * np.sum(state.velocity ** 2, axis=1) + 1e-300
        for name, k_hertz, reach in (("Hertz particle–particle", model.k_pp, model.diameter),
                                     ("Hertz particle–wall", model.k_pw, 0.5 * model.diameter)):
            if k_hertz <= 0 or (name.endswith("wall") and not len(model.wall_point)):
                continue
            overlap = np.maximum((energy / (0.4 * k_hertz)) ** 0.4, 0.01)
            stiffness = 1.5 * k_hertz / reach ** 2 * np.sqrt(overlap)
            omega2 = np.where(contact, stiffness * inverse_mass * (2.0 if name.endswith("particle") else 1.0), 0.0)
            k = int(np.argmax(omega2))
            candidates.append(CriticalStep(2.0 / np.sqrt(omega2[k]), name, k))
    if len(model.lj_pairs) and model.lj_epsilon > 0:
        site_mass = model.mass[model.lj_pairs[:, 0]] / np.maximum(np.diff(model.site_start)[model.lj_pairs[:, 0]], 1)
        omega2 = 57.1 * model.lj_epsilon / model.lj_sigma ** 2 / site_mass
        k = int(np.argmax(omega2))
        candidates.append(CriticalStep(2.0 / np.sqrt(omega2[k]), "Lennard-Jones", int(model.lj_pairs[k, 0])))
    spin = np.linalg.norm(state.angular_velocity, axis=1)
    if spin.max() > 0:
        k = int(np.argmax(spin))
        candidates.append(CriticalStep(1.0 / spin[k], "RRP rotation increment h|Ω| < 1", k))
    return min(candidates, key=lambda c: c.dt)


def memory_estimate(model):
    """Bytes the run will hold: model and state arrays, the lgvi momenta and the neighbour list
    (rows sized from a build at the current configuration is not done here: 14 entries per
    contact body are assumed, a dense packing's count with its Verlet skin)."""
    n = model.n_bodies
    arrays = [v for v in vars(model).values() if isinstance(v, np.ndarray)]
    arrays += [v for v in vars(model.bonds).values() if isinstance(v, np.ndarray)]
    total = sum(a.nbytes for a in arrays)
    total += n * (5 * 24 + 32 + 16)  # state: x, v, Ω, F, τ; the quaternion; two booked energies
    total += n * (24 + 24 + 32)  # lgvi momenta, inverse mass and inertia
    contact = int(np.count_nonzero(model.diameter > 0))
    total += contact * 14 * 4 * 1.25 + n * (24 + 8 + 16 + 4)  # neighbour rows and cells
    return int(total)


class EnergyGuard:
    """Observer that stops a run (raising `dem.simulation.SimulationError`) once
    ``|E − E(0)|`` exceeds ``tolerance`` times the energy scale (the sum of the magnitudes of the
    budget's components at the start), naming the step and the fastest body."""

    def __init__(self, every, tolerance, reference=None):
        self.every = every
        self.tolerance = tolerance
        self.reference = reference  # (E(0), scale), from the start or a checkpoint

    def report(self, sim):
        from .simulation import SimulationError
        from .state import ENERGY_COMPONENTS

        row = sim.energy_budget()
        if self.reference is None:
            self.reference = (row["total"], sum(abs(row[name]) for name in ENERGY_COMPONENTS) or 1.0)
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


__all__ = ["CriticalStep", "EnergyGuard", "SAFE_FRACTION", "critical_time_step", "memory_estimate"]
