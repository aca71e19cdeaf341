"""report.plotting.band: seeds' median and range, gaps where no seed has a value."""

import warnings

import numpy as np
import pytest

from twolayer.plotting import band, panels


@pytest.mark.parametrize("center", ["median", "mean"])
def test_band_leaves_a_gap_where_no_seed_is_positive_without_warning(center):
    t = np.arange(4.0)
    values = np.array([[1.0, -1.0, 2.0, 4.0], [3.0, 0.0, 2.0, 8.0]])
    _, (ax,) = panels()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        line = band(ax, t, values, center=center, positive=True)
    y = line.get_ydata()
    assert np.isnan(y[1]) and np.allclose(y[[0, 2, 3]], [2.0, 2.0, 6.0])
