"""Triangle surfaces for the wall tests, and a loading rig around the granule of `granule`."""

import meshio
import numpy as np

from .granule import GRANULE


def floor_mesh(n=6, size=6.0, jitter=0.0, seed=0):
    """An ``n × n`` grid of squares on the plane z = 0 (centred at the origin), each split into
    two triangles along alternating diagonals; ``jitter`` moves the inner vertices in the plane
    at random (so edges meet at every angle). Returns ``(points, faces)``."""
    rng = np.random.default_rng(seed)
    g = np.linspace(-size / 2, size / 2, n + 1)
    x, y = np.meshgrid(g, g, indexing="ij")
    points = np.column_stack((x.ravel(), y.ravel(), np.zeros(x.size)))
    inner = (np.abs(points[:, 0]) < size / 2) & (np.abs(points[:, 1]) < size / 2)
    points[inner, :2] += rng.uniform(-jitter, jitter, (inner.sum(), 2))
    faces = []
    for i in range(n):
        for j in range(n):
            a, b, c, d = i * (n + 1) + j, (i + 1) * (n + 1) + j, (i + 1) * (n + 1) + j + 1, i * (n + 1) + j + 1
            faces += [(a, b, c), (a, c, d)] if (i + j) % 2 else [(a, b, d), (b, c, d)]
    return points, np.array(faces)


def write_surface(path, points, faces):
    meshio.write_points_cells(path, points, [("triangle", faces)])
    return path


RIG = GRANULE.replace("velocity = [-2.0, 0.0, 0.0]\nangular_velocity = [0.3, -0.2, 0.5]\n", "") + """
[damping]
local = 0.2
viscous = 0.1

[[walls]]                      # pushed in at a prescribed speed
point = [9.6, 0.0, 0.0]
normal = [-1.0, 0.0, 0.0]
velocity = [-1.0, 0.0, 0.0]

[[walls]]                      # a servo platen
point = [0.0, -5.0, 0.0]
normal = [0.0, 1.0, 0.0]
servo = true
target_force = 40.0
max_speed = 2.0

[[mesh]]                       # a turning, sinking plate above the granule
file = "plate.stl"
translate = [4.6, 0.0, 4.9]
rotate = [0.2, 0.0, 0.0]
velocity = [0.0, 0.0, -0.5]
angular_velocity = [0.0, 0.0, 0.8]
"""


def rig_file(folder, name="rig.toml"):
    """The granule pressed by a moving wall, a servo wall and a turning mesh plate, with damping
    (`RIG`) into ``folder``, with its plate mesh; returns the scene's path."""
    points, faces = floor_mesh(n=4, size=8.0, jitter=0.5, seed=2)
    write_surface(folder / "plate.stl", points, faces)
    path = folder / name
    path.write_text(RIG)
    return path


#: A 3 × 3 × 3 simple cubic stack of unit spheres on the floor x = 0 under a servo platen that
#: presses with 12.5 on an area of 4, with local damping (bond it with ``assembly.0.bonded=true``
#: and stiffnesses for a cube-shaped granule).
STACK = """\
[simulation]
dt = 1e-3
t_end = 1.5
[output]
log_every = 50
[contact]
k_pp = 1e4
k_pw = 1e4
[damping]
local = 0.5
[[walls]]
point = [0.0, 0.0, 0.0]
normal = [1.0, 0.0, 0.0]
[[walls]]
point = [3.2, 0.0, 0.0]
normal = [-1.0, 0.0, 0.0]
servo = true
target_stress = 12.5
area = 4.0
max_speed = 1.0
[[assembly]]
shape = "box"
size = [3.0, 3.0, 3.0]
center = [1.5, 0.0, 0.0]
lattice = "sc"
particle_diameter = 1.0
bonded = false
"""


def stack_file(folder, name="stack.toml"):
    path = folder / name
    path.write_text(STACK)
    return path
