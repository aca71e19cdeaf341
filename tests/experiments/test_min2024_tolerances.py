"""Min et al. 2024 tolerances (issue 26): the derived bounds of ``papers.min2024._tolerances`` against direct
computation (GD's first step, a perturbed least-squares slope, float32 round-off against float64), and the
claims that use them on hand-built runs just inside and just outside their tolerances."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twolayer.claims import Results, get
from twolayer.papers.min2024 import mnist as mn
from twolayer.papers.min2024 import two_point_theory as tpt
from twolayer.papers.min2024 import two_points as tp
from twolayer.papers.min2024._shared import synthetic
from twolayer.papers.min2024._tolerances import (
    SPREADS, Spread, cosine_roundoff, first_step_bound, first_step_error, machine_eps, mean_loss_roundoff, slope_error,
)


def _unit(w):
    return w / np.linalg.norm(w)


# -- GD's first step against eq. 4's velocity (fig1-eq4-direction) -------------------------------------

def _step_error(u, a, lr, step=None):
    """Relative error of the mean direction velocity (u(lr) - u)/lr of one step w -> w + lr ||w|| ``step`` (default
    a) against eq. 4's P_u a."""
    pred = a - (a @ u) * u
    step = a if step is None else step
    return float(np.linalg.norm((_unit(u + lr * step) - u) / lr - pred) / np.linalg.norm(pred))


def test_first_step_error_is_the_first_order_term_and_the_bound_holds():
    rng = np.random.default_rng(0)
    for d in (2, 3, 10):
        for _ in range(200):
            u, a = _unit(rng.normal(size=d)), rng.normal(size=d) * rng.uniform(0.1, 3.0)
            speed = float(np.linalg.norm(a))
            first = first_step_error(u, a)
            assert first <= speed * (1 + 1e-12)
            for lr in (1e-4, 1e-3, 1e-2):
                err = _step_error(u, a, lr)
                assert err == pytest.approx(lr * first, rel=5 * lr * speed + 1e-6)
                assert err <= first_step_bound(lr, speed)
    # along a (u parallel to a) the velocity vanishes; across it the first-order term is ||a|| / 2
    assert first_step_error(np.array([1.0, 0.0]), np.array([0.0, 2.0])) == pytest.approx(1.0)


def test_first_step_bound_is_the_supremum_over_directions():
    """z / (1 - z) bounds the relative error for every direction of a and every z = lr ||a|| < 1, and a turned
    almost antiparallel to u reaches it."""
    u = np.array([1.0, 0.0])
    for z in (1e-3, 0.1, 0.5, 0.9):
        worst = 0.0
        for ang in np.concatenate([np.linspace(1e-3, math.pi - 1e-3, 721), math.pi - np.geomspace(1e-6, 1e-3, 20)]):
            a = np.array([math.cos(ang), math.sin(ang)])
            worst = max(worst, _step_error(u, a, z))
        assert worst <= first_step_bound(z, 1.0) * (1 + 1e-6)
        assert worst >= first_step_bound(z, 1.0) * (1 - 1e-3)
    assert first_step_bound(0.5, 2.0) == math.inf


def test_first_step_bound_fails_for_a_step_in_another_direction():
    """The allowance is GD's own deviation: a step along P_u a rotated by 2 degrees is outside it."""
    u, lr = _unit(np.array([0.3, 1.0])), 1e-3
    a = 1.2 * u + 0.5 * np.array([-u[1], u[0]])
    c, s = math.cos(math.radians(2)), math.sin(math.radians(2))
    turned = np.array([[c, -s], [s, c]]) @ a
    assert _step_error(u, a, lr, step=turned) > 10 * first_step_bound(lr, float(np.linalg.norm(a)))


# -- a perturbed least-squares slope (P11-law) --------------------------------------------------------------

def test_slope_error_bounds_every_perturbation_and_is_attained():
    rng = np.random.default_rng(1)
    x = np.array([1.89, 2.995, 5.298])
    y = 1.0 * x - 0.2
    e = np.array([0.03, 0.02, 0.06])
    bound = slope_error(x, e)
    base = np.polyfit(x, y, 1)[0]
    for _ in range(500):
        moved = np.polyfit(x, y + rng.uniform(-1, 1, size=3) * e, 1)[0]
        assert abs(moved - base) <= bound + 1e-12
    c = x - x.mean()
    assert abs(np.polyfit(x, y + np.sign(c) * e, 1)[0] - base) == pytest.approx(bound, rel=1e-10)


def test_p11_closed_form_reads_the_synthetic_crossings():
    """On hand-built runs whose neurons cross at P7's times, the closed form from W0 gives each seed's alignment
    time up to the observation spacing, and P11-law passes; twice as slow, it fails."""
    configs = get("min2024/two-point-theory").run_configs("quick")
    runs = tpt._two_point_theory_like(configs)
    for key in ("theta0.3", "theta0.1", "theta0.01"):
        pred = tpt.predicted_alignment_time(runs[key], tpt.THETAS[key])
        np.testing.assert_allclose(tpt.alignment_time(runs[key]), pred, atol=0.0041)
    exp = get("min2024/two-point-theory")
    assert tpt._p11_law(Results(exp, "quick", runs)).passed
    assert not tpt._p11_law(Results(exp, "quick", tpt._two_point_theory_like(configs, speed=0.5))).passed


