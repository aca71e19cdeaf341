"""Min et al. 2024 experiments: every claim passes on the real quick-scale runs of the synthetic-data
experiments and fails on a minimally corrupted copy; MNIST claims on synthetic trajectories; one
experiment end to end through the reproduce driver."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest

import twolayer
from twolayer.experiments import Results, get, reproduce
from twolayer.experiments import min2024 as m
from twolayer.theory import alignment as th

SYNTHETIC = ["fig6-toy", "fig7-9-two-points", "theory-balanced", "two-point-theory", "alignment-scaling"]


class FakeRun:
    """A run whose trajectory / summary can be edited (a deep copy of a real run, or synthetic)."""

    def __init__(self, trajectory, config=None, summary=None, path=None, final_params=None):
        self.trajectory, self.config, self.summary, self.path = trajectory, config or {}, summary or {}, path
        self.final_params = final_params or {}

    @classmethod
    def of(cls, run):
        return cls({k: np.array(v) for k, v in run.trajectory.items()}, copy.deepcopy(run.config),
                   copy.deepcopy(run.summary), run.path, {k: np.array(v) for k, v in run.final_params.items()})


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("min2024")
    res = {}
    for name in SYNTHETIC:
        exp = get(f"{m.PAPER}/{name}")
        runs = {key: twolayer.run(cfg, out=out) for key, cfg in exp.run_configs("quick").items()}
        res[name] = (exp, runs)
    return res


def _check(exp, runs, claim_id):
    spec = next(c for c in exp.claims if c.id == claim_id)
    return spec.fn(Results(exp, "quick", runs))


def _corrupted(runs, key, edit):
    new = {k: FakeRun.of(r) for k, r in runs.items()}
    edit(new[key])
    return new


def _set(name, fn):
    def edit(run):
        run.trajectory[name] = fn(run.trajectory[name], run)
    return edit


def _events(**values):
    def edit(run):
        run.summary["events"].update(values)
    return edit


def _first_v_pos(run):
    v = run.trajectory["v"]
    return int(np.flatnonzero(v[0, -1] > 0)[0])


def _v_pos_neuron_to(code):
    def fn(cone, run):
        cone[0, :, _first_v_pos(run)] = code
        return cone
    return fn


def _home_neuron_leaves(cone, run):
    j = _first_v_pos(run)
    assert cone[0, -1, j] == th.CONE_POS
    cone[0, -1, j] = th.CONE_NONE
    return cone


def _at_align(value):
    def fn(arr, run):
        arr[:, m._iter_index(run, m.THEORY_ALIGN_STEP)] = value
        return arr
    return fn


def _flat_after_t2(loss, run):
    k = m._t2_index(run, 0)
    loss[0, k:] = loss[0, k]
    return loss


def _uncover_positives(s, run):
    y = m._data_of(run)[1]
    s[:, 0][..., y > 0] = -1.0
    return s


def _nudge_last(W, run):
    W[:, -1] += 1e-9
    return W


def _grow_last(W, run):
    W[:, -1] *= 1.1
    return W


def _final_scaled(run):
    run.final_params["W"] = run.final_params["W"] * (1 + 1e-9)


def _drift(d, run):
    """Delta_j drifting by 1e-6 of max(v_j^2, ||w_j||^2) after the first observations."""
    scale = np.maximum(run.trajectory["v"] ** 2, run.trajectory["w_norm"] ** 2)
    return d + 1e-6 * scale * (np.arange(d.shape[1]) > 5)[:, None]


def _loss_kind(kind):
    def edit(run):
        run.config["loss"]["kind"] = kind
    return edit


def _single_drop(loss, run):
    t = run.trajectory["t"]
    return np.broadcast_to(1 / (1 + np.exp((t - 30) / 3)) + 1e-3, loss.shape).copy()


def _swap(a, b):
    def corrupt(runs):
        new = dict(runs)
        new[a], new[b] = runs[b], runs[a]
        return new
    return corrupt


# (experiment, claim, corruption: (run key, edit) or a function of the runs dict)
CASES = [
    ("fig6-toy", "directional-convergence", ("toy", _set("cone", _v_pos_neuron_to(th.CONE_NEG)))),
    ("fig6-toy", "alignment-before-growth", ("toy", _events(norm_growth=[0.0, 0.0, 0.0]))),
    ("fig6-toy", "low-rank", ("toy", _set("stable_rank", lambda a, r: a + 2.0))),
    ("fig6-toy", "loss-to-zero", ("toy", _set("loss", lambda a, r: np.ones_like(a)))),
    ("fig7-9-two-points", "P9-outside-7000", ("mu-sin0.001", _set("cone", lambda a, r: np.ones_like(a)))),
    ("fig7-9-two-points", "P9-slow-then-aligned", ("mu-sin0.001", _set("cone", lambda a, r: np.full_like(a, 2)))),
    ("fig7-9-two-points", "P9-orthogonal", ("mu-0", _set("cone", lambda a, r: np.ones_like(a)))),
    ("fig7-9-two-points", "P9-loss", ("mu-sin0.001", _set("loss", lambda a, r: np.ones_like(a)))),
    ("theory-balanced", "P1-gd-imbalance-identity", ("imbalance-step", _set("grad_imbalance", lambda a, r: a * 1.01))),
    ("theory-balanced", "P2-sign-invariance", ("balanced", _set("v", lambda a, r: a * np.where(np.arange(a.shape[1])[:, None] > 50, -1, 1)))),
    ("theory-balanced", "P3-monotone-activations", ("balanced", _set("signed_preact", lambda a, r: a - 1e-9 * (np.arange(a.shape[1]) % 2)[:, None, None]))),
    ("theory-balanced", "P4-directional-convergence", ("balanced", _set("cone", _at_align(th.CONE_NONE)))),
    ("theory-balanced", "P5-trapping", ("balanced", _set("cone", _home_neuron_leaves))),
    ("theory-balanced", "P5-dead-frozen", ("balanced", _set("neuron_weights", _nudge_last))),
    ("theory-balanced", "P14-subnetwork-invariance", ("balanced", _set("neuron_weights", _grow_last))),
    ("theory-balanced", "P16-time-rescaling", ("rescale-sum", _final_scaled)),
    ("theory-balanced", "P6-lemma3-norms", ("balanced", _set("w_norm", lambda a, r: a * np.where(np.arange(a.shape[1]) == 1, 1e4, 1)[:, None]))),
    ("theory-balanced", "P10-refined-alignment", ("balanced", _set("cos_pos", _at_align(0.5)))),
    ("theory-balanced", "P10-quarter-after-t1", ("balanced", _set("cos_pos", lambda a, r: a * 0.1))),
    ("theory-balanced", "P12-loss-rate", ("balanced", _set("loss", _flat_after_t2))),
    ("theory-balanced", "P13-stable-rank", ("balanced", _set("stable_rank", lambda a, r: a + 1.0))),
    ("theory-balanced", "P17-random-coverage", ("balanced", _set("signed_preact", _uncover_positives))),
    ("theory-balanced", "activation-changes-at-most-n", ("balanced", _set("signed_preact", lambda a, r: a * (-1.0) ** np.arange(a.shape[1])[:, None, None]))),
    ("theory-balanced", "P1-flow-conservation", ("flow", _set("imbalance", _drift))),
    ("theory-balanced", "P14-flow-invariance", ("flow", _set("neuron_weights", _grow_last))),
    ("theory-balanced", "P6-lemma3-output", ("flow", _set("output_max", lambda a, r: a * 1e8))),
    ("theory-balanced", "P6-lemma1-direction-error", ("flow", _set("direction_error", lambda a, r: a * 1e9))),
    ("theory-balanced", "Lemma2-loss", ("balanced", _loss_kind("logistic"))),
    ("theory-balanced", "P17-empty-cone", ("coverage", _set("cone", lambda a, r: np.zeros_like(a)))),
    ("fig6-toy", "two-sharp-decreases", ("toy", _set("loss", _single_drop))),
    ("two-point-theory", "P7-crossing-time", ("theta0.1", _set("cone", lambda a, r: np.ones_like(a)))),
    ("two-point-theory", "P8-end-states", ("theta0.3", _set("cone", lambda a, r: np.zeros_like(a)))),
    ("two-point-theory", "P11-alignment-time-vs-mu", _swap("theta0.3", "theta0.01")),
    ("alignment-scaling", "t1-before-growth", ("mu0.35-n8", _events(t1=[None] * 4))),
    ("alignment-scaling", "t1-decreasing-in-mu", ("mu0.7-n8", _events(t1=[100.0] * 4))),
    ("alignment-scaling", "t1-below-bound", ("mu0.7-n32", _events(t1=[1e9] * 4))),
]


def test_every_synthetic_claim_has_a_case():
    covered = {(e, c) for e, c, _ in CASES}
    for name in SYNTHETIC:
        for spec in get(f"{m.PAPER}/{name}").claims:
            assert (name, spec.id) in covered, spec.id


@pytest.mark.parametrize(("name", "claim", "corrupt"), CASES, ids=[f"{e}:{c}" for e, c, _ in CASES])
def test_claim_passes_on_runs_and_fails_when_corrupted(results, name, claim, corrupt):
    exp, runs = results[name]
    good = _check(exp, runs, claim)
    assert good.passed, (claim, good)
    bad_runs = corrupt(runs) if callable(corrupt) else _corrupted(runs, *corrupt)
    bad = _check(exp, bad_runs, claim)
    assert not bad.passed, (claim, bad)


# -- MNIST claims on synthetic trajectories ---------------------------------------------------

def _mnist_run(align_it=1200.0, growth_it=2400.0, final_loss=0.02, final_rank=1.05, drop=0.01):
    it = np.concatenate([[0], np.geomspace(1, 15000, 60)])
    t = it * m.PAPER_LR
    cos = np.where(it >= align_it, 0.99, 0.1) - np.where(it >= 10000, drop, 0.0)
    loss = np.where(it < growth_it * 1.2, 1.0, final_loss)
    traj = {"t": t, "loss": loss, "stable_rank": np.linspace(30, final_rank, len(t)), "center_cos_pos": cos,
            "center_cos_neg": cos, "w_norm": np.ones((len(t), 50))}
    return FakeRun(traj, config={"data": {"kind": "mnist_pair", "digits": [1, 0], "split": "test"}},
                   summary={"events": {"norm_growth": growth_it * m.PAPER_LR}})


MNIST_CASES = {
    "P13-low-rank": dict(final_rank=1.5),
    "P18-alignment": dict(align_it=5000.0),
    "P18-loss-decreases": dict(final_loss=0.8),
    "alignment-before-growth": dict(align_it=3000.0, growth_it=2000.0),
    "P18-norm-growth": dict(growth_it=800.0, align_it=300.0),
    "alignment-drops": dict(drop=0.0),
}


@pytest.mark.parametrize("claim", list(MNIST_CASES))
def test_mnist_claims_on_synthetic_trajectories(claim):
    exp = m.fig5
    assert _check(exp, {"gd": _mnist_run()}, claim).passed
    assert not _check(exp, {"gd": _mnist_run(**MNIST_CASES[claim])}, claim).passed
    assert {c.id for c in exp.claims} == set(MNIST_CASES)


def _sgd_run(early_ratio=1e-9, growth_at=300, loss_end=0.02):
    steps = np.arange(0, 1200, 10)
    t = steps * 1e-2
    fro = np.where(steps < growth_at, 1.0, 1e3)
    w = np.repeat(fro[:, None] / math.sqrt(50), 50, axis=1)
    direction = np.full(len(t), 10.0)
    traj = {"t": t, "w_norm": w, "norm_change": early_ratio * direction * fro ** 2, "direction_change": direction,
            "loss": np.linspace(1, loss_end, len(t))}
    return FakeRun(traj)


def test_sgd_claims_on_synthetic_trajectories():
    exp = m.sgd
    ok = {"both": _sgd_run(), "first": _sgd_run(growth_at=10)}
    assert _check(exp, ok, "P19-two-phase").passed and _check(exp, ok, "P19-first-layer").passed
    assert not _check(exp, {**ok, "both": _sgd_run(early_ratio=1e-2)}, "P19-two-phase").passed
    assert not _check(exp, {**ok, "both": _sgd_run(growth_at=10**6)}, "P19-two-phase").passed
    assert not _check(exp, {**ok, "first": _sgd_run(growth_at=200)}, "P19-first-layer").passed
    assert not _check(exp, {**ok, "first": _sgd_run(growth_at=10, loss_end=0.5)}, "P19-first-layer").passed


# -- end to end ------------------------------------------------------------------------------------

def test_reproduce_two_point_experiment_end_to_end(tmp_path):
    rep = reproduce([f"{m.PAPER}/fig7-9-two-points"], scale="quick", out=tmp_path)
    (exp,) = rep.experiments
    assert [r.status for r in exp.runs] == ["completed"] * 3
    assert len(exp.claims) == 4 and all(c.passed for c in exp.claims), [c for c in exp.claims if not c.passed]
    from twolayer.report import write_report

    index = write_report(rep)
    figures = sorted(p.name for p in (index.parent / "figures").iterdir())
    assert len(figures) == 3 and all(f.startswith("min2024_fig7-9") for f in figures)


def test_mnist_requirement_note_and_configs(tmp_path, monkeypatch):
    from twolayer.data import mnist

    monkeypatch.setenv(mnist.ENV_VAR, str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    note = m.mnist_requirement()
    assert note and "twolayer data download mnist" in note and str(tmp_path) in note
    for exp in (m.fig5, m.fig10, m.fig11, m.sgd):
        assert exp.requires is m.mnist_requirement
    assert m.fig5.run_configs("quick")["gd"]["data"]["split"] == "test"
    assert m.fig5.run_configs("paper")["gd"]["data"]["split"] == "auto"
    shared = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"
    if (shared / "t10k-images-idx3-ubyte.gz").is_file():
        monkeypatch.setenv(mnist.ENV_VAR, str(shared))
        assert m.mnist_requirement() is None
        cfg = m.fig10.run_configs("quick")["gd"]
        cfg["data"]["max_per_class"] = 40
        cfg["train"]["steps"] = 30
        cfg["observe"] = {"schedule": "log", "points": 5, "metrics": cfg["observe"]["metrics"]}
        run = twolayer.run(cfg, out=tmp_path / "runs")
        assert run.status == "completed" and run.trajectory["center_pos"].shape[-1] == 784


def test_direction_figures_and_gif(results, tmp_path):
    exp, runs = results["fig6-toy"]
    path = m.directions_gif(runs["toy"], tmp_path / "toy.gif")
    assert Path(path).read_bytes()[:4] == b"GIF8"
    fig = m._direction_figure(runs["toy"], m.TOY_SNAPSHOTS, "TOY-A")
    assert len(fig.axes) == len(m.TOY_SNAPSHOTS) + 1
