"""Figure helpers shared by experiment modules: paper-style panels and min-max bands over seeds.

Figures are plain ``matplotlib.figure.Figure`` objects (no pyplot state), saved as PNG by the
report: ``savefig`` draws them with Agg whatever backend pyplot uses, so importing this module
leaves pyplot's backend alone (a notebook keeps its inline figures).
"""

from __future__ import annotations

import contextlib
import warnings

import matplotlib
import numpy as np
from matplotlib.figure import Figure

STYLE = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8, "legend.frameon": False,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False, "axes.spines.right": False,
    "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.5, "lines.linewidth": 1.4,
    "savefig.bbox": "tight", "savefig.dpi": 110, "figure.dpi": 110,
}


@contextlib.contextmanager
def style():
    """The report's matplotlib style, active for the duration of a ``with`` block."""
    with matplotlib.rc_context(STYLE):
        yield


def panels(ncols: int = 1, nrows: int = 1, *, width: float = 3.6, height: float = 2.8):
    """A figure with ``nrows x ncols`` panels of the given size (inches); returns ``(fig, axes)``
    with ``axes`` a flat list."""
    with style():
        fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, list(axes.ravel())


def band(ax, t, values, *, label: str | None = None, color=None, center: str = "median", alpha: float = 0.25,
         positive: bool = False):
    """Plot the ``center`` (median or mean) over seeds of ``values`` [S, T] (or [T]) against ``t``
    with the min-max range over seeds shaded. ``positive`` drops non-positive entries (log axes)."""
    t = np.asarray(t, dtype=np.float64)
    y = np.atleast_2d(np.asarray(values, dtype=np.float64))
    if positive:
        y = np.where(y > 0, y, np.nan)
    with warnings.catch_warnings():  # a time where no seed has a value (all NaN) is a gap in the line
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        mid = np.nanmedian(y, axis=0) if center == "median" else np.nanmean(y, axis=0)
        low, high = np.nanmin(y, axis=0), np.nanmax(y, axis=0)
    (line,) = ax.plot(t, mid, label=label, color=color)
    if y.shape[0] > 1:
        ax.fill_between(t, low, high, color=line.get_color(), alpha=alpha, linewidth=0)
    return line


def positive_times(t, *arrays, axis: int = 1):
    """Drop the points with ``t <= 0`` (for log time axes) from ``t`` and from each array along
    its time ``axis`` (1 for batched-seed trajectories [S, T, ...], 0 for single-seed ones)."""
    keep = np.asarray(t) > 0
    return [np.asarray(t)[keep], *(np.compress(keep, np.asarray(a), axis=axis) for a in arrays)]
