"""The simulation cell (docs/theory.md §3b.8): a box that is periodic along any of x, y and z.

Along a periodic axis of edge ``L`` a particle that leaves through one face is the same particle
as its image that enters through the opposite one, and contacts and bonds act between a particle
and the nearest image of the other (the minimum image: ``d_x − L round(d_x/L)``). Positions are
kept unwrapped in the state (a particle that crossed a face keeps going, so its trajectory, its
momentum and the energy of a uniform field stay continuous); the outputs show them wrapped into
the cell. The neighbour list bins the wrapped positions on cells that tile the box
(`dem.neighbors`), and every pair kernel takes the minimum image of its separation
(`minimum_image`): with every edge longer than twice the largest pair reach, at most one image of
a particle is ever within reach of another, so a pair is still one entry of each row.

Kernels read the cell as an array ``(3, 3)`` (`StateArrays.cell`): row `PERIOD` holds the edge
along each periodic axis and 0 along the others, row `ORIGIN` the lowest corner, row `INVERSE`
the edges' inverses (0 along the other axes). The nearest image is taken without a branch and
without a division, ``d − L rint(d/L)`` as ``d − L rint(d · L⁻¹)``: in the innermost loops a test
or a division (whose zero check numba compiles in) cost more than the arithmetic. Along an axis
that is not periodic it subtracts ``0 · rint(d · 0) = ±0`` and leaves ``d`` as it is, to the bit
(a difference of positions is never −0), so a scene without a periodic axis keeps its results.
"""

import numpy as np
from numba import njit

from .schema import Key

PERIOD, ORIGIN, INVERSE = 0, 1, 2

KEYS = {"cell": {
    "periodic": Key("bool3", (False, False, False), "axes [x, y, z] along which the cell is periodic: a particle "
                    "leaving through a face re-enters through the opposite one, and contacts and bonds act across "
                    "the faces (nearest image). Planes must be parallel to every periodic axis; mesh walls and "
                    "Lennard-Jones sites do not act across faces (refused)"),
    "origin": Key("vec3", (0.0, 0.0, 0.0), "lowest corner of the cell", "length"),
    "size": Key("vec3", None, "edges [Lx, Ly, Lz] of the cell; needed when an axis is periodic, each periodic edge "
                "more than twice the largest contact or bond reach (D_max + skin)", "length"),
}}


def periodic(section):
    """Whether the ``[cell]`` section (its values) makes any axis periodic."""
    return any(section["periodic"])


def cell_array(section):
    """The ``(3, 3)`` array the kernels read for the ``[cell]`` section (validated: a periodic
    axis has a positive edge)."""
    cell = np.zeros((3, 3))
    if periodic(section):
        cell[PERIOD] = np.where(section["periodic"], np.asarray(section["size"], float), 0.0)
        cell[ORIGIN] = section["origin"]
    return with_inverse(cell)


def with_inverse(cell):
    """``cell`` with its `INVERSE` row set from its `PERIOD` row; returns it."""
    on = cell[PERIOD] > 0.0
    cell[INVERSE] = 0.0
    cell[INVERSE, on] = 1.0 / cell[PERIOD, on]
    return cell


def section_problem(section):
    """``(key, problem)`` of a ``[cell]`` section that cannot make a cell, or None."""
    if not periodic(section):
        return None
    if section["size"] is None:
        return "size", "is required when an axis is periodic"
    for axis, (on, edge) in enumerate(zip(section["periodic"], section["size"])):
        if on and not edge > 0.0:
            return "size", f"must be positive along the periodic axis {'xyz'[axis]}, got {edge:g}"
    return None


def reach_problem(cell, diameter, skin):
    """``(key, problem)`` when a periodic edge is not more than twice the largest pair reach
    (``D_max + skin``: a particle could then meet two images of another), or None."""
    reach = float(diameter.max(initial=0.0)) + skin
    for axis in range(3):
        edge = cell[PERIOD, axis]
        if edge > 0.0 and not edge > 2.0 * reach:
            return "size", (f"the periodic edge L{'xyz'[axis]} = {edge:g} must be more than twice the largest contact "
                            f"reach D_max + skin = {reach:g} (two particle diameters and the skin): make the cell larger")
    return None


def wall_problem(cell, normal):
    """The index of the first plane (unit ``normal (w, 3)``) that is not parallel to every
    periodic axis (it would cut the particles' images off), or None."""
    across = np.abs(normal[:, cell[PERIOD] > 0.0]).max(axis=1, initial=0.0) > 1e-12
    return int(np.argmax(across)) if across.any() else None


@njit(inline="always")
def minimum_image(dx, dy, dz, cell):
    """The separation ``(dx, dy, dz)`` of two particles reduced to its nearest image along the
    periodic axes of ``cell``; unchanged (the same bits) along the others (module docstring)."""
    return (dx - cell[PERIOD, 0] * np.rint(dx * cell[INVERSE, 0]),
            dy - cell[PERIOD, 1] * np.rint(dy * cell[INVERSE, 1]),
            dz - cell[PERIOD, 2] * np.rint(dz * cell[INVERSE, 2]))


def minimum_image_array(d, period):
    """`minimum_image` of separations ``d (m, 3)`` along the axes where ``period (3,)`` (a
    cell's `PERIOD` row) is positive (numpy)."""
    on = period > 0.0
    d = np.array(d, float)
    d[:, on] -= period[on] * np.rint(d[:, on] / period[on])
    return d


def wrapped(position, cell):
    """``position (n, 3)`` with every periodic coordinate moved into the cell, ``[origin, origin
    + L)``: what the outputs show."""
    period, origin = cell[PERIOD], cell[ORIGIN]
    on = period > 0.0
    if not on.any():
        return position
    out = np.array(position, float)
    out[:, on] = origin[on] + np.mod(out[:, on] - origin[on], period[on])
    return out
