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

A periodic cell may deform (docs/theory.md §3b.9) with an upper-triangular velocity gradient
``L``: its edges stretch at the true strain rates ``L_aa`` (``strain_rate``), and the shear rates
``[L_xy, L_xz, L_yz]`` (``shear_rate``) slide the images across the y faces along x and those
across the z faces along x and y (Lees–Edwards). The cell's lattice vectors are the columns of
``H = [[L_x, s_xy, s_xz], [0, L_y, s_yz], [0, 0, L_z]]``, moving as ``Ḣ = L H``; each tilt is
kept within half the edge it slides along by subtracting a lattice vector (the same lattice, so
shear strain is unlimited). The image of particle ``j`` at ``x_j + H k`` (``k`` integers) moves
at ``v_j + L H k``: every pair kernel that reads a relative velocity subtracts ``L s``
(`image_velocity`, ``s = H k`` the shift from the raw separation to the nearest image's), and
books the power ``f · L s`` its force puts through the moving faces into the energy budget's
``cell`` column. Particles are not moved with the cell (positions stay unwrapped, no affine
remap): a flow develops from the faces, and a stretched cell pulls on its particles only through
their images. The deformation advances once per step (`deform`, run by the ``cell`` interaction,
`dem.interactions.deformation`), and a servo (`dem.stress.CellServo`) can set the strain rate of
an edge to hold a target stress instead.

Kernels read the cell as an array ``(ROWS, 3)`` (`StateArrays.cell`): row `PERIOD` holds the
edge along each periodic axis and 0 along the others, row `ORIGIN` the lowest corner, row
`INVERSE` the edges' inverses (0 along the other axes), row `TILT` the tilts ``[s_xy, s_xz,
s_yz]``, row `GRADIENT` the strain rates ``L_aa``, row `SHEAR` the shear rates ``[L_xy, L_xz,
L_yz]``, row `INITIAL` the edges at the start, row `STRAIN` the shear strains ``∫ L_ab dt``, row
`MOTION` a bound of how far any image has moved relative to the particle it copies since the
start and its value at the neighbour list's last build (the list rebuilds when the images have
moved by its skin, `dem.neighbors.rebuild_due`), rows `BUILT` and `BUILT_TILT` the edges and tilts
at the last build (a restart rebuilds the list on that lattice, `lattice_at_build`), row `SPAN`
the extent of the particles' unwrapped positions at the last build plus two pair reaches along
each periodic axis (a bound of ``|s|``: an image's velocity relative to its particle is at most
``Σ_b |L_ab| SPAN_b`` along a, `deform`). The nearest image is taken without a per-entry test and
without a division, ``d − L rint(d/L)`` as ``d − L rint(d · L⁻¹)`` (z first, then y and x shifted
by the tilts): in the innermost loops a test on the data or a division (whose zero check numba
compiles in) cost more than the arithmetic. Along an axis that is not periodic it subtracts ``0 ·
rint(d · 0) = ±0`` and leaves ``d`` as it is, to the bit (a difference of positions is never
−0), so a scene without a periodic axis keeps its results, and a cell that does not deform
subtracts ``0 · s = ±0`` from every relative velocity (the same bits). The row kernels read the
cell's `image_kind` once per row and pass it to `minimum_image`, which then skips the arithmetic
that would subtract ±0 (no periodic axis: all of it; no tilt: the tilts' chain), with the same
bits; and they skip the images' velocity where the cell does not deform (`deforms`).
"""

import numpy as np
from numba import njit

from .schema import Key

PERIOD, ORIGIN, INVERSE, TILT, GRADIENT, SHEAR, INITIAL, STRAIN, MOTION, BUILT, BUILT_TILT, SPAN = range(12)
ROWS = 12
#: the shear components ``(row, column)`` of ``L`` and ``H`` in the order of `SHEAR` and `TILT`
SHEARS = ((0, 1), (0, 2), (1, 2))

KEYS = {"cell": {
    "periodic": Key("bool3", (False, False, False), "axes [x, y, z] along which the cell is periodic: a particle "
                    "leaving through a face re-enters through the opposite one, and contacts and bonds act across "
                    "the faces (nearest image). Planes must be parallel to every periodic axis; mesh walls and "
                    "Lennard-Jones sites do not act across faces (refused)"),
    "origin": Key("vec3", (0.0, 0.0, 0.0), "lowest corner of the cell", "length"),
    "size": Key("vec3", None, "edges [Lx, Ly, Lz] of the cell; needed when an axis is periodic, each periodic edge "
                "more than twice the largest contact or bond reach (D_max + skin)", "length"),
    "strain_rate": Key("vec3", (0.0, 0.0, 0.0), "true strain rates [L_xx, L_yy, L_zz] of the periodic edges (each "
                       "edge grows as dL/dt = L_aa L; negative: the cell shrinks); the particles follow through "
                       "their images", "1/time"),
    "shear_rate": Key("vec3_or_number", (0.0, 0.0, 0.0), "Lees-Edwards shear rates [L_xy, L_xz, L_yz] = [dv_x/dy, "
                      "dv_x/dz, dv_y/dz] (a number: L_xy alone): the images across the y faces slide along x at "
                      "L_xy L_y, those across the z faces along x and y at L_xz L_z and L_yz L_z (each needs its two "
                      "axes periodic; unlimited strain)", "1/time"),
    "stress_control": Key("bool3", (False, False, False), "axes whose edge a servo moves to hold target_stress "
                          "(docs/guide.md, Deforming cells); their strain_rate must be 0"),
    "target_stress": Key("vec3", None, "the normal stresses [s_xx, s_yy, s_zz] (positive in compression) the "
                         "servo holds along the stress-controlled axes (0 along the others)", "force/length²"),
    "servo_gain": Key("float", None, "the servo's strain rate per relative stress error, (s - target)/servo_stress, "
                      "clipped to +-servo_gain; needed with stress_control", "1/time"),
    "servo_stress": Key("float", None, "the stress scale of the servo's relative error (default: the largest "
                        "|target_stress|; needed when every target is 0)", "force/length²"),
    "servo_interval": Key("int", 10, "steps between the servo's stress readings", "",
                          lambda v: None if v >= 1 else "must be at least 1"),
}}


def periodic(section):
    """Whether the ``[cell]`` section (its values) makes any axis periodic."""
    return any(section["periodic"])


def deforming(section):
    """Whether the ``[cell]`` section (its values) makes the cell deform."""
    return any(section["strain_rate"]) or any(section["shear_rate"]) or any(section["stress_control"])


def cell_array(section):
    """The ``(ROWS, 3)`` array the kernels read for the ``[cell]`` section (validated: a
    periodic axis has a positive edge)."""
    if not periodic(section):
        return box_cell()
    cell = box_cell(np.where(section["periodic"], np.asarray(section["size"], float), 0.0), section["origin"])
    cell[GRADIENT] = section["strain_rate"]
    cell[SHEAR] = section["shear_rate"]
    return cell


def box_cell(period=(0.0, 0.0, 0.0), origin=(0.0, 0.0, 0.0)):
    """The array of a cell that does not deform, periodic where ``period`` is positive (all
    zero: none)."""
    cell = np.zeros((ROWS, 3))
    cell[PERIOD] = period
    cell[ORIGIN] = origin
    cell[INITIAL] = cell[BUILT] = period
    return with_inverse(cell)


def lattice_at_build(cell):
    """A copy of ``cell`` with the edges and tilts of the neighbour list's last build."""
    out = cell.copy()
    out[PERIOD] = cell[BUILT]
    out[TILT] = cell[BUILT_TILT]
    return with_inverse(out)


def with_inverse(cell):
    """``cell`` with its `INVERSE` row set from its `PERIOD` row; returns it."""
    on = cell[PERIOD] > 0.0
    cell[INVERSE] = 0.0
    cell[INVERSE, on] = 1.0 / cell[PERIOD, on]
    return cell


def section_problem(section):
    """``(key, problem)`` of a ``[cell]`` section that cannot make a cell, or None."""
    if not periodic(section):
        return _deformation_problem(section)
    if section["size"] is None:
        return "size", "is required when an axis is periodic"
    for axis, (on, edge) in enumerate(zip(section["periodic"], section["size"])):
        if on and not edge > 0.0:
            return "size", f"must be positive along the periodic axis {'xyz'[axis]}, got {edge:g}"
    return _deformation_problem(section)


def servo_scale(section):
    """The stress scale of the servo's relative error (``servo_stress``, or the largest
    ``|target_stress|`` of the stress-controlled axes), or None when there is none."""
    scale = section["servo_stress"]
    if scale is None:
        scale = max((abs(section["target_stress"][a]) for a in range(3) if section["stress_control"][a]), default=0.0)
    return scale if scale > 0.0 else None


def _deformation_problem(section):
    """``(key, problem)`` of the deformation keys of a ``[cell]`` section, or None."""
    on, controlled, target = section["periodic"], section["stress_control"], section["target_stress"]
    for axis in range(3):
        name = "xyz"[axis]
        if not on[axis] and section["strain_rate"][axis] != 0.0:
            return "strain_rate", f"the cell is not periodic along {name}: only a periodic edge can be strained"
        if not on[axis] and controlled[axis]:
            return "stress_control", f"the cell is not periodic along {name}: only a periodic edge can be servoed"
        if controlled[axis] and section["strain_rate"][axis] != 0.0:
            return "strain_rate", (f"the edge along {name} is stress-controlled (the servo sets its rate): make its "
                                   f"strain rate 0")
        if target is not None and target[axis] != 0.0 and not controlled[axis]:
            return "target_stress", (f"a stress target along {name}, which is strain-controlled: set "
                                     f"stress_control along {name} or make its target 0")
    for (a, b), rate in zip(SHEARS, section["shear_rate"]):
        if rate != 0.0 and not (on[a] and on[b]):
            return "shear_rate", (f"Lees-Edwards shear d v_{'xyz'[a]}/d{'xyz'[b]} needs a cell periodic along "
                                  f"{'xyz'[a]} and {'xyz'[b]}")
    if any(controlled):
        if not all(on):
            return "stress_control", ("the servo reads the stress of the whole cell: make the cell periodic along x, y "
                                      "and z")
        if target is None:
            return "target_stress", "is required with stress_control"
        if servo_scale(section) is None:
            return "servo_stress", "is required when every target stress is 0, and must be positive"
        if section["servo_gain"] is None or not section["servo_gain"] > 0.0:
            return "servo_gain", "is required with stress_control and must be positive"
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


#: what `minimum_image` does in a cell (`image_kind`): nothing (no periodic axis), each periodic
#: axis on its own (no tilts), or z, then y, then x shifted by the tilts
OPEN, UPRIGHT, TILTED = range(3)


@njit(inline="always")
def image_kind(cell):
    """`OPEN` (no periodic axis), `UPRIGHT` (periodic axes, no tilt) or `TILTED`: what
    `minimum_image` has to do in ``cell`` now. A kernel reads it once, before its loop over a row's
    entries, and passes it on: the compiler can then split the loop into one copy per kind (it
    does for the Hertz rows), and an open or upright cell skips the tilts' chain of dependent
    roundings, which the touching test of every entry waits for."""
    if cell[TILT, 0] != 0.0 or cell[TILT, 1] != 0.0 or cell[TILT, 2] != 0.0:
        return TILTED
    if cell[PERIOD, 0] != 0.0 or cell[PERIOD, 1] != 0.0 or cell[PERIOD, 2] != 0.0:
        return UPRIGHT
    return OPEN


@njit(inline="always")
def minimum_image(dx, dy, dz, cell, kind=TILTED):
    """The separation ``(dx, dy, dz)`` of two particles reduced to its nearest image along the
    periodic axes of ``cell`` (z first, then y, each shifting the components before it by the
    tilts); unchanged (the same bits) along the others (module docstring). ``kind`` (`image_kind`
    of ``cell``) skips what the cell does not need: every kind gives the bits of `TILTED`'s
    arithmetic, where a tilt or an edge that is 0 subtracts ±0."""
    if kind == OPEN:
        return dx, dy, dz
    if kind == UPRIGHT:
        return (dx - cell[PERIOD, 0] * np.rint(dx * cell[INVERSE, 0]),
                dy - cell[PERIOD, 1] * np.rint(dy * cell[INVERSE, 1]),
                dz - cell[PERIOD, 2] * np.rint(dz * cell[INVERSE, 2]))
    kz = np.rint(dz * cell[INVERSE, 2])
    dx = dx - cell[TILT, 1] * kz
    dy = dy - cell[TILT, 2] * kz
    ky = np.rint(dy * cell[INVERSE, 1])
    dx = dx - cell[TILT, 0] * ky
    return (dx - cell[PERIOD, 0] * np.rint(dx * cell[INVERSE, 0]),
            dy - cell[PERIOD, 1] * ky,
            dz - cell[PERIOD, 2] * kz)


@njit(inline="always")
def image_velocity(i, j, dx, dy, dz, position, cell):
    """The velocity ``L s`` of the image of ``j`` nearest to ``i`` relative to ``j`` itself
    (``s = x_i − x_j − d`` the shift to the nearest image's separation ``d``, ``L`` the cell's
    velocity gradient): subtracted from ``v_i − v_j`` it gives the pair's relative velocity; ±0
    in a cell that does not deform."""
    sx = position[i, 0] - position[j, 0] - dx
    sy = position[i, 1] - position[j, 1] - dy
    sz = position[i, 2] - position[j, 2] - dz
    return (cell[GRADIENT, 0] * sx + cell[SHEAR, 0] * sy + cell[SHEAR, 1] * sz,
            cell[GRADIENT, 1] * sy + cell[SHEAR, 2] * sz, cell[GRADIENT, 2] * sz)


@njit(inline="always")
def deforms(cell):
    """Whether ``cell`` deforms (a strain or shear rate: its images move)."""
    return cell[SHEAR, 0] != 0.0 or cell[SHEAR, 1] != 0.0 or cell[SHEAR, 2] != 0.0 or cell[GRADIENT, 0] != 0.0 \
        or cell[GRADIENT, 1] != 0.0 or cell[GRADIENT, 2] != 0.0


@njit(inline="always")
def _reduce(value, edge, inverse):
    """``value − k edge`` within ``±edge/2``, and ``k`` (0 when ``edge`` is 0: not periodic)."""
    k = np.rint(value * inverse)
    return value - edge * k, k


@njit(cache=True)
def deform(h, cell):
    """Advance a deforming ``cell`` by the step ``h``: ``H`` by ``h L H`` (each periodic edge by
    ``h L_aa L_a``, each tilt by its row of ``h L H``), each tilt brought back within half the
    edge it slides along by subtracting a lattice vector, the shear strains, and the bound of the
    images' motion by ``h Σ_ab |L_ab| SPAN_b`` (module docstring)."""
    xy, xz, yz = cell[TILT, 0], cell[TILT, 1], cell[TILT, 2]
    rate_xy = cell[GRADIENT, 0] * xy + cell[SHEAR, 0] * cell[PERIOD, 1]
    rate_xz = cell[GRADIENT, 0] * xz + cell[SHEAR, 0] * yz + cell[SHEAR, 1] * cell[PERIOD, 2]
    rate_yz = cell[GRADIENT, 1] * yz + cell[SHEAR, 2] * cell[PERIOD, 2]
    motion = (abs(cell[GRADIENT, 0]) * cell[SPAN, 0] + abs(cell[SHEAR, 0]) * cell[SPAN, 1]
              + abs(cell[SHEAR, 1]) * cell[SPAN, 2] + abs(cell[GRADIENT, 1]) * cell[SPAN, 1]
              + abs(cell[SHEAR, 2]) * cell[SPAN, 2] + abs(cell[GRADIENT, 2]) * cell[SPAN, 2])
    for a in range(3):
        cell[PERIOD, a] += h * cell[GRADIENT, a] * cell[PERIOD, a]
        if cell[PERIOD, a] > 0.0:
            cell[INVERSE, a] = 1.0 / cell[PERIOD, a]
    yz, k = _reduce(yz + h * rate_yz, cell[PERIOD, 1], cell[INVERSE, 1])  # c -= k b
    xz = xz + h * rate_xz - k * (xy + h * rate_xy)
    xz, _ = _reduce(xz, cell[PERIOD, 0], cell[INVERSE, 0])  # c -= k a
    xy, _ = _reduce(xy + h * rate_xy, cell[PERIOD, 0], cell[INVERSE, 0])  # b -= k a
    cell[TILT, 0], cell[TILT, 1], cell[TILT, 2] = xy, xz, yz
    for c in range(3):
        cell[STRAIN, c] += h * cell[SHEAR, c]
    cell[MOTION, 0] += h * motion


@njit(cache=True)
def record_build(cell, lo, hi, reach):
    """Record in ``cell`` the lattice of a neighbour list's build (its edges, tilts and the
    images' motion so far) and the bound `SPAN` of the shifts ``|s|`` until the next build: the
    extent ``hi − lo`` of the unwrapped positions plus two pair reaches (``|s| ≤ |x_i − x_j| +
    |d|``, with the positions moving less than a reach between builds) along each periodic axis."""
    cell[MOTION, 1] = cell[MOTION, 0]
    for c in range(3):
        cell[BUILT, c] = cell[PERIOD, c]
        cell[BUILT_TILT, c] = cell[TILT, c]
        cell[SPAN, c] = hi[c] - lo[c] + 2.0 * reach if cell[PERIOD, c] > 0.0 else 0.0


def minimum_image_array(d, period, tilt=(0.0, 0.0, 0.0)):
    """`minimum_image` of separations ``d (m, 3)`` along the axes where ``period (3,)`` (a
    cell's `PERIOD` row) is positive, with the tilts ``tilt = [s_xy, s_xz, s_yz]`` (numpy)."""
    on = period > 0.0
    d = np.array(d, float)
    if on[2] and (tilt[1] != 0.0 or tilt[2] != 0.0):
        k = np.rint(d[:, 2] / period[2])
        d[:, 0] -= tilt[1] * k
        d[:, 1] -= tilt[2] * k
    if on[1] and tilt[0] != 0.0:
        d[:, 0] -= tilt[0] * np.rint(d[:, 1] / period[1])
    d[:, on] -= period[on] * np.rint(d[:, on] / period[on])
    return d


def cell_image(d, cell):
    """`minimum_image_array` of ``d`` in the cell ``cell`` (its edges and tilts)."""
    return minimum_image_array(d, cell[PERIOD], cell[TILT])


def wrapped(position, cell):
    """``position (n, 3)`` with every periodic coordinate moved into the cell, ``[origin, origin
    + L)`` (across the z and y faces shifted by the tilts): what the outputs show."""
    period, origin, tilt = cell[PERIOD], cell[ORIGIN], cell[TILT]
    on = period > 0.0
    if not on.any():
        return position
    out = np.array(position, float)
    if on[2] and (tilt[1] != 0.0 or tilt[2] != 0.0):  # across the z faces the images are shifted along x and y
        k = np.floor((out[:, 2] - origin[2]) / period[2])
        out[:, 0] -= tilt[1] * k
        out[:, 1] -= tilt[2] * k
    if on[1] and tilt[0] != 0.0:  # across the y faces the images are shifted along x
        out[:, 0] -= tilt[0] * np.floor((out[:, 1] - origin[1]) / period[1])
    out[:, on] = origin[on] + np.mod(out[:, on] - origin[on], period[on])
    return out
