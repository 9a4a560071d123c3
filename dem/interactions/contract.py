"""The contract every interaction follows (docs/theory.md §3).

An `Interaction` is a small record: its scene keys (a documented, typed parameter table per
section — the single source of that part of ``docs/scenes.md``), a ``setup`` that turns the
model into the interaction's named parameters (or None when it does not act in this system),
optionally a ``state`` with the time-varying arrays it owns (broken bonds, booked energy, …),
a compiled ``forces`` kernel, an ``energy`` kernel with the same inputs that returns one value
per name of ``columns``, and whether it is ``internal`` (zero net force and moment).

How the compiled loop (`dem.engine`) applies ``forces`` depends on ``kind``:

* `ROW` — per body, in one fused pass over the bodies (each body's row is independent, so the
  pass runs in parallel with no races): ``forces(i, h, st, bodies, contacts, params, own)``
  returns body ``i``'s share ``(fx, fy, fz, τx, τy, τz)`` (``inline="always"``); the pass sums
  the row kernels' shares in registry order and *sets* the body's force and moment. With
  ``neighbors`` it reads the particle neighbour list ``contacts`` (`dem.contacts.Contacts`, a
  full list: each pair is seen from both rows). A row kernel may write only row ``i`` of its
  own state. A row kernel that applies several sub-models (``shares`` > 1: `dem.interactions.
  wall_contact`) returns ``6 × shares`` numbers, its shares one after the other, which the pass
  adds in turn (the same sums as separate interactions of one share each, to the last bit).

Kernels run in the innermost loops, where numba's reference counting of arrays costs more than
the arithmetic: every array a kernel takes out of a named tuple, or hands to an inlined helper,
is counted in and out, per row, wherever LLVM cannot pair the two (one fixed plane's Hertz row,
four array reads and a branch, took 94 ns a particle, twenty times its arithmetic). So the pass
over the bodies and every per-chunk kernel the loop calls (``update``, `BOND` kernels, the
schemes' stages) are compiled without it, ``@njit(cache=True, _nrt=False)``: such a function
reads and writes the arrays it is given but may not allocate (``np.empty``, array arithmetic:
numba refuses to compile it, "Only accept returning of array passed into the function as
argument") and returns scalars or tuples of them. Measured (2 cores): the torus impact's step
19.7 → 10.8 µs; 100 steps of the N = 10⁵ bonded block on 2 threads (`tools/bench.py --n 100000
--steps 100 --threads 2 --friction --compare --repeat 3`) 2.05–2.34 → 1.76–1.78 s, frictional
4.17–4.73 → 3.43–3.44 s; the rigid tetrahedron chain's 20 000 lgvi steps (its Newton solve
in tuples: it allocated arrays per body and step) 0.44 → 0.12 s; results bitwise the same.
Within a kernel, write a row's own state unconditionally (``own.dissipated[i] += h * power``
with ``power`` possibly 0): a conditional write made the pass over the bodies five times slower.
(A kernel may still return early, before any write, for a row its cheap test finds with nothing
to book, as the wall kernels below do.)
Inlining costs compile time in every generated loop that uses the kernel (numba copies and types
the inlined code again at every level of inlining), so keep what runs only sometimes out of line:
a contact's own arithmetic (once per touching wall, not per row) and a mesh contact's bookkeeping
are plain ``@njit(cache=True)`` functions, compiled once per machine and called. A row kernel
with a long walk keeps only a cheap test inline and calls the walk, compiled once per machine
(``@njit(cache=True, _nrt=False)``), for the rows the test lets through:
`dem.interactions.wall_contact` walks the walls only for a particle near one (measured, 2 cores:
the column collapse's pass over the rows compiled in 6 s instead of 168 s per loop, and the
walled frictional pile's rows took 11.1–11.9 instead of 13.4–14.2 ms, one thread, the same bits).
A call costs more than its arithmetic where every row makes it: numba passes each array of the
named tuples as its fields, so the per-row helpers themselves stay inlined (out of line, the
frictional pile stepped five times slower).
* `BOND` — over the bonds of one colour at a time (bonds of a colour share no body; a serial
  build passes all of them in one call, which takes them in the same order):
  ``forces(lo, hi, h, st, bodies, params, own)`` adds into ``st.force``/``st.moment`` for the
  bonds ``lo ≤ b < hi``; ``params.color_start`` gives the colours.
* `GLOBAL` — once, serially: ``forces(h, st, bodies, params, own)`` (few-body terms), after
  the rows and bonds, in registry order (so a later one sees the forces of the earlier ones).
  One that acts on each body alone (damping) also gives ``body(i, h, st, bodies, params, own)``
  (``inline="always"``), which its ``forces`` loops over: the GPU runs it one thread per body
  (`dem.gpu`).

``energy(st, bodies, contacts, params, own)`` returns a tuple of floats, one per column; several
interactions may share a column (``external``, ``dissipated``): the log sums them in registry
order (a column named more than once in one interaction's ``columns`` gets each of its values in
turn). It is a compiled kernel too (``@njit(cache=True)``): the loop calls it, through the
generated ``sample`` (`dem.engine`), at every log row. An interaction with per-contact ``history`` (a width > 0) gets, after ``own``, its own
history array ``(n_owner_entries, history)`` of the contact table in ``forces``, ``energy`` and
its ``update(lo, hi, h, st, bodies, contacts, params, own, history)`` kernel, which the loop
runs over the rows before the forces (it may write only the rows' owner entries, see
`dem.contacts`; `dem.interactions.contact` is the pair law that does). With ``loads`` > 0 its
``update`` and ``forces`` also get, after the history, a scratch array ``(n_owner_entries,
loads)``: ``update`` may leave there what each pair does to its bodies for the row kernels to
read, in slots of its own choosing that no other pair's update writes
(`dem.interactions.contact` writes a pair's load on its second body at the pair's own slot);
they are written anew at every evaluation before they are read, and rebuilds, checkpoints and
MPI migrations carry the history alone. An update may also leave each
row's own sums in the row's force and moment (``row_sums``; `dem.interactions.contact` does, so
that it keeps no array of row sums), for its row kernel to read back before the row pass sets
them: its row kernel must then be the first `ROW` kernel of the registry (`dem.engine.row_loops`
refuses a registry where it is not). Its ``prepare(lo, hi, st, bodies, params, own)``, where it
has one, runs over all rows (in chunks) just before the update's pass, for scratch of the rows
``lo ≤ i < hi`` alone that the update then reads at any row (`dem.interactions.clump_contacts`
places every clump's members once, not once per pair; under MPI over the ghosts' rows too, as the
update). An interaction without
history may have an ``update(lo, hi, h, st, bodies, contacts, params, own)`` too, for state of
the rows ``lo ≤ i < hi`` alone (the walls' mesh contacts and per-chunk loads): the row pass runs it on each chunk of rows before their row
kernels (no pass of its own), so it may write only those rows and their chunk's partial sums,
and only those rows' kernels may read what it wrote. ``h`` is the time step (0 outside a run): kernels book the work of
non-conservative effects with it.

A particle–wall interaction (``walls = True``) gets, after ``own`` (and its history), the walls'
time-varying state ``walls`` (`dem.interactions.walls.WallState`: each wall's point and
velocities now, the per-chunk partial loads, each particle's mesh contacts) in its ``forces``
and ``energy`` kernels: ``forces(i, h, st, bodies, contacts, params, own, walls)``. It reads the
walls there and books the reaction of every force it applies with
`dem.interactions.walls.add_wall_load` (into the partial sums of row ``i``'s chunk, ``i //
CHUNK``, which only that chunk's rows write). It acts only where the ``walls`` interaction does
(a model with walls). The walls' state is an argument of its own rather than part of ``st``:
every array of ``st`` costs every kernel that takes it, so ``st`` stays the bodies'.

Contact sub-stepping (`dem.integrators.respa`): a `BOND` interaction may name a ``fast`` kernel,
``fast(lo, hi, st, bodies, params, own, fast)``, that adds into ``fast`` (n, 3) the part of its
forces on the bonds ``lo ≤ b < hi`` (one colour) that is stiff, central and a function of the
centres alone (the binder's axial force); the loop moves the centres under it, with the Hertz
particle–particle forces, in sub-steps, and keeps the rest of ``forces`` on the step. Its
``forces`` kernel then takes ``fast`` after ``own`` and adds the same part, the same bits, into it
when it has rows (none: sub-stepping off), so that the step's force evaluation leaves the fast
force of the new configuration without a pass of its own.

The particle–particle contact law whose elastic normal force is the fast force of contact
sub-stepping says so with ``fast_pairs`` (``hertz_pp``, or `dem.interactions.contact`'s pipeline;
at most one acts): its parameters have the normal law's ``law``, ``stiffness`` and ``substeps``
(`dem.interactions.hertz.hertz_pp_fast` evaluates the fast force between sub-steps from them), its
state ``active``, ``fast`` and ``mean`` (`dem.interactions.hertz.HertzState`), and its row kernel
leaves in them the contacts active at the evaluation and, when ``substeps > 1``, the elastic
normal force.

Optional hooks: ``advance(h, st, bodies, params, own)`` runs once per step in the compiled loop,
after the scheme has moved the bodies and before the forces of the new configuration (state that
is a prescribed function of time, such as moving walls; not run by a force evaluation outside a
run); ``critical_step(model, state, params)`` lists ``(dt, what, body)`` estimates for
`dem.stability`; ``extra_columns(model, params)`` returns log columns ``name -> f(model, state)``.

Under MPI (`dem.distributed`) each rank runs the kernels on its part of the bodies (local
indices, global order) plus ghost copies of their neighbours. A `ROW` interaction runs there as it
is (its kernels read other bodies only through the contact rows; an ``update`` reads only the two
bodies of each pair and its slot) unless its parameters hold arrays per body: then its
``localize(params, part)`` takes their rows of the rank's bodies (`localize_bodies`). A `BOND` or
`GLOBAL` interaction needs ``localize(params, part)``: its parameters for a rank's bodies
``part`` (`dem.distributed.Part`: ``part.bonds`` the bonds it evaluates, ``part.local(ids)`` the
local index of bodies; for a `BOND` interaction ``part.bonds`` are ids within its law's block of
the bond table, ``bond_law``: `localize_bonds`); a `GLOBAL` one also ``shared_bodies(params)``, the
bodies its kernel acts on, which every rank holds. ``localize`` raises `MPIError` for parameters
that cannot run distributed. ``bond_state`` names the fields of the own state indexed by bond;
``shared_state`` those that are not per body (every rank holds them whole: rank 0's are the
system's), of which ``summed_state`` are each rank's share of a sum over its bodies (the
system's value is the ranks' sum, in rank order; rank 0 starts with the whole, the others with
zeros); the others are indexed by body. ``scratch_state`` names fields indexed by body (or by chunk
of `CHUNK` rows, or with no rows where the run does not use them) that each force evaluation
writes before anything reads them: they are neither saved in checkpoints nor carried by bodies
that move to another rank (each rank allocates its own, with ``scratch_rows(params, n)`` rows for
a rank of ``n`` bodies where that is not ``n``: the parameters are the rank's). ``member_state``
names the fields indexed by member, the parameters' ``member_start`` (n + 1) giving each body's
rows (`dem.interactions.clump_walls`: the members' wall springs): they travel with their body, and
its ``localize`` gives the rank's members (`localize_members`).

An interaction whose history width depends on the model gives ``history_width(params)``, the
width of its history (``history`` then only says that it keeps one); likewise ``loads_width(params)``
the width of its pair scratch (``loads`` then only says that it keeps one). One whose pairs are not the
particles' spheres (`dem.interactions.clump_contacts`: clumps, listed by the sphere about their
centre of mass that holds every member) sets ``list_diameter``: its parameters' ``list_diameter``
(n,) are the diameters the neighbour list is built with instead of ``bodies.diameter``.

An interaction that replaced others (the particle–wall pipeline, `dem.interactions.wall_contact`)
may give ``former_state(checkpoint)``: its own-state fields (``{field: array}``, scratch fields
left out) from the arrays of a checkpoint written while those others acted, or ``{}`` where the
checkpoint does not match; `dem.checkpoint.restore` calls it for a checkpoint that holds none of
the interaction's fields.
"""

