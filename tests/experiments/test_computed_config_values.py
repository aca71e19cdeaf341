"""Configs that hold computed numbers (lyu2021's KKT starts, multiindex2026's rescaled step) keep 10 significant
digits, so that the config hash, and the run names of the committed paper-scale references, do not change with the
last bits a machine's BLAS, quadrature or XLA build gives them."""

from __future__ import annotations

import numpy as np

from twolayer.papers.lyu2021._shared import VALUE_DIGITS, config_values, values_init
from twolayer.papers.multiindex2026.activations import activation_lr


def test_a_start_a_few_ulps_away_gives_the_same_config():
    W = np.array([[6.581644691384682, -4.7998773696208925], [-5.459045011932481, 5.5573411112546625]])
    a = np.array([8.626228186683816, -9.362213263632853])
    nudged_W, nudged_a = W + 7 * np.spacing(W), a - 5 * np.spacing(a)
    assert not np.array_equal(W, nudged_W)
    assert values_init(W, a) == values_init(nudged_W, nudged_a)


def test_rounding_keeps_the_digits_and_moves_a_start_by_at_most_half_a_unit_of_the_last():
    x = np.array([[1.2345678901234567, -9.87654321098765e-7], [0.0, 3.0]])
    out = np.array(config_values(x))
    assert out.shape == x.shape and out[1, 0] == 0.0 and out[1, 1] == 3.0
    assert np.all(np.abs(out - x) <= 0.5 * 10.0 ** (1 - VALUE_DIGITS) * np.abs(x))
    assert out[0, 0] == 1.23456789 and out[0, 1] == -9.876543211e-7


def test_the_rescaled_step_has_ten_significant_digits():
    for act in ("abs", "sym_gelu", "sym_swish"):
        lr = activation_lr("paper", act)
        assert float(f"{lr:.10g}") == lr and lr > 0
