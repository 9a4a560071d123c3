"""One scene on several processes: ``mpiexec -n R python -m dem SCENE`` (the ``mpi`` extra).

Spatial domain decomposition by recursive coordinate bisection (`Bisection`, balanced by the
number of bodies). Each rank *owns* the bodies in its box and holds *ghost* copies of every body
within the halo width ``w`` of it: the interaction range plus the skin (``D_max + skin``), and
at least the longest intact bond, so the other end of every bond of an owned body is there; the
bodies that `GLOBAL` kernels act on (few-body terms) are on every rank. A rigid cluster is one
body, so it is always whole on one rank.

Same answer as one process, bit for bit. A body's force is the sum of its row interactions in
registry order over its neighbour row, then its bond loads colour by colour, then the global
kernels'. A rank evaluates exactly these terms, in this order, for each body it owns:

* its bodies (owned and ghosts) are held in global-id order, and its neighbour list is built on
  the cells of the *whole* system (bounds by allreduce, `dem.neighbors.NeighborList.build_part`),
  so each cell lists the same bodies in the same order and every owned row is the serial row;
* the list is rebuilt on every rank when any body anywhere has moved more than half the skin
  (an allreduce of the flag): at the serial run's steps;
* it evaluates every intact bond with an owned end, in the global colour order (`Interaction.
  localize`), and keeps the loads on its owned bodies;
* each history interaction's ``update`` runs over all its rows (ghosts' too), so every pair with
  an owned end has its serial value; at a rebuild the histories travel by global pair key from
  the owner of the pair's first body to the new owners of both.

A periodic cell (`dem.cell`): the boxes cut the cell by the bodies' wrapped positions, and a
rank's ghosts are the bodies within the halo width of its box through the faces too (nearest
images); every pair kernel takes the nearest image of a ghost's unwrapped position, so one copy
serves whichever face it is reached through.

Walls: planes and meshes, fixed, moving as prescribed or servo (the walls are whole on every rank,
`Interaction.shared_state`, and every rank's advance hook moves them alike; a particle's mesh
contacts are its own rows, which travel with it). Each rank books the loads of its owned
particles on them and a moving wall's work, and `walls.csv` and the ``walls`` column log the
ranks' shares added in rank order: the same to round-off as one process, not bit for bit (one
process adds them up in chunks of rows, across the ranks' boxes). A servo wall's load is booked
in whole quanta (`dem.interactions.walls.add_wall_load`), so the ranks' shares, summed after
every force evaluation (one ``Allreduce``), are the one process's load to the bit, and every
servo moves alike. A deforming cell (`dem.cell`): every rank's advance hook moves its copy of the
lattice alike (the hooks run before the rebuild test, as in one process, which counts the
lattice's motion since the build); the boxes' halos reach across the sliding faces (`Bisection`,
the tilt either way along x); the rates a servo sets on rank 0's gathered state are broadcast
(`report_due`); a restart builds its first list on the lattice of the interrupted run's last build.

One step (`RankLoop`, the stages of `dem.step.STEP`): the scheme's ``before_forces`` on the
owned bodies, the hooks, an allreduce (failure, rebuild flag) overlapped with the halo exchange
(positions, velocities, orientations, angular velocities of the ghosts: 13 doubles each, one
``Alltoallv``), at a rebuild the migration of bodies to their new owners with their state and
contact histories, the new ghosts and the new list (`Decomposition`), then the forces and
``after_forces`` of the owned bodies. The communication runs between compiled calls (no MPI in
the compiled loop), one step at a time. A step with contact sub-steps (`dem.integrators.respa`;
whether some rank has an active contact is one more allreduce per step) runs the sub-stepped
stages of the generated module instead of ``before_forces``/``after_forces``, with a halo
exchange and a rebuild check after each drift but the last, before the fast force is evaluated:
the same bits as one process.

Clumps (`dem.interactions.clump_contacts`, `dem.interactions.clump_walls`): the list is built, and
the halo sized, with the bodies' list diameters (`dem.interactions.list_diameters`: a clump's
sphere that holds its members); a ghost's members are placed from its exchanged position and
orientation, and each interaction's parameters are the rank's bodies' and members'
(`dem.interactions.contract.localize_members`); a body pair's member springs are its keyed
history, and the members' wall springs and mesh contacts (``Interaction.member_state``) travel
with their body as one row of `most_members` members; the member pairs' loads of the contact
network go to the snapshot with the pairs' (`dem.network.pair_loads`). The same bits as one
process, but for the walls' loads as above.

Sources and outlets (`dem.feeding`): the Feeder, an observer, acts on rank 0's gathered view
like the others; where it inserted or removed particles (``altered``), every rank takes its part
of the view's whole state anew, as at a restart (`DistributedSimulation._take`): the list built
where the view built it, the histories by key, the forces the view computed. So the run is the
one process's, bit for bit, at the cost of a redistribution at each such step.

Outputs: observers run on rank 0 on `DistributedSimulation.snapshot`, the state gathered in
global-id order into a one-process `dem.simulation.Simulation` (its contact table rebuilt at the
gathered reference positions, as a checkpoint restores it, and the contact pipeline's pair loads
put back for the contact network, `dem.network.pair_loads`): the energy log, VTK snapshots and
checkpoints are those of the serial run, and a checkpoint restarts on any number of ranks.
"""

import copy
import functools
import itertools
import os

import numpy as np
from numba import njit

from .cell import GRADIENT, PERIOD, TILT, cell_image, lattice_at_build, wrapped
from .contacts import ContactTable, owner_offsets, restore_history, save_history
from .engine import FAILED, NOT_FINITE, OK, distributed_module, fast_pair_law, substeps_contacts
from .integrators.stages import first_not_finite
from .interactions import BOND, GLOBAL, INTERACTIONS, history_width, list_diameters, loads_width
from .interactions.contract import MPIError, ranges
from .neighbors import N_BUILDS, bounds, build_due, grid_of_bounds, needs_rebuild
from .network import loads_pipeline, pair_loads, put_pair_loads
from .feeding import run_bodies
from .simulation import Simulation, SimulationError
from .state import BodyArrays, State, StateArrays
from .step import STEP, run_step, stage_methods

