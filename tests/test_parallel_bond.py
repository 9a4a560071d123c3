"""The parallel bond (`dem.interactions.parallel_bond`): its springs against the beam formulas,
objectivity, breakage and the energy budget, both bond laws in one system, the cantilever
against Euler–Bernoulli (static, by Newton on the compiled loads, and the scene's undamped time
average), the builders' ``binder`` keys and their bad input. (The registry battery in
``test_interactions.py`` checks it against a numpy reference, finite differences and momentum
balance.)"""

import math
from pathlib import Path

import numpy as np
import pytest
from support.statics import relax

from dem import SystemBuilder
from dem.cli import main
from dem.diagnostics import energy_budget
from dem.engine import compute_forces
from dem.interactions.binder import BROKEN_SHEAR, BROKEN_TENSION
from dem.interactions.bonds import bond_measures
from dem.rotations import quat_from_rotvec, quat_matrix, quat_multiply
from dem.runner import prepare, run
from dem.scene import SceneError, load_scene
from dem.simulation import Simulation

ROOT = Path(__file__).resolve().parents[1]
CANTILEVER = ROOT / "scenes" / "cantilever.toml"
E, G, RADIUS = 1e4, 4e3, 0.5           # the cantilever scene's bond: modulus, shear modulus, R̄
AREA, SECOND_MOMENT = math.pi * RADIUS ** 2, math.pi * RADIUS ** 4 / 4


def pair(length=1.0, tensile_strength=0.0, shear_strength=0.0, **body):
    """Two spheres of diameter 1 on the x axis, one parallel bond (E, G, R̄ above)."""
    system = SystemBuilder()
    for x in (0.0, length):
        system.add_body((x, 0.0, 0.0), mass=1.0, inertia=0.1, diameter=1.0, **body)
    system.add_bond(1, 0, law="parallel_bond", modulus=E, shear_modulus=G, radius=RADIUS,
                    tensile_strength=tensile_strength, shear_strength=shear_strength)
    return system.finish()


def loads(model, state):
    compute_forces(model, state)
    return state.force.copy(), state.moment.copy()


def test_small_deformations_follow_the_beam_springs():
    """Stretch δ: F = (EA/L) δ; ends turned by ∓θ/2 about the bond (twist) or across it (bend):
    M = (GJ/L) θ and (EI/L) θ; a transverse slide δ: F = (GA/L) δ, whose moment about the disc
    centre each end takes (F L/2), and none when both ends turn by δ/L with the slide (the disc
    is then not sheared)."""
    length, small = 2.0, 1e-7
    model, state = pair(length)
    state.position[1, 0] += small
    force, _ = loads(model, state)
    assert force[1, 0] == pytest.approx(-E * AREA / length * small, rel=1e-6)
    for axis, stiffness in ((0, G * 2 * SECOND_MOMENT), (2, E * SECOND_MOMENT)):
        model, state = pair(length)
        turn = np.zeros(3)
        turn[axis] = 0.5 * small
        state.orientation[:] = quat_from_rotvec([-turn, turn])
        force, moment = loads(model, state)
        assert moment[1, axis] == pytest.approx(-stiffness / length * small, rel=1e-6)
        assert moment[0, axis] == pytest.approx(stiffness / length * small, rel=1e-6)
        assert np.abs(force).max() < 1e-6 * stiffness / length ** 2 * small
    model, state = pair(length)
    state.position[1, 1] += small
    force, moment = loads(model, state)
    assert force[1, 1] == pytest.approx(-G * AREA / length * small, rel=1e-6)
    assert moment[1, 2] == pytest.approx(-force[1, 1] * length / 2, rel=1e-6)
    assert moment[0, 2] == pytest.approx(-force[1, 1] * length / 2, rel=1e-6)
    state.orientation[:] = quat_from_rotvec([0.0, 0.0, small / length])
    force, moment = loads(model, state)
    assert np.abs(force).max() < 1e-6 * G * AREA / length * small
    assert np.abs(moment).max() < 1e-6 * G * AREA * small


def test_the_energy_is_objective():
    """A rigid motion of a deformed bonded pair changes nothing but the direction of the loads."""
    rng = np.random.default_rng(4)
    model, state = pair(1.3)
    state.position += rng.normal(scale=0.05, size=(2, 3))
    state.orientation[:] = quat_from_rotvec(rng.normal(scale=0.3, size=(2, 3)))
    force, moment = loads(model, state)
    before = energy_budget(model, state)
    turn = quat_from_rotvec(rng.normal(size=3))
    rotation = quat_matrix(turn)
    state.position[:] = state.position @ rotation.T + [3.0, -1.0, 2.0]
    state.orientation[:] = quat_multiply(np.tile(turn, (2, 1)), state.orientation)
    moved_force, moved_moment = loads(model, state)
    after = energy_budget(model, state)
    for column in ("axial", "shear", "bending"):
        assert after[column] == pytest.approx(before[column], rel=1e-10)
    assert np.allclose(moved_force, force @ rotation.T, atol=1e-10 * np.abs(force).max())
    assert np.allclose(moved_moment, moment @ rotation.T, atol=1e-10 * np.abs(moment).max())


