"""Material test rigs, the analysis of a run: ``python -m dem rig RUN [--test T] [--platens A,B]
[--interior F]``.

A rig squeezes a bonded specimen between two platen walls, ``A`` and ``B`` (default: the two walls
of a run with two). `write_rig` reads the run's ``walls.csv`` (the platens' points and the forces
the particles exert on them, `dem.runfiles.read_walls`) and its VTK snapshots (particles, and
bonds with their ``force``), prints the figures, and writes ``RUN/rig.csv`` and ``RUN/rig.png``.

**Platens.** The loading axis ``e`` is the direction in which ``A`` moved relative to ``B`` over
the run, pointing from ``B`` to ``A``; the gap is ``g = (p_A − p_B)·e`` (the platens are planes
normal to ``e``, so any point of theirs gives it), the platen strain ``ε = (g₀ − g)/g₀`` and the
platen force ``F = ½ (f_A − f_B)·e`` (both positive in compression).

**Specimen** (first snapshot): ``u``, ``v`` are the principal directions of the particle centres
across the axis, ``v`` that of the least spread; the specimen's width along a direction is the
extent of its spheres. ``--test auto`` (the default) takes a specimen whose width along ``v`` is
below 0.75 of that along ``u`` for a disc (Brazilian test), else a cylinder or prism (uniaxial
compression).

**Uniaxial compression.** Stress ``σ = F/A`` with ``A`` the area of the specimen's cross-section
(the convex hull of its spheres projected along ``e``); peak strength (UCS) its maximum; and from
the snapshots, in the *interior*: the particles whose first-snapshot centres lie in the central
box of the specimen (each side the fraction ``--interior``, default 0.5, of the centres' extent
along ``e``, ``u``, ``v``):

* the affine fit: the displacement gradient ``H`` minimising ``Σ |x − x₀ − c − H x₀|²`` over the
  interior particles (least squares, exact for an affine field) and its strain ``sym(H)``:
  axial strain ``ε_a = −e·sym(H)·e`` (shortening positive) and lateral strain ``ε_l`` (the mean
  of the two across ``e``, expansion positive);
* the virial stress of the bond forces in that box, ``σ_v = −(1/V) Σ_b w_b f_b ⊗ d_b`` (tension
  positive; `virial_stress`) with ``f_b`` the bond's force on its first particle, ``d_b = x_i −
  x_j``, ``w_b`` the fraction of the bond's first-snapshot segment inside the box and ``V`` the box's
  volume times ``det(1 + H)``; reported as ``−e·σ_v·e`` (compression positive). Contacts without
  bonds are not counted.

Young's modulus ``E`` is the slope of ``−e·σ_v·e`` against ``ε_a`` and Poisson's ratio ``ν`` that
of ``ε_l`` against ``ε_a`` (least-squares lines) over the snapshots up to the force peak whose
virial stress is at most half of its largest value there (all snapshots up to the peak when fewer
than two are).

**Brazilian test.** Tensile strength ``σ_t = 2 F_max/(π D t)`` with ``D`` the specimen's width along
``e`` and ``t`` its thickness (width along ``v``); the CSV's stress column is ``2F/(π D t)``.

**Periodic test** (a run in a strained periodic cell, with ``cell.csv`` and no walls: `dem.cell`,
``scenes/periodic_tension.toml``): the loading axis is the edge strained most, its strain the
cell's true strain ``ε_a = ln(L/L₀)`` (positive in tension) and its stress the cell's homogenised
stress ``σ_a = −s_aa`` (tension positive: ``s`` is positive in compression); the lateral strain is
the mean of the other two edges'. ``E`` and ``ν`` are the slopes of ``σ_a`` and of minus the
lateral strain against ``ε_a`` over the rows up to the peak stress whose stress is at most half
of it; the strength is the peak of ``|σ_a|`` (tension or compression, as the cell was strained).

``rig.csv`` has one row per row of ``walls.csv``: `COLUMNS`; the snapshot columns are filled at the
steps that have a snapshot (NaN elsewhere, and always for the Brazilian test).
"""

import csv
from pathlib import Path

import numpy as np

from .runfiles import RunFolderError, read_cell_log, read_snapshot, read_walls, snapshot_entries

