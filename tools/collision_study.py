"""Convergence study of one binary Hertz collision (issue 15): the energy error after one contact
against ``dt``, and the order each integrator has through contact onset and release.

Three collisions of spheres of diameter 1, mass 1 and inertia 0.1, frictionless Hertz only (no
damping, no gravity), so that the continuous dynamics conserve energy exactly:

* ``head-on`` — two equal spheres meeting at 0.5 each along x (``K_pp = 1000``; peak overlap
  about 5 % of the contact distance);
* ``oblique`` — the same with an impact parameter of half a radius (0.25) and both spheres
  spinning;
* ``wall`` — one spinning sphere hitting the plane wall x = 0 at 30° from the normal, speed 1
  (``K_pw = 400``, a Hertz particle–wall contact).

Each contact lasts about 0.15 (the table prints it in steps of each ``dt``). A run starts ``lead``
before onset and ends at ``--t-end``, well after release; in free flight the energy is constant
(to round-off), so the error after release is the error the contact left. For each integrator
and ``dt`` the table gives

* ``|dE| one``: ``|E_end − E0|/E0`` of the nominal collision (``lead = 0.05``, the stiffness
  above);
* ``|dE| mean``: its mean over ``--samples`` collisions with a random sub-step onset offset
  and a random stiffening (below);
* ``mean dE``: the mean of the *signed* ``(E_end − E0)/E0`` over the samples (a systematic
  gain or loss per collision; it is far below ``|dE| mean`` when the sign is random);
* ``max|dE|``: the mean over those samples of ``max_t |E(t) − E0|/E0`` (the error during
  contact);
* ``state``: the mean over the samples of the max-norm state error at ``t_end``
  (`dem.convergence.state_error_max`: position, velocity, rotation angle, Ω) against an
  ``rrp2`` run of the same collision at ``dt_min / --reference-ratio``;
* ``rotation``: the same for the rotation angle of ``R R_refᵀ`` alone (radians; in the state
  error it is hidden under the translational error),

each with the observed order ``log(e1/e2)/log(dt1/dt2)`` between consecutive steps, and a last
row ``fit`` with the least-squares slope of ``log e`` against ``log dt`` over all the steps.

Why the samples: the force ``∝ δ^{3/2}`` switches on and off inside a step, and the energy error
after release is what onset and release leave together: it depends on where each falls between
two grid points (its average over those phases goes as ``dt^{5/2}``, measured). One collision's
error therefore jumps up and down from one ``dt`` to the next (the ``one`` column's orders
scatter between −6 and 5). The onset phase is set by the start (``lead = 0.05 + u dt0``, ``dt0``
the coarsest step, ``u`` uniform in [0, 1): the phase ``frac(u dt0/dt)`` on each finer grid is
again uniform); the release phase then follows from the contact's duration in steps, which the
start does not change. So each sample also stiffens the contact by a factor ``1 + s``, ``s``
uniform in ``[0, --stiffening)``: the contact is up to 7 % shorter, more than one step of the
coarsest grid, which makes the release phase uniform too. (Averaged over 16 onset phases alone,
the oblique case's mean at ``dt = 1e-3`` went up and down sevenfold, 3.1e-7 to 2.2e-6, as the
stiffness rose by 0 to 4 % in steps of 0.4 %, with a period of one step less in contact, about
1.6 %: the onset and release errors add or cancel with the fractional number of steps in
contact.) ``|dE|`` averaged over both phases is a clean trend. The samples are drawn from
``--seed``, so a study repeats exactly; each has its own reference run.

What the integrators share here: frictionless Hertz exerts no moment on a sphere, so spin only
enters the state error (the rotation increments of ``rrp2``, ``rrp`` and ``lgvi`` differ at
O(h³) a step), and ``rrp``/``lgvi`` move the centres exactly as ``rrp2`` does (velocity Verlet).
``rrp1`` (symplectic Euler) is velocity Verlet with the velocity read half a step late; with
zero force before and after the contact that half step vanishes, so its trajectory and its error
after release are ``rrp2``'s to round-off, and only its error *during* contact is O(h).

Examples (the first wrote ``docs/collision_study.png`` in 75–90 s on a 2-core VM)::

    python tools/collision_study.py --plot docs/collision_study.png
    python tools/collision_study.py --cases head-on --integrators rrp2 rrp1 \\
        --dt 8e-3 4e-3 2e-3 1e-3 5e-4 2.5e-4 1.25e-4 --samples 64
"""

import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np

from dem import Simulation, SystemBuilder
from dem.convergence import Trajectory, fitted_order, observed_orders, state_error_max, steps_per_sample

DIAMETER, MASS, INERTIA = 1.0, 1.0, 0.1   # solid spheres: J = m D²/10
LEAD = 0.05   # time from the start to contact onset, before the sub-step offset
SIN30, COS30 = 0.5, np.sqrt(0.75)
OBLIQUE_B = 0.25   # impact parameter, half a radius


@dataclass(frozen=True)
class Collision:
    """Spheres at contact onset (``position``, ``velocity``, ``angular_velocity``: one row per
    sphere) and the walls and ``[contact]`` values of the scene."""

    position: tuple
    velocity: tuple
    angular_velocity: tuple
    contact: dict
    walls: tuple = ()


