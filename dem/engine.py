"""The compiled loop, written from the interaction registry and the scheme.

numba compiles a loop only over the functions it can see, and a function passed as an argument
defeats its on-disk cache. So, for the interactions that act in a system (registry order), a
scheme and a serial or parallel build, `forces_module` and `advance_module` write a small Python
module that calls exactly those kernels, in the contract's order (`dem.interactions.contract`),
import it and return it. The modules live in the compile cache folder next to numba's cache
(`dem._numba_cache`), so a scene compiles only what it uses, once per machine. Their text is
plain Python; ``python -m dem validate SCENE --show-loop`` prints a scene's.

One force evaluation, `_forces(substepping, h, st, bodies, table, index, *histories,
*parameters)`, the stages of `dem.step.FORCES`:

1. the neighbour list is rebuilt when a particle has moved more than half the skin (only if an
   acting interaction needs it), carrying every per-contact history across (`dem.contacts`);
2. each history interaction's ``update`` pass writes its owner slots (after its ``prepare`` pass
   over all rows, where it has one: scratch of its rows that the update reads);
3. one pass over the bodies *sets* each body's force and moment from the `ROW` kernels, each
   chunk of rows first running the ``update`` kernels without history on its rows (the walls'
   mesh contacts and per-chunk loads);
4. the `BOND` kernels add their loads colour by colour;
5. the `GLOBAL` kernels add theirs, serially.

It returns ``(index, *histories)``: a rebuild may have replaced them. ``histories`` are the
carried arrays (`carried_arrays`, `dem.contacts.ContactTable.carried`): each history, followed by
its pair scratch where the interaction has one. ``parameters`` is ``params, own`` of each
interaction (``own`` its state, an empty tuple when it has none).

One call of `sample(st, bodies, table, index, *histories, *parameters, row)` (`sample_module`)
writes what the logs record of the current state into ``row`` (`sample_width` values): the
energy columns (`dem.interactions.energy_columns`: the kinetic ones from `dem.state.motion`, then
the interactions', a column shared by several summing them in registry order), the rest of
`dem.state.motion` (momenta, the fastest body and its speed), then each wall's point and load
(``walls``'s state, `dem.interactions.walls.WallState`). `dem.diagnostics.read_sample` reads it.

One call of `advance(n_steps, h, first_step, every, samples, st, bodies, aux, table, index,
*histories, *parameters)` runs ``n_steps`` steps, each the stages of `dem.step.STEP` (the
template `ADVANCE`, its step written by `StepWriter`): the scheme's ``before_forces`` on every
body, the interactions' ``advance`` hooks (the walls' prescribed or servo motion to the new
time), the check for a failed rotation, the forces, ``after_forces`` (`dem.integrators`); after
each step whose number (``first_step`` the number of the state it starts from) is a multiple of
``every`` > 0 it checks that the state is finite and samples it into the next row of
``samples``, so that the logs cost no call from Python per row. With ``n_steps = 0`` it
evaluates the forces of the current configuration (a run's start: one compiled function serves
both, so a run compiles the force evaluation once; no ``advance`` hook runs). It returns
``(status, body, steps_done, rows_sampled, index, *histories)``; on a status other than `OK`
the state is the one where the problem was found. Parallel builds run every per-body and
per-bond stage over fixed chunks of `CHUNK` rows under ``prange`` (each chunk writes only its
own rows), so the result is the same for any number of threads.
"""

import functools
import hashlib
import inspect
import json
import os
import sys
from pathlib import Path

from ._numba_cache import generated_folder, load_module
from .contacts import (
    Contacts,
    ContactTable,
    compact_history,
    fit_loads,
    owner_offsets,
    spread_history,
)
from .integrators import respa as respa_stages
from .integrators.stages import first_not_finite
from .interactions import BOND, CHUNK, GLOBAL, INTERACTIONS, ROW, energy_columns, history_width, loads_width
from .interactions.hertz import hertz_pp_fast, hertz_pp_fast_pairs
from .neighbors import build_parallel, build_serial, rebuild_due
from .state import motion
from .step import FORCES, STEP, Stage, branches, stage_methods

OK, FAILED, NOT_FINITE = 0, 1, 2
#: the first row (or bond) of a serial pass, an int64 as the parallel passes' chunk bounds are: a
#: literal 0 would be typed ``Literal[int](0)`` and compile each kernel it is passed to a second
#: time, apart from the copy the parallel loops and the GPU share (numba compiles a function anew
#: for each literal argument)
FIRST = "np.int64(0)"


def _function(function):
    """``(module, name)`` that imports a numba dispatcher or a function."""
    python = getattr(function, "py_func", function)
    return python.__module__, python.__name__


def _source_stamp(names):
    """A hash of the modules of the interactions outside `dem` (e.g. a test's): the generated
    text changes when they do, so numba does not keep a stale compiled loop."""
    outside = [sys.modules[_function(INTERACTIONS[name].forces)[0]] for name in names]
    outside = [module for module in outside if not module.__name__.startswith("dem.")]
    digest = hashlib.sha256(b"".join(Path(inspect.getfile(module)).read_bytes() for module in outside))
    return digest.hexdigest()[:16] if outside else ""


class SourceWriter:
    def __init__(self):
        self.lines = []
        self.imports = {}

    def use(self, function, alias):
        module, name = _function(function)
        self.imports[alias] = f"from {module} import {name} as {alias}"
        return alias

    def __call__(self, text="", indent=0):
        self.lines.append("    " * indent + text if text else "")

    def hole(self):
        """A writer of a hole's text, sharing this one's imports."""
        inner = SourceWriter()
        inner.imports = self.imports
        return inner

    def text(self):
        return "\n".join(self.lines)

    def fill(self, template, **holes):
        """The lines of ``template`` with its holes (``{name}``) filled; a hole alone on its line
        that is empty leaves no line."""
        for line in template.split("\n"):
            alone = line.strip()
            if alone.startswith("{") and alone.endswith("}") and holes.get(alone[1:-1]) == "":
                continue
            self.lines.extend(line.format(**holes).split("\n"))


