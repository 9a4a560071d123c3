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