# -- float round-off (P18-loss-decreases, alignment-drops) --------------------------------------------------

def _mean_exp_loss(W, v, X, y, dtype):
    W, v, X, y = (np.asarray(a, dtype=dtype) for a in (W, v, X, y))
    f = np.maximum(X @ W.T, 0) @ v
    return np.mean(np.exp(-y * f), dtype=dtype)


@pytest.mark.parametrize("scale", [1e-6, 0.3, 1.5])
def test_mean_loss_roundoff_covers_float32_against_float64(scale):
    rng = np.random.default_rng(2)
    n, d, h = 500, 784, 50
    X = rng.normal(size=(n, d)) / 10
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    for _ in range(5):
        W, v = scale * rng.normal(size=(h, d)) / math.sqrt(d), scale * rng.normal(size=h)
        F = float(np.max(np.linalg.norm(X, axis=1)) * np.sum(np.abs(v) * np.linalg.norm(W, axis=1)))
        exact = _mean_exp_loss(W, v, X, y, np.float64)
        single = float(_mean_exp_loss(W, v, X, y, np.float32))
        assert abs(single - exact) / exact <= float(mean_loss_roundoff(n, d, h, machine_eps("float32"), F))
    assert machine_eps("float64") == np.finfo(np.float64).eps


def test_cosine_roundoff_covers_float32_against_float64():
    rng = np.random.default_rng(3)
    d, h = 784, 50
    tol = cosine_roundoff(d, h, machine_eps("float32"))
    for _ in range(50):
        x = rng.normal(size=d)
        rows = x + 0.01 * rng.normal(size=(h, d))  # nearly aligned: cos close to 1, where the drop is read
        for dtype in (np.float32, np.float64):
            m = rows.astype(dtype).mean(axis=0, dtype=dtype)
            xd = x.astype(dtype)
            cos = float(m @ xd / (np.linalg.norm(m) * np.linalg.norm(xd)))
            if dtype is np.float64:
                assert abs(cos - single) <= tol
            single = cos


def _mnist_config_on_toy(precision: str = "float32") -> dict:
    cfg = dict(get("min2024/fig5-mnist-0-1").run_configs("quick")["gd"])
    return {**cfg, "data": {"kind": "toy2d"}, "precision": precision}


def _loss_run(loss, cfg):
    t = np.arange(len(loss), dtype=np.float64)
    h = cfg["model"]["width"]
    v = np.full((len(t), h), 1e-3)
    return synthetic(cfg, t, loss=np.asarray(loss, dtype=np.float64), v=v, w_norm=np.full((len(t), h), 1e-3),
                     center_cos_pos=np.ones(len(t)), center_cos_neg=np.ones(len(t)))


def test_loss_decreases_fails_on_a_rise_beyond_roundoff_only():
    cfg = _mnist_config_on_toy()
    exp = get("min2024/fig5-mnist-0-1")
    flat_then_down = [1.0, 1.0, 0.9, 0.5, 0.1]
    run = _loss_run(flat_then_down, cfg)
    tol = mn.loss_roundoff(run)
    assert mn._loss(Results(exp, "quick", {"gd": run})).passed
    jitter = [1.0, 1.0 + 0.5 * (tol[0] + tol[1]), 0.9, 0.5, 0.1]  # a rise within round-off
    assert mn._loss(Results(exp, "quick", {"gd": _loss_run(jitter, cfg)})).passed
    rise = [1.0, 1.0 + 2 * (tol[0] + tol[1]), 0.9, 0.5, 0.1]  # beyond it
    assert not mn._loss(Results(exp, "quick", {"gd": _loss_run(rise, cfg)})).passed
    assert not mn._loss(Results(exp, "quick", {"gd": _loss_run([1.0, 1.0, 1.0, 1.0, 1.0], cfg)})).passed


def test_alignment_drop_must_exceed_the_cosine_roundoff():
    cfg = _mnist_config_on_toy()
    exp = get("min2024/fig5-mnist-0-1")
    run = _loss_run([1.0] * 5, cfg)
    tol = mn.cosine_tolerance(run)
    assert tol == pytest.approx((2 + 50 + 2) * np.finfo(np.float32).eps)
    for drop, passes in ((2 * tol, True), (0.5 * tol, False), (0.0, False)):
        cos = np.array([0.1, 0.99, 0.999, 0.999 - drop, 0.999 - drop])
        run.trajectory["center_cos_pos"] = cos
        run.trajectory["center_cos_neg"] = cos
        assert mn._drop(Results(exp, "quick", {"gd": run})).passed is passes


# -- measured spreads -------------------------------------------------------------------------------------------

def test_spread_limits_and_the_ratio_of_stragglers():
    s = Spread(1.0, 0.06)
    assert s.upper() == pytest.approx(1.18) and s.lower(pooled=4) == pytest.approx(0.91)
    assert "10 seeds (100-109)" in s.text()
    for name, spread in SPREADS.items():
        assert spread.sd > 0 and math.isfinite(spread.mean), name
    np.testing.assert_array_equal(tp.late_over_early(np.array([10, 0, 0, 4]), np.array([0, 0, 2, 3])),
                                  [0.0, 0.0, np.inf, 0.75])