def _arguments(names):
    """The per-interaction arguments: the carried arrays (each history ``hist_<name>``, then its
    pair scratch ``load_<name>`` if it has one: `dem.contacts.ContactTable.carried`), then
    ``p_<name>, o_<name>`` of each."""
    histories = [a for n in names for a in carried_arrays(INTERACTIONS[n])]
    parameters = [a for n in names for a in (f"p_{n}", f"o_{n}")]
    return histories, parameters


def carried_arrays(interaction):
    """The carried arrays of one interaction: its history, then its pair scratch."""
    name = interaction.name
    return ((f"hist_{name}",) if interaction.history else ()) + ((f"load_{name}",) if interaction.loads else ())


def _chunked(w, call, lo, hi, parallel, indent):
    """``call(lo, hi)`` over ``[lo, hi)``: in chunks under prange, or in one call (``lo`` "0":
    from `FIRST`)."""
    if parallel:
        w(f"for chunk in prange(({hi} - {lo} + CHUNK - 1) // CHUNK):", indent)
        w(call(f"{lo} + chunk * CHUNK", f"min({hi}, {lo} + (chunk + 1) * CHUNK)"), indent + 1)
    else:
        w(call(FIRST if lo == "0" else lo, hi), indent)


def _bond_pass(w, name, call, parallel, indent):
    """``call(lo, hi)`` over the bonds of law ``name``: colour by colour (a colour's bonds share no
    body), each in chunks under prange; serially in one call, which takes them in the same order."""
    if not parallel:
        w(call(FIRST, f"p_{name}.color_start[-1]"), indent)
        return
    w(f"for color in range(p_{name}.color_start.shape[0] - 1):", indent)
    w(f"lo = p_{name}.color_start[color]", indent + 1)
    w(f"hi = p_{name}.color_start[color + 1]", indent + 1)
    _chunked(w, call, "lo", "hi", parallel, indent + 1)


def _fused(interactions):
    """The ``update`` kernels without history: they touch only their rows (and their chunk's
    sums), so they run at the top of the row pass."""
    return [i for i in interactions if i.update is not None and not i.history]


def row_kernel_arguments(interactions):
    """The arguments of ``_rows`` after ``contacts`` (and ``rows``)."""
    rows = [i for i in interactions if i.kind == ROW]
    arguments = [a for i in rows for a in (f"p_{i.name}", f"o_{i.name}") + carried_arrays(i)]
    arguments += [a for i in _fused(interactions) for a in (f"p_{i.name}", f"o_{i.name}")]
    if any(i.walls for i in rows):
        if "walls" not in (i.name for i in interactions):
            raise ValueError("a particle–wall interaction acts without the walls interaction")
        arguments += [] if "o_walls" in arguments else ["o_walls"]
    return arguments


def listed_parameters(interactions):
    """The parameters ``_refresh`` takes after the histories: those of the interaction whose
    ``list_diameter`` the neighbour list is built with (`dem.interactions.contract`), if one acts."""
    return [f"p_{i.name}" for i in interactions if i.list_diameter]


def _rows_text(w, interactions, listed):
    """``_rows``: the fused pass of the row kernels over bodies ``lo <= i < hi`` or, ``listed``,
    over ``i = rows[k]`` for ``lo <= k < hi`` (the update kernels without history run first, over
    ``lo <= i < hi`` or, ``listed``, over every body)."""
    rows = [i for i in interactions if i.kind == ROW]
    row_arguments = row_kernel_arguments(interactions)
    w("@njit(cache=True, _nrt=False)")
    w(f"def _rows(lo, hi, h, st, bodies, contacts{', rows' if listed else ''}"
      f"{''.join(', ' + a for a in row_arguments)}):")
    w(f'"""Set the force and moment of bodies {"rows[lo:hi]" if listed else "lo <= i < hi"} from the row '
      f'interactions."""', 1)
    for i in _fused(interactions):
        update = w.use(i.update, f"{i.name}_update")
        bounds = f"{FIRST}, st.position.shape[0]" if listed else "lo, hi"
        w(f"{update}({bounds}, h, st, bodies, contacts, p_{i.name}, o_{i.name})", 1)
    for loop, group in enumerate(row_loops(rows)):
        w(f"for {'k' if listed else 'i'} in range(lo, hi):", 1)
        if listed:
            w("i = rows[k]", 2)
        if loop == 0:
            w("fx = fy = fz = tx = ty = tz = 0.0", 2)
        else:  # what the loops before left
            w("fx, fy, fz = st.force[i, 0], st.force[i, 1], st.force[i, 2]", 2)
            w("tx, ty, tz = st.moment[i, 0], st.moment[i, 1], st.moment[i, 2]", 2)
        for i in group:
            kernel = w.use(i.forces, f"{i.name}_forces")
            extra = "".join(", " + a for a in carried_arrays(i)) + (", o_walls" if i.walls else "")
            w(f"share = {kernel}(i, h, st, bodies, contacts, p_{i.name}, o_{i.name}{extra})", 2)
            for k in range(0, 6 * i.shares, 6):  # each share in turn (`dem.interactions.contract`)
                w(f"fx, fy, fz = fx + share[{k}], fy + share[{k + 1}], fz + share[{k + 2}]", 2)
                w(f"tx, ty, tz = tx + share[{k + 3}], ty + share[{k + 4}], tz + share[{k + 5}]", 2)
        for c, axis in enumerate("xyz"):
            w(f"st.force[i, {c}] = f{axis}", 2)
        for c, axis in enumerate("xyz"):
            w(f"st.moment[i, {c}] = t{axis}", 2)
    w()
    w()