@pytest.mark.parametrize("how, code", [("pull", BROKEN_TENSION), ("twist", BROKEN_SHEAR)])
def test_a_bond_breaks_at_its_strength_and_books_its_energy(how, code):
    """σ = F_n/A + |M_b| R̄/I against σ_c, τ = |F_s|/A + |M_t| R̄/J against τ_c; the stored energy
    and the half-step work go to ``broken`` and the total stays put."""
    model, state = pair(1.0, tensile_strength=50.0, shear_strength=40.0)
    model.pinned[0] = model.clamped[0] = True
    if how == "pull":
        state.velocity[1] = (0.5, 0.0, 0.0)
    else:   # spun about the bond: τ = |M_t| R̄/J
        state.angular_velocity[1] = (5.0, 0.0, 0.0)
    sim = Simulation(model, state, "rrp2", 1e-4)
    start = sim.energy_budget()["total"]
    broken_at = None
    for step in range(2000):
        sim.advance(1)
        if broken_at is None and state.interactions["parallel_bond"].broken[0]:
            broken_at = step
            row = sim.energy_budget()
    assert broken_at is not None and state.interactions["parallel_bond"].broken[0] == code
    assert row["broken"] > 0 and row["axial"] == row["shear"] == row["bending"] == 0.0
    measures = bond_measures(model, state)
    assert measures["broken"][0] == code and measures["law"][0] == 1
    end = sim.energy_budget()
    assert end["total"] == pytest.approx(start, rel=1e-4)   # O(h²): the booked half-step work closes it
    assert not loads(model, state)[0].any()   # a broken bond holds nothing


def test_the_strengths_match_the_stresses_they_are_checked_against():
    """The VTK measures give σ and τ by the formulas of the module docstring."""
    model, state = pair(1.0)
    state.position[1] += (1e-3, 2e-3, 0.0)
    state.orientation[1] = quat_from_rotvec([4e-3, 0.0, 1e-3])
    m = bond_measures(model, state)
    k_n, k_s = E / 1.0, G / 1.0
    assert m["tensile_stress"][0] == pytest.approx(m["axial_force"][0] / AREA
                                                   + m["bending_moment"][0] * RADIUS / SECOND_MOMENT, rel=1e-12)
    assert m["shear_stress"][0] == pytest.approx(m["shear_force"][0] / AREA
                                                 + m["twisting_moment"][0] * RADIUS / (2 * SECOND_MOMENT), rel=1e-12)
    assert m["tensile_stress"][0] == pytest.approx(k_n * (m["axial_strain"][0] + RADIUS * m["bending_angle"][0]),
                                                   rel=1e-12)
    assert m["twist_angle"][0] == pytest.approx(4e-3, rel=1e-2) and k_s > 0


def test_both_laws_in_one_system_act_independently():
    """Three-spring and parallel bonds share the bond table (sorted by law); the loads of the
    mixed system are the sum of each law's alone, and of the bonds' ``force`` measures."""
    rng = np.random.default_rng(2)
    position = np.cumsum(rng.normal(scale=0.2, size=(6, 3)) + [1.0, 0, 0], axis=0)
    seed_bonds, parallel_bonds = [(0, 1), (2, 3), (4, 5)], [(1, 2), (3, 4), (5, 0)]

    def build(seed, parallel):
        system = SystemBuilder()
        for x in position:
            system.add_body(x, mass=1.0, inertia=0.1, diameter=1.0)
        for i, j in parallel if parallel else ():
            system.add_bond(i, j, law="parallel_bond", modulus=E, shear_modulus=G, radius=0.4, tensile_strength=0.0,
                            shear_strength=0.0)
        for i, j in seed if seed else ():
            system.add_bond(i, j, k_axial=200.0, k_shear=150.0, k_bending=10.0)
        model, state = system.finish()
        state.position += np.random.default_rng(5).normal(scale=0.05, size=(6, 3))
        state.orientation[:] = quat_from_rotvec(np.random.default_rng(6).normal(scale=0.2, size=(6, 3)))
        return model, state

    mixed = build(seed_bonds, parallel_bonds)
    assert list(mixed[0].interactions) == ["binder", "parallel_bond"]
    assert list(mixed[0].bonds.law) == [0, 0, 0, 1, 1, 1]
    together = loads(*mixed)
    alone = [loads(*build(seed_bonds, None)), loads(*build(None, parallel_bonds))]
    for k in range(2):
        assert np.allclose(together[k], alone[0][k] + alone[1][k], rtol=0, atol=1e-12 * np.abs(together[k]).max())
    measures = bond_measures(*mixed)
    assert list(measures["law"]) == [0, 0, 0, 1, 1, 1]
    assert np.all(measures["tensile_stress"][:3] == 0) and np.all(measures["tensile_stress"][3:] != 0)
    body = np.zeros((6, 3))   # each bond's force (on its first body, the opposite on the second) adds up
    np.add.at(body, mixed[0].bonds.i, measures["force"])
    np.add.at(body, mixed[0].bonds.j, -measures["force"])
    assert np.allclose(body, together[0], rtol=0, atol=1e-12 * np.abs(together[0]).max())


