"""Interactions (SPEC §3): every one adds forces and spatial moments into the state's buffers,
and has an energy that `_energy_kernel` sums into the components of
`dem.state.ENERGY_COMPONENTS` when a report asks for it.

`_forces_kernel` is the one place where the compiled loop evaluates all of them, in this order:
a per-body pass that *sets* each body's force and moment from its contacts (full neighbour list),
the walls and gravity; the bonds, colour by colour; then the few-body terms (Lennard-Jones
clusters, external potentials). Every parallel loop writes only rows it owns, so results do not
depend on the number of threads. An interaction a scene does not use has empty tables (no
bonds, no walls, zero stiffness or gravity) and costs nothing. `INTERACTIONS` names each one,
its energy components and whether it is internal (zero net force and moment), for the test
battery and the docs.
"""

import numpy as np
from numba import njit, prange

from ..neighbors import _update_kernel
from ..state import AXIAL, BENDING, BROKEN, DISSIPATED, ENERGY_COMPONENTS, EXTERNAL, GRAVITY, HERTZ_PP, HERTZ_PW, LJ, SHEAR
from .binder import ENERGIES, FORCES, _binder_range
from .contact import _hertz_pair_particle, _hertz_wall_particle, damping_from_restitution, hertz
from .external import _applied_force_kernel, _ortolan_saccon_kernel, ortolan_saccon
from .gravity import _gravity_energy, _gravity_particle
from .lennard_jones import _lennard_jones_kernel, lennard_jones

#: name -> (energy components, internal?)
INTERACTIONS = {
    "binder_axial": ((AXIAL,), True),
    "binder_shear": ((SHEAR,), True),
    "binder_bending": ((BENDING,), True),
    "hertz_pp": ((HERTZ_PP,), True),
    "hertz_pw": ((HERTZ_PW,), False),
    "gravity": ((GRAVITY,), False),
    "lennard_jones": ((LJ,), True),
    "ortolan_saccon": ((EXTERNAL,), False),
    "applied_force": ((EXTERNAL,), False),
}

#: rows of work per parallel task (fixed, so that chunking never depends on the thread count)
CHUNK = 2048


@njit(cache=True)
def _body_range(lo, hi, h, st, md, start, index):
    """Set force and moment of bodies ``lo ≤ i < hi`` from contacts, walls and gravity (one pass
    over the rows); book the damping work of the step."""
    has_gravity = md.gravity[0] != 0.0 or md.gravity[1] != 0.0 or md.gravity[2] != 0.0
    for i in range(lo, hi):
        fx = fy = fz = 0.0
        tx = ty = tz = 0.0
        power = 0.0
        if md.diameter[i] > 0.0:
            if md.k_pp > 0.0:
                px, py, pz, p, _ = _hertz_pair_particle(i, st.position, st.velocity, md.diameter, md.inverse_mass,
                                                        md.k_pp, md.damping, start, index)
                fx += px
                fy += py
                fz += pz
                power += p
            if md.k_pw > 0.0:
                px, py, pz, p, _ = _hertz_wall_particle(i, st.position, st.velocity, md.diameter, md.inverse_mass,
                                                        md.k_pw, md.damping, md.wall_point, md.wall_normal)
                fx += px
                fy += py
                fz += pz
                power += p
        if has_gravity:
            weight, tau = _gravity_particle(i, st.orientation, md.mass, md.com_offset, md.gravity)
            fx += weight[0]
            fy += weight[1]
            fz += weight[2]
            tx, ty, tz = tau
        st.force[i, 0] = fx
        st.force[i, 1] = fy
        st.force[i, 2] = fz
        st.moment[i, 0] = tx
        st.moment[i, 1] = ty
        st.moment[i, 2] = tz
        if power != 0.0:
            st.dissipated_energy[i] += h * power


@njit(cache=True)
def _bond_forces(lo, hi, h, st, md):
    """Binder loads (and breakage) of bonds ``lo ≤ b < hi`` of one colour."""
    _binder_range(FORCES, lo, hi, h, st.position, st.velocity, st.orientation, st.angular_velocity, md.bond_i,
                  md.bond_j, md.bond_k_axial, md.bond_k_shear, md.bond_k_bending, md.bond_rest_length,
                  md.bond_rest_dir_i, md.bond_rest_dir_j, md.bond_rest_relative, md.bond_broken, md.break_limits,
                  md.breakable, st.force, st.moment, st.broken_energy, st.force)  # last: unused table of other modes