def row_loops(rows):
    """The `ROW` kernels ``rows`` (registry order) as the loops of ``_rows``: a loop each, every
    loop adding its shares to what the loops before stored in the force and moment (so each body
    sums the same terms in the same order as one loop would; stored and read back, a double is
    unchanged). Apart, each loop compiles to tighter code: the pair and wall pipelines of the
    frictional pile ran 1.3× faster in two loops than in one (docs/benchmarks.md). The kernels
    from the first to the last that book wall loads (``walls``) share a loop: they add to their
    chunk's partial sums, whose order one loop keeps. A kernel whose update left the rows' sums in
    the force and moment (``row_sums``) reads them there, so it must come first."""
    late = [i.name for i in rows[1:] if i.row_sums]
    if late:
        raise ValueError(f"row kernels {late} read the row sums their update left in the force and moment: "
                         f"they must be the first row kernel")
    walled = [k for k, i in enumerate(rows) if i.walls]
    first, last = (walled[0], walled[-1]) if walled else (len(rows), len(rows))
    loops = [[i] for i in rows[:first]] + ([rows[first:last + 1]] if walled else []) + [[i] for i in rows[last + 1:]]
    return loops or [[]]


def fast_pair_law(names):
    """The interaction among ``names`` whose elastic normal pair force is the fast force of contact
    sub-stepping (``fast_pairs``, `dem.interactions.contract`), or None."""
    laws = [name for name in names if INTERACTIONS[name].fast_pairs]
    return laws[0] if laws else None


def _fast_text(w, interactions, distributed):
    """``fast`` (after the rows): the array into which the bond laws with a ``fast`` kernel add
    their fast force in their ``forces`` kernel, the pair contact rows' (`fast_pair_law`: `dem.
    interactions.hertz.hertz_pp_forces` or `dem.interactions.contact.contact_pp_forces`) when the
    step that ends here (``substepping``) or the next one is sub-stepped (the next: some contact
    active; on an MPI rank whenever the contacts are sub-stepped: the ranks decide together), else
    no rows (they add none). The closing kick of a sub-stepped step needs the whole fast force of
    the new configuration even when the next step runs the plain map."""
    law = fast_pair_law([i.name for i in interactions])
    if law is None:
        w("fast = st.force[:0]  # no contact sub-stepping", 1)
        return
    if distributed:
        w(f"fast = o_{law}.fast if p_{law}.substeps > 1 else st.force[:0]  # the fast force f", 1)
        w("if fast.shape[0] > 0:  # the bond laws add their fast force on the ghosts too", 1)
        w("for k in range(ghosts.shape[0]):", 2)
        w("for c in range(3):", 3)
        w("fast[ghosts[k], c] = 0.0", 4)
        return
    substepped = w.use(respa_stages.substepped, "substepped_next")
    w("fast = st.force[:0]  # the fast force f, for this step's closing kick or the next step", 1)
    w(f"if substepping or {substepped}(p_{law}, o_{law}):", 1)
    w(f"fast = o_{law}.fast", 2)


def _passes_text(w, interactions, parallel, refresh, rows_pass, distributed=False):
    """The force evaluation, the stages of `dem.step.FORCES` in order: ``refresh`` (lines that
    rebuild the neighbour list when due and name the ``contacts``), the history updates over all
    rows, ``rows_pass`` (lines that run ``_rows``), the bond kernels colour by colour (those with
    a ``fast`` kernel also add their fast force into ``fast``, `_fast_text`), the global
    kernels."""

    def updates():
        for i in interactions:
            if i.prepare is not None:
                prepare = w.use(i.prepare, f"{i.name}_prepare")
                _chunked(w, lambda lo, hi: f"{prepare}({lo}, {hi}, st, bodies, p_{i.name}, o_{i.name})", "0", "n",
                         parallel, 1)
            if i.history:
                update = w.use(i.update, f"{i.name}_update")
                carried = ", ".join(carried_arrays(i))
                _chunked(w, lambda lo, hi: f"{update}({lo}, {hi}, h, st, bodies, contacts, p_{i.name}, o_{i.name}, "
                         f"{carried})", "0", "n", parallel, 1)

    def bonds():
        if any(i.kind == BOND and i.fast is not None for i in interactions):
            _fast_text(w, interactions, distributed)
        for i in interactions:
            if i.kind == BOND:
                kernel = w.use(i.forces, f"{i.name}_forces")
                fast = ", fast" if i.fast is not None else ""
                _bond_pass(w, i.name, lambda lo, hi: f"{kernel}({lo}, {hi}, h, st, bodies, p_{i.name}, "
                           f"o_{i.name}{fast})", parallel, 1)

    def globals_():
        for i in interactions:
            if i.kind == GLOBAL:
                kernel = w.use(i.forces, f"{i.name}_forces")
                w(f"{kernel}(h, st, bodies, p_{i.name}, o_{i.name})", 1)

    writers = {"refresh": refresh, "updates": updates, "rows": rows_pass, "bonds": bonds, "globals": globals_}
    for stage in FORCES:
        writers[stage.name]()


#: the force evaluation's text; its holes: the arguments and the stages of `dem.step.FORCES` (``passes``,
#: `_passes_text`). The loop passes ``substepping`` as a bool known at run time, and so does Python
#: (`compute_forces`), so that numba compiles one ``_forces`` for both (a constant False would be
#: typed Literal[bool] and compile a second).
FORCES_TEXT = """\
@njit(cache=True{parallel})
def _forces(substepping, h, st, bodies, table, {arguments}):
    \"\"\"The force evaluation; ``substepping``: whether the step that ends with it is sub-stepped (its closing \
kick reads the fast force, `_fast_text`).\"\"\"
    n = st.position.shape[0]
{passes}
    return ({results})"""


