"""A small polydisperse bonded granule next to a wall (the scene several tests start from)."""

def _ball(center, packing_fraction, seed, rest):
    """An ``[[assembly]]`` table: a random packing in a ball 9 across, moving at −2 along x."""
    return f"""
[[assembly]]
shape = "sphere"
diameter = 9.0
center = {center}
lattice = "random"
packing_fraction = {packing_fraction}
distribution = "uniform"
diameter_min = 0.7
diameter_max = 1.3
seed = {seed}
velocity = [-2.0, 0.0, 0.0]
{rest}"""


GRANULE = """\
[simulation]
dt = 1e-3
t_end = 0.5

[output]
log_every = 10

[contact]
k_pp = 1e4
k_pw = 1e4

[[walls]]
point = [0.0, 0.0, 0.0]
normal = [1.0, 0.0, 0.0]
""" + _ball("[4.6, 0.0, 0.0]", 0.55, 3, """angular_velocity = [0.3, -0.2, 0.5]
bond_gap_tolerance = 0.05
k_axial = 200.0
k_shear = 200.0
k_bending = 10.0
""")


#: a second granule beside the first, bonded by breakable parallel bonds (appended to `GRANULE`:
#: both bond laws in one scene)
PARALLEL_BONDED = _ball("[4.6, 11.0, 0.0]", 0.5, 4, """bond_gap_tolerance = 0.05
binder = "parallel_bond"
binder_modulus = 255.0
binder_shear_modulus = 100.0
binder_tensile_strength = 10.0
binder_shear_strength = 10.0
""")


def granule_file(folder, name="granule.toml", text=GRANULE):
    """Write ``text`` (`GRANULE`) into ``folder``; returns its path."""
    path = folder / name
    path.write_text(text)
    return path
