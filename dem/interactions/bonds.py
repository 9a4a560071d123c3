"""Every bond of a model, whatever its law (`dem.state.BOND_LAWS`): per-bond measures for output
(`bond_measures`, the VTK bond cells), which are broken (`broken_codes`) and the fragments they
leave (`fragment_labels`: connected components of the intact bonds).

Each law's interaction owns its block of ``model.bonds`` and its broken state: the three-spring binder
(`dem.interactions.binder`) and the parallel bond (`dem.interactions.parallel_bond`).
"""

import numpy as np

from . import binder, parallel_bond

#: Cell arrays of `bond_measures`: those every law gives, then the parallel bond's (0 elsewhere).
COMMON = ("axial_strain", "shear", "bending_angle", "axial_force")
PARALLEL_ONLY = tuple(name for name in parallel_bond.MEASURES if name not in COMMON)


def bond_measures(model, state):
    """Per-bond arrays over ``model.bonds`` (its order): ``law`` (index into `BOND_LAWS`),
    ``axial_strain`` (r/r0 − 1), ``shear`` (three-spring binder: max of 1 − s; parallel bond: |u_s|/L),
    ``bending_angle`` (rad; three-spring binder: |θ|; parallel bond: |θ_b|), ``axial_force`` (positive in
    tension), ``force`` ``(m, 3)`` (the bond's force on its first body ``i``, 0 once broken: the
    bond's share of the virial stress, `dem.rig`), ``broken`` (0 intact, else the code of the
    criterion that broke it: 1 tension, 2 compression, 3 shear, 4 bending), and the parallel bond's ``twist_angle``, ``shear_force``,
    ``bending_moment``, ``twisting_moment``, ``tensile_stress`` and ``shear_stress`` (0 for
    three-spring bonds)."""
    m = len(model.bonds)
    out = {name: np.zeros(m) for name in COMMON + PARALLEL_ONLY}
    out["force"] = np.zeros((m, 3))
    out["broken"] = np.zeros(m, np.int8)
    out["law"] = model.bonds.law.copy()
    for law, measures in (("three_spring", binder.bond_measures), ("parallel_bond", parallel_bond.measures)):
        block = model.bonds.block(law)
        for name, values in measures(model, state).items():
            out[name][block] = values
    return out


def broken_codes(model, state):
    """``(m,)`` int8 over ``model.bonds``: 0 for an intact bond, else the code of the criterion
    that broke it."""
    broken = np.zeros(len(model.bonds), np.int8)
    for law in (binder.BINDER, parallel_bond.PARALLEL_BOND):
        if law.name in state.interactions:
            broken[model.bonds.block(law.bond_law)] = state.interactions[law.name].broken
    return broken


def fragment_labels(n_bodies, i, j, intact):
    """``(n_bodies,)`` int64: the fragment of each body, fragments being the connected components
    of the graph of intact bonds (``i[intact]``–``j[intact]``; a body with no intact bond is a
    fragment of its own). Fragments are numbered 0, 1, … in the order of their smallest body
    index (body 0 is in fragment 0). O(n + m) (`scipy.sparse.csgraph.connected_components`)."""
    from scipy.sparse import coo_matrix  # imported here: scipy costs a second that runs without
    from scipy.sparse.csgraph import connected_components  # bonds would pay (dem/packing.py)

    i = np.asarray(i)[intact]
    j = np.asarray(j)[intact]
    graph = coo_matrix((np.ones(len(i), np.int8), (i, j)), shape=(n_bodies, n_bodies))
    _, labels = connected_components(graph, directed=False)
    _, first = np.unique(labels, return_index=True)   # smallest body of each component
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[labels]