#: per-body state fields that travel with a body when it migrates (all but the cell)
STATE_FIELDS = tuple(f for f in StateArrays._fields if f != "cell")
#: what the halo exchange sends of a ghost (`_copy_ghosts`), and its width in doubles
GHOST_FIELDS = ("position", "velocity", "orientation", "angular_velocity")
GHOST_WIDTH = 13
#: rebalance the boxes at a rebuild when the most loaded rank owns this many times the mean
IMBALANCE = 1.1
#: positions per rank that the rebalancing bisects (a sample: boxes need not be exact)
SAMPLE = 4096
NOBODY = np.iinfo(np.int64).max
#: the own-state field of a bond law that marks broken bonds: they take no part, their ends need
#: not meet
BROKEN = "broken"


@njit(cache=True)
def _copy_ghosts(st, index, buffer, pack):
    """Rows ``index`` of the state into ``buffer`` (``pack``; `GHOST_FIELDS`, one body per row), or
    ``buffer`` back into those rows."""
    position, velocity, orientation, angular_velocity = st.position, st.velocity, st.orientation, st.angular_velocity
    for k in range(index.shape[0]):
        i = index[k]
        for c in range(4):
            if c < 3:
                _copy(position, buffer, i, k, c, c, pack)
                _copy(velocity, buffer, i, k, c, 3 + c, pack)
                _copy(angular_velocity, buffer, i, k, c, 10 + c, pack)
            _copy(orientation, buffer, i, k, c, 6 + c, pack)


@njit(inline="always")
def _copy(array, buffer, i, k, c, column, pack):
    if pack:
        buffer[k, column] = array[i, c]
    else:
        array[i, c] = buffer[k, column]