COLUMNS = ("step", "t", "gap", "strain", "force", "stress", "virial_stress", "axial_strain", "lateral_strain")
TESTS = ("auto", "uniaxial", "brazilian", "periodic")
#: points per sphere outline in the cross-section's hull (area deficit below 1e-4 of the rounding)
OUTLINE = 256


def virial_stress(force, branch, volume, weight=None):
    """``σ = −(1/V) Σ_b w_b f_b ⊗ d_b`` (``σ_kl = −Σ w f_k d_l / V``; tension positive) of the pair
    forces ``force (m, 3)`` on the first body of each pair and the branch vectors ``branch (m, 3)``
    from the second body to the first; ``weight`` 1 by default. For pairwise loads it equals
    ``−(1/V) Σ_bodies F ⊗ x`` (the bodies' total forces and positions)."""
    weighted = force if weight is None else force * np.asarray(weight)[:, None]
    return -np.einsum("bk,bl->kl", weighted, branch) / volume


def affine_fit(reference, current):
    """The displacement gradient ``H`` (3 × 3) of the least-squares affine fit
    ``x − x₀ ≈ c + H x₀`` of the points ``current`` from ``reference`` (exact for an affine field;
    at least four points not in a plane)."""
    design = np.column_stack((reference - reference.mean(axis=0), np.ones(len(reference))))
    solution, *_ = np.linalg.lstsq(design, current - reference, rcond=None)
    return solution[:3].T


def inside_fraction(start, end, lower, upper):
    """The fraction of each segment ``start → end`` (``(m, 3)``) inside the box ``lower ≤ x ≤
    upper`` (Liang–Barsky clipping)."""
    first = np.zeros(len(start))
    last = np.ones(len(start))
    delta = end - start
    for k in range(3):
        with np.errstate(divide="ignore", invalid="ignore"):
            a = (lower[k] - start[:, k]) / delta[:, k]
            b = (upper[k] - start[:, k]) / delta[:, k]
        parallel = delta[:, k] == 0.0
        outside = parallel & ((start[:, k] < lower[k]) | (start[:, k] > upper[k]))
        first = np.where(parallel, first, np.maximum(first, np.minimum(a, b)))
        last = np.where(parallel, last, np.minimum(last, np.maximum(a, b)))
        last = np.where(outside, first, last)
    return np.clip(last - first, 0.0, 1.0)


def platen_history(walls, platens=None):
    """``(e, gap, force)`` of the platens ``(A, B)`` (default: the two walls of a run with two):
    the loading axis, and per row of ``walls`` the gap and the platen force (module docstring)."""
    count = walls["point"].shape[1]
    if platens is None:
        if count != 2:
            raise RunFolderError(f"walls.csv has {count} walls: say which two are the platens (--platens A,B)")
        platens = (0, 1)
    a, b = platens
    if not (0 <= a < count and 0 <= b < count and a != b):
        raise RunFolderError(f"--platens {a},{b}: two different walls of the {count} in walls.csv (from 0)")
    relative = walls["point"][:, a] - walls["point"][:, b]
    moved = relative[-1] - relative[0]
    if not np.linalg.norm(moved) > 0.0:
        raise RunFolderError(f"walls.csv: platens {a} and {b} did not move relative to each other")
    e = moved / np.linalg.norm(moved)
    e = e if relative[0] @ e > 0 else -e
    return e, relative @ e, 0.5 * (walls["force"][:, a] - walls["force"][:, b]) @ e


def specimen_frame(position, e):
    """``(u, v)``: unit vectors across ``e``, the principal directions of the centres' spread
    across it, ``v`` that of the least (``e, u, v`` right-handed); for a spread the same in every
    direction across ``e`` (a cylinder, a square prism), two axes of the coordinate frame when
    ``e`` is one."""
    helper = np.eye(3)[np.argmin(np.abs(e))]
    p = np.cross(e, helper)
    p /= np.linalg.norm(p)
    q = np.cross(e, p)
    across = np.column_stack((position @ p, position @ q))
    values, vectors = np.linalg.eigh(np.cov(across.T))
    if values[1] - values[0] <= 1e-9 * values[1]:   # round (a cylinder), square: no preferred direction
        return p, q
    u = vectors[0, 1] * p + vectors[1, 1] * q    # the largest eigenvalue's vector
    return u, np.cross(e, u)


