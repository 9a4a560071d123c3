"""The CSV logs of a run, appended while it goes: ``energy.csv`` (the energy budget and momenta,
docs/theory.md §4), ``walls.csv`` (where each wall is and the force the particles exert on it),
``fabric.csv`` (the contact network's coordination numbers and fabric tensor) and ``cell.csv``
(a periodic cell's homogenised stress)."""

import numpy as np

from ..cell import GRADIENT, INITIAL, PERIOD, SHEAR, SHEARS, STRAIN, TILT
from ..clumps import body_volumes
from ..interactions import CORE_COLUMNS, KINETIC_COLUMNS, extra_columns
from ..interactions.clump_walls import clump_walls
from ..meshes import MAX_CONTACTS
from ..network import fabric
from ..stress import COMPONENTS, PARTS, cell_volume, homogenised_stress

#: docs/theory.md §4's columns, in its order; `columns` appends the others.
COLUMNS = ("step", "t") + KINETIC_COLUMNS + CORE_COLUMNS + ("total", "Px", "Py", "Pz", "Lx", "Ly", "Lz")


def joined(values):
    """The floats ``values`` as one row's text, ``repr`` of each (their shortest exact form)
    joined by commas: one ``repr`` of the list, in C, instead of one call per value."""
    return repr(values)[1:-1].replace(", ", ",")


def columns(model):
    """Every column of ``model``'s log: docs/theory.md §4's, the energy columns of interactions beyond them
    (registry order), then the scene's invariants."""
    return COLUMNS + extra_columns() + tuple(model.invariants)


class CsvLog:
    """Writes one row every ``every`` steps (and at the start and end of a run): `header` and
    `values` say what, from the state's `dem.diagnostics.Sample` (rows of earlier steps come
    sampled in the loop: `record`). Rows are flushed at each report and after each chunk's sampled
    rows (`flush`), so the file is complete up to the last chunk whenever the run stops (a row cut
    short by a killed process is dropped on restart). A run restarted at step ``resume_step`` keeps the
    rows up to that step and appends after them (rows a stopped run wrote later are dropped)."""

    sampled = True

    def __init__(self, path, every, resume_step=None):
        self.path = path
        self.every = every
        self.resume_step = resume_step
        self._file = None
        self._last_step = None

    def header(self, model):
        raise NotImplementedError

    def values(self, sim, sample):
        """The row's values after ``step, t``, as text, from ``sample``."""
        raise NotImplementedError

    def _open(self, header):
        kept = []
        if self.resume_step is not None and self.path.exists():
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
            if lines and lines[0].strip() == header:
                kept = [line for line in lines[1:] if line.endswith("\n") and int(line.split(",", 1)[0]) <= self.resume_step]
        self._file = open(self.path, "w", encoding="utf-8")
        self._file.write(header + "\n")
        self._file.writelines(kept)

    def report(self, sim):
        self.record(sim, sim.state.step, sim.state.time, sim.sample() if self.sampled else None)
        self.flush()

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def record(self, sim, step, time, sample):
        """Write the row of step ``step`` (time ``time``), whose `dem.diagnostics.Sample` is
        ``sample``."""
        if self._last_step == step:
            return
        if self._file is None:
            self._open(",".join(self.header(sim.model)))
        self._file.write(",".join([str(step), repr(time)] + self.values(sim, sample)) + "\n")
        self._last_step = step

    def close(self, sim):
        if self._file is not None:
            self._file.close()
            self._file = None


class EnergyLog(CsvLog):
    """``energy.csv``: the `columns` of the model."""

    def header(self, model):
        return columns(model)

    def values(self, sim, sample):
        # (a model with invariants is sampled from Python, at the state's step: `dem.simulation`)
        row = sample.budget
        return ([joined([row[name] for name in COLUMNS[2:] + extra_columns()])]
                + [repr(function(sim.model, sim.state)) for function in sim.model.invariants.values()])


def wall_columns(model):
    """``walls.csv``'s columns: ``step, t``, then for plane ``k`` (scene order) ``w<k>_x, _y, _z``
    (its point) and ``w<k>_fx, _fy, _fz`` (the particles' force on it), then for mesh ``k`` the
    same with ``m<k>_`` (its centre) and ``m<k>_mx, _my, _mz`` (the moment about its centre)."""
    given = model.inputs["walls"]
    names = [f"w{k}" for k in range(len(given["planes"]))] + [f"m{k}" for k in range(len(given["meshes"]))]
    out = ["step", "t"]
    for name in names:
        out += [f"{name}_{c}" for c in ("x", "y", "z", "fx", "fy", "fz")]
        out += [f"{name}_{c}" for c in ("mx", "my", "mz")] if name[0] == "m" else []
    return out


class WallLog(CsvLog):
    """``walls.csv`` (`wall_columns`), for a model with walls. Stops the run (`SimulationError`)
    when a particle or a clump's member sphere has touched more mesh features at once than it has
    contact slots for (at any step before the state's: ``mesh_most``)."""

    def header(self, model):
        return wall_columns(model)

    def values(self, sim, sample):
        from ..simulation import SimulationError

        walls = sim.state.interactions["walls"]
        clumps = clump_walls(sim.model)
        members = sim.state.interactions.get(clumps)
        for most, who in ((walls.mesh_most, "particle"), (getattr(members, "mesh_most", ()), "member")):
            if len(most) and most.max() > MAX_CONTACTS:
                i = int(np.argmax(most))
                if who == "member":  # (a clump's member sphere: named by its clump and its place in it)
                    start = sim.model.interactions[clumps].member_start
                    body = int(np.searchsorted(start, i, side="right")) - 1
                    who, i = f"clump {body}'s member", i - int(start[body])
                raise SimulationError(f"by step {sim.state.step}: {who} {i} touched {most.max()} mesh features at "
                                      f"once, more than the {MAX_CONTACTS} it has room for: the mesh is too fine for "
                                      f"the particles (coarsen it) or the particle is crushed into it (reduce "
                                      f"simulation.dt)")
        n_planes = len(sim.model.inputs["walls"]["planes"])
        numbers = [v for w, values in enumerate(sample.walls.tolist())  # point, then the force and moment
                   for v in values[:6 if w < n_planes else 9]]
        return [joined(numbers)] if numbers else []