@functools.cache
def world():
    """The MPI communicator when this process is one of several started by ``mpiexec``, else
    None. mpi4py is imported only then (the ``mpi`` extra; without it, a process started alone
    runs as it always did)."""
    sizes = [int(os.environ[name]) for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE") if os.environ.get(name, "").isdigit()]
    if (sizes and max(sizes) <= 1) or (not sizes and "PMIX_RANK" not in os.environ):
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        raise MPIError(f"started by mpiexec as one of {max(sizes, default=0) or 'several'} processes, but mpi4py "
                       f"is not installed: pip install 'dem[mpi]'") from None
    return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def rank():
    """This process's MPI rank (0 when it runs alone)."""
    comm = world()
    return 0 if comm is None else comm.Get_rank()


def simulation(model, state, integrator="rrp2", dt=1e-3, observers=(), parallel=None, restored=None, device="cpu"):
    """A `DistributedSimulation` under ``mpiexec -n R`` (R > 1), else a `Simulation` (same
    arguments; a GPU, ``device = "cuda"``, for one process only)."""
    if world() is None:
        return Simulation(model, state, integrator, dt, observers, parallel, restored, device)
    if device != "cpu":
        raise MPIError("device = 'cuda' runs one process on one GPU; several MPI processes, one GPU each, are not "
                       "run yet: start it without mpiexec")
    return DistributedSimulation(model, state, integrator, dt, observers, restored)


class Bisection:
    """Recursive coordinate bisection of space into ``parts`` boxes with about equal numbers of
    ``points``: each cut halves (in proportion to the parts on either side) the points of a box
    along its widest extent. ``boxes (parts, 2, 3)``: the corners; the outer ones are infinite,
    so the boxes tile space. The same points give the same boxes on every rank. In a periodic
    ``cell`` (`dem.cell`) points are placed by their wrapped positions, and distances along a
    periodic axis are those of the nearest image (the boxes tile the cell, which repeats)."""

    def __init__(self, points, parts, cell):
        self.cell = cell
        self.boxes = np.empty((parts, 2, 3))
        self.tree = self._split(wrapped(np.asarray(points, float), cell), np.full(3, -np.inf), np.full(3, np.inf), 0,
                                parts)

    def _split(self, points, lo, hi, first, parts):
        if parts == 1:
            self.boxes[first] = lo, hi
            return first
        left = parts // 2
        finite = points[np.isfinite(points).all(axis=1)]
        if len(finite):
            axis = int(np.argmax(finite.max(axis=0) - finite.min(axis=0)))
            values = np.sort(finite[:, axis])
            cut = values[min(len(values) * left // parts, len(values) - 1)]
        else:  # no point here: any cut inside the box
            axis = 0
            cut = lo[0] if np.isfinite(lo[0]) else (hi[0] if np.isfinite(hi[0]) else 0.0)
        below = points[:, axis] < cut
        upper, lower = hi.copy(), lo.copy()
        upper[axis] = lower[axis] = cut
        return (axis, cut, self._split(points[below], lo, upper, first, left),
                self._split(points[~below], lower, hi, first + left, parts - left))

    def owners(self, points):
        """The box of each point (a non-finite one goes to some box)."""
        points = wrapped(points, self.cell)
        out = np.empty(len(points), np.int64)

        def descend(index, node):
            if not isinstance(node, tuple):
                out[index] = node
                return
            axis, cut, left, right = node
            below = points[index, axis] < cut
            descend(index[below], left)
            descend(index[~below], right)

        descend(np.arange(len(points)), self.tree)
        return out

    def near(self, points, part, width):
        """Which ``points`` lie within ``width`` of box ``part``."""
        lo, hi = self.boxes[part]
        points = wrapped(points, self.cell)
        return self._nearest(lambda shift: np.maximum(np.maximum(lo - points - shift, points + shift - hi), 0.0)) \
            <= width * width

    def neighbours(self, part, width):
        """The other boxes within ``width`` of box ``part``."""
        lo, hi = self.boxes[part]
        near = self._nearest(lambda shift: np.maximum(np.maximum(self.boxes[:, 0] - hi - shift,
                                                                 lo - self.boxes[:, 1] + shift), 0.0)) <= width * width
        near[part] = False
        return np.flatnonzero(near)

    def _nearest(self, gap):
        """The squared distance ``|gap(shift)|²`` (``gap``: gaps per axis, ``shift (3,)`` added to
        the points or boxes measured), the smallest over the images one period either way along
        the periodic axes (axis by axis: the gaps along each add up); in a sheared cell
        (`dem.cell`) over the lattice vectors ``H m`` that reach the neighbouring images through
        the tilted faces."""
        period, tilt = self.cell[PERIOD], self.cell[TILT]
        if not tilt.any():
            out = gap(np.zeros(3))
            for sign in (-1.0, 1.0):
                out = np.minimum(out, np.where(period > 0.0, gap(sign * period), np.inf))
            return np.sum(out * out, axis=1)
        lattice = np.array([[period[0], tilt[0], tilt[1]], [0.0, period[1], tilt[2]], [0.0, 0.0, period[2]]])
        steps = [range(-3, 4) if period[0] > 0.0 else (0,), range(-2, 3) if period[1] > 0.0 else (0,),
                 range(-1, 2) if period[2] > 0.0 else (0,)]
        return functools.reduce(np.minimum, (np.sum(gap(lattice @ np.array(m, float)) ** 2, axis=1)
                                             for m in itertools.product(*steps)))


class Part:
    """A rank's bodies: ``bodies`` their global ids in ascending order (the local order), of which
    the local indices ``owned`` are its own and ``ghosts`` copies of other ranks' bodies;
    ``bonds`` the global ids of the bonds it evaluates (ascending)."""

    def __init__(self, bodies, owned, bonds):
        self.bodies = bodies
        self.owned = owned
        self.ghosts = np.setdiff1d(np.arange(len(bodies)), owned)
        self.bonds = bonds

    def local(self, ids):
        """The local indices of the bodies ``ids`` (global ids the rank holds)."""
        return np.searchsorted(self.bodies, ids)

    def block(self, block):
        """This part as one bond law sees it: ``bonds`` the ids, within the law's ``block`` (a
        slice of the whole bond table), of the bonds of that law it evaluates."""
        view = copy.copy(self)
        lo, hi = np.searchsorted(self.bonds, (block.start, block.stop))
        view.bonds = self.bonds[lo:hi] - block.start
        return view


def _bond_table(model):
    """``(start, bonds)``: the bonds of body ``b`` are ``bonds[start[b]:start[b+1]]``."""
    ends = np.concatenate((model.bonds.i, model.bonds.j)).astype(np.int64)
    order = np.argsort(ends, kind="stable")
    start = np.searchsorted(ends[order], np.arange(model.n_bodies + 1))
    return start, order % max(len(model.bonds), 1)


def _member_rows(start, index):
    """``(member, body, place)``: the rows of the members of the bodies ``index`` (``start`` (n +
    1): each body's first member row, as ``member_start``), the place of each one's body in
    ``index`` and its place among its body's members."""
    counts = start[index + 1] - start[index]
    member = ranges(start[index], start[index + 1])
    return member, np.repeat(np.arange(len(index)), counts), np.arange(len(member)) - np.repeat(
        np.cumsum(counts) - counts, counts)


def _concatenated(pieces, key, like):
    """``pieces[*][key]`` joined (an empty array shaped as ``like`` when there are none)."""
    arrays = [piece[key] for piece in pieces if len(piece[key])]
    return np.concatenate(arrays) if arrays else np.zeros((0,) + like.shape[1:], like.dtype)


class Decomposition:
    """A rank's share of the system: the boxes that cut space (`Bisection`), its `Part` (owned
    bodies, ghosts, bonds), the halo plan (which rows go to which rank at every step,
    `exchange`) and the migration of bodies to the owners of their boxes (`migrate`). ``shared``:
    the bodies every rank holds (those `GLOBAL` kernels act on); ``bond_start``, ``bond_list``:
    the bonds of each body (`_bond_table`)."""

    def __init__(self, comm, mpi, cell, shared, bond_start, bond_list):
        self.comm, self._mpi = comm, mpi
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.cell, self.shared = cell, shared
        self.bond_start, self.bond_list = bond_start, bond_list
        self.boxes = self.part = None
        #: bodies that moved to another rank at rebuilds so far (all ranks), and rebalancings
        self.migrated = self.rebalanced = 0

    def cut(self, points):
        """Cut space into the ranks' boxes, balanced by ``points`` (the same on every rank)."""
        self.boxes = Bisection(points, self.size, self.cell)

    def rebalance(self, owned_positions):
        """Cut the boxes anew when the most loaded rank owns more than `IMBALANCE` times the
        mean (from a sample of every rank's ``owned_positions``). Collective."""
        counts = self.comm.allgather(len(owned_positions))
        if max(counts) > IMBALANCE * np.mean(counts):
            step = max(1, len(owned_positions) // SAMPLE)
            self.cut(np.concatenate(self.comm.allgather(owned_positions[::step])))
            self.rebalanced += 1

    def migrate(self, owned_ids, rows, reference, histories):
        """Hand the bodies ``owned_ids`` this rank holds (their ``rows``, ``{key: rows}``, and
        ``reference`` positions) to the owners of their boxes, with the contact ``histories`` it
        holds by key (``{name: (keys, values, reference position of each second body)}``: a pair
        goes to the owners of both bodies). Returns what this rank now owns, in global-id order,
        ``(ids, rows, reference, {name: (keys, values)})``, and how many bodies it handed to
        other ranks. Collective."""
        owners = self.boxes.owners(reference)
        pieces = []
        for r in range(self.size):
            send = owners == r
            piece = {"ids": owned_ids[send], "reference": reference[send]}
            piece.update({key: value[send] for key, value in rows.items()})
            for name, (keys, values, second) in histories.items():
                first_owner = owners[np.searchsorted(owned_ids, keys[:, 0])] if len(keys) else np.zeros(0, np.int64)
                to = (first_owner == r) | (self.boxes.owners(second) == r)
                piece[f"keys.{name}"], piece[f"values.{name}"] = keys[to], values[to]
            pieces.append(piece)
        received = self.comm.alltoall(pieces)
        ids = _concatenated(received, "ids", owned_ids)
        order = np.argsort(ids)
        mine = {key: _concatenated(received, key, rows[key])[order] for key in rows}
        keys = {name: (_concatenated(received, f"keys.{name}", histories[name][0]),
                       _concatenated(received, f"values.{name}", histories[name][1])) for name in histories}
        moved = int(np.count_nonzero(owners != self.rank))
        return ids[order], mine, _concatenated(received, "reference", reference)[order], keys, moved

    def plan_halo(self, ids, ghost_rows, reference, width, intact):
        """The ghosts: every rank sends the bodies it owns (``ids``, their ``ghost_rows`` and
        ``reference`` positions) within ``width`` of another's box, and the shared bodies, to
        it. Makes the rank's `Part` (its bonds: the ``intact`` ones with an owned end) and the
        halo plan, and returns the pieces received (``ids``, ``reference`` and the rows of each
        other rank's ghosts). Collective."""
        shared = np.isin(ids, self.shared)
        pieces = [{"ids": ids[:0]} for _ in range(self.size)]
        sends = [np.zeros(0, np.int64)] * self.size
        for r in range(self.size):
            if r == self.rank:
                continue
            near = self.boxes.near(reference, r, width) | shared if r in self.boxes.neighbours(self.rank, width) \
                else shared
            sends[r] = np.flatnonzero(near)
            pieces[r] = {"ids": ids[near], "reference": reference[near]}
            pieces[r].update({key: rows[near] for key, rows in ghost_rows.items()})
        received = self.comm.alltoall(pieces)
        ghost_ids = [piece["ids"] for piece in received]
        bodies = np.concatenate([ids] + ghost_ids)
        order = np.argsort(bodies)
        owned = np.empty(len(ids), np.int64)
        owned[:] = np.flatnonzero(order < len(ids))
        bonds = np.unique(self.bond_list[ranges(self.bond_start[ids], self.bond_start[ids + 1])])
        self.part = Part(bodies[order], owned, bonds[intact[bonds]])
        # what goes where at every step, in the same order on both sides
        self.send_index = [self.part.owned[index] for index in sends]
        self.receive_index = [self.part.local(g) for g in ghost_ids]
        self.send_all = np.concatenate(self.send_index).astype(np.int64)
        self.receive_all = np.concatenate(self.receive_index).astype(np.int64)
        self.send_counts = np.array([len(index) for index in self.send_index]) * GHOST_WIDTH
        self.receive_counts = np.array([len(index) for index in self.receive_index]) * GHOST_WIDTH
        self.send_displacements = np.cumsum(self.send_counts) - self.send_counts
        self.receive_displacements = np.cumsum(self.receive_counts) - self.receive_counts
        self.send_buffer = np.empty((len(self.send_all), GHOST_WIDTH))
        self.receive_buffer = np.empty((len(self.receive_all), GHOST_WIDTH))
        return received

    def exchange(self, st):
        """The halo exchange: the ghosts' positions, velocities, orientations and angular
        velocities (`GHOST_FIELDS`) in the rank's state arrays ``st``, from their owners."""
        MPI = self._mpi
        _copy_ghosts(st, self.send_all, self.send_buffer, True)
        self.comm.Alltoallv([self.send_buffer, (self.send_counts, self.send_displacements), MPI.DOUBLE],
                            [self.receive_buffer, (self.receive_counts, self.receive_displacements), MPI.DOUBLE])
        _copy_ghosts(st, self.receive_all, self.receive_buffer, False)


class DistributedSimulation(Simulation):
    """`dem.simulation.Simulation` over the ranks of ``mpiexec`` (see the module's docstring).

    Every rank builds the whole ``model`` and ``state`` (or restores a checkpoint) and keeps its
    part: ``state``, ``bodies``, ``aux`` and ``contacts`` are the rank's (local indices, `Part`);
    `snapshot` gathers the whole state on rank 0. Observers report on rank 0 only; a failure
    (a blow-up, the energy guard) stops every rank at the same step. Kernels run serially on
    each rank (one rank per core). The rank's share of space and bodies is its `decomposition`
    (`Decomposition`: the boxes, its `Part`, the halo plan, the migration), and its `loop`
    (`RankLoop`) runs the steps; of `Simulation` it changes the public methods that see the
    whole system or every rank (`snapshot`, `sample`, `report_due`, `stop_pending`)."""

    def __init__(self, model, state, integrator="rrp2", dt=1e-3, observers=(), restored=None):
        from mpi4py import MPI

        self._mpi = MPI
        self.comm = world()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        scheme = self._configure(model, state, integrator, dt, observers, False)
        names = tuple(model.interactions)
        #: the periodic cell (`dem.cell`), the same on every rank
        self.cell = state.cell.copy()
        for name in names:
            interaction = INTERACTIONS[name]
            if interaction.kind in (BOND, GLOBAL) and interaction.localize is None or \
                    interaction.kind == GLOBAL and interaction.shared_bodies is None:
                raise MPIError(f"interaction {name!r} cannot run under MPI: it defines no localize/shared_bodies "
                               f"(dem.interactions.contract)")
        self.neighbors = any(INTERACTIONS[n].neighbors for n in names)
        #: each history's width (`dem.interactions.history_width`)
        self.histories = {n: history_width(n, p) for n, p in model.interactions.items() if INTERACTIONS[n].history}
        #: the most members a body has, for each interaction with state per member (the width of
        #: their rows as they travel: `_rows_of`)
        self.most_members = {n: int(np.diff(p.member_start).max(initial=0)) for n, p in model.interactions.items()
                             if INTERACTIONS[n].member_state}
        self.kernels = distributed_module(scheme, names)
        #: the interaction whose elastic pair force is sub-stepped (`dem.engine.fast_pair_law`)
        self.fast_law = fast_pair_law(names)
        #: contact sub-steps per step (`dem.integrators.respa`; 1: the plain map)
        self.substeps = model.interactions[self.fast_law].substeps if substeps_contacts(scheme, names) else 1
        self._first_calls = set()
        shared = np.unique(np.concatenate(
            [np.zeros(0, np.int64)] + [np.asarray(INTERACTIONS[n].shared_bodies(p), np.int64)
                                       for n, p in model.interactions.items() if INTERACTIONS[n].kind == GLOBAL]))
        #: the boxes, this rank's part, the halo plan and the migration (`Decomposition`)
        self.decomposition = Decomposition(self.comm, MPI, self.cell, shared, *_bond_table(model))
        #: what runs the steps (`RankLoop`)
        self.loop = RankLoop(self)
        self.own_types = {name: type(own) for name, own in state.interactions.items()}
        #: each bond law's slice of the whole bond table
        self.bond_blocks = {n: model.bonds.block(INTERACTIONS[n].bond_law) for n in names
                            if INTERACTIONS[n].kind == BOND}
        aux = scheme.aux(state, run_bodies(model, state))
        contacts = {"builds": 0}
        if restored is not None:
            saved_aux, contacts = restored
            if set(saved_aux) == set(aux._fields):
                aux = type(aux)(**saved_aux)
        self.aux_type = type(aux)
        self._take(state, aux, contacts, first=restored is None)
        if restored is None:
            self.evaluate_forces(0.0)  # the forces of the initial configuration (no work booked)

    @property
    def part(self):
        """This rank's bodies and bonds (`Part`)."""
        return self.decomposition.part

    def _take(self, state, aux, contacts, first):
        """Keep this rank's part of the whole ``state``, ``aux`` (the scheme's state) and
        ``contacts`` (the contact table as a checkpoint holds it), which every rank holds: at the
        ``first`` start of a run, at a restart, and when an observer changed the state between
        steps (`_take_changes`)."""
        model = self.model
        self.state = state
        self.global_bodies = run_bodies(model, state)
        #: own-state fields indexed by bond, for every bond (kept in step at rebuilds and gathers)
        self.bond_state = {(n, f): getattr(own, f).copy() for n, own in state.interactions.items()
                           for f in INTERACTIONS[n].bond_state}
        #: own-state fields that are not per body, whole on every rank (the arrays the kernels
        #: update in place); a rank's shares of sums start from zero, but rank 0's
        self.shared_state = {(n, f): getattr(own, f).copy() if self.rank == 0 or f not in INTERACTIONS[n].summed_state
                             else np.zeros_like(getattr(own, f))
                             for n, own in state.interactions.items() for f in INTERACTIONS[n].shared_state}
        #: per-body own-state fields that do not move with the bodies: scratch (`Interaction.
        #: scratch_state`, each rank's own) and fields with no rows (what the run does not use, as the
        #: fast force without contact sub-steps); whether they have rows (per body, or as the
        #: interaction's ``scratch_rows`` say: `_unmoved`), their trailing shape and type
        self.unmoved = {(n, f): (len(values) > 0, values.shape[1:], values.dtype)
                        for n, own in state.interactions.items() for f, values in zip(own._fields, own)
                        if f in INTERACTIONS[n].scratch_state
                        or (len(values) == 0 and f not in INTERACTIONS[n].bond_state + INTERACTIONS[n].shared_state)}
        restarted = int(contacts["builds"]) > 0
        self._builds = int(self.neighbors) if first else int(contacts["builds"])
        # every rank holds everything now: start from an even split of the ids, then migrate
        mine = np.array_split(np.arange(model.n_bodies), self.size)[self.rank]
        reference = contacts["reference_position"] if restarted else state.position
        histories = {}
        for name, width in self.histories.items():
            keys = np.asarray(contacts.get(f"history_keys.{name}", np.zeros((0, 2))), np.int64).reshape(-1, 2)
            values = np.asarray(contacts.get(f"history_values.{name}", np.zeros((0, width))), float)
            held = (keys[:, 0] >= mine[0]) & (keys[:, 0] <= mine[-1]) if len(mine) else np.zeros(len(keys), bool)
            histories[name] = (keys[held], values[held], reference[keys[held, 1]])
        self.decomposition.cut(reference)
        #: the lattice of the first build: a restart's is the interrupted run's last (`dem.cell`)
        self._lattice = lattice_at_build(self.cell) if restarted else None
        bond_length = self._bond_length(np.arange(len(model.bonds)), model.bonds.i, model.bonds.j, reference)
        self._distribute(mine, self._rows_of(mine, state, aux, state.interactions, model.interactions),
                         reference[mine], histories, bond_length, build=self.neighbors and (first or restarted))

    # -- the rank's data -------------------------------------------------------------------------

    def _rows_of(self, index, state, aux, own_states, params):
        """The per-body data of bodies ``index`` (of ``state``/``aux``/``own_states``, whose
        interactions have the parameters ``params``) that migrate with them: ``{key: rows}``; the
        fields per member as a row per body of `most_members` rows (`_member_rows`)."""
        rows = {f"state.{f}": getattr(state, f)[index] for f in STATE_FIELDS}
        rows.update({f"aux.{f}": getattr(aux, f)[index] for f in aux._fields})
        for name, own in own_states.items():
            interaction = INTERACTIONS[name]
            kept = interaction.bond_state + interaction.shared_state
            for f in own._fields:
                if f in kept or (name, f) in self.unmoved:
                    continue
                values = getattr(own, f)
                if f in interaction.member_state:
                    member, body, place = _member_rows(params[name].member_start, index)
                    rows[f"own.{name}.{f}"] = packed = np.zeros((len(index), self.most_members[name])
                                                                + values.shape[1:], values.dtype)
                    packed[body, place] = values[member]
                else:
                    rows[f"own.{name}.{f}"] = values[index]
        return rows

    def _own_field(self, name, field, params, index, rows, n_bodies):
        """Own-state field ``field`` of interaction ``name`` (parameters ``params``) for ``n_bodies``
        bodies: the ``rows`` (`_rows_of`'s) at the bodies ``index``, zero elsewhere (its rows per
        member at the members of ``index``)."""
        if field not in INTERACTIONS[name].member_state:
            array = np.zeros((n_bodies,) + rows.shape[1:], rows.dtype)
            array[index] = rows
            return array
        member, body, place = _member_rows(params.member_start, index)
        array = np.zeros((params.member_start[-1],) + rows.shape[2:], rows.dtype)
        array[member] = rows[body, place]
        return array

    def _unmoved(self, name, field, params, n_bodies):
        """A new own-state field that does not move with the bodies (`unmoved`), for ``n_bodies``
        (the interaction's ``scratch_rows``, with its parameters ``params``, where it gives them)."""
        per_body, shape, dtype = self.unmoved[(name, field)]
        rows = INTERACTIONS[name].scratch_rows
        return np.zeros((0 if not per_body else n_bodies if rows is None else rows(params, n_bodies),) + shape, dtype)

    def _bond_length(self, bonds, i, j, position):
        """The longest of the intact ``bonds`` (global ids; ends ``i``, ``j`` in ``position``) of
        all ranks."""
        intact = self._intact()[bonds]
        d = cell_image(position[i[intact]] - position[j[intact]], self.cell)
        longest = float(np.sqrt(np.max(np.sum(d * d, axis=1), initial=0.0)))
        return self.comm.allreduce(longest, op=self._mpi.MAX)

    def _intact(self):
        """Whether each bond of the whole table is intact (by the ranks' shared bond state)."""
        intact = np.ones(len(self.model.bonds), bool)
        for (name, field), values in self.bond_state.items():
            if field == BROKEN:
                intact[self.bond_blocks[name]] = values == 0
        return intact

    def _in_turn(self, key, call):
        """``call()``; its first time, on rank 0 first and then on the others (a first call
        compiles: the others then load numba's cache instead of compiling the same code)."""
        if key in self._first_calls:
            return call()
        self._first_calls.add(key)
        if self.rank > 0:
            self.comm.Barrier()
        result = call()
        if self.rank == 0:
            self.comm.Barrier()
        return result

    # -- decomposition, migration, ghosts ---------------------------------------------------------

    def _distribute(self, owned_ids, rows, reference, histories, bond_length, build):
        """Hand the bodies ``owned_ids`` this rank holds (their ``rows``, `_rows_of`, and
        ``reference`` positions) to the owners of their boxes with the contact ``histories`` it
        holds (`Decomposition.migrate`), then make the rank's `Part` and halo plan (ghosts within
        the halo width of ``bond_length`` and the interaction range, `Decomposition.plan_halo`),
        its arrays and parameters and, with ``build``, its neighbour list at the reference
        positions. Returns the number of bodies it handed to other ranks."""
        model, decomposition = self.model, self.decomposition
        ids, mine, reference, keys, moved = decomposition.migrate(owned_ids, rows, reference, histories)
        largest = self.comm.allreduce(float(bounds(reference, list_diameters(model, model)[ids])[2]), op=self._mpi.MAX)
        width = max(largest + model.skin if self.neighbors else 0.0, bond_length)
        received = decomposition.plan_halo(ids, {f"state.{f}": mine[f"state.{f}"] for f in GHOST_FIELDS}, reference,
                                           width, self._intact())
        part = decomposition.part
        bodies, owned = part.bodies, part.owned
        self.parts = {name: part.block(block) for name, block in self.bond_blocks.items()}
        self.bodies = BodyArrays(*(array[bodies] for array in self.global_bodies))
        #: the diameters the rank's neighbour list is built with (`dem.interactions.list_diameters`)
        self.list_diameter = list_diameters(model, self.global_bodies)[bodies]
        self.params = {name: INTERACTIONS[name].localize(p, self.parts.get(name, part)) if INTERACTIONS[name].localize
                       else p for name, p in model.interactions.items()}

        def local(owned_rows, ghost_key=None):
            """A rank's array: ``owned_rows`` at the owned bodies, the ghosts' ``ghost_key``."""
            array = np.zeros((len(bodies),) + owned_rows.shape[1:], owned_rows.dtype)
            array[owned] = owned_rows
            for piece, index in zip(received, decomposition.receive_index):
                if ghost_key is not None and len(index):
                    array[index] = piece[ghost_key]
            return array

        self.state = State(*(local(mine[f"state.{f}"], f"state.{f}" if f in GHOST_FIELDS else None)
                             for f in STATE_FIELDS),
                           step=self.state.step, time=self.state.time, cell=self.cell)
        self.aux = self.aux_type(*(local(mine[f"aux.{f}"]) for f in self.aux_type._fields))
        for name, own_type in self.own_types.items():
            bond_fields = INTERACTIONS[name].bond_state
            self.state.interactions[name] = own_type(*(
                self.bond_state[(name, f)][self.parts[name].bonds].copy() if f in bond_fields
                else self.shared_state[(name, f)] if (name, f) in self.shared_state
                else self._unmoved(name, f, self.params[name], len(bodies)) if (name, f) in self.unmoved
                else self._own_field(name, f, self.params[name], owned, mine[f"own.{name}.{f}"], len(bodies))
                for f in own_type._fields))
        self.contacts = ContactTable(len(bodies), model.skin, self.histories,
                                     {name: loads_width(name, self.params[name]) for name in self.histories})
        if build:
            self._build(local(reference, "reference"), keys)
        histories = self.contacts.carried()
        parameters = [a for name in model.interactions for a in (self.params[name], self.state.interactions.get(name, ()))]
        self._arguments = (self.state.arrays(), self.bodies, self.contacts.contacts(), part.owned, part.ghosts,
                           *histories, *parameters)
        return moved

    def _build(self, positions, histories):
        """The rank's neighbour list at ``positions`` on the cells of the whole system, with
        the received histories (global keys) put back."""
        model, part, table = self.model, self.part, self.contacts
        MPI = self._mpi
        lo, hi, largest = bounds(positions[part.owned], self.list_diameter[part.owned])
        self.comm.Allreduce(MPI.IN_PLACE, lo, op=MPI.MIN)
        self.comm.Allreduce(MPI.IN_PLACE, hi, op=MPI.MAX)
        largest = self.comm.allreduce(float(largest), op=MPI.MAX)
        cell = self.state.cell if self._lattice is None else self._lattice  # (a build records its lattice in it)
        self._lattice = None
        grid = grid_of_bounds(lo, hi, largest, model.skin, 2 * model.n_bodies + 8, cell)
        table.build_part(positions, self.list_diameter, model.skin, grid, (lo, hi, largest), cell)
        table.counters[N_BUILDS] = self._builds
        owner_offsets(table.start, table.index, table.owner_start, table.cell_particles)
        for name, (keys, values) in histories.items():
            held = np.isin(keys, part.bodies).all(axis=1)  # (a pair whose other body is not here is not in the list)
            table.histories[name] = restore_history(table.start, table.index, table.owner_start,
                                                    np.ascontiguousarray(part.local(keys[held]), np.int32),
                                                    np.ascontiguousarray(values[held]), table.histories[name])

    # -- stepping (`RankLoop`) ---------------------------------------------------------------------

    def evaluate_forces(self, h):
        """The force evaluation of the owned bodies (the list as it is: `RankLoop` rebuilds it
        when due); the servo walls' load summed over the ranks."""
        self._in_turn("forces", lambda: self.kernels.forces(h, *self._arguments))
        walls = self.state.interactions.get("walls")
        if walls is not None and walls.quantum.any():  # servo walls read the whole load: the ranks'
            total = walls.servo_load.copy()  # shares, in whole quanta, add up to the same bits in any order
            self.comm.Allreduce(self._mpi.IN_PLACE, total, op=self._mpi.SUM)
            walls.servo_load[...] = total

    samples_in_loop = False  # observers report on the gathered state (`report_due`)

    def _redistribute(self):
        """A rebuild: bring the bonds' state up to date on every rank, rebalance the boxes if
        need be, migrate the owned bodies with the contact histories they hold, and make the new
        ghosts and list at the current positions."""
        self._sync_bond_state()
        part, st, table = self.part, self.state, self.contacts
        owned = part.owned
        is_owned = np.zeros(len(part.bodies), bool)
        is_owned[owned] = True
        histories = {}
        for name in self.histories:
            keys, values = save_history(table.start, table.index, table.owner_start, table.histories[name],
                                        self.histories[name])
            held = is_owned[keys[:, 0]]
            histories[name] = (part.bodies[keys[held]], values[held], st.position[keys[held, 1]])
        bonds = self.model.bonds
        bond_length = self._bond_length(part.bonds, part.local(bonds.i[part.bonds]), part.local(bonds.j[part.bonds]),
                                        st.position)
        self.decomposition.rebalance(st.position[owned])
        self._builds += 1
        moved = self._distribute(part.bodies[owned], self._rows_of(owned, st, self.aux, st.interactions, self.params),
                                 st.position[owned], histories, bond_length, build=True)
        self.decomposition.migrated += self.comm.allreduce(moved)

    def _sync_bond_state(self):
        """Every rank's copy of the bond-indexed own state gets the changes of every rank's
        bonds (ranks that evaluate the same bond agree on it)."""
        changes = {}
        for (name, field), values in self.bond_state.items():
            local, bonds = getattr(self.state.interactions[name], field), self.parts[name].bonds
            changed = np.flatnonzero(local != values[bonds])
            changes[(name, field)] = (bonds[changed], local[changed])
        for piece in self.comm.allgather(changes):
            for key, (bonds, values) in piece.items():
                self.bond_state[key][bonds] = values

    # -- the whole system, for observers ------------------------------------------------------------

    def snapshot(self):
        """The whole state gathered on rank 0 in global-id order as a one-process `Simulation`
        (forces, own states, scheme state, the contact table at its reference positions with
        every history): what its writers see is what the serial run's see. None on the other
        ranks. Collective."""
        part, st, table = self.part, self.state, self.contacts
        owned = part.owned
        is_owned = np.zeros(len(part.bodies), bool)
        is_owned[owned] = True
        piece = {"ids": part.bodies[owned], "reference": table.reference_position[owned]}
        piece.update({f"bonds.{n}": self.parts[n].bonds for n in self.bond_blocks})
        piece.update(self._rows_of(owned, st, self.aux, st.interactions, self.params))
        piece.update({f"bond.{n}.{f}": getattr(st.interactions[n], f) for n, f in self.bond_state})
        piece.update({f"summed.{n}.{f}": self.shared_state[(n, f)] for n, f in self.shared_state
                      if f in INTERACTIONS[n].summed_state})
        for name in self.histories:
            keys, values = save_history(table.start, table.index, table.owner_start, table.histories[name],
                                        self.histories[name])
            held = is_owned[keys[:, 0]]
            piece[f"keys.{name}"], piece[f"values.{name}"] = part.bodies[keys[held]].astype(np.int32), values[held]
        if loads_pipeline(self.histories):  # its pair loads (scratch, not in the keyed histories) for the network
            keys, piece["loads.values"] = pair_loads(table, st.position, self.bodies.diameter, is_owned, st.cell)
            piece["loads.keys"] = part.bodies[keys]
        pieces = self.comm.gather(piece, root=0)
        if self.rank != 0:
            return None
        ids = np.concatenate([p["ids"] for p in pieces])

        model = self.model

        def whole(key, like):
            """The rows ``key`` of every rank in global order (``like``: a rank's array of them)."""
            array = np.zeros((model.n_bodies,) + like.shape[1:], like.dtype)
            array[ids] = _concatenated(pieces, key, like)
            return array

        state = State(*(whole(f"state.{f}", getattr(st, f)) for f in STATE_FIELDS), step=st.step, time=st.time,
                      cell=self.cell)
        for name, own in st.interactions.items():
            fields = []
            for f in own._fields:
                if (name, f) in self.bond_state:
                    values = self.bond_state[(name, f)].copy()
                    values[np.concatenate([p[f"bonds.{name}"] for p in pieces])] = np.concatenate(
                        [p[f"bond.{name}.{f}"] for p in pieces])
                    fields.append(values)
                elif (name, f) in self.shared_state:
                    values = self.shared_state[(name, f)].copy()
                    if f in INTERACTIONS[name].summed_state:  # and the other ranks' shares, in rank order
                        for p in pieces[1:]:
                            values += p[f"summed.{name}.{f}"]
                    fields.append(values)
                elif (name, f) in self.unmoved:
                    fields.append(self._unmoved(name, f, model.interactions[name], model.n_bodies))
                else:
                    key = f"own.{name}.{f}"
                    fields.append(self._own_field(name, f, model.interactions[name], ids,
                                                  _concatenated(pieces, key, piece[key]), model.n_bodies))
            state.interactions[name] = type(own)(*fields)
        aux = {f: whole(f"aux.{f}", getattr(self.aux, f)) for f in self.aux_type._fields}
        contacts = {"reference_position": whole("reference", table.reference_position), "builds": self._builds}
        for name, width in self.histories.items():
            contacts[f"history_keys.{name}"] = _concatenated(pieces, f"keys.{name}", np.zeros((0, 2), np.int32))
            contacts[f"history_values.{name}"] = _concatenated(pieces, f"values.{name}", np.zeros((0, width)))
        view = Simulation(model, state, self.integrator, self.dt, parallel=False, restored=(aux, contacts))
        if loads_pipeline(self.histories):
            put_pair_loads(view.contacts, np.concatenate([p["loads.keys"] for p in pieces]),
                           np.concatenate([p["loads.values"] for p in pieces]))
        return view

    def sample(self):
        """The `dem.diagnostics.Sample` of the whole system (`Simulation.sample` of the
        `snapshot`), on every rank; `energy_budget` reads it. Collective."""
        view = self.snapshot()
        return self.comm.bcast(view.sample() if view is not None else None, root=0)

    def report_due(self, due_only):
        """The due observers report on rank 0, on the `snapshot`; an observer that stops the run
        (`SimulationError`) stops it on every rank."""
        due = self._due(due_only)
        if not due:
            return
        view = self.snapshot()
        error = None
        if view is not None:
            try:
                for observer in due:
                    observer.report(view)
            except SimulationError as stop:
                error = str(stop)
        error = self.comm.bcast(error, root=0)
        if error is not None:
            raise SimulationError(error)
        if "cell" in self.model.interactions:  # the rates a servo set (`dem.stress.CellServo`) on rank 0's view
            self.cell[GRADIENT] = self.comm.bcast(self.cell[GRADIENT].copy(), root=0)
        if "insertion" in self.model.interactions:
            self._take_changes(view)

    def _take_changes(self, view):
        """What the observers changed on rank 0's ``view``: the insertion's state (its books,
        counts and flow.csv's last row) and, where the `dem.feeding.Feeder` inserted or removed
        particles (``view.altered``), the whole state, of which every rank keeps its part anew as
        at a restart (`_take`: the cost of a gather, a broadcast and a migration, at the steps
        where particles enter or leave)."""
        payload = None
        if view is not None:
            st = view.state
            whole = ({f: getattr(st, f) for f in STATE_FIELDS}, dict(st.interactions), view.aux._asdict(),
                     view.contacts.export()) if view.altered else None
            payload = (st.interactions["insertion"], whole)
        own, whole = self.comm.bcast(payload, root=0)
        if whole is None:
            for field in own._fields:
                self.shared_state[("insertion", field)][...] = getattr(own, field)
            return
        arrays, interactions, aux, contacts = whole
        state = State(*(arrays[f] for f in STATE_FIELDS), step=self.state.step, time=self.state.time, cell=self.cell)
        state.interactions.update(interactions)
        self._take(state, self.aux_type(**aux), contacts, first=False)

    def stop_pending(self):
        reasons = [reason for reason in self.comm.allgather(self.stop_requested) if reason]
        self.stop_requested = reasons[0] if reasons else None
        return bool(reasons)


class RankLoop:
    """The steps of an MPI rank (``sim``, a `DistributedSimulation`): the stages of
    `dem.step.STEP`, a method each, over the owned bodies, with the communication between the
    compiled calls (see the module's docstring): the halo exchange and the test of a rebuild at
    the ``check`` stage (and after each inner drift of a sub-stepped step), the rebuild and the
    bodies' migration at the ``forces`` stage when due."""

    def __init__(self, sim):
        self.sim = sim
        self.stages = stage_methods(self, STEP)
        self.flags = np.empty(2, np.int64)  # (the check's failure and rebuild flags)
        self.moved = np.empty(1, np.int64)  # (an inner sub-step's rebuild flag)
        self.fraction = 1.0 / sim.substeps
        self.failed = NOBODY
        self.due = False

    def advance(self, n_steps, h, every):
        """`dem.simulation.Simulation._step`: ``(status, body, steps done, ())`` with ``body`` a
        global id (no rows: `DistributedSimulation.samples_in_loop`)."""
        sim = self.sim
        if n_steps == 0:
            sim.evaluate_forces(h)
            return OK, -1, 0, ()
        for k in range(n_steps):
            stop = run_step(self.stages, sim.substeps > 1 and self._active(), k, h)
            if stop is not None:
                return stop
        body = first_not_finite(sim._arguments[0])
        body = sim.comm.allreduce(int(sim.part.bodies[body]) if body >= 0 else NOBODY, op=sim._mpi.MIN)
        if body != NOBODY:
            return NOT_FINITE, body, n_steps, ()
        return OK, -1, n_steps, ()

    def _global(self, failed):
        """The global id of the owned body ``failed`` (a local index, −1: none), or `NOBODY`."""
        return self.sim.part.bodies[failed] if failed >= 0 else NOBODY

    def _before(self, k, h):
        sim = self.sim
        self.failed = self._global(sim._in_turn("before", lambda: sim.kernels.before(
            sim.part.owned, h, sim._arguments[0], sim.bodies, sim.aux)))

    def _open(self, k, h):
        sim = self.sim
        if k == 0:  # later, the force evaluation left the fast force of the current configuration
            self._fast(h)
        self.failed = self._global(sim._in_turn("open", lambda: sim.kernels.open_stage(
            h, *sim._arguments, sim.aux, self.fraction, sim.contacts.reference_position, sim.model.skin)))

    def _inner(self, k, h):
        """The sub-steps up to the last drift, as the serial loop's: the ghosts' positions
        exchanged after each drift and the list rebuilt when due, before the fast force."""
        sim, MPI, moved = self.sim, self.sim._mpi, self.moved
        for sub in range(sim.substeps - 1):
            if sub > 0:
                self._drift(h, False)
            moved[0] = sim.neighbors and needs_rebuild(sim.state.position, sim.list_diameter, sim.model.skin,
                                                       sim.contacts.reference_position)
            request = sim.comm.Iallreduce(MPI.IN_PLACE, moved, op=MPI.MAX)
            sim.decomposition.exchange(sim._arguments[0])  # (while the flag travels)
            request.Wait()
            if moved[0]:
                sim._redistribute()
            self._fast(h)
        self._drift(h, True)

    def _hooks(self, k, h):
        sim = self.sim
        sim._in_turn("hooks", lambda: sim.kernels.hooks(h, *sim._arguments))

    def _check(self, k, h):
        """The failure and the rebuild test of every rank, in one allreduce, while the halo
        exchange runs."""
        sim, MPI, flags = self.sim, self.sim._mpi, self.flags
        st = sim.state
        moved = sim.neighbors and build_due(st.position, sim.list_diameter, sim.model.skin,
                                            sim.contacts.reference_position, sim.contacts.counters, sim.cell)
        flags[0] = self.failed
        flags[1] = 0 if moved else 1
        request = sim.comm.Iallreduce(MPI.IN_PLACE, flags, op=MPI.MIN)
        sim.decomposition.exchange(sim._arguments[0])  # (while the flags travel)
        request.Wait()
        if flags[0] != NOBODY:
            return FAILED, int(flags[0]), k, ()
        self.due = flags[1] == 0
        return None

    def _forces(self, k, h):
        if self.due:
            self.sim._redistribute()
        self.sim.evaluate_forces(h)

    def _after(self, k, h):
        sim = self.sim
        sim._in_turn("after", lambda: sim.kernels.after(sim.part.owned, h, sim._arguments[0], sim.bodies, sim.aux))

    def _close(self, k, h):
        sim = self.sim
        sim._in_turn("close", lambda: sim.kernels.close_stage(h, *sim._arguments, sim.aux, self.fraction))

    def _sample(self, k, h):
        """Nothing: the observers report on the gathered state between calls
        (`DistributedSimulation.report_due`)."""

    def _active(self):
        """Whether some rank's owned body has an active contact at the last force evaluation."""
        sim = self.sim
        active = sim.state.interactions[sim.fast_law].active[sim.part.owned]
        return bool(sim.comm.allreduce(int((active > 0).any()), op=sim._mpi.MAX))

    def _fast(self, h):
        sim = self.sim
        sim._in_turn("fast", lambda: sim.kernels.fast_forces(h, *sim._arguments))

    def _drift(self, h, last):
        sim = self.sim
        sim._in_turn("drift", lambda: sim.kernels.drift_stage(
            h, *sim._arguments, self.fraction, sim.contacts.reference_position, sim.model.skin, last))