def _forces_text(names, parallel):
    w = SourceWriter()
    interactions = [INTERACTIONS[n] for n in names]
    histories, parameters = _arguments(names)
    neighbors = any(i.neighbors for i in interactions)
    row_arguments = row_kernel_arguments(interactions)
    _rows_text(w, interactions, listed=False)
    carried = "index" + "".join(", " + h for h in histories)
    w("@njit(cache=True)")
    w(f"def _refresh(st, bodies, table, {carried}{''.join(', ' + a for a in listed_parameters(interactions))}):")
    w('"""Rebuild the neighbour list if it is due, carrying the histories (before the forces, and between '
      'contact sub-steps); returns '
      '``(index, *histories)``."""', 1)
    if neighbors:
        w.use(rebuild_due, "rebuild_due")
        build = w.use(build_parallel if parallel else build_serial, "build")
        listed = [i for i in interactions if i.list_diameter]
        diameter = f"p_{listed[0].name}.list_diameter" if listed else "bodies.diameter"
        w(f"if rebuild_due(st.position, {diameter}, table.skin, table.reference_position, table.counters, "
          "st.cell):", 1)
        for i in (i for i in interactions if i.history):
            w.use(compact_history, "compact_history")
            w(f"keys_{i.name} = compact_history(table.start, index, table.owner_start, hist_{i.name}, "
              f"hist_{i.name}.shape[1])", 2)
        w(f"index = {build}(st.position, {diameter}, table.skin, table.reference_position, "
          f"table.start, index, table.cell_start, table.cell_particles, table.counters, st.cell)", 2)
        if histories:
            w.use(owner_offsets, "owner_offsets")
            w("owner_offsets(table.start, index, table.owner_start, table.cell_particles)", 2)
        for name in (n for n in names if INTERACTIONS[n].history):
            w.use(spread_history, "spread_history")
            w(f"hist_{name} = spread_history(table.start, index, table.owner_start, keys_{name}, "
              f"hist_{name})", 2)
            if INTERACTIONS[name].loads:
                w.use(fit_loads, "fit_loads")
                w(f"load_{name} = fit_loads(table.owner_start, load_{name})", 2)
    w(f"return ({''.join(a + ', ' for a in carried.split(', '))})".replace(", )", ",)"), 1)
    w()
    w()
    passes = w.hole()

    def refresh():
        if neighbors:
            passes(f"refreshed = _refresh(st, bodies, table, {carried}"
                   f"{''.join(', ' + a for a in listed_parameters(interactions))})", 1)
            for k, name in enumerate(carried.split(", ")):
                passes(f"{name} = refreshed[{k}]", 1)
        passes("contacts = Contacts(table.start, index, table.owner_start)", 1)

    _passes_text(passes, interactions, parallel, refresh, lambda: _chunked(
        passes, lambda lo, hi: f"_rows({lo}, {hi}, h, st, bodies, contacts{''.join(', ' + a for a in row_arguments)})",
        "0", "n", parallel, 1))
    w.fill(FORCES_TEXT, parallel=", parallel=True" if parallel else "",
           arguments="index" + "".join(", " + a for a in histories + parameters), passes=passes.text(),
           results="index," + "".join(" " + h + "," for h in histories))
    w.use(Contacts, "Contacts")
    return w


def _hooks_text(w, names, indent):
    """The interactions' ``advance`` hooks, in registry order."""
    for name in names:
        if INTERACTIONS[name].advance is not None:
            hook = w.use(INTERACTIONS[name].advance, f"{name}_advance")
            w(f"{hook}(h, st, bodies, p_{name}, o_{name})", indent)


def _distributed_text(scheme, names):
    """The module of an MPI rank (`dem.distributed`): ``forces(h, st, bodies, contacts, owned,
    ghosts, *histories, *parameters)`` evaluates the forces of the ``owned`` bodies (local
    indices) from the rank's bodies and ghosts as the serial loop does (the neighbour list is
    built between calls, by `dem.distributed`), zeroes the ghosts' rows, and lets the bond and
    global kernels add their loads (those on ghosts are discarded); ``hooks`` (same arguments)
    runs the interactions' ``advance`` hooks; ``before(owned, h, st, bodies, aux)`` (the first
    owned body whose update fails, or −1) and ``after`` run the scheme's stages on the owned
    bodies."""
    w = SourceWriter()
    interactions = [INTERACTIONS[n] for n in names]
    histories, parameters = _arguments(names)
    row_arguments = row_kernel_arguments(interactions)
    _rows_text(w, interactions, listed=True)
    signature = f"h, st, bodies, contacts, owned, ghosts{''.join(', ' + a for a in histories + parameters)}"
    w("@njit(cache=True)")
    w(f"def hooks({signature}):")
    _hooks_text(w, names, 1)
    w("return", 1)
    w()
    w()
    w("@njit(cache=True)")
    w(f"def forces({signature}):")
    w("n = st.position.shape[0]", 1)

    def rows_pass():
        w(f"_rows({FIRST}, owned.shape[0], h, st, bodies, contacts, owned"
          f"{''.join(', ' + a for a in row_arguments)})", 1)
        w("for k in range(ghosts.shape[0]):", 1)
        w("for c in range(3):", 2)
        w("st.force[ghosts[k], c] = 0.0", 3)
        w("st.moment[ghosts[k], c] = 0.0", 3)

    # (the rank rebuilds its list between compiled calls, `dem.distributed`: no refresh here)
    _passes_text(w, interactions, False, lambda: None, rows_pass, distributed=True)
    w()
    w()
    for stage, scheme_function, failure in (("before", scheme.module.before_forces, True),
                                            ("after", scheme.module.after_forces, False)):
        function = w.use(scheme_function, f"{stage}_forces")
        w("@njit(cache=True)")
        w(f"def {stage}(owned, h, st, bodies, aux):")
        w("for k in range(owned.shape[0]):", 1)
        if failure:
            w(f"if {function}(owned[k], owned[k] + 1, h, st, bodies, aux) >= 0:", 2)
            w("return owned[k]", 3)
        else:
            w(f"{function}(owned[k], owned[k] + 1, h, st, bodies, aux)", 2)
        if failure:
            w("return -1", 1)
        w()
        w()
    if substeps_contacts(scheme, names):
        _distributed_substeps_text(w, scheme, names, signature)
    return w


