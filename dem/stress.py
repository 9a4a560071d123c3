"""The homogenised stress of a periodic cell (docs/theory.md §3b.8): the Love–Weber average

    σ = (1/V) [ Σ_i m_i v'_i ⊗ v'_i + Σ_pairs d_ab ⊗ f_ab ],

positive in compression (a pressure), over the cell's volume ``V``: the kinetic part (velocities
``v'`` less the mean flow, `affine_velocity`), the contact part (every touching particle pair with the force
``f_ab`` on ``a`` and the nearest image's ``d_ab = x_a − x_b``, `dem.network`) and the bond part
(every intact bond, the same way). Walls, fields and applied forces are not in it: they act from
outside the cell. `CellLog` writes it to ``cell.csv`` for a cell periodic along all three axes.

A bond's force comes from its law's own kernel: run over one colour of bonds (which share no
body) into zeroed force buffers, it leaves each bond's force on its first body there, so the
stress reads the very forces the run applies.
"""

from dataclasses import replace

import numpy as np

from .cell import GRADIENT, PERIOD, SHEAR, SHEARS, cell_image, servo_scale
from .interactions import BOND, INTERACTIONS
from .interactions.binder import INTACT
from .interactions.clump_contacts import reach_diameters
from .network import pair_forces

#: the six independent components, in the order of the columns
COMPONENTS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
PARTS = ("kinetic", "contact", "bond")


def cell_volume(cell):
    """The volume of a cell periodic along all three axes."""
    return float(np.prod(cell[PERIOD]))


def bond_forces(model, state, name):
    """``(i, j, f)``: the intact bonds of the bond law ``name`` and the force ``f (m, 3)`` that
    each applies on its first body ``i`` at ``state`` (the law's kernel, colour by colour)."""
    kernel, params = INTERACTIONS[name].forces, model.interactions[name]
    own = state.interactions[name]
    scratch = replace(state, force=np.zeros_like(state.force), moment=np.zeros_like(state.moment),
                      interactions={}).arrays()
    bodies = model.body_arrays()
    fast = () if INTERACTIONS[name].fast is None else (np.zeros((0, 3)),)
    force = np.zeros((len(params.i), 3))
    copy = type(own)(*(np.copy(a) for a in own))  # (what the kernel books or breaks stays in the copy)
    for color in range(len(params.color_start) - 1):
        lo, hi = int(params.color_start[color]), int(params.color_start[color + 1])
        scratch.force[params.i[lo:hi]] = 0.0
        kernel(lo, hi, 0.0, scratch, bodies, params, copy, *fast)
        force[lo:hi] = scratch.force[params.i[lo:hi]]
    intact = own.broken == INTACT
    return params.i[intact], params.j[intact], force[intact]


def velocity_gradient(cell):
    """The cell's velocity gradient ``L (3, 3)`` (`dem.cell`: the strain rates on the diagonal,
    the shear rates ``L_xy, L_xz, L_yz`` above it)."""
    gradient = np.diag(cell[GRADIENT])
    for (a, b), rate in zip(SHEARS, cell[SHEAR]):
        gradient[a, b] = rate
    return gradient


def affine_velocity(model, state):
    """Each body's mean-flow velocity ``v̄ + L (x − x̄)`` (``v̄``, ``x̄``: the mass-weighted mean
    velocity and unwrapped position; ``L`` the cell's velocity gradient): the velocities less it
    are the fluctuations of the kinetic stress and of the granular temperature."""
    mass = model.mass / model.mass.sum()
    centre = mass @ state.position
    return mass @ state.velocity + (state.position - centre) @ velocity_gradient(state.cell).T


def homogenised_stress(model, state, contacts):
    """``{part: σ (3, 3)}`` for `PARTS` and ``"total"`` at ``state`` (``contacts``: the
    `dem.contacts.ContactTable` of its last force evaluation), positive in compression."""
    volume = cell_volume(state.cell)
    fluctuation = state.velocity - affine_velocity(model, state)
    parts = {"kinetic": np.einsum("n,ni,nj->ij", model.mass, fluctuation, fluctuation) / volume}
    i, j, force = pair_forces(model, state, contacts)
    d = cell_image(state.position[i] - state.position[j], state.cell)
    parts["contact"] = np.einsum("mi,mj->ij", d, force) / volume
    parts["bond"] = np.zeros((3, 3))
    for name in model.interactions:
        if INTERACTIONS[name].kind == BOND:
            i, j, f = bond_forces(model, state, name)
            d = cell_image(state.position[i] - state.position[j], state.cell)
            parts["bond"] += np.einsum("mi,mj->ij", d, f) / volume
    parts["total"] = parts["kinetic"] + parts["contact"] + parts["bond"]
    return parts


class CellServo:
    """Between steps, every ``servo_interval`` steps of a run in a deforming cell (`dem.cell`):
    sets the strain rate of each stress-controlled edge from the stress (`homogenised_stress`),

        L_aa = g · clip((σ_aa − σ*_aa) / S, −1, 1),

    (``g`` the ``servo_gain``, ``S`` the ``servo_stress`` or the largest ``|σ*|``: an edge under
    more than its target compression stretches, one under less shrinks, at most at ``g``), and
    stops the run when an edge has become shorter than twice the contact reach (a particle would
    meet two images of another). It runs with the
    observers (first among them: a checkpoint holds the rates it set), so the rates change at
    fixed steps, whatever the threads, logs or restarts."""

    sampled = False

    def __init__(self, model):
        section = model.sections["cell"]
        self.every = int(section["servo_interval"])
        self.axes = [a for a in range(3) if section["stress_control"][a]]
        self.target = section["target_stress"]
        self.gain = section["servo_gain"]
        self.scale = servo_scale(section)
        self.reach = float(reach_diameters(model).max(initial=0.0)) + model.skin

    def report(self, sim):
        from .simulation import SimulationError

        cell = sim.state.cell
        for axis in range(3):
            edge = cell[PERIOD, axis]
            if 0.0 < edge <= 2.0 * self.reach:
                raise SimulationError(f"step {sim.state.step}: the cell's edge L{'xyz'[axis]} = {edge:g} is no longer "
                                      f"more than twice the contact reach {self.reach:g}: strain it less (a smaller "
                                      f"strain_rate or t_end, or a larger cell)")
        if self.axes:
            stress = homogenised_stress(sim.model, sim.state, sim.contacts)["total"]
            for axis in self.axes:
                error = (stress[axis, axis] - self.target[axis]) / self.scale
                cell[GRADIENT, axis] = self.gain * min(max(error, -1.0), 1.0)

    def close(self, sim):
        pass
