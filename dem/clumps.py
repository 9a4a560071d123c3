"""Multi-sphere clumps (docs/guide.md, Clumps; docs/theory.md §3b.11): templates of overlapping or
touching spheres and the mass properties of their union.

A `Template` is a list of member spheres (centres and radii in the template's own frame). Its
mass, centre of mass and inertia tensor are those of the union volume at a uniform density,
overlaps counted once (`mass_properties`):

* one sphere, or two spheres: closed form (the union of two spheres is each sphere cut by their
  radical plane, `_two_spheres`), exact to round-off;
* three spheres or more: a deterministic quadrature (`_union_by_rays`): each point of the union
  is counted once, by the first member (in template order) that holds it; along every ray from a
  member's centre the part of the ray not inside an earlier member is a set of intervals found
  exactly, whose radial moments ``∫ t² dt``, ``∫ t³ dt``, ``∫ t⁴ dt`` are exact polynomials; the
  directions are a product rule, Gauss–Legendre in ``cos θ`` times the trapezoid rule in ``φ``.
  The only error is the angular rule's, where a ray grazes another member: with the default
  `RESOLUTION` (128 × 256 directions a member) it is below 1e-6 of the mass and of the moments
  of inertia on the built-in shapes (tests/test_clumps.py measures it on a dimer against the
  closed form).

`body_frame` turns a template into what a rigid body needs: mass, principal moments, the
principal axes (the body frame) and the members' centres in that frame, measured from the centre
of mass; `unit_frame` is that of a built-in shape of member diameter 1, which a source of clumps
(`dem.builders.insert`) scales to the member diameter each clump draws. `template_problem` says what makes a list of spheres unusable (no sphere, a radius that
is not positive, members in pieces).
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .rotations import principal_axes

#: Built-in template shapes (`built_in`).
SHAPES = ("sphere", "dimer", "trimer", "tetrahedron", "rod")
#: Directions a member of the quadrature: Gauss–Legendre nodes in cos θ, trapezoid nodes in φ.
RESOLUTION = (128, 256)
#: Centres closer than ``(1 + TOUCH) (r_i + r_j)`` are connected (touching spheres, to round-off).
TOUCH = 1e-9


@dataclass(frozen=True)
class Template:
    """Member spheres of a clump: ``centres (n, 3)`` and ``radii (n,)`` in the template frame."""

    centres: np.ndarray
    radii: np.ndarray

    def __len__(self):
        return len(self.radii)


@dataclass(frozen=True)
class MassProperties:
    """Of a union of spheres at ``density``: ``volume``, ``mass``, ``centre (3,)`` of mass and
    ``tensor (3, 3)`` the inertia tensor about it, in the template frame."""

    volume: float
    mass: float
    centre: np.ndarray
    tensor: np.ndarray


def built_in(shape, radius, distance=None, count=2, aspect=2.0):
    """The `Template` of a built-in ``shape`` (a name of `SHAPES`) of member ``radius``, centred at
    the origin: ``dimer`` two members ``distance`` apart along x; ``trimer`` three at the corners
    of an equilateral triangle of side ``distance`` in the xy plane; ``tetrahedron`` four at the
    corners of a regular tetrahedron of edge ``distance``; ``rod`` ``count`` members along x,
    evenly spaced so that the rod's length is ``aspect`` times its diameter (``distance`` unused).
    ``distance`` defaults to ``radius`` (members overlapping by half their diameter)."""
    distance = radius if distance is None else distance
    if shape == "sphere":
        centres = np.zeros((1, 3))
    elif shape == "dimer":
        centres = np.array([[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]]) * distance
    elif shape == "trimer":
        angle = 2.0 * np.pi * np.arange(3) / 3.0
        centres = distance / np.sqrt(3.0) * np.stack([np.cos(angle), np.sin(angle), np.zeros(3)], axis=1)
    elif shape == "tetrahedron":
        corners = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])
        centres = corners * distance / (2.0 * np.sqrt(2.0))
    elif shape == "rod":
        if count == 1:
            centres = np.zeros((1, 3))
        else:
            spacing = 2.0 * radius * (aspect - 1.0) / (count - 1)
            centres = np.zeros((count, 3))
            centres[:, 0] = spacing * (np.arange(count) - 0.5 * (count - 1))
    else:
        raise ValueError(f"unknown clump shape {shape!r} (known: {', '.join(SHAPES)})")
    return Template(centres, np.full(len(centres), float(radius)))


def built_in_problem(shape, radius, distance=None, count=2, aspect=2.0):
    """``(key, problem)`` of built-in shape parameters that make no clump, or None."""
    if shape == "rod":
        if count < 1:
            return "count", f"a rod has at least one sphere, got {count}"
        if aspect < 1.0:
            return "aspect", f"a rod is at least as long as it is wide (aspect ≥ 1), got {aspect:g}"
        if count == 1 and aspect != 1.0:
            return "aspect", "a rod of one sphere has aspect 1"
        if count > 1 and aspect > count * (1.0 + TOUCH):
            return "aspect", (f"{count} spheres make a rod of aspect at most {count} (touching spheres); "
                              f"got {aspect:g}: give more spheres")
    elif shape in ("dimer", "trimer", "tetrahedron") and distance is not None and distance > 2.0 * radius * (1 + TOUCH):
        return "distance", (f"members {distance:g} apart with radius {radius:g} do not touch (at most 2 radius = "
                            f"{2 * radius:g})")
    return None


def template_problem(centres, radii):
    """What makes member spheres unusable as a clump, as one line, or None: no sphere, a
    non-finite value, a radius that is not positive, members that are not all connected
    (two members are connected when they overlap or touch)."""
    centres = np.asarray(centres, float).reshape(-1, 3)
    radii = np.asarray(radii, float).reshape(-1)
    if len(radii) == 0:
        return "the template has no sphere"
    if len(centres) != len(radii):
        return f"{len(centres)} centres for {len(radii)} radii"
    bad = np.flatnonzero(~np.isfinite(centres).all(axis=1))
    if len(bad):
        return f"member {bad[0]}: its centre is not a finite number"
    bad = np.flatnonzero(~(np.isfinite(radii) & (radii > 0)))
    if len(bad):
        return f"member {bad[0]}: radius must be a positive number, got {radii[bad[0]]:g}"
    pieces = _pieces(centres, radii)
    if pieces.max() > 0:
        apart = np.flatnonzero(pieces > 0)
        return (f"members are not connected: member {apart[0]} neither overlaps nor touches the piece of member 0 "
                f"(the clump is in {pieces.max() + 1} pieces)")
    return None


def _pieces(centres, radii):
    """Connected component of each member (0: member 0's), members linked where they overlap or
    touch."""
    distance = np.linalg.norm(centres[:, None] - centres[None], axis=2)
    linked = distance <= (1.0 + TOUCH) * (radii[:, None] + radii[None])
    piece = np.full(len(radii), -1)
    count = 0
    for seed in range(len(radii)):
        if piece[seed] >= 0:
            continue
        piece[seed] = count
        stack = [seed]
        while stack:
            k = stack.pop()
            for other in np.flatnonzero(linked[k] & (piece < 0)):
                piece[other] = count
                stack.append(other)
        count += 1
    return piece


def mass_properties(template, density=1.0, resolution=RESOLUTION):
    """`MassProperties` of the union of ``template``'s members at ``density`` (see the module's
    docstring: closed form for one or two members, the ray quadrature with ``resolution =
    (cos θ nodes, φ nodes)`` otherwise)."""
    centres = np.asarray(template.centres, float)
    radii = np.asarray(template.radii, float)
    if len(radii) == 1:
        volume = 4.0 / 3.0 * np.pi * radii[0] ** 3
        return MassProperties(volume, density * volume, centres[0].copy(),
                              density * 0.4 * volume * radii[0] ** 2 * np.eye(3))
    if len(radii) == 2:
        volume, first, second = _two_spheres(centres, radii)
    else:
        volume, first, second = _union_by_rays(centres, radii, resolution)
    centre = first / volume
    # second moment about the centre of mass, then the inertia tensor ∫ (|r|² I − r rᵀ) dV
    second = second - volume * np.outer(centre, centre)
    tensor = np.trace(second) * np.eye(3) - second
    return MassProperties(volume, density * volume, centre, density * 0.5 * (tensor + tensor.T))


def _cap_moments(radius, a):
    """``(∫ dV, ∫ z dV, ∫ z² dV, ∫ (x² + y²) dV)`` of the cap ``z ≥ a`` of a sphere of ``radius``
    centred at the origin (``a`` clipped to ``[−radius, radius]``), in factored form so that a
    thin cap keeps its digits."""
    r = radius
    a = min(max(a, -r), r)
    h = r - a
    # r^k − a^k = h · (sum of r^i a^(k−1−i))
    d3 = h * (r * r + r * a + a * a)
    d4 = h * (r + a) * (r * r + a * a)
    d5 = h * (r ** 4 + r ** 3 * a + r * r * a * a + r * a ** 3 + a ** 4)
    volume = np.pi * h * h * (3.0 * r - h) / 3.0
    first = np.pi * (r * r * h * (r + a) / 2.0 - d4 / 4.0)
    axial = np.pi * (r * r * d3 / 3.0 - d5 / 5.0)
    radial = 0.5 * np.pi * (r ** 4 * h - 2.0 * r * r * d3 / 3.0 + d5 / 5.0)
    return volume, first, axial, radial


def _two_spheres(centres, radii):
    """``(V, ∫ x dV, ∫ x xᵀ dV)`` of the union of two spheres, exactly: on sphere 1's side of the
    radical plane every point of sphere 2 is inside sphere 1 (its power with respect to sphere 1
    is the smaller), so the union is sphere 1 less its cap beyond the plane plus sphere 2 less
    its cap beyond the plane (a contained sphere has all of itself beyond the plane)."""
    r1, r2 = float(radii[0]), float(radii[1])
    axis = centres[1] - centres[0]
    d = float(np.linalg.norm(axis))
    if d == 0.0:   # concentric: the larger sphere
        r = max(r1, r2)
        volume = 4.0 / 3.0 * np.pi * r ** 3
        return volume, volume * centres[0], volume * (np.outer(centres[0], centres[0]) + 0.2 * r * r * np.eye(3))
    axis = axis / d
    a1 = (d * d + r1 * r1 - r2 * r2) / (2.0 * d)   # the radical plane, from centre 1 along the axis
    a2 = d - a1                                      # the same plane, from centre 2 back along the axis
    terms = []
    for r, a in ((r1, a1), (r2, a2)):
        cap = _cap_moments(r, a)
        sphere = (4.0 / 3.0 * np.pi * r ** 3, 0.0, 4.0 / 15.0 * np.pi * r ** 5, 8.0 / 15.0 * np.pi * r ** 5)
        terms.append([whole - part for whole, part in zip(sphere, cap)])
    (v1, z1, zz1, rr1), (v2, z2, zz2, rr2) = terms
    # in sphere 1's frame, axial coordinate z; sphere 2's pieces are measured along −axis from centre 2
    volume = v1 + v2
    first_z = z1 + (d * v2 - z2)
    second_z = zz1 + (d * d * v2 - 2.0 * d * z2 + zz2)
    radial = rr1 + rr2                               # ∫ (x² + y²) dV, by symmetry half along each transverse axis
    first = volume * centres[0] + first_z * axis
    transverse = np.eye(3) - np.outer(axis, axis)
    local = second_z * np.outer(axis, axis) + 0.5 * radial * transverse
    # shift from centre 1 to the template origin: ∫ (c + s)(c + s)ᵀ
    offset = np.outer(centres[0], first_z * axis)
    second = local + offset + offset.T + volume * np.outer(centres[0], centres[0])
    return volume, first, second


def _directions(resolution):
    """Unit directions ``(m, 3)`` and weights ``(m,)`` of the product rule over the unit sphere
    (weights sum to 4π)."""
    n_theta, n_phi = resolution
    mu, w_mu = np.polynomial.legendre.leggauss(n_theta)
    phi = (np.arange(n_phi) + 0.5) * (2.0 * np.pi / n_phi)
    sine = np.sqrt(1.0 - mu * mu)
    directions = np.stack([np.outer(sine, np.cos(phi)), np.outer(sine, np.sin(phi)),
                           np.outer(mu, np.ones(n_phi))], axis=2).reshape(-1, 3)
    weights = np.outer(w_mu, np.full(n_phi, 2.0 * np.pi / n_phi)).reshape(-1)
    return directions, weights


def _union_by_rays(centres, radii, resolution):
    """``(V, ∫ x dV, ∫ x xᵀ dV)`` of a union of spheres: each member contributes the points that
    no earlier member holds, integrated along rays from its centre (module docstring)."""
    directions, weights = _directions(resolution)
    volume, first, second = 0.0, np.zeros(3), np.zeros((3, 3))
    for i, (centre, radius) in enumerate(zip(centres, radii)):
        # covered intervals [start, end] of each ray by the earlier members, clipped to [0, radius]
        starts, ends = [], []
        for j in range(i):
            w = centre - centres[j]
            b = directions @ w
            discriminant = b * b - (w @ w - radii[j] ** 2)
            root = np.sqrt(np.maximum(discriminant, 0.0))
            start = np.clip(-b - root, 0.0, radius)
            end = np.clip(-b + root, 0.0, radius)
            empty = (discriminant <= 0.0) | (end <= start)
            starts.append(np.where(empty, 0.0, start))
            ends.append(np.where(empty, 0.0, end))
        moments = [np.full(len(weights), radius ** (p + 1) / (p + 1)) for p in (2, 3, 4)]
        if starts:
            for start, end in _union_of_intervals(np.array(starts), np.array(ends)):
                for k, p in enumerate((2, 3, 4)):
                    moments[k] -= (end ** (p + 1) - start ** (p + 1)) / (p + 1)
        t2, t3, t4 = (weights * m for m in moments)
        v = t2.sum()
        s1 = t3 @ directions                                    # ∫ (x − c) dV
        s2 = (directions * t4[:, None]).T @ directions         # ∫ (x − c)(x − c)ᵀ dV
        volume += v
        first += v * centre + s1
        second += s2 + np.outer(centre, s1) + np.outer(s1, centre) + v * np.outer(centre, centre)
    return volume, first, second


def _union_of_intervals(starts, ends):
    """The disjoint intervals of the union of ``k`` intervals per ray (``(k, m)`` arrays; an
    empty interval has start = end), as a list of ``(start, end)`` arrays of length ``m`` (empty
    where a ray has fewer): sorted by start, then merged in a sweep."""
    order = np.argsort(starts, axis=0, kind="stable")
    starts = np.take_along_axis(starts, order, axis=0)
    ends = np.take_along_axis(ends, order, axis=0)
    merged = []
    current_start, current_end = starts[0].copy(), ends[0].copy()
    for k in range(1, len(starts)):
        separate = starts[k] > current_end
        # a separate interval closes the current one; an overlapping one extends it
        merged.append((np.where(separate, current_start, 0.0), np.where(separate, current_end, 0.0)))
        current_start = np.where(separate, starts[k], current_start)
        current_end = np.where(separate, ends[k], np.maximum(current_end, ends[k]))
    merged.append((current_start, current_end))
    return merged


def principal_frame(properties):
    """``(moments (3,), axes (3, 3))`` of `MassProperties`: principal moments and axes (columns,
    a rotation), as `dem.rotations.principal_axes` orders them."""
    return principal_axes(properties.tensor)


def body_frame(template, density=1.0, resolution=RESOLUTION):
    """What a rigid body of ``template`` needs: ``(mass, moments (3,), centre (3,), axes (3, 3),
    offsets (n, 3))``: ``centre`` the centre of mass in the template frame, ``axes`` the principal
    axes (columns; the body frame is the template frame turned by ``axes``), ``offsets`` the
    members' centres in the body frame, from the centre of mass."""
    properties = mass_properties(template, density, resolution)
    moments, axes = principal_frame(properties)
    offsets = (np.asarray(template.centres, float) - properties.centre) @ axes
    return properties.mass, moments, properties.centre, axes, offsets


