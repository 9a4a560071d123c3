"""A scene that pours particles into a box and lets them out through the floor (`dem.feeding`)."""

POUR = """
[simulation]
integrator = "rrp2"
dt = 2e-4
t_end = 1.5

[output]
dir = "output/pour"
log_every = 250
vtk_every = 1250

[contact]
k_pp = 2e4
k_pw = 2e4
restitution = 0.5
friction = 0.5

[fields]
gravity = [0.0, 0.0, -1.0]

[[walls]]
point = [0.0, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]

[[walls]]
point = [-3.0, 0.0, 0.0]
normal = [1.0, 0.0, 0.0]

[[walls]]
point = [3.0, 0.0, 0.0]
normal = [-1.0, 0.0, 0.0]

[[insert]]
shape = "box"
min = [-3.0, -3.0, 1.0]
max = [3.0, 3.0, 3.0]
rate = 400.0
stop = 1.0
distribution = "uniform"
diameter_min = 0.4
diameter_max = 0.6
velocity = [0.0, 0.0, -0.5]
angular_velocity = [0.0, 1.0, 0.0]
interval = 0.05
seed = 7

[[outlet]]
shape = "box"
min = [-10.0, -10.0, -1.0]
max = [10.0, 10.0, 0.4]
start = 0.75
interval = 0.05
"""


def pour_file(folder, text=POUR):
    """Write the pouring scene into ``folder``; returns its path (a string)."""
    path = folder / "pour.toml"
    path.write_text(text)
    return str(path)


def insertions(sim, feeder, last_step, rate):
    """Run ``sim`` (with the `dem.feeding.Feeder` ``feeder``) insertion by insertion up to
    ``last_step``, checking at each that the count in play is ``⌊rate t⌋``; yields ``(playing,
    new)``, the bodies in play and those inserted since the one before."""
    import numpy as np

    from dem.interactions.insertion import in_play

    before = np.zeros(0, np.int64)
    for step in range(0, last_step + 1, feeder.every):
        sim.run(step)
        playing = np.flatnonzero(in_play(sim.model, sim.state))
        assert len(playing) == int(np.floor(rate * sim.state.time + 1e-9))
        yield playing, np.setdiff1d(playing, before)
        before = playing
