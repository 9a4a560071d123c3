"""Observer writing a checkpoint (`dem.checkpoint`) every ``every`` steps."""

from ..checkpoint import save_checkpoint


class Checkpointer:
    """Writes ``path`` (replacing it atomically) at every ``every``-th step after the start;
    `write` is also called when a run ends or is interrupted."""

    def __init__(self, path, every, scene_path, overrides, guard):
        self.path = path
        self.every = every
        self.scene_path = scene_path
        self.overrides = tuple(overrides)
        self._guard = guard  # the EnergyGuard whose reference energy goes into the checkpoint

    def write(self, sim):
        save_checkpoint(self.path, sim, self.scene_path, self.overrides, self._guard.reference or (0.0, 1.0))

    def report(self, sim):
        if self.every > 0 and sim.state.step > 0 and sim.state.step % self.every == 0:
            self.write(sim)

    def close(self, sim):
        pass
