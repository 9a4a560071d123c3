"""Interactions: every one adds forces and spatial moments into the state's buffers and its
energy into the components of `dem.state.ENERGY_COMPONENTS` (SPEC §3).

`_force_field_kernel` is the one place where the compiled loop evaluates all of them; an
interaction that a scene does not use has empty tables (no bonds, no walls, zero stiffness or
gravity) and costs nothing. `INTERACTIONS` names each one, the energy components it fills and
whether it is internal (zero net force and moment), for the test battery and the docs.
"""

from numba import njit

from ..neighbors import _update_kernel
from ..state import AXIAL, BENDING, EXTERNAL, GRAVITY, HERTZ_PP, HERTZ_PW, LJ, SHEAR
from .binder import _binder_kernel, binder_axial, binder_bending, binder_shear
from .contact import _hertz_pair_kernel, _hertz_wall_kernel, hertz
from .external import _applied_force_kernel, _ortolan_saccon_kernel, ortolan_saccon
from .gravity import _gravity_kernel
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


@njit(cache=True)
def _force_field_kernel(st, md, pair_i, pair_j, reference_position, counters):
    """Zero the buffers, then add every interaction at the current configuration.

    ``st``/``md`` are `StateArrays`/`ModelArrays`; the neighbour list is updated first (when
    there is contact to find) and its pair arrays are returned, possibly grown.
    """
    st.force[:] = 0.0
    st.moment[:] = 0.0
    for c in range(AXIAL, EXTERNAL + 1):  # potential terms; kinetic and booked terms stay
        st.energy[c] = 0.0
    _binder_kernel(st.position, st.orientation, md.bond_i, md.bond_j, md.bond_k_axial, md.bond_k_shear,
                   md.bond_k_bending, md.bond_rest_length, md.bond_rest_dir_i, md.bond_rest_dir_j,
                   md.bond_rest_relative, md.bond_broken, st.force, st.moment, st.energy)
    if md.k_pp > 0.0:
        pair_i, pair_j = _update_kernel(st.position, md.diameter, md.skin, reference_position, pair_i, pair_j,
                                        counters)
        _hertz_pair_kernel(st.position, md.diameter, md.k_pp, pair_i, pair_j, counters[0], st.force, st.energy)
    if md.k_pw > 0.0:
        _hertz_wall_kernel(st.position, md.diameter, md.k_pw, md.wall_point, md.wall_normal, st.force, st.energy)
    _gravity_kernel(st.position, st.orientation, md.mass, md.com_offset, md.gravity, st.force, st.moment,
                    st.energy)
    _lennard_jones_kernel(st.position, st.orientation, md.site_start, md.site_offset, md.lj_pair_i, md.lj_pair_j,
                          md.lj_epsilon, md.lj_sigma, st.force, st.moment, st.energy)
    _ortolan_saccon_kernel(st.orientation, md.stress_body, md.stress_alpha, md.stress_attractor, st.moment,
                           st.energy)
    _applied_force_kernel(st.position, md.applied_body, md.applied_force, st.force, st.energy)
    return pair_i, pair_j




def compute_forces(model, state, neighbors, model_arrays=None):
    """Evaluate all interactions at ``state``: fills ``state.force``, ``state.moment`` and the
    potential terms of ``state.energy``; ``neighbors`` is a `dem.neighbors.NeighborList`."""
    model_arrays = model.arrays() if model_arrays is None else model_arrays
    neighbors.pair_i, neighbors.pair_j = _force_field_kernel(
        state.arrays(), model_arrays, neighbors.pair_i, neighbors.pair_j, neighbors.reference_position,
        neighbors.counters,
    )


__all__ = [
    "INTERACTIONS", "binder_axial", "binder_bending", "binder_shear", "compute_forces", "hertz", "lennard_jones",
    "ortolan_saccon",
]
