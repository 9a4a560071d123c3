"""Checkpoints: everything a run needs to continue bit for bit as if it had never stopped.

A checkpoint (``.npz``) holds the state (positions, velocities, orientations, angular velocities,
the forces and moments of that configuration, the energy booked to breakage and damping), the
bond table with its rest state and broken flags, the spatial angular momenta that ``lgvi``
integrates, the neighbour list's reference positions (the list is rebuilt from them, so contact
sums run in the same order), the step, the scene (file, overrides, text) and the version. It is
written to a temporary file and renamed, so a checkpoint on disk is always complete.
"""

import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from .neighbors import N_BUILDS

FORMAT = 1
STATE_FIELDS = ("position", "velocity", "orientation", "angular_velocity", "force", "moment", "broken_energy",
                "dissipated_energy")
BOND_FIELDS = ("i", "j", "k_axial", "k_shear", "k_bending", "rest_length", "rest_dir_i", "rest_dir_j",
               "rest_relative", "broken", "color_start")


class CheckpointError(ValueError):
    """A checkpoint that cannot be used with this scene; the message says why."""


def package_version():
    try:
        return version("dem")
    except PackageNotFoundError:
        return "unknown"


def save_checkpoint(path, sim, scene_path, overrides, energy_reference):
    """Write ``sim``'s complete state to ``path`` atomically (``path.tmp``, then rename)."""
    path = Path(path)
    state, model = sim.state, sim.model
    arrays = {f"state_{name}": getattr(state, name) for name in STATE_FIELDS}
    arrays.update({f"bond_{name}": getattr(model.bonds, name) for name in BOND_FIELDS})
    arrays.update(
        format=FORMAT, version=package_version(), step=state.step, time=state.time, dt=sim.dt,
        integrator=sim.integrator, scene_path=str(scene_path), scene_text=Path(scene_path).read_text(encoding="utf-8"),
        overrides=np.array(list(overrides), dtype=str), angular_momentum=sim.angular_momentum,
        neighbor_reference=sim.neighbors.reference_position, neighbor_builds=sim.neighbors.counters[N_BUILDS],
        energy_reference=np.asarray(energy_reference, dtype=float),
    )
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as file:
        np.savez(file, **arrays)
    os.replace(temporary, path)


def load_checkpoint(path):
    """The arrays of a checkpoint as a dict; raises `CheckpointError` for a missing or foreign file."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            content = {key: data[key] for key in data.files}
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a readable checkpoint ({error})") from None
    if int(content.get("format", -1)) != FORMAT:
        raise CheckpointError(f"{path}: not a dem checkpoint of format {FORMAT}")
    return content


def restore(checkpoint, model, state, path="checkpoint"):
    """Put a checkpoint's state and bond table into the freshly built ``model`` and ``state`` of
    the same scene (checked: same bodies and bonds). Returns ``(angular_momentum,
    neighbor_reference, neighbor_builds, energy_reference)`` for `dem.simulation.Simulation`."""
    n = model.n_bodies
    if checkpoint["state_position"].shape != (n, 3):
        raise CheckpointError(f"{path}: holds {checkpoint['state_position'].shape[0]} bodies, the scene builds {n}")
    if checkpoint["bond_i"].shape != model.bonds.i.shape:
        raise CheckpointError(f"{path}: holds {len(checkpoint['bond_i'])} bonds, the scene builds {len(model.bonds)}")
    for name in STATE_FIELDS:
        getattr(state, name)[...] = checkpoint[f"state_{name}"]
    for name in BOND_FIELDS:
        setattr(model.bonds, name, np.ascontiguousarray(checkpoint[f"bond_{name}"]))
    state.step = int(checkpoint["step"])
    state.time = float(checkpoint["time"])
    return (checkpoint["angular_momentum"].copy(), checkpoint["neighbor_reference"].copy(),
            int(checkpoint["neighbor_builds"]), checkpoint["energy_reference"].copy())