def clump_reach(arms, radii):
    """The distance from a clump's centre of mass to its farthest point, ``max_m (|s_m| + r_m)``
    (``arms (m, 3)`` the members' centres from the centre of mass, in any frame)."""
    return float(np.max(np.linalg.norm(arms, axis=1) + radii))


@lru_cache(maxsize=None)
def unit_frame(shape, count=2, aspect=2.0):
    """``(volume, moments (3,), offsets (n, 3), radii (n,), reach)`` of the built-in ``shape`` of
    member diameter 1 (radius 0.5, the default distance) at density 1: its volume, principal
    moments, members' centres in the body frame from the centre of mass (`body_frame`), radii,
    and the distance from the centre of mass to its farthest point. At member diameter ``d`` and
    density ``ρ`` the clump is this one scaled: mass ``ρ V d³``, moments ``ρ J d⁵``, offsets and
    radii ``d`` times these (the same shape, so the same principal axes). Cached: one quadrature
    a shape."""
    template = built_in(shape, 0.5, None, count, aspect)
    volume, moments, _, _, offsets = body_frame(template)
    radii = np.asarray(template.radii, float)
    for array in (moments, offsets, radii):
        array.setflags(write=False)
    return volume, moments, offsets, radii, clump_reach(offsets, radii)


def body_volumes(model):
    """``(n,)`` each body's solid volume: a clump's the union of its members (`mass_properties`,
    computed once per shape: clumps that differ only by a scale share it), another body's the
    sphere of its diameter (0 for a point)."""
    volume = np.pi / 6.0 * model.diameter ** 3
    shapes = {}
    for i in np.flatnonzero(np.diff(model.site_start) > 0):   # the bodies with sites
        sites = slice(model.site_start[i], model.site_start[i + 1])
        radius = model.site_radius[sites]
        if len(radius) and (radius > 0).all():
            scale = float(radius[0])
            centres, radii = model.site_offset[sites] / scale, radius / scale
            key = (np.round(centres, 12).tobytes(), np.round(radii, 12).tobytes())
            if key not in shapes:
                shapes[key] = mass_properties(Template(centres, radii)).volume
            volume[i] = shapes[key] * scale ** 3
    return volume
