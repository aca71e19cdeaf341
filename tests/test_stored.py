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