def fast_bonds(names):
    """The bond laws among ``names`` with a ``fast`` kernel (contact sub-stepping)."""
    return [i for i in (INTERACTIONS[n] for n in names) if i.kind == BOND and i.fast is not None]


def _distributed_substeps_text(w, scheme, names, signature):
    """An MPI rank's stages of contact sub-stepping (`dem.integrators.respa`), over its owned
    bodies, with the same arguments as ``forces`` and then the stage's own: ``fast_forces(...)``
    (the fast force ``f`` of the owned bodies between sub-steps: the Hertz rows' and the bond
    laws' ``fast`` kernels'; the ghosts' rows zeroed; ``forces`` leaves it as well),
    ``open_stage(..., aux, fraction, reference, skin)`` (the opening kicks, first drift and
    rotations; the first owned body whose rotation fails, or −1), ``drift_stage(..., fraction,
    reference, skin, last)`` and ``close_stage(..., aux, fraction)``. `dem.distributed` runs them
    with a halo exchange after each drift."""
    stages = {name: w.use(getattr(respa_stages, name), name) for name in ("open_kick", "kick_drift", "close_kick")}
    turn, spin = w.use(scheme.module.turn, "turn"), w.use(scheme.module.spin, "spin")
    fast = w.use(hertz_pp_fast, "hertz_pp_fast")
    law = fast_pair_law(names)
    w("@njit(cache=True)")
    w(f"def fast_forces({signature}):")
    w(f"f = o_{law}.fast", 1)
    w("for k in range(owned.shape[0]):", 1)
    w(f"{fast}(owned[k], owned[k] + 1, st, bodies, contacts, p_{law}, f)", 2)
    w("for k in range(ghosts.shape[0]):", 1)
    w("for c in range(3):", 2)
    w("f[ghosts[k], c] = 0.0", 3)
    for i in fast_bonds(names):
        kernel = w.use(i.fast, f"{i.name}_fast")
        _bond_pass(w, i.name, lambda lo, hi: f"{kernel}({lo}, {hi}, st, bodies, p_{i.name}, o_{i.name}, f)", False, 1)
    w()
    w()
    w("@njit(cache=True)")
    w(f"def open_stage({signature}, aux, fraction, reference, skin):")
    w("for k in range(owned.shape[0]):", 1)
    w(f"{stages['open_kick']}(owned[k], owned[k] + 1, h, fraction, st, bodies, o_{law}.fast, o_{law}.mean, "
      f"reference, skin)", 2)
    w("for k in range(owned.shape[0]):", 1)
    w(f"if {turn}(owned[k], owned[k] + 1, h, st, bodies, aux) >= 0:", 2)
    w("return owned[k]", 3)
    w("return -1", 1)
    w()
    w()
    w("@njit(cache=True)")
    w(f"def drift_stage({signature}, fraction, reference, skin, last):")
    w("for k in range(owned.shape[0]):", 1)
    w(f"{stages['kick_drift']}(owned[k], owned[k] + 1, h * fraction, fraction, st, bodies, o_{law}.fast, "
      f"o_{law}.mean, reference, skin, last)", 2)
    w()
    w()
    w("@njit(cache=True)")
    w(f"def close_stage({signature}, aux, fraction):")
    w("for k in range(owned.shape[0]):", 1)
    w(f"{stages['close_kick']}(owned[k], owned[k] + 1, h, fraction, st, bodies, o_{law}.fast, o_{law}.mean)", 2)
    w("for k in range(owned.shape[0]):", 1)
    w(f"{spin}(owned[k], owned[k] + 1, h, st, bodies, aux)", 2)
    w()
    w()


#: values of `dem.state.motion` after the kinetic energies (in a sample row, after the energy
#: columns), and of each wall (at the row's end)
MOTION, PER_WALL = 8, 9


def sample_width(n_walls):
    """The values of a sample row (`sample`) of a system with ``n_walls`` walls."""
    return len(energy_columns()) + MOTION + PER_WALL * n_walls


def _sample_text(names):
    w = SourceWriter()
    histories, parameters = _arguments(names)
    columns = {column: k for k, column in enumerate(energy_columns())}
    w.use(motion, "motion")
    w.use(Contacts, "Contacts")
    w("@njit(cache=True)")
    w(f"def sample(st, bodies, table, index{''.join(', ' + a for a in histories + parameters)}, row):")
    w('"""Write the log\'s values of the current state into ``row`` (see `dem.engine`)."""', 1)
    w("values = motion(st, bodies)", 1)
    w("row[0] = values[0]", 1)
    w("row[1] = values[1]", 1)
    w(f"for k in range(2, {len(columns)}):", 1)
    w("row[k] = 0.0", 2)
    for k in range(MOTION):
        w(f"row[{len(columns) + k}] = values[{2 + k}]", 1)
    w("contacts = Contacts(table.start, index, table.owner_start)", 1)
    for name in names:
        interaction = INTERACTIONS[name]
        if not interaction.columns:
            continue
        kernel = w.use(interaction.energy, f"{name}_energy")
        extra = (f", hist_{name}" if interaction.history else "") + (", o_walls" if interaction.walls else "")
        w(f"energies = {kernel}(st, bodies, contacts, p_{name}, o_{name}{extra})", 1)
        for k, column in enumerate(interaction.columns):
            w(f"row[{columns[column]}] += energies[{k}]  # {column}", 1)
    if "walls" in names:
        w("for wall in range(o_walls.point.shape[0]):", 1)
        w(f"at = {len(columns) + MOTION} + {PER_WALL} * wall", 2)
        w("for c in range(3):", 2)
        w("row[at + c] = o_walls.point[wall, c]", 3)
        w("for c in range(6):", 2)
        w("row[at + 3 + c] = o_walls.load[wall, c]", 3)
    return w