CASES = {
    "head-on": Collision(position=((-0.5, 0, 0), (0.5, 0, 0)), velocity=((0.5, 0, 0), (-0.5, 0, 0)),
                         angular_velocity=((0, 0, 0), (0, 0, 0)), contact={"k_pp": 1000.0}),
    "oblique": Collision(position=((-0.5 * np.sqrt(1 - OBLIQUE_B ** 2), 0.5 * OBLIQUE_B, 0),
                                   (0.5 * np.sqrt(1 - OBLIQUE_B ** 2), -0.5 * OBLIQUE_B, 0)),
                         velocity=((0.5, 0, 0), (-0.5, 0, 0)),
                         angular_velocity=((0.3, -0.5, 1.5), (-1.0, 0.4, 0.6)), contact={"k_pp": 1000.0}),
    "wall": Collision(position=((0.5 * DIAMETER, 0, 0),), velocity=((-COS30, SIN30, 0),),
                      angular_velocity=((1.0, -0.5, 2.0),), contact={"k_pw": 400.0},
                      walls=({"point": (0.0, 0.0, 0.0), "normal": (1.0, 0.0, 0.0)},)),
}
MARKERS = {"rrp": "o", "rrp2": "v", "rrp1": "s", "lgvi": "D"}


def collision(case, lead, stiffening=0.0, substeps=1):
    """``(model, state)`` of ``case`` (a `Collision`) with its stiffnesses times ``1 + stiffening``,
    at the time ``lead`` before contact onset: each sphere moved back along its velocity (free
    flight is straight). ``substeps``: the contact sub-steps (``contact.substeps``; 1, the plain
    maps of docs/theory.md §2, unless asked)."""
    system = SystemBuilder()
    for x, v, omega in zip(case.position, case.velocity, case.angular_velocity):
        system.add_body(np.asarray(x, float) - lead * np.asarray(v, float), mass=MASS, inertia=INERTIA,
                        diameter=DIAMETER, velocity=v, angular_velocity=omega)
    contact = {key: stiffness * (1.0 + stiffening) for key, stiffness in case.contact.items()}
    contact["substeps"] = substeps
    return system.finish(list(case.walls), contact=contact)


@dataclass
class Run:
    """One collision run: the relative energy error ``(E − E0)/E0`` at the end (``end``, signed)
    and ``max |E − E0|/E0`` over the steps (``max``), the steps with a contact, and the final
    state as a one-sample `Trajectory`."""

    end: float
    max: float
    contact_steps: int
    final: Trajectory


def _final(sim, integrator, dt):
    s = sim.state
    return Trajectory("", integrator, dt, np.array([s.time]), np.array([sim.energy_budget()["total"]]),
                      s.position[None].copy(), s.velocity[None].copy(), s.orientation[None].copy(),
                      s.angular_velocity[None].copy(), steps=s.step)


def run(case, integrator, dt, t_end, lead=LEAD, stiffening=0.0, every_step=True, substeps=1):
    """Run ``case`` with its stiffnesses times ``1 + stiffening`` from ``lead`` before onset to
    ``t_end`` with ``integrator`` at step ``dt`` (and ``substeps`` contact sub-steps). With ``every_step`` the energy is read after
    every step from onset (at ``t ≥ LEAD``) to release, for ``max`` and the contact count (in free
    flight it is constant); otherwise only at the end (a reference)."""
    sim = Simulation(*collision(case, lead, stiffening, substeps), integrator, dt)
    e0 = sim.energy_budget()["total"]
    n = steps_per_sample(t_end, dt)   # (ValueError unless t_end is a multiple of dt)
    largest, contact_steps, touched = 0.0, 0, False
    if every_step:
        sim.advance(int(LEAD / dt))
        while sim.state.step < n:
            sim.advance(1)
            row = sim.energy_budget()
            largest = max(largest, abs(row["total"] - e0))
            touching = row["hertz_pp"] + row["hertz_pw"] > 0.0
            if touched and not touching:
                break
            touched |= touching
            contact_steps += touching
    sim.advance(n - sim.state.step)
    final = _final(sim, integrator, dt)
    end = final.energy[0] - e0
    return Run(end / e0, max(largest, abs(end)) / e0, contact_steps, final)


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--integrators", nargs="+", default=["rrp2", "rrp", "rrp1", "lgvi"],
                        help="schemes; NAME×M (e.g. rrp2×3, or rrp2x3) with M contact sub-steps (default: the "
                        "plain maps)")
    parser.add_argument("--dt", type=float, nargs="+", default=[8e-3, 4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4],
                        help="steps, each a power-of-two fraction of the coarsest (default 8e-3 … 2.5e-4)")
    parser.add_argument("--samples", type=int, default=128,
                        help="random (onset offset, stiffening) pairs to average over (default 128)")
    parser.add_argument("--stiffening", type=float, default=0.2,
                        help="the stiffnesses are drawn from K (1 + [0, this)) (default 0.2)")
    parser.add_argument("--seed", type=int, default=15, help="seed of the samples (default 15)")
    parser.add_argument("--t-end", type=float, default=0.4, help="end time, a multiple of every dt (default 0.4)")
    parser.add_argument("--reference-ratio", type=int, default=16,
                        help="the reference step is the smallest dt over this (default 16)")
    parser.add_argument("--plot", help="write a log-log figure (PNG), one panel per case")
    return parser


