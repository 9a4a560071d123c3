"""The homogenised stress of a periodic cell (docs/theory.md §3b.8): the Love–Weber average

    σ = (1/V) [ Σ_i m_i v'_i ⊗ v'_i + Σ_pairs d_ab ⊗ f_ab ],

positive in compression (a pressure), over the cell's volume ``V``: the kinetic part (velocities
``v'`` less the mean velocity), the contact part (every touching particle pair with the force
``f_ab`` on ``a`` and the nearest image's ``d_ab = x_a − x_b``, `dem.network`) and the bond part
(every intact bond, the same way). Walls, fields and applied forces are not in it: they act from
outside the cell. `CellLog` writes it to ``cell.csv`` for a cell periodic along all three axes.

A bond's force comes from its law's own kernel: run over one colour of bonds (which share no
body) into zeroed force buffers, it leaves each bond's force on its first body there, so the
stress reads the very forces the run applies.
"""

from dataclasses import replace

import numpy as np

from .cell import PERIOD, minimum_image_array
from .interactions import BOND, INTERACTIONS
from .interactions.binder import INTACT
from .network import contact_network

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


def homogenised_stress(model, state, contacts):
    """``{part: σ (3, 3)}`` for `PARTS` and ``"total"`` at ``state`` (``contacts``: the
    `dem.contacts.ContactTable` of its last force evaluation), positive in compression."""
    volume = cell_volume(state.cell)
    period = state.cell[PERIOD]
    mean = model.mass @ state.velocity / model.mass.sum()
    fluctuation = state.velocity - mean
    parts = {"kinetic": np.einsum("n,ni,nj->ij", model.mass, fluctuation, fluctuation) / volume}
    network = contact_network(model, state, contacts)
    d = minimum_image_array(state.position[network.i] - state.position[network.j], period)
    parts["contact"] = np.einsum("mi,mj->ij", d, network.force) / volume
    parts["bond"] = np.zeros((3, 3))
    for name in model.interactions:
        if INTERACTIONS[name].kind == BOND:
            i, j, f = bond_forces(model, state, name)
            d = minimum_image_array(state.position[i] - state.position[j], period)
            parts["bond"] += np.einsum("mi,mj->ij", d, f) / volume
    parts["total"] = parts["kinetic"] + parts["contact"] + parts["bond"]
    return parts
