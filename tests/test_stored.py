"""``Run.seeded``: any stored entry with a leading seed axis, for ``seed:`` and ``seeds:`` runs."""

from __future__ import annotations

import numpy as np
import pytest

import twolayer
from twolayer.claims import SyntheticRun

from conftest import base_config


def test_seeded_adds_the_seed_axis_only_for_single_seed_runs(out):
    one = twolayer.run(base_config(seed=3), out=out)
    many = twolayer.run(base_config(seeds=[3, 4]), out=out)
    assert one.seeded("loss").shape == (1, *one.trajectory["loss"].shape)
    np.testing.assert_array_equal(one.seeded("loss")[0], one.trajectory["loss"])
    assert many.seeded("loss") is not None and many.seeded("loss").shape == many.trajectory["loss"].shape
    np.testing.assert_array_equal(many.seeded("loss")[0], one.trajectory["loss"])  # seed 3 alone = seed 3 in a batch
    assert one.seeded("W", source="final").shape == (1, 8, 2)
    assert many.seeded("v", source="final").shape == (2, 8)


def test_seeded_refuses_shared_and_unknown_entries():
    run = SyntheticRun({"seeds": 2}, {"t": np.arange(3.0), "loss": np.ones((2, 3))}, {"W": np.zeros((2, 4, 2))})
    assert run.seeded("loss").shape == (2, 3)
    assert run.seeded("W", "final").shape == (2, 4, 2)
    with pytest.raises(ValueError, match="shared by every seed"):
        run.seeded("t")
    with pytest.raises(KeyError, match="holds loss, t"):
        run.seeded("cos_pos")
    with pytest.raises(ValueError, match="source"):
        run.seeded("loss", source="summary")


def test_config_is_read_once_and_each_access_is_its_own_copy(out):
    """``config`` parses config.yaml on the first access only (``seeded`` asks it for every entry, and a config
    with explicit initial weights holds thousands of numbers), and an edit of what it returned changes nothing."""
    run = twolayer.Run(twolayer.run(base_config(seeds=[3, 4]), out=out).path)
    first = run.config
    first["train"]["lr"] = 99.0
    assert run.config["train"]["lr"] == 0.05 and run.config.train.lr == 0.05
    (run.path / "config.yaml").write_text("train: {lr: 7.0}\n")  # not re-read: a run directory's config is fixed
    assert run.config["train"]["lr"] == 0.05 and run.seeded("loss").shape[0] == 2
    fresh = twolayer.Run(run.path)
    assert fresh.config["train"]["lr"] == 7.0  # a new reader parses the file as it is now
