"""Checkpoints: everything a run needs to continue bit for bit as if it had never stopped.

A checkpoint (``.npz``) holds the state (positions, velocities, orientations, angular velocities,
the forces and moments of that configuration, the cell), every interaction's own time-varying arrays
(``interaction.<name>.<field>``: broken bonds, energy booked to breakage or damping, …; not the
scratch a force evaluation rewrites, `Interaction.scratch_state`), the
scheme's state (``lgvi``: the spatial angular momenta), the contact table (the reference
positions of its last build, from which the neighbour list is rebuilt so that contact sums run in
the same order, and every per-contact history by pair key), the step, the scene (file,
overrides, text) and the version. It is written to a temporary file and renamed, so a
checkpoint on disk is always complete.
"""

import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from .interactions import INTERACTIONS, history_width

#: 4: the cell (`dem.cell`: a deforming cell's lattice, its three shear rates and the bound of its
#: images' motion) and the pair laws' booked work against it (formats 1 to 3, before them, are
#: refused)
FORMAT = 4
STATE_FIELDS = ("position", "velocity", "orientation", "angular_velocity", "force", "moment", "cell")


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
    state = sim.state
    arrays = {f"state_{name}": getattr(state, name) for name in STATE_FIELDS}
    for name, own in state.interactions.items():
        arrays.update({f"interaction.{name}.{field}": value for field, value in zip(own._fields, own)
                       if field not in INTERACTIONS[name].scratch_state})
    arrays.update({f"scheme.{field}": value for field, value in zip(sim.aux._fields, sim.aux)})
    arrays.update({f"contacts.{key}": value for key, value in sim.contacts.export().items()})
    arrays.update(
        format=FORMAT, version=package_version(), step=state.step, time=state.time, dt=sim.dt,
        integrator=sim.integrator, scene_path=str(scene_path), scene_text=Path(scene_path).read_text(encoding="utf-8"),
        overrides=np.array(list(overrides), dtype=str), energy_reference=np.asarray(energy_reference, dtype=float),
    )
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as file:
        np.savez(file, **arrays)
    os.replace(temporary, path)


def load_checkpoint(path):
    """The arrays of a checkpoint as a dict; raises `CheckpointError` for a missing, foreign or
    outdated file."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        with np.load(path, allow_pickle=False) as data:
            content = {key: data[key] for key in data.files}
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a readable checkpoint ({error})") from None
    found = int(content.get("format", -1))
    if found == -1:
        raise CheckpointError(f"{path}: not a dem checkpoint")
    if found != FORMAT:
        raise CheckpointError(f"{path}: written by another version of dem (checkpoint format {found}, this version "
                              f"reads format {FORMAT}); rerun the scene from the start")
    return content


def restore(checkpoint, model, state, path="checkpoint"):
    """Put a checkpoint's state into the freshly built ``model`` and ``state`` of the same scene
    (checked: same bodies, same interactions and bonds). Returns ``({scheme state field: array},
    contact table export)`` for `dem.simulation.Simulation`, and the energy reference."""
    n = model.n_bodies
    if checkpoint["state_position"].shape != (n, 3):
        raise CheckpointError(f"{path}: holds {checkpoint['state_position'].shape[0]} bodies, the scene builds {n}")
    for name, params in model.interactions.items():
        saved = checkpoint.get(f"contacts.history_values.{name}")
        if saved is not None and saved.shape[1] != history_width(name, params):
            raise CheckpointError(f"{path}: written by another version of dem (its {name} contacts keep "
                                  f"{saved.shape[1]} history columns, this version {history_width(name, params)}); "
                                  f"rerun the scene from the start")
    for name in STATE_FIELDS:
        getattr(state, name)[...] = checkpoint[f"state_{name}"]
    for name, own in state.interactions.items():
        former = INTERACTIONS[name].former_state
        if former is not None and not any(key.startswith(f"interaction.{name}.") for key in checkpoint):
            checkpoint = {**checkpoint, **{f"interaction.{name}.{f}": v for f, v in former(checkpoint).items()}}
        for field, value in zip(own._fields, own):
            if field in INTERACTIONS[name].scratch_state or len(value) == 0:  # scratch, or unused by this run
                continue
            key = f"interaction.{name}.{field}"
            if key not in checkpoint or checkpoint[key].shape != value.shape:
                raise CheckpointError(f"{path}: does not match the scene: its {name} state differs ({key})")
            value[...] = checkpoint[key]
    state.step = int(checkpoint["step"])
    state.time = float(checkpoint["time"])
    aux = {key.removeprefix("scheme."): value.copy() for key, value in checkpoint.items() if key.startswith("scheme.")}
    contacts = {key.removeprefix("contacts."): value for key, value in checkpoint.items() if key.startswith("contacts.")}
    return (aux, contacts), checkpoint["energy_reference"].copy()
