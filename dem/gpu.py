"""The step on an NVIDIA GPU (``[simulation] device = "cuda"``, ``--device cuda``), with numba-cuda.

The loop of `dem.engine` is split into kernels of one thread per body (or per bond of a colour),
and each thread calls the same compiled functions as the CPU loop, with the range ``[i, i + 1)``:
the schemes' stages, the interactions' ``update`` and row kernels (the fused pass ``_rows`` of the
generated forces module itself), the bond kernels colour by colour, a `GLOBAL` interaction's
``body`` form or, for the few-body ones, its ``forces`` on one thread. A body gathers its own
rows and writes only its own; there is no floating-point atomic, so the result does not depend
on the launch configuration, and it is the CPU's arithmetic up to the fused multiply-adds that
the CUDA compiler contracts (docs/guide.md, "The step on a GPU"). The neighbour list is rebuilt
on the device, to the CPU's bits (`dem.gpu_neighbors`). The walls' loads are the one sum whose
order differs from the CPU's: each row's share goes to a slot of its own and the slots are added
in a fixed tree (`_tree_kernel`).

The state stays on the device for a whole chunk of steps (`dem.simulation.Simulation.run`); the
host gets it back at each logged row (the log's values are those of `dem.engine`'s ``sample``)
and at the chunk's end, for the writers and checkpoints, which are the CPU's files.

Without ``NUMBA_ENABLE_CUDASIM=1`` a GPU is needed; with it numba-cuda's simulator runs the same
kernels on the CPU, one Python thread per GPU thread (slow: for tests of small systems), and the
"device" arrays are host copies.
"""

import functools

import numpy as np

from .device import GPUError, cuda, simulated, to_device, to_host
from .engine import (
    FAILED,
    NOT_FINITE,
    OK,
    SourceWriter,
    carried_arrays,
    fast_bonds,
    fast_pair_law,
    forces_module,
    load_module,
    module_text,
    row_kernel_arguments,
    sample_module,
    substeps_contacts,
)
from .interactions import BOND, GLOBAL, INTERACTIONS
from .interactions.walls import WallState
from .step import FORCES, STEP, run_step, stage_methods

#: what the GPU loop runs: the interactions, and the schemes (their stages have the same names)
INTERACTIONS_ON_GPU = ("gravity", "hertz_pp", "hertz_pw", "contact_pp", "adhesive_pp", "adhesive_pw", "contact_pw",
                       "adhesive_contact_pw", "binder", "parallel_bond", "walls", "damping")
SCHEMES_ON_GPU = ("rrp2", "rrp")
#: threads per block (the result does not depend on it)
THREADS = 128
#: the flags a step reads back: the first body whose stage failed (``n``: none), whether the
#: neighbour list is due, whether some contact is active (the next step is sub-stepped)
FAILED_BODY, DUE, ACTIVE = 0, 1, 2


def tree():
    """The threads of a block of `_tree_kernel` (its sums' order depends on it: fixed, and small
    in the simulator, whose every thread is a Python thread)."""
    return 4 if simulated() else 128


def problem(model, integrator):
    """Why ``model`` cannot run with ``integrator`` on the GPU here (one line), or None."""
    refused = _refusal(model, integrator)
    if refused is None:
        try:
            cuda()
        except GPUError as error:
            refused = str(error).removeprefix("device = 'cuda': ")
    return refused


def _refusal(model, integrator):
    """Why the GPU loop cannot run ``model`` with ``integrator`` (one line), or None."""
    if integrator not in SCHEMES_ON_GPU:
        return f"integrator {integrator!r} does not run on the GPU yet (it runs {', '.join(SCHEMES_ON_GPU)})"
    for name in model.interactions:
        if name not in INTERACTIONS_ON_GPU:
            return f"interaction {name!r} does not run on the GPU yet (device = 'cpu' runs it)"
    walls = model.interactions.get("walls")
    if walls is not None and walls.wall.shape[0] > 0:
        return "mesh walls ([[mesh]]) do not run on the GPU yet (device = 'cpu' runs them)"
    return None


