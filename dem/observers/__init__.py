"""Observers of a run: each has ``every`` (steps), ``report(sim)`` and ``close(sim)`` — the
energy, wall, fabric and cell logs, the VTK snapshots, checkpoints and the energy guard. The logs and the guard
read only the state's `dem.diagnostics.Sample` (``sampled``), which the loop takes at their steps:
they also have ``record(sim, step, time, sample)`` (`dem.simulation`)."""

from .checkpoints import Checkpointer
from .csv_log import CellLog, EnergyLog, FabricLog, FlowLog, WallLog
from .guard import EnergyGuard
from .vtk import VTKWriter

__all__ = ["CellLog", "Checkpointer", "EnergyGuard", "EnergyLog", "FabricLog", "FlowLog", "VTKWriter", "WallLog"]
