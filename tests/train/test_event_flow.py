"""The pieces of the event-driven integrator (``train/event_flow.py``) alone: the Illinois root finder, the
step-size controller (and where it agrees with diffrax's), the event location on a known motion, the kink
decisions and the event buffer. The whole integrator is tested in ``test_flow_exact.py``; its outputs are
checked bitwise against stored references by ``benchmarks/event_flow_reference.py``."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.flatten_util import ravel_pytree

from twolayer.activations import make_activation
from twolayer.config import load_config
from twolayer.train import Simulation
from twolayer.train import event_flow as ef
from twolayer.train import kinks

# -- the Illinois root finder -------------------------------------------------------------------------------------


def _illinois(f, lo, hi, steps, halving=True):
    """Brackets of Illinois on a scalar f (f >= 0 at lo, < 0 at hi), as the landing runs it; plain regula falsi
    without ``halving``."""
    b = ef.Bracket(jnp.float64(lo), jnp.float64(hi), f(jnp.float64(lo)), f(jnp.float64(hi)), jnp.int32(0))
    out = []
    for _ in range(steps):
        x = ef.illinois_point(b)
        fx = f(x)
        b = ef.illinois_update(b, x, fx, fx < 0)
        if not halving:
            b = b._replace(side=jnp.int32(0))
        out.append(b)
    return out


def test_illinois_finds_a_known_root():
    """cos x = x on [0, 1] (x* = 0.739085133215160...): the bracket keeps the root, and within 7 steps its lo end is
    the root to 1 ulp (f(lo) = 0 in float64)."""
    root = 0.7390851332151607
    brackets = _illinois(lambda x: jnp.cos(x) - x, 0.0, 1.0, 7)
    for b in brackets:
        assert float(b.lo) - 1e-16 <= root < float(b.hi)
        assert float(b.f_lo) >= 0 > float(b.f_hi)
    assert float(brackets[-1].lo) == pytest.approx(root, abs=2e-16)


def test_illinois_closes_both_ends_where_regula_falsi_keeps_one():
    """On the convex 1/2 - x^8 plain regula falsi moves only lo (the bracket stays [0.91, 1]); Illinois halves the
    kept value and closes the bracket to 1e-12 within 20 steps."""
    f = lambda x: 0.5 - x**8  # noqa: E731
    root = 0.5 ** (1 / 8)
    plain = _illinois(f, 0.0, 1.0, 20, halving=False)
    assert float(plain[-1].hi) == 1.0 and float(plain[-1].hi - plain[-1].lo) > 0.05
    fast = _illinois(f, 0.0, 1.0, 20)
    assert float(fast[-1].hi - fast[-1].lo) < 1e-12
    assert float(fast[-1].lo) <= root <= float(fast[-1].hi)


def _multiplier_illinois(f, lo, hi, v_lo, v_hi, found):
    """The dense-output root finder as written before the refactor (the kept end's value as v * m with a halved
    multiplier m): the reference ``illinois_pairs`` must reproduce bit for bit."""
    one = jnp.asarray(1.0, v_lo.dtype)
    state = (lo, hi, v_lo, v_hi, ef.first_min(v_hi), one, one, jnp.int32(0), jnp.int32(0))

    def illinois(s):
        lo, hi, v_lo, v_hi, p, m_lo, m_hi, side, it = s
        switch = (v_hi[p] >= -0.25) & (jnp.min(v_hi) < -0.25)
        p = jnp.where(switch, ef.first_min(v_hi), p).astype(jnp.int32)
        m_lo, m_hi = jnp.where(switch, 1.0, m_lo), jnp.where(switch, 1.0, m_hi)
        f_lo, f_hi = v_lo[p] * m_lo, v_hi[p] * m_hi
        theta = hi - f_hi * (hi - lo) / jnp.where(f_hi != f_lo, f_hi - f_lo, -1.0)
        theta = jnp.where((theta > lo) & (theta < hi), theta, 0.5 * (lo + hi))
        v = f(theta)
        below = jnp.min(v) < 0
        new_p = jnp.where(below & (v[p] >= 0), ef.first_min(v), p).astype(jnp.int32)
        same = new_p == p
        m_lo = jnp.where(below, jnp.where(same & (side == -1), 0.5 * m_lo, jnp.where(same, m_lo, 1.0)), 1.0)
        m_hi = jnp.where(below, 1.0, jnp.where(side == 1, 0.5 * m_hi, m_hi))
        return (jnp.where(below, lo, theta), jnp.where(below, theta, hi), jnp.where(below, v_lo, v),
                jnp.where(below, v, v_hi), new_p, m_lo, m_hi, jnp.where(below, -1, 1).astype(jnp.int32), it + 1)

    def more(s):
        lo, hi, _, v_hi, p, _, _, _, it = s
        done = (v_hi[p] >= -0.25) & (jnp.min(v_hi) >= -0.25)
        return found & ~done & (hi - lo > ef.ROOT_BRACKET) & (it < ef.ILLINOIS_STEPS)

    lo, hi, v_lo, v_hi, *_ = lax.while_loop(more, illinois, state)
    return lo, hi, v_lo, v_hi


@pytest.mark.parametrize("seed", range(6))
def test_illinois_pairs_is_the_dense_output_root_finder_bitwise(seed):
    """``illinois_pairs`` (one Illinois bracket, the pair it follows switched where another pair is past first)
    gives bit for bit the brackets of the multiplier form it replaced, on random quadratics in tolerance units
    (some pairs crossing, steep ones taking over); and what it returns is the earliest root: every pair at hi
    in [-0.25, ...), one below 0, hi within 1e-6 above the earliest crossing."""
    rng = np.random.default_rng(seed)
    P = 12
    roots = rng.uniform(0.05, 1.6, P)  # pairs with a root past 1 do not cross in the step
    scale = 10.0 ** rng.uniform(2, 8, P)
    curve = rng.uniform(0.0, 2.0, P)
    roots[0] = min(roots[0], 0.9)  # at least one crossing

    def f(theta):
        return jnp.asarray(scale) * (jnp.asarray(roots) - theta) * (1.0 + jnp.asarray(curve) * theta)

    lo, hi = jnp.float64(0.0), jnp.float64(1.0)
    args = (f, lo, hi, f(lo), f(hi), jnp.asarray(True))
    got = jax.jit(lambda: ef.illinois_pairs(*args))()
    ref = jax.jit(lambda: _multiplier_illinois(*args))()
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    v_hi = np.asarray(got[3])
    earliest = roots[roots < 1].min()
    assert v_hi.min() < 0 and v_hi.min() >= -0.25
    assert earliest <= float(got[1]) <= earliest + 1e-6
    idle = jax.jit(lambda: ef.illinois_pairs(f, lo, hi, f(lo), f(hi), jnp.asarray(False)))()
    assert float(idle[0]) == 0.0 and float(idle[1]) == 1.0  # not active: the bracket as given


# -- the step-size controller ----------------------------------------------------------------------------------

def test_step_control_error_ratio_and_decisions():
    """The error ratio against atol + rtol (max(|y0|, |y1|) + 1e-3 rms); I control accepts at ratio <= 1, grows
    by 0.9 ratio^-1/5 within [0.2, 10] after an accepted step and at most 1 after a rejected one; a non-finite
    step shrinks by 0.2; a landing re-step (not a trial) is never accepted."""
    control = ef.StepControl(rtol=1e-6, atol=1e-12, expo_i=1 / 5, expo_p=0.0)
    y0, y1 = jnp.array([1.0, -2.0, 0.0]), jnp.array([1.5, -1.0, 0.0])
    scale = 1e-12 + 1e-6 * (jnp.array([1.5, 2.0, 0.0]) + 1e-3 * 3.0)
    assert float(control.error_ratio(0.5 * scale, y0, y1, 3.0)) == pytest.approx(0.5, rel=1e-15)
    one = jnp.asarray(1.0)

    def adapt(ratio, ok=True, trial=True, prev=one):
        accept, factor, inv = control.adapt(jnp.asarray(ratio), prev, jnp.asarray(ok), jnp.asarray(trial))
        return bool(accept), float(factor), float(inv)

    assert adapt(0.5) == (True, pytest.approx(0.9 * 2 ** 0.2), 2.0)
    assert adapt(1.0)[0]  # accepted at exactly 1
    assert adapt(2.0) == (False, pytest.approx(0.9 * 0.5 ** 0.2), 0.5)
    assert adapt(1e-30)[:2] == (True, 10.0)  # FACTOR_MAX (inv is capped at 1e10)
    assert adapt(0.999e-3)[1] < 10.0
    assert adapt(1e8)[:2] == (False, 0.2)  # FACTOR_MIN
    assert adapt(0.5, trial=False) == (False, 1.0, 2.0)  # a re-step: the size is kept (the caller keeps h)
    assert adapt(0.5, ok=False)[:2] == (False, 0.2)
    pi = ef.StepControl(rtol=1e-6, atol=1e-12, expo_i=0.7 / 5, expo_p=0.3 / 5)
    factor = float(pi.adapt(jnp.asarray(0.25), jnp.asarray(8.0), jnp.asarray(True), jnp.asarray(True))[1])
    assert factor == pytest.approx(0.9 * 4 ** 0.14 * 8 ** -0.06, rel=1e-14)
    # the first step: 1% of |y0| / |f| in the error norm, 1e-6 of the interval where either norm is ~0, within it
    h0 = float(control.initial_step(y0, jnp.array([2.0, -4.0, 0.0]), 3.0, 10.0))
    assert h0 == pytest.approx(0.005, rel=1e-12)
    assert float(control.initial_step(jnp.zeros(3), jnp.ones(3), 0.0, 10.0)) == pytest.approx(1e-5)
    assert float(control.initial_step(y0, 1e-20 * jnp.ones(3), 3.0, 10.0)) == pytest.approx(1e-5)
    assert float(control.initial_step(y0, jnp.array([2.0, -4.0, 0.0]), 3.0, 1e-3)) == 1e-3


@pytest.mark.parametrize(("pcoeff", "icoeff"), [(0.0, 1.0), (0.3, 0.4)])
@pytest.mark.parametrize("ratio", [0.02, 0.3, 0.8, 3.0, 40.0])
def test_step_control_agrees_with_diffrax_where_their_rules_coincide(pcoeff, icoeff, ratio):
    """With diffrax's atol taken as atol + rtol 1e-3 rms, its PIDController accepts and rejects the same steps and
    proposes the same next step (to rounding) wherever its clipping rules are ours: accepted steps that grow and
    rejected ones that shrink below SAFETY (``StepControl`` says where the two differ)."""
    import diffrax

    rtol, atol, rms, order = 1e-6, 1e-14, 0.7, 5
    rng = np.random.default_rng(1)
    y0 = jnp.asarray(rng.normal(size=9))
    y1 = y0 + 1e-3 * jnp.asarray(rng.normal(size=9))
    scale = atol + rtol * (jnp.maximum(jnp.abs(y0), jnp.abs(y1)) + ef.RMS_FLOOR * rms)
    err = jnp.asarray(rng.normal(size=9)) * scale
    err = err * ratio / jnp.sqrt(jnp.mean((err / scale) ** 2))
    ours = ef.StepControl(rtol, atol, (icoeff + pcoeff) / order, pcoeff / order)
    prev = jnp.asarray(1.7)
    accept, factor, inv = ours.adapt(ours.error_ratio(err, y0, y1, rms), prev, jnp.asarray(True), jnp.asarray(True))
    pid = diffrax.PIDController(rtol=rtol, atol=atol + rtol * ef.RMS_FLOOR * rms, pcoeff=pcoeff, icoeff=icoeff,
                                safety=ef.SAFETY, factormin=ef.FACTOR_MIN, factormax=ef.FACTOR_MAX)
    keep, t0, t1, _, state, _ = pid.adapt_step_size(0.0, 1.0, y0, y1, None, err, order,
                                                    (prev, jnp.asarray(1.0), jnp.asarray(False)))
    assert bool(keep) == bool(accept)
    if (bool(accept) and float(factor) >= 1.0) or (not bool(accept) and float(factor) <= ef.SAFETY):
        assert float(t1 - t0) == pytest.approx(float(factor), rel=1e-12)
        if bool(accept):
            assert float(state[0]) == pytest.approx(float(inv), rel=1e-12)


# -- event location and kink decisions on a small problem ---------------------------------------------------------

def _setup(tmp_path, X, y, W, v, activation="relu", start=0.0, stop=1.0):
    """(Setup, State) of one advance of flow_exact from (W, v) on the data (X, y), exp-sum loss."""
    np.savez(tmp_path / "data.npz", X=np.asarray(X, float), y=np.asarray(y, float))
    np.savez(tmp_path / "init.npz", W=np.asarray(W, float), v=np.asarray(v, float))
    cfg = {"name": "pieces", "data": {"kind": "file", "path": str(tmp_path / "data.npz")},
           "init": {"kind": "file", "path": str(tmp_path / "init.npz")},
           "model": {"kind": "two_layer", "activation": activation, "width": len(v)},
           "loss": {"kind": "exponential", "reduction": "sum"},
           "train": {"method": "flow_exact", "time": stop, "rtol": 1e-10, "atol": 1e-30},
           "observe": {"points": 2, "metrics": ["loss"]}}
    sim = Simulation(load_config(cfg))
    params = {k: jnp.asarray(a[0]) for k, a in sim.initial_state().params.items()}
    options = ef.Options.of(sim.cfg.train, ef.PLAIN)
    s = ef.Setup.of(options, ef.PLAIN, sim.ctx, params, {"weight_decay": jnp.asarray(0.0)}, jnp.asarray(start),
                    jnp.asarray(stop))
    modes, _ = s.initial_modes(s.y_start)
    return s, ef.initial_state(s, modes, rows=4, healthy=jnp.asarray(True))


def test_locate_crossing_on_a_known_motion(tmp_path):
    """w = (0.5, 0.3) moving at constant velocity (-1, 0) (every stage derivative the same, so the dense output is
    the line): the pair (x_1 = e_1, neuron 0) crosses at theta = 0.5 of a unit step, located within ROOT_BRACKET
    just past the plane; the first node past it brackets it for the landing; nothing is found in a shorter step
    or in a step that was not accepted."""
    s, st = _setup(tmp_path, [[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0], [[0.5, 0.3]], [1.0])
    assert np.asarray(st.modes).tolist() == [[1], [1]]
    velocity = ravel_pytree({"W": jnp.array([[-1.0, 0.0]]), "v": jnp.zeros(1)})[0]
    F = jnp.tile(velocity, (s.options.tab.stages, 1))
    theta, pair, floor, theta_node, phi_node = ef.locate_crossing(s, st, F, jnp.asarray(1.0), jnp.asarray(True))
    tol = ef.EVENT_TOL * math.hypot(0.5, 0.3)
    assert 0.5 + 1.5 * tol <= float(theta) <= 0.5 + 1.5 * tol + ef.ROOT_BRACKET
    assert int(pair) == 0 and np.all(np.asarray(floor) == 0)
    assert float(theta_node) > float(theta) and float(phi_node) < 0
    assert float(ef.locate_crossing(s, st, F, jnp.asarray(0.4), jnp.asarray(True))[0]) == 2.0
    assert float(ef.locate_crossing(s, st, F, jnp.asarray(1.0), jnp.asarray(False))[0]) == 2.0
    # the landing's measure of the same pair: 0 at 1.5 tol past the plane, negative beyond
    y_at = s.y_start + 0.5 * velocity
    assert float(ef.pair_margin(s, st._replace(pair=jnp.int32(0)), y_at)) == pytest.approx(1.5, abs=1e-3)


def _scan_phi(s, st, F, hstep):
    """phi [K, n, h] of every pair at the sign-scan nodes, computed as ``scan_nodes`` computes it."""
    W = s.parts(st.y)[0]
    live = s.is_rep & (st.modes != 0)
    tol = s.tolerance(W)
    tol = jnp.where(tol > 0, tol, 1e-300)
    z0 = s.X @ W.T
    floor = jnp.minimum(jnp.where(live, st.modes * z0 + tol, 0.0), 0.0)
    P = jnp.einsum("nd,shd->snh", s.X, jax.vmap(lambda z: s.parts(z)[0])(F))
    B = jnp.asarray(s.options.dense_nodes)
    z = z0[None] + hstep * jnp.einsum("ks,snh->knh", B, P)
    return jnp.where(live[None], (st.modes[None] * z + 1.5 * tol[None] - floor[None]) / tol[None], jnp.inf)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_may_cross_flags_every_pair_the_node_scan_finds_past_its_plane(tmp_path, seed):
    """The screen of ``locate_crossing`` is conservative: over random states and stage derivatives (some pairs a few
    tol from their plane, steps from 1e-9 to 10), every pair with phi < 0 at some node is flagged by ``may_cross``,
    including where the stages push a pair at its plane as hard as the bound allows; and it is not the whole set (a
    short step flags only the pairs near their plane). Where nothing is flagged the screened ``locate_crossing``
    returns theta = 2, and where a crossing exists the same values as the unscreened ``scan_nodes``."""
    rng = np.random.default_rng(seed)
    n, h, d = 12, 5, 3
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(h, d))
    # put some pairs within a few tol of their plane: w_0 nearly orthogonal to x_0, x_1
    W[0] -= (W[0] @ X[0]) / (X[0] @ X[0]) * X[0] * (1 - 3e-12)
    s, st = _setup(tmp_path, X, np.sign(rng.normal(size=n)), W, rng.normal(size=h))
    S = s.options.tab.stages
    locate = jax.jit(lambda F, hstep: ef.locate_crossing(s, st, F, hstep, jnp.asarray(True)))

    @jax.jit
    def scan(F, hstep):  # the node scan alone, compiled as locate_crossing runs it (one program)
        W0 = s.parts(st.y)[0]
        live = s.is_rep & (st.modes != 0)
        tol = s.tolerance(W0)
        tol = jnp.where(tol > 0, tol, 1e-300)
        z0 = s.X @ W0.T
        floor = jnp.minimum(jnp.where(live, st.modes * z0 + tol, 0.0), 0.0)
        FW = jax.vmap(lambda z: s.parts(z)[0])(F)
        return ef.scan_nodes(s, live, st.modes, z0, tol, floor, FW, hstep, jnp.asarray(True))

    crossed_any = 0
    for trial in range(40):
        hstep = jnp.asarray(10.0 ** rng.uniform(-9, 1))
        FW = rng.normal(size=(S, h, d)) * 10.0 ** rng.uniform(-3, 1)
        if trial % 3 == 0:  # the stages push pair (i, 0) straight at its plane, as hard as the bound allows at
            # the last node (theta = 1, where |B_s| is largest), just far enough to cross there
            i = int(rng.integers(n))
            z0 = float(X[i] @ W[0])
            B1 = np.asarray(s.options.dense_nodes)[-1]
            speed = abs(z0) * (1 + rng.uniform(0, 0.02)) / (float(hstep) * np.linalg.norm(X[i]) * np.abs(B1).sum())
            FW[:, 0] = -np.sign(z0) * np.sign(B1)[:, None] * X[i] / np.linalg.norm(X[i]) * speed
        F = jnp.stack([ravel_pytree({"W": jnp.asarray(f), "v": jnp.zeros(h)})[0] for f in FW])
        phi = _scan_phi(s, st, F, hstep)
        crossed = np.asarray(jnp.any(phi < 0, axis=0))
        W0 = s.parts(st.y)[0]
        flagged = np.asarray(ef.may_cross(s, s.is_rep & (st.modes != 0), st.modes, s.X @ W0.T, FW, hstep))
        assert np.all(flagged[crossed]), (trial, np.argwhere(crossed & ~flagged))
        crossed_any += int(crossed.any())
        got = locate(F, hstep)
        if not crossed.any():
            assert float(got[0]) == 2.0
        else:
            ref = scan(F, hstep)
            assert [np.asarray(a).tolist() for a in ref] == [np.asarray(got[k]).tolist() for k in (0, 1, 3, 4)]
    assert crossed_any >= 8  # the trials do cross
    W0 = s.parts(st.y)[0]
    tiny = jnp.asarray(1e-12)
    F = jnp.stack([ravel_pytree({"W": jnp.asarray(rng.normal(size=(h, d))), "v": jnp.zeros(h)})[0] for _ in range(S)])
    FW = jax.vmap(lambda z: s.parts(z)[0])(F)
    few = np.asarray(ef.may_cross(s, s.is_rep & (st.modes != 0), st.modes, s.X @ W0.T, FW, tiny))
    assert 1 <= few.sum() <= 4  # the pairs (0, 0), (1, 0) put near their plane, not the other 58


def test_run_if_runs_only_where_a_seed_needs_it():
    """``run_if``: fn's value where pred, the default elsewhere (alone and vmapped), and under vmap in a loop with an
    input that changes every iteration fn is not run where no seed needs it (plain loop-invariant code would be
    hoisted out of a 0-trip loop and run anyway: the control)."""
    def fn(a):
        for _ in range(20):
            a = jnp.sin(a) @ a.T @ a
        return a

    x = jnp.full((24, 24), 0.01)
    default = jnp.zeros((24, 24))
    assert np.array_equal(np.asarray(ef.run_if(True, fn, x, default)), np.asarray(fn(x)))
    assert np.array_equal(np.asarray(ef.run_if(False, fn, x, default)), np.zeros((24, 24)))
    batched = jax.vmap(lambda p, a: ef.run_if(p, fn, a, default))(jnp.array([True, False]), jnp.stack([x, 2 * x]))
    assert np.array_equal(np.asarray(batched[0]), np.asarray(fn(x))) and not np.any(np.asarray(batched[1]))

    def hoistable(pred, a):  # the operand passed through unchanged: XLA hoists fn out of the 0/1-trip loop
        return lax.while_loop(lambda c: c[0], lambda c: (False, c[1], fn(c[1])), (pred, a, default))[2]

    def loop(when):
        def f(a, pred):
            return lax.fori_loop(0, 300, lambda i, acc: acc + when(pred, a + acc)[0, 0], jnp.zeros(()))
        return jax.jit(jax.vmap(f))

    import time
    xs, preds = jnp.stack([x, x, x]), jnp.array([False, False, False])
    walls = {}
    for name, when in (("run_if", lambda p, a: ef.run_if(p, fn, a, default)), ("hoistable", hoistable)):
        prog = loop(when)
        jax.block_until_ready(prog(xs, preds))
        started = time.perf_counter()
        jax.block_until_ready(prog(xs, preds))
        walls[name] = time.perf_counter() - started
    assert walls["run_if"] < 0.2 * walls["hoistable"], walls


def test_new_modes_decision_table():
    """One candidate of each kind: a crossing, a Filippov slide, the release of a slide (recorded as release), a
    slide that goes on, a pair that is not a candidate, both fields tangent (stays where z now is); and with
    sigma'(0) = 0.5 the E.3 configuration, which has no Caratheodory solution."""
    relu = make_activation("relu").piecewise_linear
    zp = jnp.array([[1.0, -1.0, 1.0, -1.0, 1.0, 0.0]])
    zm = jnp.array([[2.0, 1.0, 2.0, 1.0, 1.0, 0.0]])
    modes = jnp.array([[-1, 1, 0, 0, -1, 1]], jnp.int8)
    zsign = jnp.array([[1, 1, 0, 0, -1, -1]], jnp.int8)
    candidates = jnp.array([[True, True, True, True, False, True]])
    new, kind, changed, failed, lam = ef.new_modes(zp, zm, modes, zsign, candidates, relu, jnp.int8(-1), 1e-8,
                                                   jnp.int32(1))
    assert np.asarray(new).tolist() == [[1, 0, 1, 0, -1, -1]]
    names = [kinks.KIND_NAMES.get(int(k), "-") for k in np.asarray(kind)[0]]
    assert names[:3] == ["cross", "slide", "release"] and np.asarray(changed).tolist() == [[True, True, True, False,
                                                                                           False, False]]
    assert float(lam[0, 1]) == 0.5 and not bool(np.any(failed))
    relu_a = make_activation({"name": "relu", "grad_at_zero": 0.5}).piecewise_linear
    _, kind, _, failed, _ = ef.new_modes(jnp.array([[-1.0]]), jnp.array([[0.0]]), jnp.array([[1]], jnp.int8),
                                         jnp.array([[0]], jnp.int8), jnp.array([[True]]), relu_a, jnp.int8(-1), 1e-8,
                                         jnp.int32(1))
    assert int(kind[0, 0]) == kinks.FAIL and bool(failed[0, 0])


