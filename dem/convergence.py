"""Convergence and long-run energy metrics (docs/theory.md §4; seed 001 eqs. 35–38).

A `Trajectory` is a run sampled at fixed *times* ``t_k = k Δt_s`` (``Δt_s`` a multiple of the
step ``h``, so every run of a study is sampled at exactly the same instants, by integer step
counts). The metrics compare a run with ``E(0)`` or with a reference run at a much smaller step:

* `energy_error_h0` — seed 001 eq. (38): ``‖E_h − E(0)‖_{H0} / ‖E(0)‖_{H0}`` (trapezoid in time);
* `q_error_h1` — seed 001 eq. (37) with the H1 norm of eq. (35),
  ``‖q‖² = ∫ Σ_bodies (|x|² + |v|² + |θ|² + |Ω|²) dt``, ``|θ|`` the rotation angle of ``R``.
  It is the square root of a *difference of squared norms*, so an order-p method shows order
  ``p/2`` (order 1 for ``rrp2``), as seed 001 Fig. 1 reports;
* `state_error_max` — a plain max-norm error over samples and bodies (order p);
* `energy_error_max` — ``max_t |E(t) − E(0)|``;
* `drift` — least-squares slope of ``E(t) − E(0)`` and its early/late maxima (bounded or creeping).

Example (the smooth free-flight spinning torus)::

    from dem.convergence import trajectory, energy_error_max, observed_orders
    free = ["walls=[]", "contact.k_pp=0", "contact.k_pw=0", "torus.0.velocity=[1,0,0]",
            "torus.0.angular_velocity=[0.5,0,2]", "simulation.t_end=5"]
    runs = [trajectory("scenes/torus_impact.toml", h, "rrp2", free, 0.005) for h in (0.005, 0.0025, 0.00125)]
    errors = [energy_error_max(r.t, r.energy) for r in runs]
    observed_orders([r.dt for r in runs], errors)        # ≈ [2, 2]

(The binders make steps above about 8e-3 unstable for this ring.)
"""

import time
from dataclasses import dataclass

import numpy as np

from .runner import prepare
from .simulation import Simulation, SimulationError

__all__ = [
    "Trajectory", "drift", "energy_error_h0", "energy_error_max", "h1_norm_squared", "observed_orders",
    "q_error_h1", "rotation_angle", "state_error_max", "steps_per_sample", "trajectory",
]


@dataclass
class Trajectory:
    """A run sampled at ``t (K,)``: total energy ``energy (K,)`` and, when recorded, the state
    ``position, velocity (K, n, 3)``, ``orientation (K, n, 4)`` (unit quaternions, scalar first),
    ``angular_velocity (K, n, 3)`` (spatial Ω). ``failure`` is ``None`` for a complete run, else a
    message; ``failed_step`` the step at which it broke down (the samples stop before it)."""

    scene: str
    integrator: str
    dt: float
    t: np.ndarray
    energy: np.ndarray
    position: np.ndarray = None
    velocity: np.ndarray = None
    orientation: np.ndarray = None
    angular_velocity: np.ndarray = None
    steps: int = 0
    wall_time: float = 0.0
    failure: str = None
    failed_step: int = None

    @property
    def complete(self):
        return self.failure is None


def steps_per_sample(sample_every_time, dt):
    """The integer number of steps of size ``dt`` in ``sample_every_time``; raises `ValueError`
    when ``sample_every_time`` is not a multiple of ``dt`` (to a relative 1e-9)."""
    k = int(round(sample_every_time / dt))
    if k < 1 or abs(k * dt - sample_every_time) > 1e-9 * sample_every_time:
        raise ValueError(f"sampling interval {sample_every_time:g} is not a multiple of dt = {dt:g}")
    return k