def width(position, radius, direction):
    """The extent of the spheres along ``direction``."""
    reach = position @ direction
    return (reach + radius).max() - (reach - radius).min()


def cross_section(position, radius, u, v):
    """The area of the convex hull of the spheres' outlines projected on the plane ``(u, v)``."""
    from scipy.spatial import ConvexHull  # imported here: scipy costs a second (dem/packing.py)

    angle = np.linspace(0.0, 2.0 * np.pi, OUTLINE, endpoint=False)
    ring = np.column_stack((np.cos(angle), np.sin(angle)))
    centres = np.column_stack((position @ u, position @ v))
    outline = (centres[:, None, :] + radius[:, None, None] * ring[None]).reshape(-1, 2)
    return ConvexHull(outline).volume


def _slope(x, y):
    """The slope of the least-squares line through ``(x, y)`` (NaN with fewer than two points)."""
    if len(x) < 2 or np.ptp(x) == 0.0:
        return float("nan")
    return float(np.polyfit(x, y, 1)[0])


def _interior_box(position, frame, interior):
    """``(lower, upper)`` in the ``frame`` coordinates: the central box of the centres' extent."""
    local = position @ frame.T
    middle = 0.5 * (local.max(axis=0) + local.min(axis=0))
    half = 0.5 * interior * (local.max(axis=0) - local.min(axis=0))
    return middle - half, middle + half


def _snapshot_measures(run_dir, entries, first, frame, interior):
    """Per snapshot ``(step, virial stress, axial strain, lateral strain)`` in the interior box."""
    lower, upper = _interior_box(first["position"], frame, interior)
    local0 = first["position"] @ frame.T
    inside = np.all((local0 >= lower) & (local0 <= upper), axis=1)
    if inside.sum() < 4:
        raise RunFolderError(f"{run_dir}: only {inside.sum()} particles in the interior box (--interior "
                             f"{interior}): too few for an affine fit")
    bonds = first["bonds"]
    weight = inside_fraction(local0[bonds[:, 0]], local0[bonds[:, 1]], lower, upper)
    volume0 = np.prod(upper - lower)
    rows = []
    for entry in entries:
        snapshot = read_snapshot(run_dir, entry=entry)
        if len(snapshot["position"]) != len(first["position"]) or len(snapshot["bonds"]) != len(bonds):
            raise RunFolderError(f"{run_dir / entry[2]}: not the particles and bonds of the first snapshot")
        gradient = affine_fit(first["position"][inside], snapshot["position"][inside])
        strain = frame @ (0.5 * (gradient + gradient.T)) @ frame.T
        position = snapshot["position"]
        stress = frame @ virial_stress(snapshot["bond_force"], position[bonds[:, 0]] - position[bonds[:, 1]],
                                       volume0 * np.linalg.det(np.eye(3) + gradient), weight) @ frame.T
        rows.append((entry[0], -stress[0, 0], -strain[0, 0], 0.5 * (strain[1, 1] + strain[2, 2])))
    return np.array(rows).reshape(-1, 4)


