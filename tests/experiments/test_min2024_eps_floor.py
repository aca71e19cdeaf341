"""min2024/eps-floor helpers: the interpolated fitting time and the horizon past t2."""

import math

import numpy as np
import pytest

from twolayer.papers.min2024.eps_floor import X_MIN_CLASS, end_time, fit_time


def test_fit_time_interpolates_an_exponential_crossing_exactly():
    t = np.geomspace(0.1, 50.0, 40)
    fit = 1e-6 * np.exp(2.0 * t)  # crosses 1/4 at ln(0.25e6)/2
    assert fit_time(t, fit) == pytest.approx(math.log(0.25e6) / 2, rel=1e-12)


def test_fit_time_is_inf_when_never_reached_and_the_first_time_when_above_at_once():
    t = np.linspace(0.0, 1.0, 5)
    assert fit_time(t, np.full(5, 0.1)) == math.inf
    assert fit_time(t, np.full(5, 0.5)) == 0.0


@pytest.mark.parametrize("eps", [1e-4, 1e-16, 1e-150])
def test_the_horizon_passes_the_predicted_t2(eps):
    assert end_time(eps) > math.log(1 / eps) / X_MIN_CLASS + 4  # TOY-A: t2 = ln(1/eps)/1.983 - 0.8 (measured)
