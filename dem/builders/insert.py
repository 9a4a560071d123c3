"""The ``[[insert]]`` builder: a source that inserts particles during the run (`dem.feeding`).

Its particles are built with the scene, parked (`dem.feeding.park`): as many as the source can
ever insert (at a ``rate`` up to ``stop``, or the ``count``, ``mass`` or solid ``fraction`` of its
region), with their diameters drawn now from the size distribution (seeded: every run of the
scene draws the same), so that every interaction is set up with them.

With ``clump`` (a built-in shape of `dem.clumps`: dimer, trimer, tetrahedron, rod of ``spheres``
members and ``aspect``) the source inserts clumps instead: the size distribution gives each
clump's member diameter ``d``, and the clump is the shape of member diameter 1 (members overlapping
by half their diameter, as a ``[[clump]]`` table's default) scaled by ``d`` (`dem.clumps.
unit_frame`): mass ``ρ V d³`` of the union of its members, its principal moments ``ρ J d⁵``.
Their orientations are drawn when they are inserted (`dem.feeding.place_clumps`).
"""

import numpy as np

from ..clumps import Template, built_in_problem, unit_frame
from ..feeding import REGION_KEYS, Region, file_sizes, region_problem, span_of
from ..schema import Key, at_least, positive, too_many

#: the built-in clump shapes a source inserts (`dem.clumps`)
CLUMP_SHAPES = ("dimer", "trimer", "tetrahedron", "rod")

KEYS = {
    **REGION_KEYS,
    "rate": Key("float", None, "particles per time unit, from start to stop", "1/time", positive),
    "mass_rate": Key("float", None, "mass per time unit, from start to stop", "mass/time", positive),
    "count": Key("int", None, "a target: this many particles, inserted as soon as they fit", "",
                 lambda v: None if v >= 1 else "must be at least 1"),
    "mass": Key("float", None, "a target: this much mass, inserted as soon as it fits", "mass", positive),
    "fraction": Key("float", None, "a target: this solid fraction of the region, inserted as soon as it fits", "",
                    lambda v: None if 0.0 < v < 0.74 else "must be in (0, 0.74)"),
    "stop": Key("float", None, "time after which nothing more is inserted (required with a rate)", "time", positive),
    "distribution": Key("str", "mono", "particle sizes: mono (diameter), uniform (diameter_min to diameter_max), "
                        "lognormal (median diameter, sigma of ln D, cut at diameter_min and diameter_max) or file "
                        "(diameters drawn from the column diameter of a CSV file)",
                        choices=("mono", "uniform", "lognormal", "file")),
    "diameter": Key("float", None, "the diameter (mono) or the median diameter (lognormal)", "length", positive),
    "diameter_min": Key("float", None, "the smallest diameter (uniform, lognormal)", "length", positive),
    "diameter_max": Key("float", None, "the largest diameter (uniform, lognormal)", "length", positive),
    "sigma": Key("float", None, "the standard deviation of ln D (lognormal)", "", positive),
    "file": Key("path", None, "a CSV file with a column diameter (distribution = file)", ""),
    "density": Key("float", 1.0, "mass density: m = ρ π D³/6, J = m D²/10 (solid spheres; clumps: of the union of "
                   "their members)", "mass/length³", positive),
    "clump": Key("str", None, "insert clumps of this built-in shape instead of spheres (dimer, trimer, "
                 "tetrahedron, rod; as a [[clump]] table's, members overlapping by half their diameter): the size "
                 "distribution gives each clump's member diameter, and orientations are random",
                 choices=CLUMP_SHAPES),
    "spheres": Key("int", 3, "number of member spheres of a rod (clump = rod)", "", at_least(1)),
    "aspect": Key("float", 2.0, "a rod's length over its diameter (clump = rod; at most spheres)", "", positive),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "velocity of the inserted particles (a face's inflow)", "length/time"),
    "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "angular velocity of the inserted particles", "1/time"),
    "seed": Key("int", 0, "seed of the sizes and places", ""),
    "overlap_tolerance": Key("float", 0.0, "largest overlap allowed with a particle in play, as a fraction of the "
                             "two diameters' mean", "", lambda v: None if 0.0 <= v < 0.5 else "must be in [0, 0.5)"),
    "attempts": Key("int", 50, "random places tried for each particle before the region counts as full", "",
                    lambda v: None if v >= 1 else "must be at least 1"),
}
WAYS = ("rate", "mass_rate", "count", "mass", "fraction")


