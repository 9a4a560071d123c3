"""The energy/momentum log ``energy.csv`` (SPEC §4), appended while the run goes."""

from ..interactions import CORE_COLUMNS, KINETIC_COLUMNS, extra_columns

#: SPEC §4's columns, in its order; `columns` appends the others.
COLUMNS = ("step", "t") + KINETIC_COLUMNS + CORE_COLUMNS + ("total", "Px", "Py", "Pz", "Lx", "Ly", "Lz")


def columns(model):
    """Every column of ``model``'s log: SPEC §4's, the energy columns of interactions beyond them
    (registry order), then the scene's invariants."""
    return COLUMNS + extra_columns() + tuple(model.invariants)


class EnergyLog:
    """Writes one row every ``every`` steps (and at the start and end of a run), the `columns` of
    the model. Rows are flushed as they are written, so the file is complete
    up to the last row whenever the run stops. A run restarted at step ``resume_step`` keeps the
    rows up to that step and appends after them (rows a stopped run wrote later are dropped)."""

    def __init__(self, path, every, resume_step=None):
        self.path = path
        self.every = every
        self.resume_step = resume_step
        self._file = None
        self._last_step = None

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
        if self._last_step == sim.state.step:
            return
        invariants = sim.model.invariants
        if self._file is None:
            self._open(",".join(columns(sim.model)))
        row = sim.energy_budget()
        values = [str(sim.state.step), repr(sim.state.time)]
        values += [repr(row[name]) for name in COLUMNS[2:] + extra_columns()]
        values += [repr(function(sim.model, sim.state)) for function in invariants.values()]
        self._file.write(",".join(values) + "\n")
        self._file.flush()
        self._last_step = sim.state.step

    def close(self, sim):
        if self._file is not None:
            self._file.close()
            self._file = None
