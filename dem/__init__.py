"""dem: discrete-element simulation of particle–binder composites and rigid bodies with explicit
variational integrators on SE(3)ⁿ (rescaled Rodrigues parameters)."""

from ._numba_cache import use_source_keyed_cache

use_source_keyed_cache()  # before any kernel is compiled  # noqa: E402

from .builders import BUILDERS, SystemBuilder, build_system
from .diagnostics import energy_budget
from .integrators import INTEGRATORS
from .scene import SceneError, load_scene
from .simulation import Simulation, SimulationError
from .state import ENERGY_COMPONENTS, Bonds, Model, State

__all__ = [
    "BUILDERS", "ENERGY_COMPONENTS", "INTEGRATORS", "Bonds", "Model", "SceneError", "Simulation",
    "SimulationError", "State", "SystemBuilder", "build_system", "energy_budget", "load_scene",
]
