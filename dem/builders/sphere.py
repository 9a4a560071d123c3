"""The ``[[sphere]]`` builder: one solid sphere, free or held in place (``fixed``)."""

from ..schema import REQUIRED, Key, positive

KEYS = {
    "position": Key("vec3", REQUIRED, "centre of the sphere", "length"),
    "diameter": Key("float", REQUIRED, "diameter D", "length", positive),
    "density": Key("float", None, "mass density ρ: m = ρ π D³/6 (default 1 when mass is not given)", "mass/length³",
                   positive),
    "mass": Key("float", None, "mass m (instead of density)", "mass", positive),
    "velocity": Key("vec3", (0.0, 0.0, 0.0), "initial velocity", "length/time"),
    "angular_velocity": Key("vec3", (0.0, 0.0, 0.0), "initial angular velocity Ω", "1/time"),
    "fixed": Key("bool", False, "hold the sphere in place: it neither moves nor turns (an obstacle, a support)"),
}


def check(p):
    if p["density"] is not None and p["mass"] is not None:
        return "mass", "give density or mass, not both"
    if p["fixed"]:
        for key in ("velocity", "angular_velocity"):
            if any(p[key]):
                return key, f"a fixed sphere does not move: remove {key} or fixed = true"
    return None


def build(system, p):
    """One solid sphere of diameter ``D`` at ``position``: ``m = ρ π D³/6`` (or ``mass``),
    ``J = m D²/10``. With ``fixed = true`` it is pinned and clamped: it takes part in contacts
    (with friction) but neither moves nor turns, whatever the forces on it."""
    diameter = p["diameter"]
    mass = p["mass"] if p["mass"] is not None else (p["density"] or 1.0) * 3.141592653589793 / 6 * diameter ** 3
    system.add_body(p["position"], mass=mass, inertia=0.1 * mass * diameter ** 2, diameter=diameter,
                    velocity=p["velocity"], angular_velocity=p["angular_velocity"], pinned=p["fixed"],
                    clamped=p["fixed"], group=system.n_bodies)
