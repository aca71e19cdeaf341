"""The wrong worlds of multiindex2026/figure1-empirical: each changes one premise of the empirical run and nothing
else, beside the population run the tiny-sample world already makes (same config, so the store shares it)."""

from __future__ import annotations

import numpy as np
import pytest

from twolayer.claims import get
from twolayer.papers.multiindex2026 import figure1_empirical as emp
from twolayer.papers.multiindex2026._shared import ETA, hermite_sums
from twolayer.theory import multi_index as th


@pytest.fixture(scope="module")
def configs():
    return get("multiindex2026/figure1-empirical").run_configs("quick")


def horizon(cfg: dict) -> float:
    return cfg["train"]["lr"] * cfg["train"]["steps"]


def test_small_init_world_changes_only_the_init_scale(configs):
    world = emp.small_init_world(configs)
    run, main = world["empirical"], configs["empirical"]
    assert run["init"] == {"kind": "standard", "scale": emp.SMALL_INIT_SCALE} and main["init"] == {"kind": "standard"}
    assert run["objective"] == "empirical" and run["precision"] == main["precision"] == "float32"
    assert run["data"] == main["data"] and run["model"] == main["model"] and run["loss"] == main["loss"]
    assert run["train"]["lr"] == main["train"]["lr"] and horizon(run) == pytest.approx(emp.SMALL_INIT_TIME)
    assert run["seeds"] == 1 and set(emp.TINY_METRICS) <= set(run["observe"]["metrics"])
    assert world["population"] == emp.tiny_population(configs)  # the tiny-sample world's run: cached, shared
    assert world["population"]["init"] == {"kind": "standard"} and world["population"]["objective"] == "population"


def test_correlation_world_changes_only_the_loss(configs):
    world = emp.correlation_world(configs)
    run, main = world["empirical"], configs["empirical"]
    assert run["objective"] == "population_correlation" and run["precision"] == "float64"
    assert run["init"] == main["init"] and run["model"] == main["model"] and run["data"]["d"] == main["data"]["d"]
    assert run["train"]["lr"] == main["train"]["lr"] and horizon(run) > emp.SETTLED  # M_irr is checked from t = 1
    assert set(run["observe"]["metrics"]) >= {"mass_total", "mass_irrelevant", "directions_found", "mass_aligned"}
    assert world["population"] == emp.tiny_population(configs)


def test_small_init_moves_stage_11_past_the_factor_only(configs):
    """Lemma C.5's logistic: alpha_0 = 0.01 makes tau_0 more than STAGE_ORDER_FACTOR times the standard init's, while
    the later stages (tau_2 of the reduced dynamics, 2.86 quick) move by less than a tenth of the factor's room."""
    r, h = configs["empirical"]["data"]["r"], hermite_sums("abs")
    standard, small = (th.stage11_time(1 - np.sqrt(ETA), a0, r, 0.0, h) for a0 in (1.0, emp.SMALL_INIT_SCALE**2))
    assert small / standard > emp.STAGE_ORDER_FACTOR and small / standard == pytest.approx(2.59, abs=0.01)
    assert small - standard < 0.1 * (emp.STAGE_ORDER_FACTOR - 1) * 2.86


def test_the_worlds_are_declared_as_measured():
    exp = get("multiindex2026/figure1-empirical")
    premises = {spec.id: {p.name: p.holds for p in spec.premises} for spec in exp.claims}
    assert premises["same-stage-order"] == {"tiny-sample": False, "small-initialization": False}
    assert premises["same-reallocation"] == {"tiny-sample": False, "correlation-loss": False,
                                             "small-initialization": True}