#: the stepping loop's text; its holes: the arguments, the set-up of contact sub-stepping (`_setup`)
#: and one step, the stages of `dem.step.STEP` as `StepWriter` writes them. It runs without
#: Python's lock (``nogil``): a writer's thread (`dem.observers.vtk.VTKWriter`) serialises the
#: last snapshot meanwhile
ADVANCE = """\
@njit(cache=True, nogil=True{parallel})
def advance(n_steps, h, first_step, every, samples, st, bodies, aux, table, {arguments}):
    n = st.position.shape[0]
    if n_steps == 0:  # the forces of the current configuration, as at the start of a run
        out = _forces(n_steps < 0, h, st, bodies, table, {arguments})  # False, known at run time (`FORCES_TEXT`)
        return {ok}, -1, 0, 0, {out}
    n_chunks = {n_chunks}
    failed = np.empty(n_chunks, np.int64)  # filled below; np.full would be a thread launch
    sampled = 0
{setup}
    for k in range(n_steps):
{step}
    body = first_not_finite(st)
    if body >= 0:
        return {not_finite}, body, n_steps, sampled, {carried}
    return {ok}, -1, n_steps, sampled, {carried}"""


class StepWriter:
    """The text of one step of the compiled loop: a method per stage of `dem.step.STEP`, each
    writing its code at an indent (``_before(indent)``, …), over the bodies in chunks under
    prange (``parallel``) or in one call."""

    def __init__(self, w, scheme, names, parallel, forces_module):
        self.w, self.names, self.parallel = w, names, parallel
        histories, parameters = _arguments(names)
        self.carried = "index" + "".join(", " + h for h in histories)
        self.arguments = f"{self.carried}{''.join(', ' + p for p in parameters)}"
        self.results = ["index"] + histories
        self.scheme_stages = {stage: w.use(getattr(scheme.module, stage), stage) for stage in
                              ("before_forces", "after_forces")}
        self.respa = substeps_contacts(scheme, names)
        if self.respa:
            self.law = fast_pair_law(names)
            self.stages = {name: w.use(getattr(respa_stages, name), name)
                           for name in ("open_kick", "kick_drift", "close_kick")}
            self.turn, self.spin = w.use(scheme.module.turn, "turn"), w.use(scheme.module.spin, "spin")
            self.fast = (w.use(hertz_pp_fast, "hertz_pp_fast") if parallel
                         else w.use(hertz_pp_fast_pairs, "hertz_pp_fast_pairs"))
            w.use(Contacts, "Contacts")
            w.imports["_refresh"] = f"from {forces_module} import _refresh"

    def write(self):
        """Write the step: the stages of `dem.step.STEP` in order, those of a sub-stepped step and
        of a plain one under ``if substepped: … else: …``."""
        w = self.w
        methods = stage_methods(self, STEP)
        if self.respa:
            substepped = w.use(respa_stages.substepped, "substepped_next")
            w(f"substepped = {substepped}(p_{self.law}, o_{self.law})  # some contact active at the last force "
              "evaluation", 2)
        for branch in branches(STEP, self.respa):
            if isinstance(branch, Stage):
                methods[branch.name](2)
                continue
            w("if substepped:", 2)
            for stage in branch[0]:
                methods[stage.name](3)
            w("else:", 2)
            for stage in branch[1]:
                methods[stage.name](3)

    def _chunks(self, call, indent, lo="0", hi="n"):
        _chunked(self.w, call, lo, hi, self.parallel, indent)

    def _in_chunks(self, indent):
        """The loop over the chunks whose failures and rebuild flags ``failed`` and ``due`` keep
        (one chunk when serial); returns the bounds of a chunk's bodies."""
        self.w("for chunk in prange(n_chunks):" if self.parallel else "for chunk in range(1):", indent)
        return ("chunk * CHUNK", "min(n, (chunk + 1) * CHUNK)") if self.parallel else (FIRST, "n")

    def _before(self, indent):
        before = self.scheme_stages["before_forces"]
        if self.parallel:
            self.w("for chunk in prange(n_chunks):", indent)
            self.w(f"failed[chunk] = {before}(chunk * CHUNK, min(n, (chunk + 1) * CHUNK), h, st, bodies, aux)",
                   indent + 1)
        else:
            self.w(f"failed[0] = {before}({FIRST}, n, h, st, bodies, aux)", indent)

    def _fast_pass(self, indent):
        """The fast force ``f`` between sub-steps: the Hertz rows set it (serially each pair once,
        the same bits), the bond laws' ``fast`` kernels add theirs (the force evaluation leaves it
        too: `_fast_text`)."""
        w, law = self.w, self.law
        contacts = "Contacts(table.start, index, table.owner_start)"
        if self.parallel:
            self._chunks(lambda lo, hi: f"{self.fast}({lo}, {hi}, st, bodies, {contacts}, p_{law}, fast)", indent)
        else:
            w(f"{self.fast}(st, bodies, {contacts}, p_{law}, fast)", indent)
        for i in fast_bonds(self.names):
            kernel = w.use(i.fast, f"{i.name}_fast")
            _bond_pass(w, i.name, lambda lo, hi: f"{kernel}({lo}, {hi}, st, bodies, p_{i.name}, o_{i.name}, fast)",
                       self.parallel, indent)

    def _open(self, indent):
        w = self.w
        w("if k == 0:  # later, the force evaluation left f (_fast_text)", indent)
        self._fast_pass(indent + 1)
        lo, hi = self._in_chunks(indent)
        w(f"due[chunk] = {self.stages['open_kick']}({lo}, {hi}, h, fraction, st, bodies, fast, mean, "
          f"table.reference_position, table.skin)", indent + 1)
        w(f"failed[chunk] = {self.turn}({lo}, {hi}, h, st, bodies, aux)", indent + 1)

    def _inner(self, indent):
        w = self.w
        w("for sub in range(substeps - 1):  # the last sub-step's f comes with the step's forces", indent)
        w("if sub > 0:", indent + 1)
        lo, hi = self._in_chunks(indent + 2)
        w(f"due[chunk] = {self.stages['kick_drift']}({lo}, {hi}, h * fraction, fraction, st, bodies, fast, mean, "
          f"table.reference_position, table.skin, False)", indent + 3)
        w("if due.any():  # a body moved more than skin/2 since the list was built", indent + 1)
        listed = listed_parameters([INTERACTIONS[n] for n in self.names])
        w(f"refreshed = _refresh(st, bodies, table, {self.carried}{''.join(', ' + a for a in listed)})", indent + 2)
        for k, name in enumerate(self.results):
            w(f"{name} = refreshed[{k}]", indent + 2)
        self._fast_pass(indent + 1)
        self._chunks(lambda lo, hi: f"{self.stages['kick_drift']}({lo}, {hi}, h * fraction, fraction, st, bodies, "
                     f"fast, mean, table.reference_position, table.skin, True)", indent)

    def _hooks(self, indent):
        _hooks_text(self.w, self.names, indent)

    def _check(self, indent):
        w = self.w
        w("for chunk in range(n_chunks):", indent)
        w("if failed[chunk] >= 0:", indent + 1)
        w(f"return {FAILED}, failed[chunk], k, sampled, {self.carried}", indent + 2)

    def _forces(self, indent):
        w = self.w
        w(f"out = _forces({'substepped' if self.respa else 'False'}, h, st, bodies, table, {self.arguments})",
          indent)
        for k, name in enumerate(self.results):
            w(f"{name} = out[{k}]", indent)

    def _after(self, indent):
        after = self.scheme_stages["after_forces"]
        self._chunks(lambda lo, hi: f"{after}({lo}, {hi}, h, st, bodies, aux)", indent)

    def _close(self, indent):
        self._chunks(lambda lo, hi: f"{self.stages['close_kick']}({lo}, {hi}, h, fraction, st, bodies, fast, mean)",
                     indent)
        self._chunks(lambda lo, hi: f"{self.spin}({lo}, {hi}, h, st, bodies, aux)", indent)

    def _sample(self, indent):
        w = self.w
        w("if every > 0 and (first_step + k + 1) % every == 0:", indent)
        w("body = first_not_finite(st)", indent + 1)
        w("if body >= 0:", indent + 1)
        w(f"return {NOT_FINITE}, body, k + 1, sampled, {self.carried}", indent + 2)
        w(f"sample(st, bodies, table, {self.arguments}, samples[sampled])", indent + 1)
        w("sampled += 1", indent + 1)

    def setup(self, w):
        """The set-up of contact sub-stepping before the steps, into ``w`` (none without it)."""
        if not self.respa:
            return
        law = self.law
        w(f"substeps = p_{law}.substeps  # contact sub-steps (dem.integrators.respa); 1: the plain map", 1)
        w("fraction = 1.0 / substeps", 1)
        w(f"fast = o_{law}.fast  # the fast force f", 1)
        w("due = np.zeros(n_chunks, np.bool_)", 1)
        w(f"mean = o_{law}.mean  # the drifts' mean velocity, then what the last drift's adds to it", 1)


