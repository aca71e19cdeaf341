"""The explorer's order-parameter page (``twolayer.explore.order_parameters``): for online SGD on teacher-student
data, Q, R, v and eps_g of the simulation and of the ODE from each seed's initial state, on the same time axis;
linked from the experiment's page; absent for other runs."""

from __future__ import annotations

import json
import re

import numpy as np

import twolayer
from twolayer.explore import write_experiment_page
from twolayer.explore.order_parameters import order_parameter_payload, write_order_parameter_page


def online(d=40, seeds=2):
    return {"name": "ts", "seeds": seeds,
            "data": {"kind": "teacher_student", "d": d, "teacher_width": 2, "activation": "erf", "n": 8},
            "model": {"kind": "two_layer", "activation": "erf", "width": 2}, "init": {"kind": "standard"},
            "loss": {"kind": "square", "reduction": "mean"},
            "train": {"method": "online_sgd", "lr": 1.0 / d, "steps": 4 * d},
            "observe": {"schedule": "every", "every": d // 2, "metrics": ["Q", "R", "T", "v", "eps_g"]}}


def test_page_overlays_sgd_and_ode(tmp_path):
    run = twolayer.run(online(), out=tmp_path / "store")
    p = order_parameter_payload(run, "k")
    assert len(p["seeds"]) == 2 and len(p["t"]) == 9 and p["t"][-1] == 4.0  # Goldt time = steps / d
    groups = {x["group"] for x in p["seeds"][0]["series"]}
    assert groups == {"Q", "R", "v", "eps_g"}
    for x in p["seeds"][1]["series"]:
        assert x["sgd"][0] == x["ode"][0] or abs(x["sgd"][0] - x["ode"][0]) < 1e-6, x["name"]  # same start
    R = next(x for x in p["seeds"][0]["series"] if x["name"] == "R00")
    assert np.max(np.abs(np.subtract(R["sgd"], R["ode"]))) > 0  # two curves, not one drawn twice
    page = write_experiment_page(tmp_path / "explore", "online_sgd/demo", "demo", [("k", run.path)], [])
    html = page.read_text()
    assert 'href="online_sgd-demo-order-parameters.html"' in html
    other = (tmp_path / "explore" / "online_sgd-demo-order-parameters.html").read_text()
    data = json.loads(re.search(r"window.ORDER = (.*?);</script>", other).group(1))
    assert data["runs"][0]["key"] == "k" and (tmp_path / "explore" / "plotly.min.js").is_file()


def test_no_page_for_other_runs(tmp_path):
    cfg = {"name": "gd", "seed": 0, "data": {"kind": "two_points", "angle": 1.2, "labels": [1, -1]},
           "model": {"kind": "two_layer", "activation": "relu", "width": 4}, "init": {"kind": "standard"},
           "loss": {"kind": "logistic", "reduction": "mean"}, "train": {"method": "gd", "lr": 0.1, "steps": 20},
           "observe": {"schedule": "every", "every": 10}}
    run = twolayer.run(cfg, out=tmp_path / "store")
    assert order_parameter_payload(run, "gd") is None
    assert write_order_parameter_page(tmp_path / "explore", "x.html", "x", [("gd", run.path)]) is None
    page = write_experiment_page(tmp_path / "explore", "p/x", "x", [("gd", run.path)], [])
    assert "order-parameters" not in page.read_text()