# ---------------------------------------------------------------------------------------------
# the kernels: a generated module per scheme and interaction set, as `dem.engine`'s
# ---------------------------------------------------------------------------------------------


def _loose(name):
    """Arrays that a kernel takes outside a named tuple go in a 1-tuple (the simulator hands a
    bare array to the kernel as its own wrapper, which the compiled functions cannot take)."""
    return name in ("flags", "index", "scratch", "partial", "fast", "mean") or name.startswith(("hist_", "load_"))


def _kernel(w, name, arguments, lines, over="n"):
    """A kernel of one thread per ``i < n`` (``over="n"``), per bond ``lo ≤ b < hi``
    (``over="bonds"``) or of one thread (``over=None``), running ``lines`` (text)."""
    head = {"n": ["n"], "bonds": ["lo", "hi"], None: []}[over]
    names = [a.strip() for a in arguments.split(",") if a.strip()]
    w("@cuda.jit(cache=True)")
    w(f"def {name}({', '.join(head + [a + '_' if _loose(a) else a for a in names])}):")
    for a in names:
        if _loose(a):
            w(f"{a} = {a}_[0]", 1)
    if over == "n":
        w("i = cuda.grid(1)", 1)
        w("if i < n:", 1)
    elif over == "bonds":
        w("b = lo + cuda.grid(1)", 1)
        w("if b < hi:", 1)
    else:
        w("if cuda.grid(1) == 0:", 1)
    for line in lines:
        w(line, 2)
    w()
    w()


