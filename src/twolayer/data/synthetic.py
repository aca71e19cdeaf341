"""Small synthetic datasets that make the engine testable before the paper datasets exist."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from twolayer.data.registry import DataParams, Dataset, register_dataset
from twolayer.fields import field_errors


class TwoPointsParams(DataParams):
    """Two points in the plane: x1 = r1 [1, 0], x2 = r2 [cos(angle), sin(angle)].

    ``angle`` is in radians; the default pi/2 - 0.1 is Min et al. Fig. 7 (x2 = [sin 0.1, cos 0.1]).
    """

    kind: Literal["two_points"] = "two_points"
    angle: float = Field(default=math.pi / 2 - 0.1, ge=0.0, le=math.pi)
    labels: tuple[Literal[-1, 1], Literal[-1, 1]] = (1, 1)
    radii: tuple[float, float] = (1.0, 1.0)

    @model_validator(mode="after")
    def _positive_radii(self):
        if min(self.radii) <= 0:
            raise field_errors(type(self).__name__, [("radii", f"must be positive, got {list(self.radii)}")])
        return self


@register_dataset("two_points", TwoPointsParams)
def two_points(p: TwoPointsParams) -> Dataset:
    """x1 = [r1, 0], x2 = r2 [cos(angle), sin(angle)], labelled ``labels`` (Min et al. §3.1, Fig. 7)."""
    X = np.array([[p.radii[0], 0.0], [p.radii[1] * math.cos(p.angle), p.radii[1] * math.sin(p.angle)]])
    return Dataset(X, np.array(p.labels, dtype=np.float64), {"angle": p.angle})