def check(p):
    given = [way for way in WAYS if p[way] is not None]
    if len(given) != 1:
        return "rate", f"give one of {', '.join(WAYS)} (got {', '.join(given) or 'none'})"
    if given[0] in ("rate", "mass_rate") and p["stop"] is None:
        return "stop", f"is required with {given[0]} (a source must end: its particles are built with the scene)"
    if p["stop"] is not None and not p["stop"] > p["start"]:
        return "stop", f"must be after start ({p['start']:g})"
    if p["clump"] is not None:
        problem = built_in_problem(p["clump"], 0.5, None, p["spheres"], p["aspect"])
        if problem:
            return problem
    needed = {"mono": ("diameter",), "uniform": ("diameter_min", "diameter_max"),
              "lognormal": ("diameter", "sigma", "diameter_min", "diameter_max"), "file": ("file",)}
    for key in needed[p["distribution"]]:
        if p[key] is None:
            return key, f"is required with distribution = {p['distribution']}"
    problem = region_problem(p, source=True)
    if problem:
        return problem
    if p["distribution"] in ("uniform", "lognormal") and not p["diameter_max"] > p["diameter_min"]:
        return "diameter_max", f"must exceed diameter_min ({p['diameter_min']:g})"
    if p["distribution"] == "file":
        try:
            sizes = file_sizes(p["file"])
        except ValueError as error:
            return "file", str(error)
        if not len(sizes):
            return "file", f"{p['file']}: no diameter"
    try:
        sizes = drawn(p)
    except ValueError as error:
        return given[0], str(error)
    region = Region(p)
    if (span_of(p, sizes) > np.min(region.hi - region.lo)).any():
        return "diameter", "the region is narrower than its particles" + (" (a clump's span: that of the sphere "
                                                                          "about its centre that holds its members)"
                                                                          if p["clump"] else "")
    return None


def _draw(p, rng, n):
    kind = p["distribution"]
    if kind == "mono":
        return np.full(n, p["diameter"])
    if kind == "uniform":
        return rng.uniform(p["diameter_min"], p["diameter_max"], n)
    if kind == "file":
        return rng.choice(file_sizes(p["file"]), n)
    out = np.empty(0)
    while len(out) < n:  # the lognormal cut at its bounds, by rejection
        more = p["diameter"] * np.exp(p["sigma"] * rng.standard_normal(2 * n + 16))
        out = np.concatenate([out, more[(more >= p["diameter_min"]) & (more <= p["diameter_max"])]])
    return out[:n]


def mass_of(p, d):
    """The mass of a source's particle of diameter ``d`` (a clump's: of member diameter ``d``)."""
    if p["clump"] is not None:
        return p["density"] * unit_frame(p["clump"], p["spheres"], p["aspect"])[0] * d ** 3
    return p["density"] * np.pi / 6.0 * d ** 3


def drawn(p):
    """The diameters of every particle the source can insert, in the order it inserts them."""
    rng = np.random.default_rng([p["seed"], 0x5EED])
    region = Region(p)
    if p["rate"] is not None or p["count"] is not None:
        n = p["count"] if p["count"] is not None else p["rate"] * (p["stop"] - p["start"]) + 1e-9
        problem = too_many(n) if np.isfinite(n) else too_many(np.inf)
        if problem:
            raise ValueError(problem)
        return _draw(p, rng, int(np.floor(n)))
    total = {"mass_rate": lambda: p["mass_rate"] * (p["stop"] - p["start"]), "mass": lambda: p["mass"],
             "fraction": lambda: p["fraction"] * region.volume * p["density"]}[next(w for w in WAYS if p[w])]()
    out = np.empty(0)
    while mass_of(p, out).sum() < total * (1.0 - 1e-12):
        problem = too_many(len(out))
        if problem or not np.isfinite(total):
            raise ValueError(problem or too_many(np.inf))
        out = np.concatenate([out, _draw(p, rng, max(16, len(out)))])
    within = np.cumsum(mass_of(p, out)) <= total * (1.0 + 1e-12)
    return out[:max(int(within.sum()), 1)]


def build(system, p):
    """The source's particles, parked at its region's centre (`dem.feeding`): diameters drawn
    from the size distribution, ``m = ρ π D³/6``, ``J = m D²/10``; or its clumps (``clump``), the
    built-in shape of member diameter 1 scaled by each diameter drawn: ``m = ρ V D³``, ``J ∝ D⁵``."""
    diameter = drawn(p)
    centre = Region(p).centre
    if p["clump"] is None:
        mass = mass_of(p, diameter)
        bodies = system.add_bodies(np.broadcast_to(centre, (len(diameter), 3)), mass=mass,
                                   inertia=0.1 * mass * diameter ** 2, diameter=diameter, group=system.n_bodies)
    else:
        volume, moments, offsets, radii, _ = unit_frame(p["clump"], p["spheres"], p["aspect"])
        group, bodies = system.n_bodies, []
        sizes, first = np.unique(diameter, return_inverse=True)
        runs = np.flatnonzero(np.diff(first, prepend=-1, append=-1))   # runs of one size, in drawn order
        for lo, hi in zip(runs[:-1], runs[1:]):
            d = sizes[first[lo]]
            frame = (p["density"] * volume * d ** 3, p["density"] * moments * d ** 5, np.zeros(3), np.eye(3),
                     offsets * d)
            bodies.append(system.add_clumps(Template(offsets * d, radii * d), np.broadcast_to(centre, (hi - lo, 3)),
                                            density=p["density"], frame=frame, group=group))
        bodies = np.concatenate(bodies)
    system.append_input("insertion", "sources", {**p, "bodies": bodies})
