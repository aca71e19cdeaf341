"""An experiment's figures (``Experiment.figures``) drawn from its runs, as PNG bytes.

``twolayer reproduce`` draws them where the experiment's claims are evaluated (``reproduce(figures=True)``):
with ``--jobs`` in the experiment's worker, beside the other experiments, on the same ``Results`` as its claims
(one memo for both). The report then only writes the files; it draws the figures of an experiment that was not
drawn this way (``ExperimentResult.figures`` None: a reproduction rebuilt by ``load``, or made without figures).
"""

from __future__ import annotations

import io
import time
from collections.abc import Mapping
from dataclasses import dataclass

from twolayer import plotting
from twolayer.claims.registry import Experiment, Results


@dataclass(frozen=True)
class DrawnFigure:
    """One figure of an experiment: its PNG, or None and why it was not drawn."""

    name: str
    caption: str
    png: bytes | None
    error: str = ""


def draw_figures(exp: Experiment, results: Results, failures: Mapping[str, str]) -> tuple[list[DrawnFigure], float]:
    """Every figure of ``exp`` drawn on ``results`` in the report's style (``plotting.style``), and the seconds it
    took. None is drawn when a run failed (``failures``: key -> message); a figure function that raises gives its
    error instead of a PNG, and the others are still drawn."""
    started = time.perf_counter()
    drawn = []
    for spec in exp.figures:
        if failures:
            drawn.append(DrawnFigure(spec.name, spec.caption, None, "not drawn: " + "; ".join(failures.values())))
            continue
        try:
            with plotting.style():
                fig = spec.fn(results)
                buffer = io.BytesIO()
                fig.savefig(buffer, format="png")
            drawn.append(DrawnFigure(spec.name, spec.caption, buffer.getvalue()))
        except Exception as e:  # noqa: BLE001 (a figure that cannot be drawn says why; the report goes on)
            drawn.append(DrawnFigure(spec.name, spec.caption, None, f"figure failed: {type(e).__name__}: {e}"))
    return drawn, time.perf_counter() - started


__all__ = ["DrawnFigure", "draw_figures"]