@njit(inline="always")
def _forces_kernel(h, parallel, st, md, reference_position, start, index, cell_start, cell_particles, counters):
    """Forces and moments at the current configuration (``h``: the step, for booking damping
    work). Updates the neighbour list when there is contact to find; returns its ``index``.
    Inlined into the compiled loop (see `dem.neighbors._update_kernel`)."""
    n = st.position.shape[0]
    if md.k_pp > 0.0:
        index = _update_kernel(st.position, md.diameter, md.skin, parallel, reference_position, start, index,
                               cell_start, cell_particles, counters)
    if parallel:
        for chunk in prange((n + CHUNK - 1) // CHUNK):
            _body_range(chunk * CHUNK, min(n, (chunk + 1) * CHUNK), h, st, md, start, index)
    else:
        _body_range(0, n, h, st, md, start, index)
    for color in range(md.bond_color_start.shape[0] - 1):
        lo = md.bond_color_start[color]
        hi = md.bond_color_start[color + 1]
        if parallel:
            for chunk in prange((hi - lo + CHUNK - 1) // CHUNK):
                _bond_forces(lo + chunk * CHUNK, min(hi, lo + (chunk + 1) * CHUNK), h, st, md)
        else:
            _bond_forces(lo, hi, h, st, md)
    _lennard_jones_kernel(st.position, st.orientation, md.site_start, md.site_offset, md.lj_pair_i, md.lj_pair_j,
                          md.lj_epsilon, md.lj_sigma, st.force, st.moment)
    _ortolan_saccon_kernel(st.orientation, md.stress_body, md.stress_alpha, md.stress_attractor, st.moment)
    _applied_force_kernel(st.position, md.applied_body, md.applied_force, st.force)
    return index


@njit(cache=True)
def _energy_kernel(st, md, start, index):
    """Potential, broken and dissipated energies (kinetic entries left 0), summed serially in a
    fixed order; the neighbour list must be current (it is after `_forces_kernel`)."""
    energy = np.zeros(DISSIPATED + 1)
    binder = np.zeros((1, 3))
    _binder_range(ENERGIES, 0, md.bond_i.shape[0], 0.0, st.position, st.velocity, st.orientation, st.angular_velocity,
                  md.bond_i, md.bond_j, md.bond_k_axial, md.bond_k_shear, md.bond_k_bending, md.bond_rest_length,
                  md.bond_rest_dir_i, md.bond_rest_dir_j, md.bond_rest_relative, md.bond_broken, md.break_limits, False,
                  st.force, st.moment, st.broken_energy, binder)
    energy[AXIAL], energy[SHEAR], energy[BENDING] = binder[0, 0], binder[0, 1], binder[0, 2]
    for i in range(st.position.shape[0]):
        if md.diameter[i] > 0.0:
            if md.k_pp > 0.0:
                energy[HERTZ_PP] += _hertz_pair_particle(i, st.position, st.velocity, md.diameter, md.inverse_mass,
                                                         md.k_pp, 0.0, start, index)[4]
            if md.k_pw > 0.0:
                energy[HERTZ_PW] += _hertz_wall_particle(i, st.position, st.velocity, md.diameter, md.inverse_mass,
                                                         md.k_pw, 0.0, md.wall_point, md.wall_normal)[4]
    energy[GRAVITY] = _gravity_energy(st.position, st.orientation, md.mass, md.com_offset, md.gravity)
    if md.lj_pair_i.shape[0] or md.stress_body.shape[0] or md.applied_body.shape[0]:
        scratch_force = np.zeros_like(st.force)
        scratch_moment = np.zeros_like(st.moment)
        energy[LJ] = _lennard_jones_kernel(st.position, st.orientation, md.site_start, md.site_offset, md.lj_pair_i,
                                           md.lj_pair_j, md.lj_epsilon, md.lj_sigma, scratch_force, scratch_moment)
        energy[EXTERNAL] = (_ortolan_saccon_kernel(st.orientation, md.stress_body, md.stress_alpha,
                                                   md.stress_attractor, scratch_moment)
                            + _applied_force_kernel(st.position, md.applied_body, md.applied_force, scratch_force))
    energy[BROKEN] = np.sum(st.broken_energy)
    energy[DISSIPATED] = np.sum(st.dissipated_energy)
    return energy


@njit(cache=True, parallel=True)
def _forces_parallel(h, st, md, reference_position, start, index, cell_start, cell_particles, counters):
    return _forces_kernel(h, True, st, md, reference_position, start, index, cell_start, cell_particles, counters)


@njit(cache=True)
def _forces_serial(h, st, md, reference_position, start, index, cell_start, cell_particles, counters):
    return _forces_kernel(h, False, st, md, reference_position, start, index, cell_start, cell_particles, counters)


def compute_forces(model, state, neighbors, model_arrays=None, dt=0.0, parallel=False):
    """Evaluate all interactions at ``state``: fills ``state.force`` and ``state.moment``;
    ``neighbors`` is a `dem.neighbors.NeighborList`; ``dt`` books damping work (0: none)."""
    model_arrays = model.arrays() if model_arrays is None else model_arrays
    forces = _forces_parallel if parallel else _forces_serial
    neighbors.index = forces(float(dt), state.arrays(), model_arrays, *neighbors.arrays())


def potential_energies(model, state, neighbors, model_arrays=None):
    """Energy components (`ENERGY_COMPONENTS` order; kinetic entries 0) at ``state``, with the
    neighbour list as left by the last `compute_forces`."""
    model_arrays = model.arrays() if model_arrays is None else model_arrays
    return _energy_kernel(state.arrays(), model_arrays, neighbors.start, neighbors.index)


assert len(ENERGY_COMPONENTS) == DISSIPATED + 1

__all__ = [
    "INTERACTIONS", "compute_forces", "damping_from_restitution", "hertz", "lennard_jones", "ortolan_saccon",
    "potential_energies",
]