def _kernels_text(scheme, names):
    from .contacts import Contacts
    from .neighbors import moved_far, rebuild_test

    w = SourceWriter()
    w.imports["cuda"] = "from numba import cuda"
    interactions = [INTERACTIONS[n] for n in names]
    w.imports["_rows"] = f"from {forces_module(names, False).__name__} import _rows"
    w.use(Contacts, "Contacts")
    contacts = "Contacts(table.start, index, table.owner_start)"
    before = w.use(scheme.module.before_forces, "before_forces")
    after = w.use(scheme.module.after_forces, "after_forces")
    _kernel(w, "before", "h, st, bodies, aux, flags", [
        f"failed = {before}(i, i + 1, h, st, bodies, aux)",
        "if failed >= 0:",
        f"    cuda.atomic.min(flags, {FAILED_BODY}, failed)"])
    _kernel(w, "after", "h, st, bodies, aux", [f"{after}(i, i + 1, h, st, bodies, aux)"])
    _kernel(w, "clear", "flags, k, value", ["flags[k] = value"], over=None)
    hooked = [n for n in names if INTERACTIONS[n].advance is not None]
    if hooked:
        calls = [f"    {w.use(INTERACTIONS[n].advance, f'{n}_advance')}(h, st, bodies, p_{n}, o_{n})" for n in hooked]
        _kernel(w, "hooks", "flags, n, h, st, bodies, " + ", ".join(f"p_{n}, o_{n}" for n in hooked),
                [f"if flags[{FAILED_BODY}] >= n:  # no stage failed"] + calls, over=None)
    if any(i.neighbors for i in interactions):
        w.use(moved_far, "moved_far")
        w.use(rebuild_test, "rebuild_test")
        _kernel(w, "due", "st, bodies, table, flags", [
            "forced, kept = rebuild_test(table.skin, table.counters, st.cell)",
            "if forced or moved_far(st.position, bodies.diameter, table.reference_position, i, 0.25 * kept * kept):",
            f"    flags[{DUE}] = 1"])
    for i in interactions:
        if i.history:
            update = w.use(i.update, f"{i.name}_update")
            carried = ", ".join(carried_arrays(i))
            _kernel(w, f"update_{i.name}", f"h, st, bodies, table, index, p_{i.name}, o_{i.name}, {carried}",
                    [f"{update}(i, i + 1, h, st, bodies, {contacts}, p_{i.name}, o_{i.name}, {carried})"])
    row_arguments = row_kernel_arguments(interactions)
    lines = []
    if "o_walls" in row_arguments:  # each row's wall loads go to its own slot of `scratch` (`add_wall_load`)
        fields = ", ".join("scratch[i - i // CHUNK:]" if f == "partial" else f"o_walls.{f}" for f in WallState._fields)
        w.use(WallState, "WallState")
        lines.append(f"walls_i = WallState({fields})")
        row_arguments = row_arguments + ["scratch"]
    passed = "".join(", " + ("walls_i" if a == "o_walls" else a) for a in row_arguments if a != "scratch")
    lines.append(f"_rows(i, i + 1, h, st, bodies, {contacts}{passed})")
    _kernel(w, "rows", f"h, st, bodies, table, index{''.join(', ' + a for a in row_arguments)}", lines)
    if "scratch" in row_arguments:  # the walls' loads: the rows' slots summed by chunks, then the chunks
        w.imports["float64"] = "from numba import float64"
        _tree_kernel(w, "wall_chunks", "scratch", "chunks", "CHUNK")
        _tree_kernel(w, "wall_totals", "chunks", "partial", "rows")
    for i in interactions:
        if i.kind == BOND:
            kernel = w.use(i.forces, f"{i.name}_forces")
            fast = ", fast" if i.fast is not None else ""
            _kernel(w, f"bond_{i.name}", f"h, st, bodies, p_{i.name}, o_{i.name}{fast}",
                    [f"{kernel}(b, b + 1, h, st, bodies, p_{i.name}, o_{i.name}{fast})"], over="bonds")
        elif i.kind == GLOBAL and i.body is not None:
            body = w.use(i.body, f"{i.name}_body")
            _kernel(w, f"global_{i.name}", f"h, st, bodies, p_{i.name}, o_{i.name}",
                    [f"{body}(i, h, st, bodies, p_{i.name}, o_{i.name})"])
        elif i.kind == GLOBAL:
            kernel = w.use(i.forces, f"{i.name}_forces")
            _kernel(w, f"global_{i.name}", f"h, st, bodies, p_{i.name}, o_{i.name}",
                    [f"{kernel}(h, st, bodies, p_{i.name}, o_{i.name})"], over=None)
    if substeps_contacts(scheme, names):
        _respa_text(w, scheme, names, contacts)
    return w


def _tree_kernel(w, name, source, target, per_group):
    """A kernel of one block of `tree` threads per group of ``per_group`` rows of ``source``
    ``(rows, walls, components)`` and per wall and component ``(w, c)``: each thread sums its rows
    ``t, t + tree(), …`` of the group in order, the block adds the threads' sums pairwise in a
    fixed tree, into ``target[group, w, c]``. The order does not depend on the launch (the block
    size is fixed): two runs give the same bits. It is not the CPU's (chunk by chunk, row by row),
    so the walls' loads and work differ from the CPU's in their last bits, except a servo wall's
    loads, which are sums of quanta (exact in any order, `dem.interactions.walls`)."""
    w("@cuda.jit(cache=True)")
    w(f"def {name}({source}_, {target}_):")
    w(f"{source}, {target} = {source}_[0], {target}_[0]", 1)
    threads = tree()
    w(f"sums = cuda.shared.array({threads}, float64)", 1)
    w("t, block = cuda.threadIdx.x, cuda.blockIdx.x", 1)
    w(f"rows, walls, components = {source}.shape", 1)
    w("group, w, c = block // (walls * components), (block // components) % walls, block % components", 1)
    w(f"first, last = group * {per_group}, min(rows, (group + 1) * {per_group})", 1)
    w("total = 0.0", 1)
    w(f"for row in range(first + t, last, {threads}):", 1)
    w(f"total += {source}[row, w, c]", 2)
    w("sums[t] = total", 1)
    w("cuda.syncthreads()", 1)
    w(f"step = {threads // 2}", 1)
    w("while step > 0:", 1)
    w("if t < step:", 2)
    w("sums[t] += sums[t + step]", 3)
    w("cuda.syncthreads()", 2)
    w("step //= 2", 2)
    w("if t == 0:", 1)
    w(f"{target}[group, w, c] = sums[0]", 2)
    w()
    w()


