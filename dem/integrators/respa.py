"""Contact sub-stepping (r-RESPA; Tuckerman, Berne & Martyna 1992): the translational stages of
``rrp2``/``rrp``/``lgvi`` when the elastic Hertz particle–particle force ``f`` (the *fast* force,
`dem.interactions.hertz.hertz_pp_fast`: central pair forces, a function of the centres alone, no
moment) moves the centres in ``M`` velocity-Verlet sub-steps of ``h/M`` inside each step, and
every other force ``F − f`` (``F`` the total) and every rotation stay on the step::

    v ← v + (h/2)(F − f)/m                      slow half kick
    M times:  v ← v + (h/2M) f/m;  x ← x + (h/M) v;  f ← f(x);  v ← v + (h/2M) f/m
    (rotations as the scheme's ``turn``; forces F⁺ at the new configuration)
    v ← v + (h/2)(F⁺ − f)/m                     slow half kick

the Trotter splitting of ``exp(h(L_slow + L_fast))`` into ``e^{hL_slow/2} (e^{hL_fast/M})^M
e^{hL_slow/2}``: symplectic, second order, time-reversible, and each sub-step is a velocity-Verlet
step of central pair forces, so linear and angular momentum stay exact to round-off. A Hertz
contact that lasts a few steps is resolved by ``M`` times as many sub-steps, which shrinks the
energy error that each onset and release leaves, as ``(h/M)²`` (docs/guide.md, contact
sub-stepping). Adjacent fast half kicks are merged (``v ← v + (h/M) f/m`` between sub-steps) and
the first and last are merged into the slow half kicks, so a step costs ``M − 1`` evaluations
of ``f`` (the last is the step's own force evaluation's) and ``M`` passes of drift over the
bodies beyond the plain map. The closing kick needs the whole ``f`` of the new configuration
even when the next step runs the plain map (the force evaluation leaves it then too,
`dem.engine._fast_text`), and a run's first step is sub-stepped when a contact overlaps at the
start.

The damping of the contacts (``restitution < 1``) and every other force stay on the step and book
their work as in the plain map. They are evaluated with the velocities set to their mean over the
drifts, ``(x⁺ − x)/h`` (the plain map's ``v_½`` there), the difference given back in the closing
kick: forces that read velocities (damping, friction's tangential increments) then see the step's
displacement, and their booked work the work they did.
"""

from numba import njit


@njit(inline="always")
def substepped(p, own):
    """Whether the next step is sub-stepped: ``p.substeps > 1`` and some Hertz contact was active
    at the last force evaluation (``own.active``, `dem.interactions.hertz.hertz_pp_forces`)."""
    if p.substeps > 1:
        for i in range(own.active.shape[0]):
            if own.active[i] > 0:
                return True
    return False


@njit(inline="always")
def _drift(i, hs, st, bodies, reference_position, limit):
    """``x ← x + hs v`` for body ``i``; whether it has now moved more than ``√limit`` since the
    neighbour list was built (a contact body only: the test of `dem.neighbors.needs_rebuild`)."""
    moved = 0.0
    for c in range(3):
        st.position[i, c] += hs * st.velocity[i, c]
        d = st.position[i, c] - reference_position[i, c]
        moved += d * d
    return moved > limit and bodies.diameter[i] > 0.0


@njit(cache=True, _nrt=False)
def open_kick(lo, hi, h, fraction, st, bodies, fast, mean, reference_position, skin):
    """Bodies ``lo ≤ i < hi``: the slow half kick merged with the first fast half kick
    (``fraction = 1/M``), ``v ← v + (h/2)(F − f + f/M)/m``, then the first drift ``x ← x + (h/M) v``,
    starting the mean velocity of the drifts, ``mean ← v/M``. Returns whether a contact body has
    moved more than ``skin/2`` since the neighbour list was built (the list is then due for a
    rebuild before ``f`` is evaluated)."""
    hs = h * fraction
    limit = 0.25 * skin * skin
    due = False
    for i in range(lo, hi):
        a = 0.5 * h * bodies.inverse_mass[i]
        for c in range(3):
            st.velocity[i, c] += a * (st.force[i, c] - (1.0 - fraction) * fast[i, c])
            mean[i, c] = fraction * st.velocity[i, c]
        due |= _drift(i, hs, st, bodies, reference_position, limit)
    return due


@njit(cache=True, _nrt=False)
def kick_drift(lo, hi, hs, fraction, st, bodies, fast, mean, reference_position, skin, last):
    """Between two sub-steps: the two fast half kicks merged, ``v ← v + hs f/m``, and the drift
    ``x ← x + hs v`` (``hs = h/M``), adding ``v/M`` to ``mean``; returns whether the neighbour list
    is due, as `open_kick`. After the ``last`` drift the velocities become their mean over the
    drifts, ``(x⁺ − x)/h``: what the plain map holds when it evaluates the forces (``v_½``), so
    that the slow forces that read velocities (damping, friction) and the work they book see the
    step's displacement; ``mean`` then keeps the difference ``v − mean`` for `close_kick`."""
    limit = 0.25 * skin * skin
    due = False
    for i in range(lo, hi):
        a = hs * bodies.inverse_mass[i]
        for c in range(3):
            st.velocity[i, c] += a * fast[i, c]
            mean[i, c] += fraction * st.velocity[i, c]
        due |= _drift(i, hs, st, bodies, reference_position, limit)
        if last:
            for c in range(3):
                held = st.velocity[i, c]
                st.velocity[i, c] = mean[i, c]
                mean[i, c] = held - mean[i, c]
    return due


@njit(cache=True, _nrt=False)
def close_kick(lo, hi, h, fraction, st, bodies, fast, mean):
    """The velocities of the last drift back (``v ← v + mean``, `kick_drift`), then the last fast
    half kick merged with the closing slow one: ``v ← v + (h/2)(F⁺ − f + f/M)/m``."""
    for i in range(lo, hi):
        a = 0.5 * h * bodies.inverse_mass[i]
        for c in range(3):
            st.velocity[i, c] += mean[i, c] + a * (st.force[i, c] - (1.0 - fraction) * fast[i, c])