def _advance_text(scheme, names, parallel, forces_module, sample_module):
    w = SourceWriter()
    w.imports["_forces"] = f"from {forces_module} import _forces"
    w.imports["sample"] = f"from {sample_module} import sample"
    w.use(first_not_finite, "first_not_finite")
    setup, step = w.hole(), w.hole()
    writer = StepWriter(step, scheme, names, parallel, forces_module)
    writer.write()
    writer.setup(setup)
    histories = len(_arguments(names)[0])
    w.fill(ADVANCE, parallel=", parallel=True" if parallel else "", arguments=writer.arguments,
           out="out[0]" + "".join(f", out[{k + 1}]" for k in range(histories)),
           n_chunks="(n + CHUNK - 1) // CHUNK" if parallel else "1", setup=setup.text(), step=step.text(),
           carried=writer.carried, ok=OK, not_finite=NOT_FINITE)
    return w


def substeps_contacts(scheme, names):
    """Whether the loop of ``scheme`` with ``names`` sub-steps the particle–particle contacts
    (`fast_pair_law`) when their ``substeps`` > 1 (`dem.integrators.respa`): a scheme with the rotational stages
    ``turn``/``spin`` (``rrp2``, ``rrp``, ``lgvi``; not ``rrp1``)."""
    return fast_pair_law(names) is not None and hasattr(scheme.module, "turn")


def module_text(kind, describe, writer, stamp):
    header = [f'"""Generated by dem.engine: {describe}. Do not edit (see dem/engine.py)."""']
    header += [f"# sources of the interactions outside dem: {stamp}"] if stamp else []
    header += ["",
              "import numpy as np", "from numba import njit, prange", ""]
    header += sorted(writer.imports.values()) + ["", f"CHUNK = {CHUNK}", "", ""]
    text = "\n".join(header + writer.lines) + "\n"
    name = f"dem_generated_{kind}_{hashlib.sha256(text.encode()).hexdigest()[:20]}"
    return name, text


