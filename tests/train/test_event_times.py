"""Event times as exact as the method allows (``train/event_times.py``): discrete methods refine every event to
the step, so the time does not depend on the observation grid and GD's t1 converges to the exact flow's at order
one in lr; every event carries its uncertainty (summary, table, terminal); an event that reads an observable that
is not recorded is a warning naming the metric."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import yaml

import twolayer
from twolayer.cli import main
from twolayer.errors import ConfigWarning

from conftest import base_config

METRICS = ["loss", "v", "cone", "w_norm"]


def _toy(train, points=40, seeds=3, metrics=METRICS, observe=None):
    """TOY-A (Assumption 1 holds), balanced init 1e-6, exponential loss (sum): alignment, then norm growth."""
    return {"name": "ev", "data": {"kind": "toy2d"}, "model": {"kind": "two_layer", "activation": "relu", "width": 8},
            "init": {"kind": "balanced", "scale": 1e-6}, "loss": {"kind": "exponential", "reduction": "sum"},
            "train": train, "observe": observe or {"points": points, "metrics": list(metrics)}, "seeds": seeds}


def _values(run, key):
    return np.array([np.nan if x is None else x for x in run.summary["events"][key]], dtype=float)


@pytest.mark.parametrize("train", [{"method": "gd", "lr": 0.02, "time": 6.0},
                                   {"method": "sgd", "lr": 0.02, "time": 6.0, "batch_size": 2}])
def test_discrete_events_are_the_first_step_observed_at_every_step(out, train):
    """On a 25-point log grid every event equals the one detected on a trajectory observed at every step, and its
    uncertainty is one step (the grid value, t of a grid point, would be up to 20 % later)."""
    coarse = twolayer.run(_toy(train, points=25), out=out)
    fine = twolayer.run(_toy(train, observe={"schedule": "every", "every": 1, "metrics": METRICS}), out=out)
    keys = [k for k in ("t1", "t1_cones", "norm_growth", "loss_halved") if k in fine.summary["events"]]
    assert {"t1", "norm_growth"} <= set(keys)
    refined_off_grid = 0
    for key in keys:
        a, b = _values(coarse, key), _values(fine, key)
        np.testing.assert_array_equal(a, b, err_msg=key)
        grid = coarse.trajectory["t"]
        refined_off_grid += sum(np.min(np.abs(grid - x)) > 1e-12 for x in a[~np.isnan(a)])
        widths = coarse.summary["event_uncertainty"][key]
        for x, w in zip(a, widths):
            assert (w is None) if np.isnan(x) else w == pytest.approx(train["lr"]) or (x == 0 and w == 0)
    assert refined_off_grid >= 3  # the check is not vacuous: most events fall between grid points


@pytest.fixture(scope="module")
def exact(tmp_path_factory):
    return twolayer.run(_toy({"method": "flow_exact", "time": 6.0, "rtol": 1e-11, "atol": 1e-30}),
                        out=tmp_path_factory.mktemp("exact"))


@pytest.mark.parametrize("points", [40, 29])
def test_gd_t1_converges_to_the_exact_flow_at_order_one(exact, tmp_path, points):
    """|t1_GD - t1_flow| <= C lr for lr = 0.04 ... 0.005 on two observation grids (40 and 29 log-spaced points,
    6-8 % apart, coarser than every lr here), and falls at least 4x over the 8x smaller lr; likewise the onset of
    norm growth. (GD's t1 is a whole step, so per lr it jitters within one step of C lr.)"""
    for key in ("t1", "norm_growth"):
        t_flow = _values(exact, key)
        assert not np.any(np.isnan(t_flow)), key
        errors = []
        for lr in (0.04, 0.02, 0.01, 0.005):
            gd = twolayer.run(_toy({"method": "gd", "lr": lr, "time": 6.0}, points=points), out=tmp_path)
            err = np.max(np.abs(_values(gd, key) - t_flow))
            assert err <= 6 * lr, (key, lr, err)
            errors.append(err)
        assert errors[-1] <= errors[0] / 4, (key, errors)


def test_event_uncertainty_in_the_table_and_the_terminal(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(base_config(seeds=2)))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    summary = json.loads(next((tmp_path / "out").glob("t-*/summary.json")).read_text())
    halved, widths = summary["events"]["loss_halved"], summary["event_uncertainty"]["loss_halved"]
    assert any(v is not None for v in halved)
    for value, width in zip(halved, widths):
        if value is not None:
            assert width == pytest.approx(0.05) and f"{value:.6g} [{width:.3g}]" in printed
    assert "(t - w, t]" in printed
    table = twolayer.runs(out=tmp_path / "out")
    assert list(table["uncertainty.loss_halved"].dropna()) == [w for w in widths if w is not None]


def test_an_event_missing_an_observable_warns_naming_the_metric(out):
    """t1 reads the cone and v: with the cone recorded but not v, the run warns that t1 is not detected and that
    'v' should be added to observe.metrics; with neither recorded, or with v alone (a generic observable: online SGD
    records it as an order parameter, and t1's mark is the cone), nothing is said."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        twolayer.run(base_config(observe={"points": 5, "metrics": ["loss", "cone"]}), out=out)
        twolayer.run(base_config(observe={"points": 6, "metrics": ["loss"]}), out=out)
        twolayer.run(base_config(observe={"points": 7, "metrics": ["loss", "v"]}), out=out)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)]
    assert messages == ["observe.metrics: event 't1' is not detected: it reads 'v', which is not recorded "
                        "(only 'cone' is); add 'v' to observe.metrics"]


@pytest.mark.parametrize("budget", [1, 3000])
def test_brackets_replayed_from_fewer_snapshots_give_the_same_events(out, tmp_path, monkeypatch, budget):
    """A run whose observed states do not all fit in memory keeps every stride-th one (one byte: only the
    initial state; 3000 bytes: every ~8th point) and replays each bracket's start from the latest kept state:
    the events are bitwise those of a run that kept every state."""
    import twolayer.api

    train = {"method": "gd", "lr": 0.02, "time": 6.0}
    kept = twolayer.run(_toy(train, points=25), out=out)
    monkeypatch.setattr(twolayer.api, "SNAPSHOT_BYTES", budget)
    replayed = twolayer.run(_toy(train, points=25), out=tmp_path / "replayed")
    assert kept.summary["events"] == replayed.summary["events"]
    assert kept.summary["event_uncertainty"] == replayed.summary["event_uncertainty"]


@pytest.mark.parametrize("method", ["gd", "sgd"])
def test_brackets_run_seed_by_seed_give_the_events_of_every_step(out, monkeypatch, method):
    """Past SINGLE_SEED_STEPS of frozen seeds' waste, each bracket runs as a batch of its seed alone (the other
    seeds' steps are not computed): the events are still those observed at every step."""
    import twolayer.train.event_times as event_times

    monkeypatch.setattr(event_times, "SINGLE_SEED_STEPS", 0)
    train = {"method": method, "lr": 0.02, "time": 6.0, **({"batch_size": 2} if method == "sgd" else {})}
    alone = twolayer.run(_toy(train, points=25), out=out / "alone")
    fine = twolayer.run(_toy(train, observe={"schedule": "every", "every": 1, "metrics": METRICS}), out=out / "fine")
    for key in ("t1", "norm_growth"):
        np.testing.assert_array_equal(_values(alone, key), _values(fine, key), err_msg=key)


def test_an_event_on_a_sparse_metric_keeps_its_grid_value_and_says_how_uncertain(out):
    """With ||w_j|| observed only every 5th point (observe.sparse), the bracket of the norm-growth onset starts at
    the last point where it was observed: the event stays a grid value, and its uncertainty reaches back to that
    point (not one step)."""
    observe = {"points": 25, "metrics": METRICS, "sparse": {"metrics": ["w_norm"], "every": 5}}
    run = twolayer.run(_toy({"method": "gd", "lr": 0.02, "time": 6.0}, observe=observe), out=out)
    t = run.trajectory["t"]
    seen = np.flatnonzero(~np.isnan(run.trajectory["w_norm"][0, :, 0]))
    checked = 0
    for x, w in zip(run.summary["events"]["norm_growth"], run.summary["event_uncertainty"]["norm_growth"]):
        if x is None:
            continue
        k = int(np.flatnonzero(t == x)[0])
        assert k in seen
        previous = seen[seen < k].max()
        assert w == pytest.approx(t[k] - t[previous]) and w > 0.02
        checked += 1
    assert checked == 3
    assert run.summary["event_uncertainty"]["t1"] == [0.02] * 3  # the densely observed event is refined


def test_reproduce_silences_the_unrecorded_event_warning(tmp_path):
    """A registered experiment records what its claims read: reproduce does not warn about the events its
    runs do not detect (twolayer.run still does, above)."""
    from twolayer.claims import Experiment, registered, reproduce
    from twolayer.errors import UnrecordedEventWarning

    exp = Experiment("zz/quiet", "t", "f", "d",
                     lambda scale: {"gd": base_config(observe={"points": 5, "metrics": ["loss", "cone"]})})
    with registered(exp), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reproduce([exp.id], out=tmp_path)
    assert not [w for w in caught if issubclass(w.category, UnrecordedEventWarning)]