def test_record_writes_rows_in_order_and_stops_at_its_limit(tmp_path):
    """record appends one row per marked pair in row-major order (point, neuron), at the state's time; more than
    ``rows`` at once is EVENT_LIMIT."""
    s, st = _setup(tmp_path, [[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0], [[0.5, 0.3], [0.2, -0.4]], [1.0, -1.0])
    st = st._replace(t=jnp.asarray(0.25))
    mask = jnp.array([[False, True], [True, False]])
    kind = jnp.full((2, 2), kinks.CROSS, jnp.int32)
    side = jnp.array([[1, -1], [1, 1]], jnp.int8)
    lam = jnp.full((2, 2), jnp.nan)
    out = ef.record(st, mask, kind, side, lam, rows=4)
    assert int(out.count) == 2 and int(out.code) == 0
    assert np.asarray(out.rows.point[:2]).tolist() == [0, 1] and np.asarray(out.rows.neuron[:2]).tolist() == [1, 0]
    assert np.asarray(out.rows.side[:2]).tolist() == [-1, 1] and np.all(np.asarray(out.rows.t[:2]) == 0.25)
    assert int(ef.record(st, mask, kind, side, lam, rows=1).code) == ef.EVENT_LIMIT


def test_state_is_a_loop_carry(tmp_path):
    """The typed state goes through ``lax.while_loop`` (and vmap) as the loop's carry."""
    _, st = _setup(tmp_path, [[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0], [[0.5, 0.3]], [1.0])
    out = lax.while_loop(lambda c: c.steps < 3, lambda c: c._replace(steps=c.steps + 1, t=c.t + 0.5), st)
    assert int(out.steps) == 3 and float(out.t) == 1.5 and isinstance(out.bracket, ef.Bracket)
    batched = jax.vmap(lambda c: c._replace(t=c.t + 1.0))(jax.tree_util.tree_map(lambda a: jnp.stack([a, a]), st))
    assert np.asarray(batched.t).tolist() == [1.0, 1.0]


def test_the_event_methods_need_an_objective_that_sums_the_sample_losses():
    """What the event-driven flow integrates is read from the objective's record (``sample_sum``), not its name:
    empirical has it, the population objectives do not (a config error naming the field, and a trace-time error)."""
    from types import SimpleNamespace

    from twolayer.losses import LOSSES
    from twolayer.nets import NETS
    from twolayer.problem import OBJECTIVES, Problem

    assert [name for name, o in OBJECTIVES.items() if o.sample_sum] == ["empirical"]
    cfg = SimpleNamespace(objective="population", train=SimpleNamespace(method="flow_exact"),
                          model=SimpleNamespace(activation="relu"))
    assert ef.config_errors(cfg) == [("objective", "method flow_exact needs objective empirical")]
    assert ef.config_errors(SimpleNamespace(**{**vars(cfg), "objective": "empirical"})) == []
    problem = Problem(NETS.get("two_layer"), make_activation("relu"), LOSSES.get("square"), "mean", "population")
    with pytest.raises(ValueError, match="needs objective empirical"):
        ef.check_problem(problem)