def beam_deflection(n_bonds, force=0.01, length=1.0):
    """``(Euler–Bernoulli, chain)`` tip deflections of a cantilever of ``n_bonds`` parallel bonds:
    ``P ℓ³/(3EI)``, and the chain's own ``P ℓ³/(3EI) − P ℓ L²/(12EI) + N P/K_s`` (module
    docstring of `dem.interactions.parallel_bond`)."""
    ell = n_bonds * length
    euler_bernoulli = force * ell ** 3 / (3 * E * SECOND_MOMENT)
    return euler_bernoulli, (euler_bernoulli - force * ell * length ** 2 / (12 * E * SECOND_MOMENT)
                             + n_bonds * force / (G * AREA / length))


def static_tip_deflection(n_particles):
    scene, model, state, _ = prepare(CANTILEVER, [f"chain.0.n_particles={n_particles}"])
    start = state.position[-1].copy()
    relax(model, state)
    return state.position[-1] - start


def test_the_static_cantilever_is_an_euler_bernoulli_beam():
    """Ten bonds: within 0.25 % of F ℓ³/(3EI) (0.22 % predicted: −1/(4N²) from the midpoint rule,
    +3E/(16 G N²) from the shear springs), and equal to the chain's own formula up to the
    geometric non-linearity (δ/ℓ)²; the error falls as 1/N²."""
    deflection = static_tip_deflection(11)
    euler_bernoulli, chain = beam_deflection(10)
    assert abs(deflection[1] / euler_bernoulli - 1) < 2.5e-3
    assert deflection[1] == pytest.approx(chain, rel=1e-6)
    assert abs(deflection[0]) < 1e-3 * deflection[1] and abs(deflection[2]) < 1e-12
    short = static_tip_deflection(6)[1] / beam_deflection(5)[0] - 1
    assert short / (deflection[1] / euler_bernoulli - 1) == pytest.approx(4.0, rel=0.01)


def test_the_cantilever_scene_averages_to_the_static_deflection(tmp_path):
    """The undamped scene, shortened to five bonds and 40 of their periods: the tip's deflection
    (−external/F in energy.csv), averaged over whole periods, is the static one within 0.5 %;
    the energy is conserved."""
    sim, out = run(CANTILEVER, ["chain.0.n_particles=6", "simulation.t_end=58.5", "output.vtk_every=0"],
                   tmp_path / "run", quiet=True)
    log = np.genfromtxt(out / "energy.csv", delimiter=",", names=True)
    deflection = -log["external"] / 0.01
    swing = deflection - 0.5 * (deflection.max() + deflection.min())
    up = np.flatnonzero((swing[:-1] < 0) & (swing[1:] >= 0))   # whole periods between the first and last
    average = deflection[up[0]:up[-1]].mean()
    assert len(up) > 30
    assert average == pytest.approx(static_tip_deflection(6)[1], rel=5e-3)
    assert np.ptp(log["total"]) < 1e-5 * np.abs(log["external"]).max()   # O(h²), bounded


def test_a_parallel_bonded_torus_runs_and_conserves_momentum(tmp_path):
    """A spinning ring of parallel-bonded spheres (it stretches and vibrates): momenta conserved
    to round-off, energy to O(h²)."""
    scene = tmp_path / "torus.toml"
    scene.write_text("""
[simulation]
dt = 1e-4
t_end = 0.2

[[torus]]
n_particles = 20
diameter = 3.0
mass = 1.0
inertia = 0.1
velocity = [-1.0, 0.0, 0.0]
angular_velocity = [0.0, 0.0, 2.0]
binder = "parallel_bond"
binder_modulus = 1e4
binder_shear_modulus = 4e3
binder_radius_ratio = 0.8
""")
    sim, out = run(scene, [], tmp_path / "run", quiet=True)
    assert list(sim.model.interactions) == ["parallel_bond"]
    log = np.genfromtxt(out / "energy.csv", delimiter=",", names=True)
    assert np.abs(log["Px"] + 20.0).max() < 1e-11 and np.abs(log["Py"]).max() < 1e-11
    assert np.ptp(log["Lz"]) < 1e-11 * np.abs(log["Lz"]).max()
    assert log["axial"].max() > 1e-4 and np.ptp(log["total"]) < 1e-5 * log["total"][0]


