"""dem: discrete-element simulation of particle–binder composites and rigid bodies with explicit
variational integrators on SE(3)ⁿ (rescaled Rodrigues parameters)."""

from ._numba_cache import use_source_keyed_cache

use_source_keyed_cache()  # before any kernel is compiled  # noqa: E402

from .builders import BUILDERS
from .diagnostics import energy_budget
from .integrators import SCHEMES
from .interactions import INTERACTIONS, Interaction, energy_columns, register
from .scene import SceneError, load_scene
from .simulation import Simulation, SimulationError
from .state import Bonds, Model, State
from .system import SystemBuilder, build_system

__all__ = [
    "BUILDERS", "INTERACTIONS", "Interaction", "SCHEMES", "Bonds", "Model", "SceneError", "Simulation",
    "SimulationError", "State", "SystemBuilder", "build_system", "energy_budget", "energy_columns", "load_scene",
    "register",
]
