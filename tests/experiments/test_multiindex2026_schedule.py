"""Method gd_paper's schedule parameters (``boost_rule``, ``boost_*``, ``eps_dir``, ``eps_norm``, ``stage22_test``):
defaults unchanged, the paper's boost rule, the two-sided Stage 2.2 test, gamma on the weight decay or not, and
clear errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer
from twolayer.activations import make_activation
from twolayer.errors import ConfigError
from twolayer.theory.stages import stage_state
from twolayer.train.gd_paper import GDPaperParams, build_gd_paper

ABS = make_activation("abs")


def _ctx(d, r):
    from twolayer.losses import LOSSES
    from twolayer.nets import NETS
    from twolayer.problem import Problem, make_context

    problem = Problem(NETS.get("mean_field"), ABS, LOSSES.get("square"), "mean", "population")
    arrays = {"X": np.zeros((1, d)), "y": np.zeros(1), "target_dirs": np.eye(d)[:r], "target_coefs": np.ones(r)}
    return make_context(problem, arrays, jnp.float64)


def _aligned_state(d=6, r=2, m=4):
    """Two aligned neurons with tiny mass (every direction found, windows open) and two dense ones."""
    W = np.zeros((m, d))
    W[0, 0], W[1, 1] = 0.1, 0.1
    W[2:] = np.random.default_rng(8).normal(size=(2, d))
    return W


def _advance(schedule, steps, W, lr=0.01, lam=0.5):
    d, r = W.shape[1], 2
    ctx = _ctx(d, r)
    train = GDPaperParams(method="gd_paper", lr=lr, steps=steps, weight_decay=lam, **(schedule or {}))
    advance = build_gd_paper(train, ctx)
    hyper = {"lr": jnp.asarray(lr), "weight_decay": jnp.asarray(lam)}
    params = {"W": jnp.asarray(W)}
    out, bad, code = advance(params, jax.random.PRNGKey(0), -1, 0, steps, ctx, hyper)
    assert int(bad) == -1 and int(code) == 0
    return out, ctx


def _manual(W, ctx, boosted_steps, steps, lr=0.01, lam=0.5, on_decay=True):
    """GD with gamma = m sub-steps on neurons 0 and 1 for the first ``boosted_steps`` steps, then plain steps."""
    m = W.shape[0]
    grad = jax.jit(jax.grad(lambda W: ctx.objective({"W": W})))
    V = jnp.asarray(W)
    mult = jnp.asarray([m, m, 1, 1], dtype=jnp.float64)[:, None]
    for k in range(steps):
        if k < boosted_steps:
            for _ in range(m):
                V = V - lr / m * (mult * (lam * V + m * grad(V)) if on_decay else lam * V + mult * m * grad(V))
        else:
            V = V - lr * (lam * V + m * grad(V))
    return V


BASE = {"name": "gdp", "seeds": 1, "data": {"kind": "multi_index", "d": 8, "r": 2, "n": 10, "n_test": 10},
        "model": {"kind": "mean_field", "activation": "abs", "width": 10}, "init": {"kind": "standard"},
        "loss": {"kind": "square"}, "objective": "population",
        "train": {"method": "gd_paper", "lr": 0.02, "steps": 300, "weight_decay": 0.1},
        "observe": {"schedule": "log", "points": 10, "metrics": ["loss_population"]}}
# BASE's hash before the schedule parameters existed (main at c814ea1): such runs keep their directories
BASE_HASH = "6a3cf1cc5d845d2bd3f6d5db602e791a04036e46d77d940f94820698afaa5fa4"


def test_defaults_are_the_method_before_its_parameters():
    s = GDPaperParams(method="gd_paper", lr=0.1, steps=1)
    assert (s.eps_dir, s.eps_norm, s.stage22_test, s.boost_rule, s.boost_window, s.boost_weight_decay) == \
        (0.1, 0.02, "one_sided", "per_step", 0.5, True) and not s.stateful
    assert not set(GDPaperParams.SCHEDULE) & set(s.resolved())  # left out of the stored config at their defaults


def test_defaults_given_explicitly_hash_and_run_as_before(tmp_path):
    explicit = {**BASE, "train": {**BASE["train"], "eps_norm": 0.02, "boost_rule": "per_step"}}
    assert twolayer.load_config(BASE).config_hash() == twolayer.load_config(explicit).config_hash() == BASE_HASH
    other = {**BASE, "train": {**BASE["train"], "eps_norm": 0.01}}
    assert twolayer.load_config(other).resolved()["train"]["eps_norm"] == 0.01
    assert twolayer.load_config(other).config_hash() != BASE_HASH


def test_paper_rule_boosts_the_set_fixed_at_t21_for_log_m_over_gamma():
    """Every direction is found at step 0 (T_21 = 0): neurons 0 and 1 (the aligned set G) are boosted while
    k lr <= log(m)/m (m = 4, lr = 0.01: steps 0..34), then the step is plain GD; the state records T_21."""
    W = _aligned_state()
    m, lr = W.shape[0], 0.01
    window = int(np.floor(np.log(m) / m / lr)) + 1
    out, ctx = _advance({"boost_rule": "paper"}, window + 3, W, lr=lr)
    np.testing.assert_allclose(np.asarray(out["W"]), np.asarray(_manual(W, ctx, window, window + 3, lr=lr)),
                               rtol=1e-11, atol=1e-13)
    assert int(out["schedule_t21"]) == 0 and int(out["schedule_t22"]) == -1
    assert np.asarray(out["schedule_boost"]).tolist() == [1.0, 1.0, 0.0, 0.0]


def test_gamma_on_the_gradient_only():
    W = _aligned_state()
    out, ctx = _advance({"boost_weight_decay": False}, 1, W)
    np.testing.assert_allclose(np.asarray(out["W"]), np.asarray(_manual(W, ctx, 1, 1, on_decay=False)), rtol=1e-12)
    with_decay, _ = _advance(None, 1, W)
    assert not np.allclose(np.asarray(out["W"]), np.asarray(with_decay["W"]))


def test_two_sided_stage22_test():
    """One-sided: a_hat above a* - eps counts as done; two-sided: only |a_hat - a*| <= eps does."""
    d, r, m = 4, 2, 2
    a_star = 1.0 - 0.5 / (2 * (2 / np.pi) * r + 2 * (1 - 2 / np.pi))
    W = np.zeros((m, d))
    W[0, 0] = W[1, 1] = np.sqrt(m * (a_star + 0.05))  # a_hat_j = a* + 0.05 on both directions, b_hat = 0
    one = stage_state(jnp.asarray(W), jnp.eye(d)[:r], 0.5, ABS, eps_norm=0.01)
    two = stage_state(jnp.asarray(W), jnp.eye(d)[:r], 0.5, ABS, eps_norm=0.01, two_sided=True)
    assert bool(one[1]) and not bool(two[1])
    W[0, 0] = W[1, 1] = np.sqrt(m * (a_star + 0.005))
    assert bool(stage_state(jnp.asarray(W), jnp.eye(d)[:r], 0.5, ABS, eps_norm=0.01, two_sided=True)[1])


@pytest.mark.parametrize(("train", "field"), [
    ({"method": "gd", "lr": 0.1, "steps": 10, "eps_norm": 0.01}, "eps_norm"),
    ({"method": "gd_paper", "lr": 0.1, "steps": 10, "eps_norm": -1}, "eps_norm"),
    ({"method": "gd_paper", "lr": 0.1, "steps": 10, "boost_rule": "sometimes"}, "boost_rule"),
    ({"method": "gd_paper", "lr": 0.1, "steps": 10, "stage22_test": "both"}, "stage22_test"),
    ({"method": "gd_paper", "lr": 0.1, "steps": 10, "eps_dir": 0.6}, "eps_dir"),
])
def test_schedule_errors_name_the_field(train, field):
    with pytest.raises(ConfigError, match=field):
        twolayer.load_config({"data": {"kind": "multi_index", "d": 4, "r": 2}, "objective": "population",
                              "model": {"kind": "mean_field", "activation": "abs", "width": 4},
                              "init": {"kind": "standard"}, "loss": {"kind": "square"}, "train": train})