import numpy as np

from dataclasses import dataclass

ROW, BOND, GLOBAL = "row", "bond", "global"
#: rows of work per parallel task (fixed, so that chunking never depends on the thread count);
#: a row kernel may keep per-chunk partial sums indexed by ``i // CHUNK``
CHUNK = 2048


class MPIError(RuntimeError):
    """dem was started under mpiexec but cannot run distributed (mpi4py missing, or a feature of
    the scene that does not run on several processes yet); `dem.distributed.MPIError`."""


@dataclass(frozen=True)
class Interaction:
    name: str
    doc: str
    kind: str
    columns: tuple
    internal: bool
    keys: dict
    setup: object
    forces: object
    energy: object
    state: object = None
    neighbors: bool = False
    history: int = 0
    loads: int = 0
    walls: bool = False
    shares: int = 1
    update: object = None
    prepare: object = None
    advance: object = None
    critical_step: object = None
    extra_columns: object = None
    localize: object = None
    shared_bodies: object = None
    bond_state: tuple = ()
    shared_state: tuple = ()
    summed_state: tuple = ()
    scratch_state: tuple = ()
    scratch_rows: object = None
    member_state: tuple = ()
    bond_law: str = None
    fast: object = None
    fast_pairs: bool = False
    body: object = None
    former_state: object = None
    history_width: object = None
    loads_width: object = None
    list_diameter: bool = False
    row_sums: bool = False

    def __post_init__(self):
        if self.kind not in (ROW, BOND, GLOBAL):
            raise ValueError(f"interaction {self.name!r}: kind must be one of row, bond, global")
        if self.history and (self.kind != ROW or not self.neighbors or self.update is None):
            raise ValueError(f"interaction {self.name!r}: per-contact history needs a row kernel over the "
                             f"neighbour list and an update kernel")
        if self.loads and not self.history:
            raise ValueError(f"interaction {self.name!r}: per-pair scratch needs a per-contact history")
        if self.prepare is not None and not self.history:
            raise ValueError(f"interaction {self.name!r}: a prepare pass runs before a history update")
        if self.row_sums and self.update is None:
            raise ValueError(f"interaction {self.name!r}: row sums are left by an update kernel")
        if self.walls and self.kind != ROW:
            raise ValueError(f"interaction {self.name!r}: the walls' state goes to row kernels only")