#: ``fabric.csv``'s columns (`dem.network.Fabric`): touching pairs ``N_c``, ``Z``, ``Z_m``, rattlers,
#: the fabric tensor's six components and its anisotropy ``a``
FABRIC_COLUMNS = ("step", "t", "contacts", "coordination", "mechanical_coordination", "rattlers", "phi_xx", "phi_yy",
                  "phi_zz", "phi_xy", "phi_xz", "phi_yz", "anisotropy")


class StateLog(CsvLog):
    """A log of what the loop's sample does not hold (its ``columns``), read from the state at
    each row: the loop comes back to Python at every row (``sampled`` False)."""

    sampled = False
    columns = ()

    def header(self, model):
        return self.columns


class FabricLog(StateLog):
    """``fabric.csv`` (`FABRIC_COLUMNS`): the statistics of the touching particle pairs
    (`dem.network.fabric`) of the state at each row."""

    columns = FABRIC_COLUMNS

    def values(self, sim, sample):
        found = fabric(sim.model, sim.state, sim.contacts)
        tensor = found.tensor
        return [str(found.contacts), repr(found.coordination), repr(found.mechanical), str(found.rattlers)] \
            + [repr(float(tensor[a, b])) for a, b in COMPONENTS] + [repr(found.anisotropy)]


#: ``cell.csv``'s columns: the cell (edges, tilts, true strains ``ln(L/L₀)``, shear strains ``∫ L_ab dt``,
#: strain and shear rates), then the stress (positive in compression) and its parts
_SHEAR_NAMES = tuple(f"{'xyz'[a]}{'xyz'[b]}" for a, b in SHEARS)
CELL_COLUMNS = (("step", "t", "L_x", "L_y", "L_z") + tuple(f"tilt_{n}" for n in _SHEAR_NAMES)
                + ("strain_xx", "strain_yy", "strain_zz") + tuple(f"shear_strain_{n}" for n in _SHEAR_NAMES)
                + ("rate_xx", "rate_yy", "rate_zz") + tuple(f"rate_{n}" for n in _SHEAR_NAMES)
                + ("volume", "solid_fraction", "pressure")
                + tuple(f"s_{'xyz'[a]}{'xyz'[b]}" for a, b in COMPONENTS)
                + tuple(f"{part}_{'xyz'[a]}{'xyz'[b]}" for part in PARTS for a, b in COMPONENTS))


class CellLog(StateLog):
    """``cell.csv`` (`CELL_COLUMNS`): a periodic cell's edges, tilts, strains and rates
    (`dem.cell`), volume, its particles' solid fraction and the homogenised stress of the state at
    each row (`dem.stress`: the pressure ``tr σ / 3``, the six components of σ, then those of its
    kinetic, contact and bond parts)."""

    columns = CELL_COLUMNS
    #: each body's solid volume (`dem.clumps.body_volumes`), at the first row
    _solid = None

    def values(self, sim, sample):
        model, state = sim.model, sim.state
        cell = state.cell
        volume = cell_volume(cell)
        stress = homogenised_stress(model, state, sim.contacts)
        values = [*cell[PERIOD], *cell[TILT], *np.log(cell[PERIOD] / cell[INITIAL]), *cell[STRAIN], *cell[GRADIENT],
                  *cell[SHEAR]]
        if self._solid is None:
            self._solid = body_volumes(model)
        values += [volume, float(np.sum(self._solid)) / volume, np.trace(stress["total"]) / 3.0]
        values += [stress[part][a, b] for part in ("total",) + PARTS for a, b in COMPONENTS]
        return [repr(float(v)) for v in values]


class FlowLog(StateLog):
    """``flow.csv``: for each ``[[insert]]`` source ``k`` the particles inserted so far
    (``inserted_k``) and those due that found no place at its last try (``waiting_k``); for each
    ``[[outlet]]`` ``k`` the particles (``removed_k``) and mass (``mass_k``) that left so far and
    the mass flow rate since the row before (``rate_k``) (`dem.feeding`)."""

    def header(self, model):
        given = model.inputs["insertion"]
        sources, outlets = range(len(given.get("sources", []))), range(len(given.get("outlets", [])))
        return (("step", "t") + tuple(f"{name}_{k}" for k in sources for name in ("inserted", "waiting"))
                + tuple(f"{name}_{k}" for k in outlets for name in ("removed", "mass", "rate")))

    def values(self, sim, sample):
        own = sim.state.interactions["insertion"]
        elapsed = sim.state.time - own.logged_time[0]
        rate = (own.removed_mass - own.logged_mass) / elapsed if elapsed > 0.0 else np.zeros_like(own.removed_mass)
        own.logged_mass[:] = own.removed_mass
        own.logged_time[0] = sim.state.time
        values = [str(int(v)) for pair in zip(own.inserted_count, own.shortfall) for v in pair]
        for count, mass, flow in zip(own.removed_count, own.removed_mass, rate):
            values += [str(int(count)), repr(float(mass)), repr(float(flow))]
        return values