def _scheme(label):
    """``(integrator, substeps)`` of a ``--integrators`` entry: ``rrp2`` or ``rrp2×3`` (``rrp2x3``)."""
    name, _, substeps = label.replace("x", "×").partition("×")
    return name, int(substeps or 1)


def _order(value):
    return f"{value:6.2f}" if np.isfinite(value) else f"{'':6}"


COLUMNS = (("|dE| one", "one"), ("|dE| mean", "end"), ("max|dE|", "max"), ("state", "state"),
           ("rotation", "rotation"))


def study(args):
    """Print the tables; returns ``{case: {integrator: rows}}``, a row a dict per ``dt``."""
    dts = sorted(args.dt, reverse=True)
    draws = np.random.default_rng(args.seed).random((args.samples, 2))
    samples = [(LEAD, 0.0)] + [(LEAD + u * dts[0], args.stiffening * s) for u, s in draws]   # nominal first
    reference_dt = dts[-1] / args.reference_ratio
    results = {}
    for name in args.cases:
        case = CASES[name]
        started = time.perf_counter()
        references = [run(case, "rrp2", reference_dt, args.t_end, *sample, every_step=False).final
                      for sample in samples]
        print(f"\n== {name}: reference rrp2 dt = {reference_dt:g} ({time.perf_counter() - started:.1f} s for "
              f"{len(samples)} runs), t_end = {args.t_end:g}")
        results[name] = {}
        for label in args.integrators:
            integrator, substeps = _scheme(label)
            started = time.perf_counter()
            rows = []
            for dt in dts:
                nominal, *runs = [run(case, integrator, dt, args.t_end, *sample, substeps=substeps)
                                  for sample in samples]
                state_errors = [state_error_max(ref, r.final) for ref, r in zip(references[1:], runs)]
                rows.append(dict(
                    dt=dt, contact_steps=nominal.contact_steps, one=abs(nominal.end),
                    end=np.mean([abs(r.end) for r in runs]), bias=np.mean([r.end for r in runs]),
                    max=np.mean([r.max for r in runs]),
                    **{key: np.mean([error[key] for error in state_errors]) for key in ("state", "rotation")},
                ))
            orders = {key: [np.nan] + observed_orders(dts, [row[key] for row in rows]) for _, key in COLUMNS}
            results[name][label] = rows
            print(f"\n{name}, {label} ({time.perf_counter() - started:.1f} s)")
            print(f"{'dt':>9} {'contact':>7} " + " ".join(f"{title:>10} {'order':>6}" for title, _ in COLUMNS)
                  + f" {'mean dE':>10}")
            for n, row in enumerate(rows):
                cells = " ".join(f"{row[key]:10.3e} {_order(orders[key][n])}" for _, key in COLUMNS)
                print(f"{row['dt']:9.3g} {row['contact_steps']:7d} {cells} {row['bias']:+10.2e}")
            print(f"{'fit':>9} {'':7} " + " ".join(f"{'':10} {_order(fitted_order(dts, [row[key] for row in rows]))}"
                                                  for _, key in COLUMNS))
    return results


def plot(results, path):
    """One panel per case: the mean energy error after release (solid) and the mean max error
    during contact (dashed) against ``dt``, one colour per integrator; black: slopes 1, 2, 5/2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 4.4), squeeze=False)
    for ax, (name, by_integrator) in zip(axes.flat, results.items()):
        for n, (integrator, rows) in enumerate(by_integrator.items()):
            dt = np.array([row["dt"] for row in rows])
            style = dict(color=f"C{n}", marker=MARKERS.get(integrator, "x"), fillstyle="none", ms=max(11 - 2.5 * n, 4))
            ax.loglog(dt, [row["end"] for row in rows], label=integrator, **style)
            ax.loglog(dt, [row["max"] for row in rows], ls="--", lw=0.8, **style)
        lowest = min(row["end"] for rows in by_integrator.values() for row in rows)
        for slope, style in ((1, ":"), (2, "-."), (2.5, (0, (6, 2)))):
            ax.loglog(dt, lowest * (dt / dt[-1]) ** slope, color="k", ls=style, lw=0.8, label=f"slope {slope}")
        ax.set_title(name)
        ax.set_xlabel("dt")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(True, which="both", lw=0.3)
    axes.flat[0].set_ylabel("|E − E0| / E0")
    axes.flat[0].legend(fontsize=7, loc="lower right")
    fig.suptitle("One frictionless Hertz collision: solid, mean |E_end − E0|/E0 after release; "
                 "dashed, mean max |E − E0|/E0 during contact", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    print(f"\nfigure: {path}")


def main(argv=None):
    args = _parser().parse_args(argv)
    results = study(args)
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