def trajectory(scene_path, dt, integrator, overrides=(), sample_every_time=None, t_end=None,
               record_state=True, stop_on_failure=False, blowup_relative_energy=None):
    """Run ``scene_path`` (with ``overrides``, ``--set`` syntax) at step ``dt`` with ``integrator``
    and sample it every ``sample_every_time`` (default: ``dt``; use the coarsest step of a study so
    that every run is sampled at the same instants) up to ``t_end`` (default: the scene's).

    Nothing is written to disk. A run that breaks down raises `dem.SimulationError`, unless
    ``stop_on_failure``: then the samples taken so far are returned with ``failure`` set. With
    ``blowup_relative_energy`` (e.g. 1.0) a sample whose ``|E − E(0)|/|E(0)|`` exceeds it also
    counts as a breakdown (always stopped on, never raised).
    """
    settings = [f"simulation.dt={float(dt)!r}", f"simulation.integrator=\"{integrator}\""]
    if t_end is not None:
        settings.append(f"simulation.t_end={float(t_end)!r}")
    scene, model, state, _ = prepare(scene_path, list(overrides) + settings)
    dt = scene.simulation["dt"]
    t_end = scene.simulation["t_end"]
    sample_every_time = dt if sample_every_time is None else float(sample_every_time)
    k = steps_per_sample(sample_every_time, dt)
    n_samples = int(round(t_end / sample_every_time))
    if abs(n_samples * sample_every_time - t_end) > 1e-9 * t_end:
        raise ValueError(f"t_end = {t_end:g} is not a multiple of the sampling interval {sample_every_time:g}")

    sim = Simulation(model, state, integrator, dt)
    t, energy, snapshots = [], [], []

    def total_energy():
        return sim.energy_budget()["total"]

    def sample(e):
        t.append(len(t) * sample_every_time)  # the same floats for every dt
        energy.append(e)
        if record_state:
            snapshots.append((state.position.copy(), state.velocity.copy(),
                              state.orientation.copy(), state.angular_velocity.copy()))

    failure = failed_step = None
    started = time.perf_counter()
    sample(total_energy())
    e0 = abs(energy[0])
    for _ in range(n_samples):
        try:
            sim.advance(k)
        except SimulationError as error:
            if not stop_on_failure:
                raise
            failure, failed_step = str(error), sim.state.step + 1
            break
        e = total_energy()
        if blowup_relative_energy is not None and not abs(e - energy[0]) <= blowup_relative_energy * e0:
            failure = f"relative energy error {abs(e - energy[0]) / e0:.3g} > {blowup_relative_energy:g}"
            failed_step = sim.state.step
            break
        sample(e)
    wall_time = time.perf_counter() - started

    arrays = [np.array(a) for a in zip(*snapshots)] if record_state else [None] * 4
    return Trajectory(str(scene_path), integrator, dt, np.array(t), np.array(energy), *arrays,
                      steps=sim.state.step, wall_time=wall_time, failure=failure, failed_step=failed_step)


# ---------------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------------


def _trapezoid(y, t):
    y = np.asarray(y, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    return float(np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(t)))


def rotation_angle(orientation):
    """Rotation angle ``|θ| = 2 atan(|α|/2) ∈ [0, π]`` of unit quaternions ``(..., 4)``."""
    q = np.asarray(orientation)
    return 2.0 * np.arctan2(np.linalg.norm(q[..., 1:], axis=-1), np.abs(q[..., 0]))


def _relative_angle(q, q_ref):
    """Angle of ``R R_refᵀ`` for quaternions ``(..., 4)``: ``2 atan2(|vec|, |scalar|)`` of
    ``q ⊗ q_ref*``, whose scalar part is ``q·q_ref``."""
    scalar = np.abs(np.sum(q * q_ref, axis=-1))
    w, v = q[..., :1], q[..., 1:]
    w_ref, v_ref = q_ref[..., :1], q_ref[..., 1:]
    vector = w_ref * v - w * v_ref - np.cross(v, v_ref)
    return 2.0 * np.arctan2(np.linalg.norm(vector, axis=-1), scalar)


def energy_error_h0(t, energy):
    """Seed 001 eq. (38): ``‖E_h(t) − E(0)‖_{H0} / ‖E(0)‖_{H0}`` over ``[t_0, t_N]``, by the
    trapezoid rule on the samples ``(t, energy)``. The denominator is ``|E(0)| √(t_N − t_0)``."""
    t = np.asarray(t, dtype=np.float64)
    energy = np.asarray(energy, dtype=np.float64)
    numerator = _trapezoid((energy - energy[0]) ** 2, t)
    denominator = energy[0] ** 2 * (t[-1] - t[0])
    return float(np.sqrt(numerator / denominator))


def energy_error_max(t, energy):
    """``max_t |E(t) − E(0)|`` (absolute; divide by ``|E(0)|`` for the relative error)."""
    energy = np.asarray(energy, dtype=np.float64)
    return float(np.max(np.abs(energy - energy[0])))


