"""The deforming periodic cell (docs/theory.md §3b.9): moves the cell's lattice once per step.

A cell with a ``strain_rate``, a ``shear_rate`` or a ``stress_control`` (`dem.cell`) deforms: its
``advance`` hook moves the lattice to the time of the next step (`dem.cell.deform`), after the
scheme has moved the bodies and before the forces of the new configuration. It applies no force
of its own: the pair kernels take their relative velocities against the moving images and book
the power the cell puts in through them (the ``cell`` column of `dem.interactions.hertz` and
`dem.interactions.contact`). A servo on a stress-controlled edge sets its strain rate between
steps (`dem.stress.CellServo`).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from ..cell import KEYS as CELL_KEYS
from ..cell import deform, deforming
from ..schema import SceneError
from .contract import GLOBAL, Interaction

#: no parameters: the rates are the cell's (`dem.cell`), which a servo changes during the run
DeformationParams = namedtuple("DeformationParams", "")


@njit(cache=True)
def deformation_forces(h, st, bodies, p, own):
    """No force: the cell acts through the pair kernels' images."""


@njit(cache=True)
def deformation_energy(st, bodies, contacts, p, own):
    """No column: the work goes to the pair interactions' ``cell`` column."""
    return ()


@njit(cache=True)
def deformation_advance(h, st, bodies, p, own):
    """Move the cell's lattice to the time of the next step (`dem.cell.deform`)."""
    deform(h, st.cell)


def setup(model):
    cell = model.sections["cell"]
    if not deforming(cell):
        return None
    if int(model.sections["contact"]["substeps"]) > 1:
        raise SceneError("contact.substeps: contact sub-steps do not follow a deforming cell: make it 1 (or 0)")
    return DeformationParams()


def localize(p, part):
    """Under MPI (`dem.distributed`) every rank moves its copy of the cell alike."""
    return p


#: the ``[cell]`` keys that make it deform (the section's table is `dem.cell.KEYS`)
KEYS = {"cell": {name: CELL_KEYS["cell"][name] for name in ("strain_rate", "shear_rate", "stress_control",
                                                           "target_stress", "servo_gain", "servo_stress",
                                                           "servo_interval")}}

DEFORMATION = Interaction(
    name="cell", doc=__doc__, kind=GLOBAL, columns=(), internal=True, keys=KEYS, setup=setup,
    forces=deformation_forces, energy=deformation_energy, advance=deformation_advance, localize=localize,
    shared_bodies=lambda p: np.zeros(0, np.int64),
)
