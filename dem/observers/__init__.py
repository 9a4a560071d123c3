"""Observers of a run: each has ``every`` (steps), ``report(sim)`` and ``close(sim)`` — the
energy and wall logs, the VTK snapshots, checkpoints and the energy guard."""

from .checkpoints import Checkpointer
from .csv_log import EnergyLog, WallLog
from .guard import EnergyGuard
from .vtk import VTKWriter

__all__ = ["Checkpointer", "EnergyGuard", "EnergyLog", "VTKWriter", "WallLog"]
