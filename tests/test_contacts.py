"""Per-contact state (`dem.contacts`): a test interaction with history (`history_probe`) checked
against a brute-force reference across many neighbour rebuilds and a restart, for any number of
threads."""

import numpy as np
import pytest
from support.history_probe import PROBE
from support.threads import across_threads

from dem import Simulation, SystemBuilder
from dem.checkpoint import load_checkpoint, restore, save_checkpoint
from dem.interactions import register, unregister

N = 60


@pytest.fixture
def probe():
    register(PROBE)
    yield PROBE
    unregister(PROBE.name)


def gas(seed=0, n=N, away=0.0):
    """``n`` spheres in a box of six walls (each moved ``away`` outwards: far enough, and no sphere
    reaches them), fast enough to cross many skins, including one pair held pressed together by a
    stiff bond that flies through the box (a persistent contact). Every test of the probe then
    steps the same interactions: one loop to compile."""
    rng = np.random.default_rng(seed)
    system = SystemBuilder()
    side = int(np.ceil((n - 2) ** (1 / 3)))
    box = 0.9 * side + 0.4
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n - 2]
    position = 0.6 + 0.9 * grid + rng.uniform(-0.05, 0.05, size=(n - 2, 3))
    system.add_bodies(position, mass=1.0, inertia=0.1, diameter=rng.uniform(0.6, 0.8, n - 2),
                      velocity=rng.normal(scale=3.0, size=(n - 2, 3)))
    pair = system.add_bodies([(1.0, box - 0.8, box - 0.8), (1.55, box - 0.8, box - 0.8)], mass=1.0, inertia=0.1,
                             diameter=0.6, velocity=(2.0, 0.0, 0.0))
    system.add_bond(*pair, k_axial=1e5, k_shear=0.0, k_bending=0.0)  # holds them pressed together
    planes = []
    for axis in range(3):
        for side_point, normal in ((-away, 1.0), (box + away, -1.0)):
            point, vector = np.zeros(3), np.zeros(3)
            point[axis], vector[axis] = side_point, normal
            planes.append(dict(point=tuple(point), normal=tuple(vector), size=0.0))
    return system.finish(planes, contact={"k_pp": 500.0, "k_pw": 500.0, "skin": 0.1})


def brute_force_step(reference, position, diameter):
    """Advance the reference ``{(i, j): [age, Σδ]}`` by one step: every touching pair, all pairs."""
    d = position[:, None, :] - position[None, :, :]
    r = np.sqrt(d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1] + d[..., 2] * d[..., 2])
    delta = 1.0 - r / (0.5 * (diameter[:, None] + diameter[None, :]))
    touching = {(i, j) for i, j in zip(*np.nonzero(delta > 0)) if i < j}
    for key in list(reference):
        if key not in touching:
            del reference[key]
    for i, j in touching:
        age, total = reference.get((i, j), (0.0, 0.0))
        reference[(i, j)] = (age + 1.0, total + delta[i, j])


def table(sim):
    """The probe's live histories by pair key."""
    saved = sim.contacts.export()
    keys, values = saved["history_keys.history_probe"], saved["history_values.history_probe"]
    return {(int(i), int(j)): tuple(v) for (i, j), v in zip(keys, values)}


def test_history_matches_brute_force_across_rebuilds(probe):
    model, state = gas()
    sim = Simulation(model, state, "rrp2", 2e-3)
    reference = {}
    brute_force_step(reference, state.position, model.diameter)  # the forces of step 0 count too
    persistent = (N - 2, N - 1)
    travelled = 0.0
    for step in range(1, 601):
        sim.advance(1)
        travelled = max(travelled, state.position[persistent[0], 0] - 1.0)
        brute_force_step(reference, state.position, model.diameter)
        live = table(sim)
        assert live.keys() == reference.keys(), f"step {step}"
        for key, (age, total) in reference.items():
            assert live[key][0] == age and live[key][1] == pytest.approx(total, rel=1e-13), f"step {step} {key}"
    assert sim.contacts.n_builds > 50  # the list was rebuilt many times
    assert travelled > 10 * sim.contacts.skin
    # the pressed pair never let go: its history counts every step, as if the list never rebuilt
    assert reference[persistent][0] == 601
    # particle–wall slots: the age of each wall contact, against the same kind of reference
    own = state.interactions["history_probe"]
    assert (own.wall_key >= 0).sum() > 0 and own.wall_age.max() > 1