def analyse(run_dir, test="auto", platens=None, interior=0.5):
    """The rig figures of ``run_dir`` (module docstring): a dict with ``test``, ``rows`` (one per
    row of ``walls.csv``, `COLUMNS`) and the figures: for ``"uniaxial"`` ``area``, ``peak_stress``,
    ``peak_strain``, ``residual`` (the lowest stress after the peak over the peak),
    ``young_modulus``, ``poisson_ratio``; for ``"brazilian"`` ``diameter``, ``thickness``,
    ``peak_force``, ``tensile_strength``. Raises `RunFolderError`."""
    run_dir = Path(run_dir)
    if test not in TESTS:
        raise RunFolderError(f"--test {test}: must be one of {', '.join(TESTS)}")
    if not 0.0 < interior <= 1.0:
        raise RunFolderError(f"--interior {interior}: must be in (0, 1]")
    periodic = (run_dir / "cell.csv").is_file() and not (run_dir / "walls.csv").is_file()
    if test == "periodic" or test == "auto" and periodic:
        return _periodic(run_dir)
    walls = read_walls(run_dir)
    e, gap, force = platen_history(walls, platens)
    entries = snapshot_entries(run_dir)
    first = read_snapshot(run_dir, entry=entries[0])
    position, radius = first["position"], 0.5 * first["diameter"]
    u, v = specimen_frame(position, e)
    if test == "auto":
        test = "brazilian" if width(position, radius, v) < 0.75 * width(position, radius, u) else "uniaxial"
    rows = np.full((len(gap), len(COLUMNS)), np.nan)
    rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 4] = walls["step"], walls["t"], gap, force
    rows[:, 3] = (gap[0] - gap) / gap[0]
    peak = int(np.argmax(force))
    out = dict(test=test, rows=rows, axis=e, peak_step=int(walls["step"][peak]), peak_force=float(force[peak]))
    if test == "brazilian":
        diameter, thickness = width(position, radius, e), width(position, radius, v)
        rows[:, 5] = 2.0 * force / (np.pi * diameter * thickness)
        out.update(diameter=diameter, thickness=thickness, tensile_strength=float(rows[peak, 5]))
        return out
    area = cross_section(position, radius, u, v)
    rows[:, 5] = force / area
    measures = _snapshot_measures(run_dir, entries, first, np.array([e, u, v]), interior)
    where = {step: k for k, step in enumerate(walls["step"])}
    for step, stress, axial, lateral in measures:
        if int(step) in where:
            rows[where[int(step)], 6:9] = stress, axial, lateral
    before = measures[measures[:, 0] <= out["peak_step"]]
    window = before[before[:, 1] <= 0.5 * before[:, 1].max()] if len(before) else before
    window = window if len(window) >= 2 else before
    out.update(area=area, peak_stress=float(rows[peak, 5]), peak_strain=float(rows[peak, 3]),
               residual=float(force[peak:].min() / force[peak]) if force[peak] > 0 else float("nan"),
               young_modulus=_slope(window[:, 2], window[:, 1]), poisson_ratio=_slope(window[:, 2], window[:, 3]),
               snapshots=measures)
    return out


def _periodic(run_dir):
    """`analyse` of a run in a strained periodic cell (module docstring)."""
    log = read_cell_log(run_dir)
    strains = np.array([log[f"strain_{c}{c}"] for c in "xyz"])
    axis = int(np.argmax(np.abs(strains[:, -1])))
    if strains[axis, -1] == 0.0:
        raise RunFolderError(f"{run_dir}: the cell's edges were not strained (cell.csv): not a periodic test")
    lateral = [a for a in range(3) if a != axis]
    strain, stress = strains[axis], -log[f"s_{'xyz'[axis] * 2}"]
    sense = np.sign(strain[-1])  # tension +1, compression -1: the figures are for |stress|
    peak = int(np.argmax(sense * stress))
    across = strains[lateral].mean(axis=0)
    rows = np.full((len(strain), len(COLUMNS)), np.nan)
    rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3] = log["step"], log["t"], log[f"L_{'xyz'[axis]}"], strain
    rows[:, 5] = rows[:, 6] = stress
    rows[:, 7], rows[:, 8] = strain, across
    before = np.arange(peak + 1)
    window = before[sense * stress[before] <= 0.5 * sense * stress[peak]]
    window = window if len(window) >= 2 else before
    return dict(test="periodic", rows=rows, axis=np.eye(3)[axis], sense="tension" if sense > 0 else "compression",
                peak_step=int(log["step"][peak]), peak_stress=float(stress[peak]), peak_strain=float(strain[peak]),
                young_modulus=_slope(strain[window], stress[window]),
                poisson_ratio=-_slope(strain[window], across[window]), rows_fitted=len(window))


