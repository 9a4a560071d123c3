"""Static equilibrium of a small system by Newton's method on the compiled loads: the unknowns
are the free bodies' positions and rotation increments (``R → exp(S(φ)) R``; pinned bodies do not
translate, clamped ones do not turn), the residual their forces and moments (`dem.engine`), the
tangent central differences of the residual. For the few dozen bodies of a test it takes a
fraction of a second and finds the equilibrium of the law as implemented, to round-off."""

import numpy as np

from dem.engine import compute_forces
from dem.rotations import quat_from_rotvec, quat_multiply


def _free(model):
    """Indices ``(body, component, is_rotation)`` of the unknowns."""
    rows = []
    for body in range(model.n_bodies):
        rows += [(body, c, False) for c in range(3) if not model.pinned[body]]
        rows += [(body, c, True) for c in range(3) if not model.clamped[body]]
    return rows


def _moved(state, rows, step):
    """``(position, orientation)`` of ``state`` moved by ``step`` along the unknowns ``rows``."""
    position = state.position.copy()
    turn = np.zeros_like(position)
    for (body, c, rotation), value in zip(rows, step):
        (turn if rotation else position)[body, c] += value
    return position, quat_multiply(quat_from_rotvec(turn), state.orientation)


def residual(model, state, rows):
    """Forces and moments on the unknowns at ``state``."""
    compute_forces(model, state)
    return np.array([(state.moment if rotation else state.force)[body, c] for body, c, rotation in rows])


def relax(model, state, max_iterations=20, eps=1e-7):
    """Move ``state`` (in place) to the static equilibrium of ``model``'s interactions nearest to
    it; returns the number of Newton iterations (the last one's step below 10⁻¹³ of the largest
    diameter, i.e. round-off). Raises if it does not get there."""
    rows = _free(model)
    length = model.diameter.max() if model.diameter.max() > 0 else 1.0
    for iteration in range(1, max_iterations + 1):
        tangent = np.empty((len(rows), len(rows)))
        for k in range(len(rows)):
            step = np.zeros(len(rows))
            step[k] = eps
            columns = []
            for sign in (1.0, -1.0):
                position, orientation = _moved(state, rows, sign * step)
                trial = type(state).new(position, state.velocity, orientation, state.angular_velocity,
                                        state.interactions)
                columns.append(residual(model, trial, rows))
            tangent[:, k] = -(columns[0] - columns[1]) / (2 * eps)
        update = np.linalg.solve(tangent, residual(model, state, rows))
        state.position[:], state.orientation[:] = _moved(state, rows, update)
        if np.abs(update).max() <= 1e-13 * length:
            return iteration
    raise AssertionError(f"no static equilibrium within {max_iterations} Newton iterations")