def _respa_text(w, scheme, names, contacts):
    """The stages of contact sub-stepping (`dem.integrators.respa`) and the fast force."""
    from .integrators import respa
    from .interactions.hertz import hertz_pp_fast

    law = fast_pair_law(names)
    stage = {name: w.use(getattr(respa, name), name) for name in ("open_kick", "kick_drift", "close_kick")}
    turn, spin = w.use(scheme.module.turn, "turn"), w.use(scheme.module.spin, "spin")
    _kernel(w, "opening", "h, fraction, st, bodies, fast, mean, table, aux, flags", [
        f"if {stage['open_kick']}(i, i + 1, h, fraction, st, bodies, fast, mean, table.reference_position, "
        "table.skin):",
        f"    flags[{DUE}] = 1",
        f"failed = {turn}(i, i + 1, h, st, bodies, aux)",
        "if failed >= 0:",
        f"    cuda.atomic.min(flags, {FAILED_BODY}, failed)"])
    _kernel(w, "drifting", "hs, fraction, st, bodies, fast, mean, table, last, flags", [
        f"if {stage['kick_drift']}(i, i + 1, hs, fraction, st, bodies, fast, mean, table.reference_position, "
        "table.skin, last):",
        f"    flags[{DUE}] = 1"])
    _kernel(w, "closing", "h, fraction, st, bodies, fast, mean, aux", [
        f"{stage['close_kick']}(i, i + 1, h, fraction, st, bodies, fast, mean)",
        f"{spin}(i, i + 1, h, st, bodies, aux)"])
    fast = w.use(hertz_pp_fast, "hertz_pp_fast")
    _kernel(w, "fast_rows", f"st, bodies, table, index, p_{law}, fast",
            [f"{fast}(i, i + 1, st, bodies, {contacts}, p_{law}, fast)"])
    _kernel(w, "active", f"o_{law}, flags", [f"if o_{law}.active[i] > 0:", f"    flags[{ACTIVE}] = 1"])
    for i in fast_bonds(names):
        kernel = w.use(i.fast, f"{i.name}_fast")
        _kernel(w, f"fast_{i.name}", f"st, bodies, p_{i.name}, o_{i.name}, fast",
                [f"{kernel}(b, b + 1, st, bodies, p_{i.name}, o_{i.name}, fast)"], over="bonds")


def kernels_source(scheme, names):
    """``(module name, text)`` of the GPU kernels of ``scheme`` with the interactions ``names``."""
    return module_text("gpu", f"GPU kernels of {scheme.name} with {', '.join(names) or 'no interaction'}",
                   _kernels_text(scheme, tuple(names)), "")


@functools.cache
def kernels_module(scheme, names):
    """The module of the GPU kernels of ``scheme`` with the interactions ``names`` (a tuple)."""
    cuda()
    return load_module(*kernels_source(scheme, names))


# ---------------------------------------------------------------------------------------------
# the loop
# ---------------------------------------------------------------------------------------------


