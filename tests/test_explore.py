"""The explorer's data and pages (the browser test is tests/test_explore_browser.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import twolayer
from twolayer.cli import main
from twolayer.claims import registered, reproduce
from twolayer.claims.selftest import tiny
from twolayer.explore import explore, page_name, run_payload
from twolayer.explore.data import MAX_POINTS, keep_points
from twolayer.report import write_report

TWO_D = {
    "name": "ex2d", "seeds": 2,
    "data": {"kind": "two_points", "angle": 1.2, "labels": [1, -1]},
    "model": {"kind": "two_layer", "activation": "relu", "width": 5},
    "init": {"kind": "gaussian", "scale": 1e-3},
    "loss": {"kind": "exponential"},
    "train": {"method": "gd", "lr": 0.05, "steps": 300},
    "observe": {"schedule": "log", "points": 10, "metrics": ["loss", "accuracy", "v", "cone", "neuron_weights"]},
}


def _payload_data(html: str) -> dict:
    return json.loads(re.search(r"window\.TWOLAYER = (.*?);</script>", html, re.S).group(1).replace("<\\/", "</"))


def test_payload_of_a_2d_run(tmp_path):
    run = twolayer.run(TWO_D, out=tmp_path)
    p = run_payload(run)
    assert [s["name"] for s in p["scalars"]] == ["loss", "accuracy"]
    n = p["neurons"]
    assert n["source"] == "neuron_weights" and n["width"] == 5
    W = run.trajectory["neuron_weights"]
    U = W / np.linalg.norm(W, axis=-1, keepdims=True)
    np.testing.assert_allclose(n["x"], U[..., 0], atol=5e-5)
    np.testing.assert_allclose(n["y"], U[..., 1], atol=5e-5)
    assert n["sign"] == np.sign(run.trajectory["v"]).astype(int).tolist()
    assert n["cone"] == run.trajectory["cone"].tolist()
    assert [r["label"] for r in n["refs"]] == ["x+", "x-"]
    assert n["points"]["label"] == [1, -1]
    np.testing.assert_allclose(n["refs"][1]["xy"], [np.cos(1.2), np.sin(1.2)], atol=1e-4)
    assert p["seeds"] == [0, 1] and p["time"]["log"]
    assert p["time"]["step"] == run.trajectory["step"].tolist()
    np.testing.assert_allclose(p["scalars"][0]["values"], run.trajectory["loss"], rtol=1e-5)


def test_payload_of_a_plane_projection_and_of_a_run_without_directions(tmp_path, random_data_file):
    path, X, y = random_data_file
    cfg = {**TWO_D, "name": "ex3d", "data": {"kind": "file", "path": str(path)},
           "observe": {"schedule": "log", "points": 8, "metrics": ["loss", "v", "neuron_plane_pm"]}}
    run = twolayer.run(cfg, out=tmp_path)
    n = run_payload(run)["neurons"]
    assert n["source"] == "neuron_plane_pm" and "cone" not in n
    np.testing.assert_allclose(n["x"], run.trajectory["neuron_plane_pm"][..., 0], atol=5e-5)
    assert [r["label"] for r in n["refs"]] == ["x+", "x-"]
    plain = twolayer.run({**cfg, "name": "plain", "observe": {"schedule": "log", "points": 8, "metrics": ["loss"]}},
                         out=tmp_path)
    assert "neuron_plane_pm" in run_payload(plain)["neurons"]["missing"]


def test_keep_points_thins_long_trajectories():
    assert keep_points(50).tolist() == list(range(50))
    kept = keep_points(5000)
    assert len(kept) <= MAX_POINTS and kept[0] == 0 and kept[-1] == 4999 and np.all(np.diff(kept) > 0)


def test_explore_a_reproduction_and_link_it_from_the_report(tmp_path):
    out = tmp_path / "out"
    with registered(tiny("selftest/pass", bound=10.0), tiny("selftest/fail", bound=1e-9)):
        rep = reproduce(["selftest"], out=out)
        index = write_report(rep)
    report = index.read_text()
    for exp in ("selftest/pass", "selftest/fail"):
        page = out / "explore" / page_name(exp)
        assert f'href="../explore/{page.name}"' in report
        data = _payload_data(page.read_text())
        assert [c["id"] for c in data["claims"]] == [f"{exp}:final-loss"]
        runs = next(e.runs for e in rep.experiments if e.id == exp)
        assert [r["id"] for r in data["runs"]] == [r.run_id for r in runs]
    assert (out / "explore" / "plotly.min.js").stat().st_size > 1_000_000
    html = (out / "explore" / page_name("selftest/pass")).read_text()
    scripts = re.findall(r'<script src="([^"]+)"', html)
    assert scripts == ["plotly.min.js"]  # no CDN: the only script file lies beside the page
    assert "http://" not in html and "https://" not in html

    assert main(["explore", str(out)]) == 0
    listing = (out / "explore" / "index.html").read_text()
    assert page_name("selftest/pass") in listing and "1 / 1" in listing and "0 / 1" in listing
    run_id = next(e.runs for e in rep.experiments if e.id == "selftest/pass")[0].run_id
    page = explore(run_id, out=out)
    assert page.name == f"{run_id}.html"
    assert [c["id"] for c in _payload_data(page.read_text())["claims"]] == ["selftest/pass:final-loss"]
    assert main(["explore", "no-such-run", "--out", str(out)]) == 2


def test_missing_explore_extra_is_a_clear_error(tmp_path, monkeypatch, capsys):
    import twolayer.explore.page as page
    from twolayer.extras import MissingExtra

    def missing(module, extra, feature):
        raise MissingExtra(f"{feature} needs {module}: pip install 'twolayer[{extra}]'")

    monkeypatch.setattr(page, "require", missing)
    run = twolayer.run(TWO_D, out=tmp_path)
    assert main(["explore", str(run.path)]) == 2
    assert "pip install 'twolayer[explore]'" in capsys.readouterr().err
    with registered(tiny("selftest/pass", bound=10.0)):
        index = write_report(reproduce(["selftest"], out=tmp_path / "o2"))
    assert "explore the runs" not in index.read_text()  # the report still renders, without links


def test_mean_field_run_on_the_target_plane(tmp_path):
    cfg = {"name": "mf", "seeds": 2, "data": {"kind": "multi_index", "d": 6, "r": 2, "n": 40, "n_test": 20},
           "model": {"kind": "mean_field", "activation": "abs", "width": 7}, "init": {"kind": "standard"},
           "loss": {"kind": "square"}, "objective": "population", "train": {"method": "gd", "lr": 0.01, "steps": 30},
           "observe": {"schedule": "log", "points": 6,
                       "metrics": ["loss_population", "loss_order", "a_hat", "neuron_plane_targets"]}}
    run = twolayer.run(cfg, out=tmp_path)
    n = run_payload(run)["neurons"]
    assert n["source"] == "neuron_plane_targets" and "sign" not in n
    np.testing.assert_allclose([r["xy"] for r in n["refs"]], [[1, 0], [0, 1]], atol=1e-4)  # orthonormal targets
    W = run.trajectory["neuron_plane_targets"]
    assert np.all(np.linalg.norm(W, axis=-1) <= 1 + 1e-12)  # projections of unit vectors lie in the disk
    ds = run.to_xarray()
    assert ds["loss_order"].dims == ("seed", "t", "order") and ds["a_hat"].dims == ("seed", "t", "direction")
    ax = run.plot("loss_order")
    assert len(ax.get_lines()) == 9  # Hermite orders 0..8, each a median with its seed band
    assert run.plot().get_ylabel() == "loss_population"  # the default is the recorded loss
    import matplotlib.pyplot as plt

    plt.close("all")


def test_cones_of_2d_data_are_arcs_of_the_circle(tmp_path):
    """toy2d: the payload's arcs are S+, S- and S_dead; every direction of an arc is in its cone, and every arc
    ends on a cone boundary, a direction orthogonal to a data point."""
    from twolayer.data import build_dataset
    from twolayer.config import load_config
    from twolayer.theory.alignment import cone_membership

    cfg = {**TWO_D, "name": "cones", "data": {"kind": "toy2d"}}
    run = twolayer.run(cfg, out=tmp_path)
    arcs = run_payload(run)["neurons"]["cones"]
    data = build_dataset(load_config(cfg).data)
    assert {a["code"] for a in arcs} == {1, -1, 0}
    for arc in arcs:
        U = np.stack([arc["x"], arc["y"]], axis=-1)
        assert np.mean(cone_membership(U[1:-1], data.X, data.y) == arc["code"]) == 1.0
        for end in (U[0], U[-1]):
            assert np.min(np.abs(data.X @ end) / np.linalg.norm(data.X, axis=1)) < 1.5 * 2 * np.pi / 1440


def test_a_run_without_directions_says_which_metric_to_add(tmp_path, random_data_file):
    flat = twolayer.run({**TWO_D, "name": "flat", "observe": {"points": 6, "metrics": ["loss", "w_norm"]}}, out=tmp_path)
    why = run_payload(flat)["neurons"]["missing"]
    assert why == ("no neuron directions recorded: this run's observe.metrics are loss, w_norm; add 'neuron_weights' "
                   "(its two_points data is 2-D: the directions on the unit circle, with the cones) to observe.metrics, "
                   "and 'v' and 'cone' for the colours")
    path, _, _ = random_data_file
    wide = twolayer.run({**TWO_D, "name": "wide", "data": {"kind": "file", "path": str(path)},
                         "observe": {"points": 6, "metrics": ["loss", "v", "cone"]}}, out=tmp_path)
    why = run_payload(wide)["neurons"]["missing"]
    assert "d = 3" in why and "'neuron_plane_pm'" in why and "for the colours" not in why