@pytest.mark.parametrize("override, message", [
    ("chain.0.binder_modulus=0", "chain.0.binder_modulus: must be positive, got 0"),
    ("chain.0.binder_shear_modulus=-4e3", "chain.0.binder_shear_modulus: must be positive, got -4000"),
    ("chain.0.binder_radius_ratio=0", "chain.0.binder_radius_ratio: must be in (0, 1], got 0"),
    ("chain.0.binder_radius_ratio=1.2", "chain.0.binder_radius_ratio: must be in (0, 1], got 1.2"),
    ("chain.0.binder='parallel'", "chain.0.binder: must be one of three_spring, parallel_bond, seed001, got 'parallel'"),
    ("chain.0.k_axial=3", "chain.0.k_axial: is a three_spring stiffness; binder = 'parallel_bond' takes"),
    ("chain.0.binder_tensile_strength=-1", "chain.0.binder_tensile_strength: must be zero or positive"),
    ("chain.0.clamped=30", "chain.0.clamped: must be at most n_particles = 21, got 30"),
])
def test_bad_bond_input_is_one_line_and_writes_nothing(tmp_path, capsys, override, message):
    out = tmp_path / "run"
    assert main([str(CANTILEVER), "--set", override, "--out", str(out), "--quiet"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("dem: error: ") and message in error and error.count("\n") == 1
    assert "Traceback" not in error and not out.exists()


def test_the_former_name_seed001_builds_the_three_spring_binder(caplog):
    """``binder = "seed001"`` still builds the three-spring binder's bonds, and says once that
    the name has changed."""
    from dem.system import build_system

    torus = ROOT / "scenes" / "torus_impact.toml"
    with caplog.at_level("WARNING"):
        old, _ = build_system(load_scene(torus, ["torus.0.binder='seed001'"]))
    assert caplog.text.count("'seed001' is the former name of 'three_spring'") == 1
    new, _ = build_system(load_scene(torus))
    assert list(old.interactions) == list(new.interactions)
    for field in ("i", "j", "law", "k_axial", "k_shear", "k_bending"):
        assert np.array_equal(getattr(old.bonds, field), getattr(new.bonds, field)), field


def test_three_spring_binder_keys_refuse_parallel_bond_strengths(tmp_path):
    with pytest.raises(SceneError, match="torus.0.binder_shear_strength: is a parallel-bond strength"):
        load_scene(ROOT / "scenes" / "torus_impact.toml", ["torus.0.binder_shear_strength=2"])
    scene = tmp_path / "chain.toml"
    scene.write_text(CANTILEVER.read_text().replace("binder_shear_modulus = 4e3", ""))
    with pytest.raises(SceneError, match="chain.0.binder_shear_modulus: is required with binder = 'parallel_bond'"):
        load_scene(scene)


PARALLEL_GRANULE_BONDS = """binder = "parallel_bond"
binder_modulus = 2e3
binder_shear_modulus = 8e2
binder_radius_ratio = 0.8
binder_tensile_strength = 8.0
binder_shear_strength = 12.0
"""


def test_a_breaking_parallel_bonded_granule_restarts_exactly_and_closes_its_budget(tmp_path):
    """The granule of the restart tests with parallel bonds that break on impact: a run in two
    pieces (checkpoint, restart) is the same run bit for bit, and the energy booked to breakage
    keeps the budget closed."""
    from support.granule import GRANULE
    from test_restart import assert_same_run, outputs

    text = GRANULE.split("k_axial")[0] + PARALLEL_GRANULE_BONDS
    scene = tmp_path / "granule.toml"
    scene.write_text(text)
    settings = ["simulation.t_end=0.6", "output.vtk_every=100", "simulation.dt=5e-4"]
    straight, pieces = tmp_path / "straight", tmp_path / "pieces"
    sim, _ = run(scene, settings, straight, quiet=True)
    run(scene, settings + ["simulation.t_end=0.3"], pieces, quiet=True)
    run(scene, settings, pieces, quiet=True, restart=pieces / "checkpoint.npz")
    assert_same_run(outputs(straight), outputs(pieces))
    broken = sim.state.interactions["parallel_bond"].broken
    assert np.count_nonzero(broken == BROKEN_TENSION) > 10 and np.count_nonzero(broken == BROKEN_SHEAR) > 0
    log = np.genfromtxt(straight / "energy.csv", delimiter=",", names=True)
    assert log["broken"][-1] > 0.01 * log["total"][0]
    assert np.abs(log["total"] - log["total"][0]).max() < 1e-3 * log["total"][0]
    assert log["broken_parallel_tension"][-1] == np.count_nonzero(broken == BROKEN_TENSION)