def localize_bonds(params, part, per_bond):
    """`Interaction.localize` of a `BOND` interaction whose parameters hold its bonds' ends ``i``,
    ``j``, the fields ``per_bond`` (one row per bond) and ``color_start`` (colour offsets): the
    bonds ``part.bonds`` (ascending: colour by colour, as in the whole table) with their ends as
    the rank's local indices; every colour kept (some empty), so that each body receives its bond
    loads in the same order as in one process."""
    b = part.bonds
    color = np.searchsorted(params.color_start, b, side="right") - 1
    color_start = np.searchsorted(color, np.arange(len(params.color_start))).astype(np.int64)
    return params._replace(i=part.local(params.i[b]).astype(params.i.dtype),
                           j=part.local(params.j[b]).astype(params.j.dtype), color_start=color_start,
                           **{field: getattr(params, field)[b] for field in per_bond})


def localize_bodies(params, part, per_body):
    """`Interaction.localize` of an interaction whose parameters hold the arrays ``per_body``, one
    row per body: their rows of the rank's bodies ``part.bodies`` (global ids, in local order)."""
    return params._replace(**{field: getattr(params, field)[part.bodies] for field in per_body})


def ranges(starts, stops):
    """``concatenate([arange(a, b) for a, b in zip(starts, stops)])``, without the loop."""
    counts = stops - starts
    return np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())


def localize_members(params, part, per_member, per_body=()):
    """`Interaction.localize` of an interaction whose parameters list the members of each body
    (``member_start`` (n + 1), the arrays ``per_member`` with a row per member) and hold the
    arrays ``per_body``: those of the rank's bodies ``part.bodies``, their members in the same
    order."""
    start = params.member_start
    counts = start[part.bodies + 1] - start[part.bodies]
    rows = ranges(start[part.bodies], start[part.bodies + 1])
    return params._replace(member_start=np.concatenate(([0], np.cumsum(counts))).astype(start.dtype),
                           **{field: getattr(params, field)[rows] for field in per_member},
                           **{field: getattr(params, field)[part.bodies] for field in per_body})


def localize_body(params, part):
    """`Interaction.localize` of a `GLOBAL` interaction whose parameters list its bodies in
    ``body``."""
    return params._replace(body=part.local(params.body))


def listed_bodies(params):
    """`Interaction.shared_bodies` of a `GLOBAL` interaction whose parameters list its bodies in
    ``body``."""
    return np.asarray(params.body)