def test_particle_wall_history_matches_brute_force(probe):
    model, state = gas(seed=1)
    sim = Simulation(model, state, "rrp2", 2e-3)
    radius = 0.5 * model.diameter
    reference = {}
    for step in range(401):
        if step:
            sim.advance(1)
        gap = np.einsum("iwc,wc->iw", state.position[:, None, :] - model.wall_point[None], model.wall_normal)
        touching = {(i, w) for i, w in zip(*np.nonzero(gap < radius[:, None]))}
        reference = {key: reference.get(key, 0.0) + 1.0 for key in touching}
        own = state.interactions["history_probe"]
        live = {(i, int(own.wall_key[i, s])): own.wall_age[i, s] for i in range(N) for s in range(3)
                if own.wall_key[i, s] >= 0}
        assert live == reference
    assert max(reference.values()) > 5


def test_pair_forces_read_one_history_from_both_rows(probe):
    """With the walls out of reach the probe and Hertz are internal: the momenta are conserved to
    round-off, which needs both rows of a pair to read the same slot."""
    model, state = gas(away=1e3)
    state.velocity *= 0.3
    sim = Simulation(model, state, "rrp2", 2e-3)
    start = sim.energy_budget()
    sim.advance(500)
    end = sim.energy_budget()
    assert max(v[0] for v in table(sim).values()) > 20  # long-lived contacts pushed with their age
    assert (state.interactions["history_probe"].wall_key < 0).all()  # no wall touched
    scale = np.abs(state.velocity).sum()
    for key in ("Px", "Py", "Pz"):
        assert abs(end[key] - start[key]) < 1e-13 * scale


def test_restart_continues_bit_for_bit(probe, tmp_path):
    scene = tmp_path / "scene.toml"
    scene.write_text("# stand-in for the scene file a checkpoint records\n")
    model, state = gas(seed=2)
    sim = Simulation(model, state, "rrp2", 2e-3)
    sim.advance(150)
    save_checkpoint(tmp_path / "checkpoint.npz", sim, scene, (), (0.0, 1.0))
    sim.advance(150)

    model2, state2 = gas(seed=2)
    restored, _ = restore(load_checkpoint(tmp_path / "checkpoint.npz"), model2, state2)
    resumed = Simulation(model2, state2, "rrp2", 2e-3, restored=restored)
    resumed.advance(150)
    assert np.array_equal(state2.position, state.position) and np.array_equal(state2.velocity, state.velocity)
    assert table(resumed) == table(sim) and len(table(sim)) > 5
    for field in ("wall_key", "wall_age"):
        assert np.array_equal(getattr(state2.interactions["history_probe"], field),
                              getattr(state.interactions["history_probe"], field))


def test_history_is_independent_of_the_thread_count(probe):
    def run(parallel):
        model, state = gas(seed=3, n=5000)  # three parallel chunks
        sim = Simulation(model, state, "rrp2", 2e-3, parallel=parallel)
        sim.advance(300)
        return state.position.copy(), table(sim)

    (position, histories), *others = across_threads(run)
    assert len(histories) > 1000  # many live contacts
    for other_position, other_histories in others:
        assert np.array_equal(position, other_position) and histories == other_histories


def test_each_lower_entry_knows_its_pairs_slot():
    """After the rows, the index array holds for each lower entry (``i`` in row ``j > i``) the
    slot of the pair ``(i, j)``, the one `pair_slot` finds in row ``i``: after a first build, a
    build that grows the list and one that shrinks it, in a periodic box too."""
    from dem.cell import box_cell
    from dem.contacts import ContactTable, pair_slot

    rng = np.random.default_rng(3)
    for period in (0.0, 6.0):
        contacts = ContactTable(400, 0.2, {"probe": 2})
        cell = box_cell((period, period, period))
        for spread in (6.0, 4.0, 7.0):
            position = rng.uniform(0.0, spread, (400, 3))
            contacts.rebuild(position, np.full(400, 0.5), cell)
            start, index, owner_start = contacts.start, contacts.index, contacts.owner_start
            lower = [(i, j, k - owner_start[j]) for j in range(400) for k in range(start[j], start[j + 1])
                     if (i := index[k]) < j]
            assert len(lower) == owner_start[-1] > 0
            tail = index[start[-1]:start[-1] + owner_start[-1]]
            assert [tail[m] for _, _, m in lower] == [pair_slot(start, index, owner_start, i, j) for i, j, _ in lower]
