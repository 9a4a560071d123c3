"""Observers of a run: each has ``every`` (steps), ``report(sim)`` and ``close(sim)``."""

from .checkpoints import Checkpointer
from .csv_log import EnergyLog
from .vtk import VTKWriter

__all__ = ["Checkpointer", "EnergyLog", "VTKWriter"]