def _describe(names, parallel):
    return f"{', '.join(names) or 'no interaction'} ({'parallel' if parallel else 'serial'})"


def _forces_spec(names, parallel):
    return module_text("forces", f"forces of {_describe(names, parallel)}", _forces_text(names, parallel),
                   _source_stamp(names))


def _sample_spec(names):
    return module_text("sample", f"log values of {_describe(names, False)}", _sample_text(names), _source_stamp(names))


def _advance_spec(scheme, names, parallel, forces_name, sample_name):
    return module_text("advance", f"{scheme.name} with {_describe(names, parallel)}",
                   _advance_text(scheme, names, parallel, forces_name, sample_name), _source_stamp(names))


@functools.cache
def forces_module(names, parallel):
    """The module whose ``_forces`` evaluates the interactions ``names`` (a tuple, registry
    order)."""
    return load_module(*_forces_spec(names, parallel))


@functools.cache
def distributed_module(scheme, names):
    """The module of an MPI rank's forces and stages (`_distributed_text`) for ``scheme`` with
    the interactions ``names`` (a tuple)."""
    return load_module(*module_text("distributed", f"{scheme.name} with {_describe(names, False)} on an MPI rank",
                          _distributed_text(scheme, names), _source_stamp(names)))


@functools.cache
def sample_module(names):
    """The module whose ``sample`` writes a log row of a system with the interactions ``names``
    (a tuple); serial, for serial and parallel loops alike."""
    return load_module(*_sample_spec(names))


@functools.cache
def advance_module(scheme, names, parallel):
    """The module whose ``advance`` steps ``scheme`` (a `dem.integrators.Scheme`) with the
    interactions ``names`` (a tuple)."""
    forces = forces_module(names, parallel)
    return load_module(*_advance_spec(scheme, names, parallel, forces.__name__, sample_module(names).__name__))


def loop_source(scheme, names, parallel):
    """The text of the generated forces, sample and advance modules of ``scheme`` with ``names``."""
    forces = _forces_spec(tuple(names), parallel)
    sample = _sample_spec(tuple(names))
    advance = _advance_spec(scheme, tuple(names), parallel, forces[0], sample[0])
    return "\n".join(f"# {name}.py\n{text}" for name, text in (forces, sample, advance))


#: seconds per interaction of a stepping loop's first compile when none was timed on this machine
#: yet (2-core machine, cold numba cache: the torus impact's four, serial, with contact sub-stepping
#: in 37 s, 40 s for the whole first run, with the kernels every loop shares)
TYPICAL_SECONDS_PER_INTERACTION = {False: 9.0, True: 20.0}
COMPILE_TIMES = "compile_times.json"


def _compile_times():
    try:
        return json.loads((generated_folder() / COMPILE_TIMES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def compile_estimate(scheme, names, parallel):
    """None when the stepping loop of ``scheme`` with ``names`` was compiled before on this
    machine (numba's cache has it), else the seconds its compilation is expected to take: its
    number of interactions (at least one) times the median seconds per interaction of the loops
    of the same kind (serial or parallel) timed here, or `TYPICAL_SECONDS_PER_INTERACTION`."""
    name = advance_module(scheme, tuple(names), parallel).__name__
    times = _compile_times()
    if name in times:
        return None
    rates = sorted(seconds / count for seconds, kind, count in times.values() if kind == parallel)
    rate = rates[len(rates) // 2] if rates else TYPICAL_SECONDS_PER_INTERACTION[parallel]
    return rate * max(len(names), 1)


def record_compile_time(scheme, names, parallel, seconds):
    """Remember that the loop was compiled (and how long it took) for `compile_estimate`."""
    times = _compile_times()
    times[advance_module(scheme, tuple(names), parallel).__name__] = (round(seconds, 1), parallel, max(len(names), 1))
    path = generated_folder() / COMPILE_TIMES
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(times, indent=1), encoding="utf-8")
    os.replace(temporary, path)


def arguments(model, state, contacts):
    """``(histories, parameters)`` for the generated functions of ``model``'s interactions."""
    names = list(model.interactions)
    histories = contacts.carried()
    parameters = [a for n in names for a in (model.interactions[n], state.interactions.get(n, ()))]
    return histories, parameters


def new_contacts(model):
    """An empty `dem.contacts.ContactTable` for ``model`` (with the histories its interactions keep)."""
    kept = [INTERACTIONS[name] for name in model.interactions if INTERACTIONS[name].history]
    return ContactTable(model.n_bodies, model.skin, {i.name: history_width(i.name, model.interactions[i.name])
                                                     for i in kept},
                        {i.name: loads_width(i.name, model.interactions[i.name]) for i in kept})


def store_contacts(model, contacts, carried):
    """Keep what a generated function returned: ``(index, *histories)``."""
    contacts.index = carried[0]
    contacts.keep(carried[1:])


def compute_forces(model, state, contacts=None, bodies=None, dt=0.0, parallel=False):
    """Evaluate every interaction of ``model`` at ``state``: sets ``state.force`` and
    ``state.moment`` and updates ``contacts`` (a new table when None), which it returns; ``dt``
    books the work of non-conservative effects (0: none)."""
    contacts = new_contacts(model) if contacts is None else contacts
    bodies = model.body_arrays() if bodies is None else bodies
    histories, parameters = arguments(model, state, contacts)
    out = forces_module(tuple(model.interactions), parallel)._forces(
        False, float(dt), state.arrays(), bodies, contacts.arrays(), contacts.index, *histories, *parameters)
    store_contacts(model, contacts, out)
    return contacts