def h1_norm_squared(run):
    """Seed 001 eq. (35): ``∫ Σ_bodies (|x|² + |v|² + |θ|² + |Ω|²) dt`` of a `Trajectory`."""
    integrand = (np.sum(run.position ** 2, axis=(1, 2)) + np.sum(run.velocity ** 2, axis=(1, 2))
                 + np.sum(rotation_angle(run.orientation) ** 2, axis=1)
                 + np.sum(run.angular_velocity ** 2, axis=(1, 2)))
    return _trapezoid(integrand, run.t)


def _check_same_times(reference, run):
    if reference.t.shape != run.t.shape or not np.allclose(reference.t, run.t, rtol=0, atol=1e-9):
        raise ValueError("the runs are not sampled at the same times (use one sample_every_time and t_end)")


def q_error_h1(reference, run):
    """Seed 001 eq. (37): ``|‖q_h‖²_{H1} − ‖q‖²_{H1}|^{1/2} / ‖q‖_{H1}``, ``q`` the reference.

    Note that it compares norms, not the difference of the trajectories: an O(h^p) trajectory
    error gives an O(h^{p/2}) q-error. Use `state_error_max` for the trajectory error itself."""
    _check_same_times(reference, run)
    ref2 = h1_norm_squared(reference)
    return float(np.sqrt(abs(h1_norm_squared(run) - ref2) / ref2))


def state_error_max(reference, run):
    """Max-norm error against ``reference`` over samples and bodies: a dict with ``position``
    (max |x − x_ref|), ``velocity``, ``rotation`` (max angle of ``R R_refᵀ``, radians),
    ``angular_velocity`` and ``state`` (the largest of the four)."""
    _check_same_times(reference, run)
    errors = {
        "position": float(np.max(np.linalg.norm(run.position - reference.position, axis=-1))),
        "velocity": float(np.max(np.linalg.norm(run.velocity - reference.velocity, axis=-1))),
        "rotation": float(np.max(_relative_angle(run.orientation, reference.orientation))),
        "angular_velocity": float(np.max(np.linalg.norm(run.angular_velocity - reference.angular_velocity,
                                                        axis=-1))),
    }
    errors["state"] = max(errors.values())
    return errors


def observed_orders(dts, errors):
    """``log(e1/e2)/log(h1/h2)`` between consecutive entries (``len(dts) − 1`` values; NaN where
    an error is zero or not finite)."""
    orders = []
    for h1, h2, e1, e2 in zip(dts[:-1], dts[1:], errors[:-1], errors[1:]):
        if e1 > 0 and e2 > 0 and np.isfinite(e1) and np.isfinite(e2):
            orders.append(float(np.log(e1 / e2) / np.log(h1 / h2)))
        else:
            orders.append(float("nan"))
    return orders


def fitted_order(dts, errors):
    """Least-squares slope of ``log errors`` against ``log dts`` over all the steps (NaN unless
    every error is positive and finite)."""
    errors = np.asarray(errors, dtype=float)
    if not np.all(np.isfinite(errors) & (errors > 0)):
        return float("nan")
    return float(np.polyfit(np.log(dts), np.log(errors), 1)[0])


def drift(t, energy):
    """Long-run behaviour of ``ΔE(t) = E(t) − E(0)``: a dict with ``slope`` (least-squares line
    through ``ΔE``, energy per unit time), ``max`` (max |ΔE|), ``early``/``late`` (max |ΔE| over
    the first/last tenth of the run). Bounded error: ``late ≈ early``, slope ≈ 0; a creeping one:
    ``late ≫ early`` and ``slope · T`` comparable to ``max``. Pass ``E/|E(0)|`` for relative values."""
    t = np.asarray(t, dtype=np.float64)
    error = np.asarray(energy, dtype=np.float64) - energy[0]
    slope = float(np.polyfit(t, error, 1)[0]) if len(t) > 1 else 0.0
    span = t[-1] - t[0]
    early = np.abs(error[t <= t[0] + 0.1 * span])
    late = np.abs(error[t >= t[-1] - 0.1 * span])
    return {"slope": slope, "max": float(np.max(np.abs(error))),
            "early": float(np.max(early)), "late": float(np.max(late))}