class DeviceLoop:
    """The GPU's ``advance``, with the signature and results of `dem.engine`'s generated one, for
    ``scheme`` with the interactions ``names`` (a tuple); the CPU's ``sample`` (`dem.engine`)
    takes the log's values on the host."""

    def __init__(self, scheme, names):
        self.names = names
        self.kernels = kernels_module(scheme, names)
        self.sample = sample_module(names).sample
        self.interactions = [INTERACTIONS[n] for n in names]
        self.respa = substeps_contacts(scheme, names)
        self.law = fast_pair_law(names)
        self.neighbors = any(i.neighbors for i in self.interactions)
        self.history_names = [i.name for i in self.interactions if i.history]
        #: the carried arrays' argument names (`dem.engine.carried_arrays`: histories and pair scratch)
        self.carried = [a for i in self.interactions for a in carried_arrays(i)]
        self.threads = 32 if simulated() else THREADS
        #: the most bytes a call's arrays took on the device (its state, contacts and interactions)
        self.device_bytes = 0
        self._kept = {}
        #: whether the host's arrays are as the last call left them when they are the same arrays
        #: (`dem.simulation.Simulation.run`: between its chunks only observers run, and they read):
        #: the device's copies are then used as they are, and nothing goes up
        self.resident = False
        self._last = None
        self.stages = stage_methods(self, STEP)
        self._force_stages = stage_methods(self, FORCES)

    def kept(self, value):
        """``value`` (the bodies' arrays or an interaction's parameters: nothing changes them
        during a run) on the device, uploaded at the first call that passes it and kept."""
        held = self._kept.get(id(value))
        if held is None or held[0] is not value:
            held = self._kept[id(value)] = (value, to_device(value))
        return held[1]

    def launch(self, kernel, n, *arguments):
        """``kernel`` over ``n`` threads."""
        if n > 0:
            kernel[(n + self.threads - 1) // self.threads, self.threads](n, *arguments)

    def bonds(self, kernel, color_start, *arguments):
        """``kernel`` over the bonds of each colour in turn."""
        for color in range(len(color_start) - 1):
            lo, hi = int(color_start[color]), int(color_start[color + 1])
            if hi > lo:
                kernel[(hi - lo + self.threads - 1) // self.threads, self.threads](lo, hi, *arguments)

    def advance(self, n_steps, h, first_step, every, samples, st, bodies, aux, table, index, *rest):
        run = self._last
        if not (self.resident and run is not None and run.holds(st, bodies, aux, table, index, rest)):
            run = self._last = _Run(self, st, bodies, aux, table, index, rest)
        if n_steps == 0:  # the forces of the current configuration
            self._evaluate(run, h, False, self._flags(run)[DUE])
            return run.finish(OK, -1, 0, 0)
        run.first_step, run.every, run.samples, run.sampled = first_step, every, samples, 0
        for k in range(n_steps):
            run.stepping = run.substepped  # this step's (its force evaluation decides the next one's)
            stop = run_step(self.stages, run.stepping, run, k, h)
            if stop is not None:
                return stop
        host = run.download()
        self.device_bytes = max(self.device_bytes, run.device_bytes())
        body = _first_not_finite(host.st)
        return run.finish(NOT_FINITE if body >= 0 else OK, body, n_steps, run.sampled)

    # the stages of a step (`dem.step.STEP`), each ``(run, k, h)``

    def _before(self, run, k, h):
        run.set_flag(FAILED_BODY, run.n)
        self.launch(self.kernels.before, run.n, h, run.st, run.bodies, run.aux, (run.flags,))

    def _open(self, run, k, h):
        run.set_flag(FAILED_BODY, run.n)
        if k == 0:  # later, the force evaluation left the fast force
            self._fast_pass(run)
        run.set_flag(DUE, 0)
        self.launch(self.kernels.opening, run.n, h, run.fraction, run.st, run.bodies, (run.fast,), (run.mean,),
                    run.table, run.aux, (run.flags,))

    def _inner(self, run, k, h):
        kernels, n = self.kernels, run.n
        for sub in range(run.substeps - 1):
            if sub > 0:
                run.set_flag(DUE, 0)
                self.launch(kernels.drifting, n, h * run.fraction, run.fraction, run.st, run.bodies, (run.fast,),
                            (run.mean,), run.table, False, (run.flags,))
            if run.read_flags()[DUE] and self._flags(run)[DUE]:  # the list's own test decides, as the CPU's
                run.rebuild()
            self._fast_pass(run)
        self.launch(kernels.drifting, n, h * run.fraction, run.fraction, run.st, run.bodies, (run.fast,),
                    (run.mean,), run.table, True, (run.flags,))

    def _hooks(self, run, k, h):
        if run.hooked:  # (skipped on the device if a stage failed)
            self.kernels.hooks[1, 1]((run.flags,), run.n, h, run.st, run.bodies, *run.hooked)

    def _check(self, run, k, h):
        failed, run.due = self._flags(run)[[FAILED_BODY, DUE]]
        if failed < run.n:
            return run.finish(FAILED, int(failed), k, run.sampled)
        return None

    def _forces(self, run, k, h):
        self._evaluate(run, h, run.stepping, run.due)

    def _after(self, run, k, h):
        self.launch(self.kernels.after, run.n, h, run.st, run.bodies, run.aux)

    def _close(self, run, k, h):
        self.launch(self.kernels.closing, run.n, h, run.fraction, run.st, run.bodies, (run.fast,), (run.mean,),
                    run.aux)

    def _sample(self, run, k, h):
        if run.every > 0 and (run.first_step + k + 1) % run.every == 0:
            host = run.download()
            body = _first_not_finite(host.st)
            if body >= 0:
                return run.finish(NOT_FINITE, body, k + 1, run.sampled)
            self.sample(host.st, host.bodies, host.table, host.index, *host.histories, *host.parameters,
                        run.samples[run.sampled])
            run.sampled += 1
        return None

    def _flags(self, run):
        """The flags after the neighbour list's test (`dem.neighbors.rebuild_due`), if the list is
        used: the one wait of a plain step for the device."""
        if self.neighbors:
            run.set_flag(DUE, 0)
            self.launch(self.kernels.due, run.n, run.st, run.bodies, run.table, (run.flags,))
        return run.read_flags()

    def _evaluate(self, run, h, substepping, due):
        """The force evaluation (`dem.step.FORCES`, as `dem.engine._forces`) once the list's test
        found it ``due``; ``substepping``: whether the step that ends with it is sub-stepped."""
        for stage in FORCES:
            self._force_stages[stage.name](run, h, substepping, due)

    # the stages of a force evaluation (`dem.step.FORCES`), each ``(run, h, substepping, due)``

    def _refresh(self, run, h, substepping, due):
        if due:
            run.rebuild()

    def _updates(self, run, h, substepping, due):
        for name in self.history_names:
            self.launch(getattr(self.kernels, f"update_{name}"), run.n, h, run.st, run.bodies, run.table,
                        (run.index,), *run.params[name],
                        *((run.histories[a],) for a in carried_arrays(INTERACTIONS[name])))

    def _rows(self, run, h, substepping, due):
        self.launch(self.kernels.rows, run.n, h, run.st, run.bodies, run.table, (run.index,), *run.row_arguments())
        if run.scratch is not None:
            chunks = run.chunks
            self.kernels.wall_chunks[chunks.size, tree()]((run.scratch,), (chunks,))
            self.kernels.wall_totals[chunks.size // chunks.shape[0], tree()]((chunks,),
                                                                             (run.params["walls"][1].partial,))

    def _bonds(self, run, h, substepping, due):
        fast = run.no_fast
        if self.respa:
            run.substepped = run.active()  # the next step is sub-stepped
            if substepping or run.substepped:
                fast = run.fast
        for i in self.interactions:
            if i.kind == BOND:
                extra = ((fast,),) if i.fast is not None else ()
                self.bonds(getattr(self.kernels, f"bond_{i.name}"), run.color_start[i.name], h, run.st, run.bodies,
                           *run.params[i.name], *extra)

    def _globals(self, run, h, substepping, due):
        for i in self.interactions:
            if i.kind == GLOBAL and i.body is not None:
                self.launch(getattr(self.kernels, f"global_{i.name}"), run.n, h, run.st, run.bodies,
                            *run.params[i.name])
            elif i.kind == GLOBAL:
                getattr(self.kernels, f"global_{i.name}")[1, 1](h, run.st, run.bodies, *run.params[i.name])

    def _fast_pass(self, run):
        """The fast force between sub-steps (`dem.engine.StepWriter`)."""
        self.launch(self.kernels.fast_rows, run.n, run.st, run.bodies, run.table, (run.index,),
                    run.params[self.law][0], (run.fast,))
        for i in fast_bonds(self.names):
            self.bonds(getattr(self.kernels, f"fast_{i.name}"), run.color_start[i.name], run.st, run.bodies,
                       *run.params[i.name], (run.fast,))


class WatchedKernels:
    """A `kernels_module` whose every launch goes through ``watch(name, launch, arguments)``, which
    must call ``launch(*arguments)``: set as a `DeviceLoop`'s ``kernels`` to record the kernels'
    argument types (`tests/support/gpu_kernels.py`) or to time them (`tools/gpu_check.py`)."""

    def __init__(self, kernels, watch):
        self.kernels, self.watch = kernels, watch

    def __getattr__(self, name):
        kernel, watch = getattr(self.kernels, name), self.watch

        class Configured:
            def __getitem__(self, config):
                return lambda *arguments: watch(name, kernel[config], arguments)

        return Configured()


def _first_not_finite(st):
    from .integrators.stages import first_not_finite
    return int(first_not_finite(st))


class _Host:
    """The host's arrays of a `DeviceLoop.advance` call (``index`` and ``histories`` replaced by
    new arrays at each download)."""

    def __init__(self, st, bodies, aux, table, index, histories, parameters):
        self.st, self.bodies, self.aux, self.table, self.index = st, bodies, aux, table, index
        self.histories, self.parameters = histories, parameters


class _Run:
    """The device's copies of the arrays of one `DeviceLoop.advance` call (those that change: the
    bodies and the parameters are the loop's, `DeviceLoop.kept`) and the loop's own (flags, the
    walls' row slots)."""

    def __init__(self, loop, st, bodies, aux, table, index, rest):
        k = len(loop.carried)
        self.loop = loop
        self.host = _Host(st, bodies, aux, table, index, list(rest[:k]), list(rest[k:]))
        self.n = st.position.shape[0]
        self.st, self.bodies, self.aux, self.table = to_device(st), loop.kept(bodies), to_device(aux), to_device(table)
        self.index = to_device(index)
        self.histories = {name: to_device(h) for name, h in zip(loop.carried, rest[:k])}  # by argument name
        parameters = rest[k:]
        self.params = {name: (loop.kept(parameters[2 * m]), to_device(parameters[2 * m + 1]))
                       for m, name in enumerate(loop.names)}
        self.color_start = {name: np.asarray(parameters[2 * m].color_start) for m, name in enumerate(loop.names)
                            if INTERACTIONS[name].kind == BOND}
        self.flags = to_device(np.zeros(4, np.int64))
        self._flags = np.zeros(4, np.int64)
        self.no_fast = to_device(np.zeros((0, 3)))
        self.scratch = None
        if "walls" in loop.names and any(i.walls for i in loop.interactions):
            # each row's loads on the walls, their sums by CPU chunk, and the walls' loads (`_tree_kernel`)
            p, own = self.params["walls"]
            walls = own.partial.shape[1:]
            self.scratch = to_device(np.zeros((self.n,) + walls))
            self.chunks = to_device(np.zeros((own.partial.shape[0],) + walls))
            self.params["walls"] = (p, own._replace(partial=to_device(np.zeros((1,) + walls))))
        self.hooked = [a for name in loop.names if INTERACTIONS[name].advance is not None for a in self.params[name]]
        if loop.respa:
            self.substeps = int(parameters[2 * loop.names.index(loop.law)].substeps)
            self.fraction = 1.0 / self.substeps
            own = self.params[loop.law][1]
            self.fast, self.mean = own.fast, own.mean
        self.substepped = loop.respa and self.active()

    def holds(self, st, bodies, aux, table, index, rest):
        """Whether the host's arrays of a call are those this run came from and went back to."""
        host, k = self.host, len(self.loop.carried)
        return (bodies is host.bodies and index is host.index and _same(st, host.st) and _same(aux, host.aux)
                and _same(table, host.table) and _same(rest[:k], host.histories)
                and _same(rest[k:], host.parameters))

    def row_arguments(self):
        """The arguments of the ``rows`` kernel after ``index``."""
        out = []
        for name in row_kernel_arguments(self.loop.interactions):
            kind, interaction = name.split("_", 1)
            if kind in ("hist", "load"):
                out.append((self.histories[name],))
            else:
                out.append(self.params[interaction][0 if kind == "p" else 1])
        return out + ([(self.scratch,)] if self.scratch is not None else [])

    def set_flag(self, k, value):
        self.loop.kernels.clear[1, 1]((self.flags,), k, value)

    def read_flags(self):
        if simulated():
            return self.flags
        self.flags.copy_to_host(ary=self._flags)
        return self._flags

    def active(self):
        """Whether the next step is sub-stepped (`dem.integrators.respa.substepped`: some contact
        active at the last force evaluation)."""
        if self.substeps <= 1:
            return False
        self.set_flag(ACTIVE, 0)
        self.loop.launch(self.loop.kernels.active, self.n, self.params[self.loop.law][1], (self.flags,))
        return bool(self.read_flags()[ACTIVE])

    def rebuild(self):
        """Rebuild the neighbour list on the device (`dem.gpu_neighbors`), carrying the histories."""
        from .gpu_neighbors import build

        names = self.loop.history_names
        widths = {name: INTERACTIONS[name].history for name in names}
        self.index, carried, cell = build(self.st.position, self.bodies.diameter, self.table, self.index,
                                          {name: self.histories[f"hist_{name}"] for name in names}, widths,
                                          self.st.cell)
        self.st = self.st._replace(cell=cell)
        for name, history in carried.items():
            self.histories[f"hist_{name}"] = history
            scratch = self.histories.get(f"load_{name}")
            if scratch is not None and history.shape[0] > scratch.shape[0]:  # as many slots as the history
                self.histories[f"load_{name}"] = to_device(np.zeros((history.shape[0], scratch.shape[1])))

    def device_bytes(self):
        """The bytes of the arrays on the device."""
        values = [self.st, self.bodies, self.aux, self.table, self.index, self.scratch, getattr(self, "chunks", None),
                  *self.histories.values(), *self.params.values()]
        return sum(_nbytes(v) for v in values)

    def download(self):
        """The state, the contact table and the interactions' own state back on the host."""
        host = self.host
        to_host(self.st, host.st)
        to_host(self.aux, host.aux)
        to_host(self.table, host.table)
        host.index = to_host(self.index)
        host.histories = [to_host(self.histories[name]) for name in self.loop.carried]
        for m, name in enumerate(self.loop.names):
            own, host_own = self.params[name][1], host.parameters[2 * m + 1]
            if name == "walls":  # its partial loads are the loop's own scratch (`_Run`)
                own, host_own = own._replace(partial=None), host_own._replace(partial=None)
            to_host(own, host_own)
        return host

    def finish(self, status, body, done, sampled):
        """The results of `DeviceLoop.advance`, the host's arrays up to date."""
        host = self.download()
        return (status, body, done, sampled, host.index, *host.histories)


def _nbytes(value):
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    return int(getattr(value, "nbytes", 0)) if hasattr(value, "shape") else 0


def _same(one, other):
    """Whether two (nested) tuples or lists hold the same array objects, in the same places."""
    if isinstance(one, np.ndarray) or isinstance(other, np.ndarray):
        return one is other
    if isinstance(one, (tuple, list)) and isinstance(other, (tuple, list)):
        return len(one) == len(other) and all(_same(a, b) for a, b in zip(one, other))
    return True
