"""Validation changes must not move run directories: these configs hash exactly as they did before
the reliability checks were added (hashes computed with the code of that time), so stored runs stay
cache hits. (The trajectories and final parameters of the same configs were compared bitwise with
that code too; see the README's Reliability section.)"""

from __future__ import annotations

import pytest

import twolayer

TWO_POINTS = {"kind": "two_points", "angle": 1.2, "labels": [1, -1]}
BASE = {"name": "t", "data": TWO_POINTS, "model": {"kind": "two_layer", "activation": "relu", "width": 8},
        "init": {"kind": "gaussian", "scale": 0.3}, "loss": {"kind": "logistic", "reduction": "mean"},
        "train": {"method": "gd", "lr": 0.05, "steps": 100},
        "observe": {"schedule": "log", "points": 10, "metrics": ["loss", "w_norm", "v"]}}

CASES = {
    "gd-2-seeds": ({**BASE, "seeds": 2}, "3c9a457a0489df4de4cc2be7e4a63cf4ac7f62ba55d6cef5ec7f4d46e0cdd111"),
    "sgd": ({**BASE, "seeds": [0, 3], "train": {"method": "sgd", "lr": 0.05, "steps": 300, "batch_size": 1}},
            "fd4f5c88e768a95928d8b6abad9e33deb8dcdf41e7102010ba89b63de7146337"),
    "flow": ({**BASE, "data": {"kind": "two_points", "angle": 1.4708, "labels": [1, 1]},
              "train": {"method": "flow", "time": 5.0}},
             "c5da1ca7dd0ce56591dcbf8b94774c090c10e4fe518a4da0dd34843ce0d51bd5"),
    "mean-field-population": ({"name": "mf", "data": {"kind": "multi_index", "d": 6, "r": 2, "n": 10, "n_test": 10},
                               "model": {"kind": "mean_field", "activation": "abs", "width": 5}, "loss": {"kind": "square"},
                               "objective": "population", "init": {"kind": "standard"},
                               "train": {"method": "gd", "lr": 0.01, "steps": 50},
                               "observe": {"points": 6, "metrics": ["loss"]}},
                              "2204da7822b302f906f638b90435915a97aea7d650878828bbd4b2bdfa7be962"),
    "float32": ({**BASE, "precision": "float32", "seeds": 3},
                "1c22324165b525424911a305cee72386c2870d83cf9e7580e1fdb83999ce1a8c"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_config_hash_is_unchanged(name):
    cfg, expected = CASES[name]
    assert twolayer.load_config(cfg).config_hash() == expected
