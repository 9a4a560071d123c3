"""Scene builders (docs/theory.md §5): each ``[[name]]`` table of a scene adds bodies and bonds.

A builder is a module with its keys (``KEYS``, validated by `dem.scene`), an optional
``check(params)`` returning ``(key, problem)`` or None, and ``build(system, params)`` that adds
to a `dem.system.SystemBuilder` (bodies, bonds, and inputs for interactions such as the
Lennard-Jones body pairs). `BUILDERS` lists them in scene-file order.
"""

from dataclasses import dataclass

from . import assembly, chain, clump, insert, outlet, particles, pendulum, rigid_body, sphere, tetra_chain, top, torus


@dataclass(frozen=True)
class Builder:
    keys: dict
    build: object
    check: object = None
    doc: str = ""

    @classmethod
    def of(cls, module):
        return cls(module.KEYS, module.build, getattr(module, "check", None), module.build.__doc__)


BUILDERS = {name: Builder.of(module) for name, module in (
    ("torus", torus), ("pendulum", pendulum), ("rigid_body", rigid_body), ("top", top),
    ("tetra_chain", tetra_chain), ("assembly", assembly), ("chain", chain), ("sphere", sphere),
    ("particles", particles), ("clump", clump), ("insert", insert), ("outlet", outlet),
)}

__all__ = ["BUILDERS", "Builder"]
