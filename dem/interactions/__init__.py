"""The interaction registry (docs/theory.md §3): every interaction `dem` knows, in the order the compiled
loop applies them within their kind (`dem.interactions.contract`).

`INTERACTIONS` is read by everything that needs to know the interactions: the scene schema and
its reference page (their keys), the model set-up (`setup_interactions`), the compiled loop
(`dem.engine`), the energy log (`ENERGY_COLUMNS`) and the test battery. Adding an interaction is
one module that defines an `Interaction` plus one line here (or `register` for one defined
elsewhere, e.g. in a test).
"""

import functools

import numpy as np

from .applied_force import APPLIED_FORCE
from .binder import BINDER
from .clump_contacts import ADHESIVE_CLUMP_PP, CLUMP_PP
from .clump_walls import ADHESIVE_CLUMP_PW, CLUMP_PW
from .contract import BOND, CHUNK, GLOBAL, ROW, Interaction
from .damping import DAMPING
from .deformation import DEFORMATION
from .contact import ADHESIVE_PP, CONTACT_PP
from .gravity import GRAVITY
from .hertz import ADHESIVE_PW, HERTZ_PP, HERTZ_PW, damping_from_restitution
from .insertion import INSERTION
from .lennard_jones import LENNARD_JONES, lennard_jones
from .normal.hertz import hertz  # the function (after .hertz, whose module it shadows here)
from .ortolan_saccon import ORTOLAN_SACCON, ortolan_saccon
from .parallel_bond import PARALLEL_BOND
from .wall_contact import ADHESIVE_CONTACT_PW, CONTACT_PW
from .walls import WALLS

#: name -> Interaction, in application order (`DAMPING` last: it opposes the total force)
INTERACTIONS = {
    interaction.name: interaction
    for interaction in (BINDER, PARALLEL_BOND, HERTZ_PP, CONTACT_PP, ADHESIVE_PP, CLUMP_PP, ADHESIVE_CLUMP_PP, HERTZ_PW,
                        ADHESIVE_PW, CONTACT_PW, ADHESIVE_CONTACT_PW, CLUMP_PW, ADHESIVE_CLUMP_PW, GRAVITY,
                        LENNARD_JONES, ORTOLAN_SACCON, APPLIED_FORCE, WALLS, DEFORMATION, INSERTION, DAMPING)
}

#: The energy columns of docs/theory.md §4, in its order (after the two kinetic ones). Columns of
#: interactions that are not listed here are appended after the momenta, in registry order.
CORE_COLUMNS = ("axial", "shear", "bending", "hertz_pp", "hertz_pw", "gravity", "lj", "external", "broken",
                "dissipated")
KINETIC_COLUMNS = ("kinetic_translational", "kinetic_rotational")
#: The booked work that moving walls and a deforming cell put into the particles, and the energy of
#: the particles inserted (minus them): the energy they bring is in play too, so energy errors are
#: measured against |E(0)| plus these
DRIVEN_COLUMNS = ("walls", "cell", "inserted")


@functools.cache  # (asked for at every log row; `register` and `unregister` clear it)
def extra_columns():
    """Energy columns of registered interactions beyond `CORE_COLUMNS`, in registry order."""
    out = []
    for interaction in INTERACTIONS.values():
        out += [c for c in interaction.columns if c not in CORE_COLUMNS and c not in out]
    return tuple(out)


@functools.cache
def energy_columns():
    """Every energy column of the log, in its order: kinetic, docs/theory.md §4's, then the others."""
    return KINETIC_COLUMNS + CORE_COLUMNS + extra_columns()


def register(interaction):
    """Add ``interaction`` to the registry (after the others); returns it. Its name must be new."""
    if interaction.name in INTERACTIONS:
        raise ValueError(f"an interaction named {interaction.name!r} is already registered")
    INTERACTIONS[interaction.name] = interaction
    INTERACTIONS["damping"] = INTERACTIONS.pop("damping")  # stays last: it opposes the total force
    _columns_changed()
    return interaction


def unregister(name):
    """Remove a registered interaction (the counterpart of `register`, for tests)."""
    del INTERACTIONS[name]
    _columns_changed()


def _columns_changed():
    extra_columns.cache_clear()
    energy_columns.cache_clear()


def section_keys():
    """``{section: {key: Key}}`` of every registered interaction (a key shared by several
    interactions, like ``contact.restitution``, is the same `Key` object)."""
    sections = {}
    for interaction in INTERACTIONS.values():
        for section, keys in interaction.keys.items():
            table = sections.setdefault(section, {})
            for name, key in keys.items():
                if table.setdefault(name, key) is not key:
                    raise ValueError(f"scene key {section}.{name} is declared twice, differently")
    return sections


#: per-body parameters that several interactions compute alike from the bodies (the particle–particle
#: and particle–wall contacts' `dem.interactions.rolling.contact_inertia`): one array serves them all
SHARED_PARAMETERS = ("contact_inertia",)


def setup_interactions(model):
    """``{name: params}`` of the interactions that act in ``model`` (registry order); equal
    `SHARED_PARAMETERS` are one array (parameters are read-only)."""
    active, shared = {}, {}
    for name, interaction in INTERACTIONS.items():
        params = interaction.setup(model)
        if params is None:
            continue
        for field in SHARED_PARAMETERS:
            value = getattr(params, field, None)
            if value is None:
                continue
            first = shared.setdefault(field, value)
            if first is not value and first.dtype == value.dtype and np.array_equal(first, value):
                params = params._replace(**{field: first})
        active[name] = params
    return active


def history_width(name, params):
    """The width of interaction ``name``'s per-contact history with parameters ``params``
    (`Interaction.history_width`, else `Interaction.history`)."""
    interaction = INTERACTIONS[name]
    return interaction.history if interaction.history_width is None else interaction.history_width(params)


def loads_width(name, params):
    """The width of interaction ``name``'s pair scratch with parameters ``params``
    (`Interaction.loads_width`, else `Interaction.loads`)."""
    interaction = INTERACTIONS[name]
    return interaction.loads if interaction.loads_width is None else interaction.loads_width(params)


def list_diameters(model, bodies):
    """The diameters the neighbour list of ``model`` is built with: an acting interaction's
    ``list_diameter`` (`Interaction.list_diameter`), else ``bodies.diameter``."""
    for name, params in model.interactions.items():
        if INTERACTIONS[name].list_diameter:
            return params.list_diameter
    return bodies.diameter


def initial_states(model):
    """``{name: state}`` at t = 0 of the active interactions that own time-varying arrays."""
    return {name: INTERACTIONS[name].state(model, params) for name, params in model.interactions.items()
            if INTERACTIONS[name].state is not None}


assert not set(CORE_COLUMNS) - {c for i in INTERACTIONS.values() for c in i.columns}

__all__ = [
    "BOND", "CHUNK", "CORE_COLUMNS", "DRIVEN_COLUMNS", "GLOBAL", "INTERACTIONS", "Interaction", "KINETIC_COLUMNS",
    "ROW",
    "damping_from_restitution", "energy_columns", "extra_columns", "hertz", "history_width", "initial_states",
    "lennard_jones", "list_diameters", "loads_width",
    "ortolan_saccon", "register", "section_keys", "setup_interactions", "unregister",
]