def summary(result):
    """The figures of `analyse` as lines of text."""
    if result["test"] == "periodic":
        axis = "xyz"[int(np.argmax(result["axis"]))]
        return [f"periodic {result['sense']} along {axis} (cell.csv): peak stress {result['peak_stress']:.6g} at true "
                f"strain {result['peak_strain']:.6g} (step {result['peak_step']})",
                f"Young's modulus E = {result['young_modulus']:.6g}, Poisson's ratio ν = {result['poisson_ratio']:.4g} "
                f"(the cell's stress and strains, {result['rows_fitted']} rows)"]
    if result["test"] == "brazilian":
        return [f"Brazilian test: peak force F = {result['peak_force']:.6g} at step {result['peak_step']}, "
                f"D = {result['diameter']:.6g}, t = {result['thickness']:.6g}",
                f"tensile strength σ_t = 2F/(π D t) = {result['tensile_strength']:.6g}"]
    return [f"uniaxial compression: cross-section A = {result['area']:.6g}; peak stress (UCS) F/A = "
            f"{result['peak_stress']:.6g} at platen strain {result['peak_strain']:.6g} (step {result['peak_step']}); "
            f"lowest stress after it {100 * result['residual']:.3g} % of the peak",
            f"Young's modulus E = {result['young_modulus']:.6g}, Poisson's ratio ν = {result['poisson_ratio']:.4g} "
            f"(interior virial stress and affine strain, {len(result['snapshots'])} snapshots)"]


def plot_rig(result, path, title):
    """``rig.png``: stress against strain (platens; interior virial against affine strain), and
    for the uniaxial test lateral against axial affine strain."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    if result["test"] == "periodic":
        return _plot_periodic(result, path, title)
    uniaxial = result["test"] == "uniaxial"
    figure, axes = plt.subplots(1, 2 if uniaxial else 1, figsize=(11.0 if uniaxial else 6.4, 4.4),
                                layout="constrained", squeeze=False)
    left = axes[0, 0]
    left.plot(rows[:, 3], rows[:, 5], label="platens: F/A" if uniaxial else "platens: 2F/(π D t)")
    left.plot(rows[:, 3][np.argmax(rows[:, 4])], rows[:, 5].max(), "o", color="C3", label="peak")
    left.set_xlabel("platen strain (g₀ − g)/g₀")
    left.set_ylabel("stress [scene units], compression positive" if uniaxial else "tensile stress [scene units]")
    if uniaxial:
        measures = result["snapshots"]
        left.plot(measures[:, 2], measures[:, 1], ".", color="C1", label="interior: bond virial vs affine strain")
        right = axes[0, 1]
        right.plot(measures[:, 2], measures[:, 3], ".-", color="C1")
        right.set_xlabel("interior axial strain ε_a (affine fit)")
        right.set_ylabel("interior lateral strain ε_l")
        right.set_title(f"E = {result['young_modulus']:.4g}, ν = {result['poisson_ratio']:.3g}")
        right.grid(True, alpha=0.3)
    left.set_title(title)
    left.legend()
    left.grid(True, alpha=0.3)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _plot_periodic(result, path, title):
    """``rig.png`` of a periodic test: stress and lateral strain against the axial strain."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.4), layout="constrained")
    left.plot(rows[:, 3], rows[:, 5], label="cell: homogenised stress")
    left.plot(result["peak_strain"], result["peak_stress"], "o", color="C3", label="peak")
    left.set_xlabel("true strain ln(L/L₀)")
    left.set_ylabel("stress [scene units], tension positive")
    left.set_title(title)
    left.legend()
    left.grid(True, alpha=0.3)
    right.plot(rows[:, 3], rows[:, 8], ".-", color="C1")
    right.set_xlabel("axial true strain")
    right.set_ylabel("lateral true strain (mean of the other edges)")
    right.set_title(f"E = {result['young_modulus']:.4g}, ν = {result['poisson_ratio']:.3g}")
    right.grid(True, alpha=0.3)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def write_rig(run_dir, test="auto", platens=None, interior=0.5):
    """`analyse` ``run_dir``; write ``rig.csv`` and ``rig.png`` there. Returns the result."""
    run_dir = Path(run_dir)
    result = analyse(run_dir, test, platens, interior)
    with open(run_dir / "rig.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(COLUMNS)
        for row in result["rows"]:
            writer.writerow([int(row[0])] + [repr(float(value)) for value in row[1:]])
    plot_rig(result, run_dir / "rig.png", f"{run_dir.name}: {result['test']}")
    return result
