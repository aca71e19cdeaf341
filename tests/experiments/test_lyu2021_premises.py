"""lyu2021, issue 27: the pieces behind the premise ablations and the restated claims: the ``contradict``
augmentation (Theorem B.19's separability removed), the a priori fitting-time bound of B.19's proof (the gradient
floor it rests on), the sign-group schedule that runs slow seeds on (chosen from the init, every seed judged), the
number of seeds that tells m = 2, 3, 4 apart, and Theorem 4.2's independent search."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twolayer.config import load_config
from twolayer.data import build_dataset
from twolayer.theory import margin as th

ALPHA = 0.2


def _data(spec: dict):
    return build_dataset(load_config({"data": spec}).data)


def test_contradict_makes_the_data_non_separable():
    from twolayer.papers.lyu2021.loss_convergence import B19_DATA

    base, bad = _data(B19_DATA), _data({**B19_DATA, "augment": "contradict"})
    assert bad.n == base.n + 1
    assert np.array_equal(bad.X[-1], base.X[0]) and bad.y[-1] == -base.y[0]
    # no classifier fits both copies: for any net the two margins sum to 0, so the mean loss is >= 2 ln 2 / n
    rng = np.random.default_rng(0)
    W, a = rng.normal(size=(4, 2)), rng.normal(size=4)
    q = bad.y * th.forward(W, a, bad.X, ALPHA)
    assert q[0] + q[-1] == pytest.approx(0.0, abs=1e-12)
    assert np.mean(np.logaddexp(0.0, -q)) >= 2 * math.log(2) / bad.n - 1e-12


def _gradient(W, a, X, y, alpha):
    """grad of the mean logistic loss in (W, a) (numpy, away from kinks)."""
    z = X @ W.T
    q = y * (th.leaky(z, alpha) @ a)
    g = -1.0 / (1.0 + np.exp(q)) * y / len(y)  # l'(q_i) y_i / n
    gW = (a[None, :] * th.leaky_derivative(z, alpha) * g[:, None]).T @ X
    ga = th.leaky(z, alpha).T @ g
    return gW, ga, q


def test_b19_gradient_floor_holds_at_random_balanced_states_with_a_good_neuron():
    """The step behind ``fit-time-bound``: ||grad L|| >= alpha gamma* p (1 - e^{-n L}) / n for p = s_k <w_k, w*> of a
    balanced neuron (|a_k| = ||w_k||), checked at 2000 random states; it fails for alpha = 0 data-wise only in the
    bound (0), never above the gradient."""
    from twolayer.papers.lyu2021.loss_convergence import B19_DATA

    data = _data(B19_DATA)
    w_star, gamma = th.max_margin_linear(data.X, data.y)
    rng = np.random.default_rng(1)
    worst = np.inf
    for _ in range(2000):
        W = rng.normal(size=(4, 2)) * rng.uniform(0.01, 3.0)
        a = rng.choice([-1.0, 1.0], size=4) * np.linalg.norm(W, axis=1)
        gW, ga, q = _gradient(W, a, data.X, data.y, ALPHA)
        p = np.max(np.sign(a) * (W @ w_star))
        if p <= 0:
            continue
        nL = np.sum(np.logaddexp(0.0, -q))
        floor = ALPHA * gamma * p * (1 - math.exp(-nL)) / data.n
        norm = math.sqrt(np.sum(gW**2) + np.sum(ga**2))
        worst = min(worst, norm / floor)
    assert 1.0 <= worst < np.inf


def test_fit_time_bound_reads_the_good_neuron():
    from twolayer.claims import Results, get
    from twolayer.papers.lyu2021 import loss_convergence as lc

    exp = get("lyu2021/loss-convergence")
    r = Results(exp, "quick", lc.ideal_runs(exp.run_configs("quick")))
    t_fit, limit, p0 = lc.fit_time_bound(r)
    assert np.all(p0 > 0) and np.all(np.isfinite(limit)) and np.all(limit > 1e3)
    n = 20
    _, gamma = lc._w_star(lc.B19_DATA, margin=True)
    L0 = math.exp(r["flow"].seeded("log_loss")[0, 0])
    assert limit[0] == pytest.approx((L0 - math.log(2) / n) * (2 * n / (ALPHA * gamma * p0[0])) ** 2)



def test_fit_time_bound_fails_as_a_bound_without_a_good_neuron():
    """With no good neuron the proof gives no bound: the claim fails, and stays a bound check (it raised before)."""
    import copy

    from twolayer.claims import Results, get
    from twolayer.papers.lyu2021 import loss_convergence as lc

    exp = get("lyu2021/loss-convergence")
    configs = copy.deepcopy(exp.run_configs("quick"))
    W, w_star = np.asarray(configs["flow"]["init"]["W"]), lc._w_star(lc.B19_DATA)
    proj = W @ w_star
    configs["flow"]["init"]["W"] = (W - 2 * np.maximum(proj, 0)[..., None] * w_star).tolist()  # good neuron mirrored
    r = Results(exp, "quick", lc.ideal_runs(configs))
    assert np.all(lc.fit_time_bound(r)[2] < 0)
    check = next(s for s in exp.claims if s.id == "fit-time-bound").check(r)
    assert not check.passed and check.slack == -math.inf, check

def test_no_good_neuron_premise_turns_only_neuron_0_past_90_degrees():
    """The B.19 ablation keeps the data and every other start: neuron 0 goes from 80 to 100 degrees from w*, so the
    largest sign(a_k) <w_k(0), w*> becomes negative (no good neuron) while the norms stay."""
    from twolayer.claims import get
    from twolayer.papers.lyu2021 import loss_convergence as lc

    exp = get("lyu2021/loss-convergence")
    base = exp.run_configs("quick")["flow"]
    ablated = lc.NO_GOOD_NEURON.change(exp.run_configs("quick"))["flow"]
    assert ablated["data"] == base["data"] and ablated["train"] == base["train"]
    W0, W1 = np.asarray(base["init"]["W"]), np.asarray(ablated["init"]["W"])
    np.testing.assert_array_equal(W1[:, 1:], W0[:, 1:])
    w_star = lc._w_star(lc.B19_DATA)
    cos0 = W0[:, 0] @ w_star / np.linalg.norm(W0[:, 0], axis=1)
    cos1 = W1[:, 0] @ w_star / np.linalg.norm(W1[:, 0], axis=1)
    np.testing.assert_allclose(np.degrees(np.arccos(cos0)), 80.0, atol=1e-6)
    np.testing.assert_allclose(np.degrees(np.arccos(cos1)), 100.0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(W1, axis=2), np.linalg.norm(W0, axis=2), rtol=1e-9)
    a1 = np.asarray(ablated["init"]["v"])
    assert np.all(a1 > 0) and np.all(np.max(np.sign(a1) * (W1 @ w_star), axis=1) < 0)
    specs = {s.id: s for s in exp.claims}
    assert all(f.holds for f in specs["loss-to-zero"].premises if f.name == "no-good-neuron")
    assert all(f.holds for f in specs["projection-monotone"].premises if f.name == "no-good-neuron")
    assert [f.holds for f in specs["fit-time-bound"].premises] == [False]
    assert [f.holds for f in specs["good-neuron-floor"].premises] == [False]


def test_slow_seeds_are_chosen_from_the_init_and_every_seed_stays_in_the_main_run():
    from twolayer.papers.lyu2021 import sign_groups as sg

    configs = sg.sign_groups_configs("quick")
    for key, cfg in configs.items():
        if not key.endswith("-long"):
            continue
        main = configs[key.removesuffix("-long")]
        assert set(sg.seeds_of(cfg)) <= set(sg.seeds_of(main))  # a continuation, not a replacement
        assert cfg["train"]["time"] == sg.LONG_TAU and cfg["train"]["stop_log_loss"] < -sg.LONG_TAU
        probe = sg.SyntheticRun(main)
        data, init = sg.run_dataset(probe), sg.initial_params(probe)
        rho = [th.group_amplitude_ratio(init["W"][s], init["v"][s], data.X, data.y) for s in range(len(init["v"]))]
        slow = [seed for seed, x in zip(sg.seeds_of(main), rho) if x < sg.LONG_RHO]
        assert sg.seeds_of(cfg) == slow


def test_resolving_seeds_tell_the_widths_apart():
    from scipy.stats import binomtest

    from twolayer.papers.lyu2021.sign_groups import resolving_seeds

    n = resolving_seeds()
    assert 100 <= n <= 200  # the paper scale's 200 seeds resolve m = 2, 3, 4; the quick scale's 48 do not
    for m in (2, 3, 4):
        p = 1 - 2.0 ** -(m - 1)
        ci = binomtest(round(p * n), n).proportion_ci(0.99, method="exact")
        assert 1 - 2.0 ** -(m - 2) < ci.low and ci.high < 1 - 2.0 ** -m
    assert resolving_seeds() > 48


def test_theorem_4_2_search_tells_symmetric_from_non_symmetric_data():
    """The independent search of ``symmetric:global-max-static``: on symmetric data no net beats (1+alpha) gamma*/4,
    on the same points without their mirror images a width-2 net does (by 27 %)."""
    from twolayer.papers.lyu2021._shared import symmetric_data
    from twolayer.theory.kkt import kkt_search

    for spec, above in ((symmetric_data(), False), ({**symmetric_data(), "kind": "separable_ball"}, True)):
        data = _data(spec)
        gmax = th.global_max_margin(data.X, data.y, ALPHA)
        best = kkt_search(data.X, data.y, ALPHA, 2, restarts=6, seed=44)[0].margin / gmax
        assert (best > 1 + 1e-3) == above, best
        if not above:
            assert best == pytest.approx(1.0, abs=1e-6)
