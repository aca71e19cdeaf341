"""Where the tolerances of some min2024 claims come from (issue 26): bounds derived from GD, least squares and
float round-off, and seed spreads measured on independent seeds.

Derived:

- ``first_step_bound``: GD's first step against the flow's velocity of a direction (Fig. 1 / eq. 4). For one step
  w -> w + lr b and u = w/||w||, a = b/||w||, z = lr ||a||: the step's mean velocity (u(lr) - u)/lr differs from
  eq. 4's u'(0) = P_u a by at most z / (1 - z) relative to ||P_u a|| (z < 1; the supremum, reached as a turns
  antiparallel to u); to first order the deviation is lr sqrt((u.a)^2 + |P_u a|^2 / 4) (``first_step_error``), from
  u(lr) - u = lr P_u a - lr^2 ((u.a) P_u a + |P_u a|^2 u / 2) + O(lr^3).
- ``slope_error``: a least-squares slope sum_i c_i y_i, c_i = (x_i - mean x) / sum_k (x_k - mean x)^2, moves by
  at most sum_i |c_i| e_i when each y_i moves by at most e_i.
- ``mean_loss_roundoff``: the relative round-off of a computed mean of n exponential losses exp(-y_i f(x_i)),
  f(x) = sum_j v_j relu(<w_j, x>) (Higham's gamma_k = k u bounds, u = eps / 2): the forward pass has absolute
  error <= gamma_{d+h+1} F with F = X_max sum_j |v_j| ||w_j||, which exp turns into a relative error of the term,
  and the mean adds gamma_n; ``eps (n + 2 + (d + h + 1) F)`` bounds it (a factor 2 above the gamma bounds, which
  covers a difference of two such losses).
- ``cosine_roundoff``: the absolute round-off of cos(mean of h rows, x) over d coordinates, ``(d + h + 2) eps``.

Measured (``spread(...)``, mean and sample sd over the 10 seeds 100-109, independent of the checked seeds 0-19,
of the same configs; scripts in benchmarks/spreads/issue26/: spread_runs.py, spread_toy_twopoints.py and
spread_theory_paths.py): ``SPREADS``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Spread:
    """A per-seed quantity's mean and sample sd over ``seeds`` independent seeds of the checked config."""

    mean: float
    sd: float
    seeds: str = "10 seeds (100-109)"

    def upper(self, k: float = 3.0, pooled: int = 1) -> float:
        """mean + k sd / sqrt(pooled) (``pooled``: seeds averaged in the checked statistic)."""
        return self.mean + k * self.sd / math.sqrt(pooled)

    def lower(self, k: float = 3.0, pooled: int = 1) -> float:
        """mean - k sd / sqrt(pooled)."""
        return self.mean - k * self.sd / math.sqrt(pooled)

    def text(self, digits: int = 3) -> str:
        return f"{self.mean:.{digits}g} +- {self.sd:.{digits}g} (mean +- sd, {self.seeds})"


# Same configs as the checked runs (fig6-toy and fig7-9-two-points are the same at both scales; the activation-path
# events end before t = 3.6, so the quick and paper GD windows give the same per-seed orders).
SPREADS = {
    # fig6-toy: L(40000) / L(0), per seed
    "toy-final-loss": Spread(0.004803725200637193, 1.76091650192988e-05),
    # fig7-9-two-points, mu = sin 0.001: V+(t) neurons outside S+ at 21000 / at 7000, per seed
    "two-points-late-over-early": Spread(0.10178571428571428, 0.09685958896962464),
    # ... log10(1 - L(7000)/L(0)) (a log: 1 - L ~ mean y f grows like eps^2 e^{2kt} times the init's factors)
    "two-points-log10-loss-drop-7000": Spread(-2.7148222588913127, 0.16368414395088784),
    # ... L(21000) / L(7000)
    "two-points-loss-21000-over-7000": Spread(0.008499209504496567, 0.00012219040840424767),
    # fig4-14-17-activation-paths: per seed, the fitted order of mean |t_GD - t_exact| in lr (4e-3, 2e-3, 1e-3)
    "gd-event-order": Spread(1.0141394657935803, 0.0630340235665047),
}


def first_step_error(u, a) -> float:
    """The first-order term of |(u(lr) - u(0))/lr - P_u a| / |P_u a| per unit lr: sqrt((u.a)^2 + |P_u a|^2 / 4)."""
    u, a = np.asarray(u, dtype=np.float64), np.asarray(a, dtype=np.float64)
    along = float(a @ u)
    across = float(np.sum((a - along * u) ** 2))
    return math.sqrt(along**2 + across / 4)


def first_step_bound(lr: float, speed: float) -> float:
    """z / (1 - z), z = lr ``speed`` = lr ||a||, ||a|| = (|v_j| / ||w_j||) ||x_a||: the largest relative error of one GD
    step's mean direction velocity against eq. 4's, over all directions of a (inf for z >= 1)."""
    z = lr * speed
    return z / (1.0 - z) if z < 1.0 else math.inf


def slope_error(x, errors) -> float:
    """sum_i |c_i| e_i: the most the least-squares slope of y on x moves when each y_i moves by at most e_i."""
    x = np.asarray(x, dtype=np.float64)
    c = (x - x.mean()) / np.sum((x - x.mean()) ** 2)
    return float(np.sum(np.abs(c) * np.asarray(errors, dtype=np.float64)))


def machine_eps(precision: str) -> float:
    """eps of ``float32`` / ``float64``."""
    return float(np.finfo(np.float32 if precision == "float32" else np.float64).eps)


def mean_loss_roundoff(n: int, d: int, h: int, eps: float, F) -> np.ndarray:
    """eps (n + 2 + (d + h + 1) F): relative round-off of a computed mean of n exponential losses of a two-layer
    ReLU net (width h, input dimension d), F = X_max sum_j |v_j| ||w_j|| (per observation when an array)."""
    return eps * (n + 2 + (d + h + 1) * np.asarray(F, dtype=np.float64))


def cosine_roundoff(d: int, h: int, eps: float) -> float:
    """(d + h + 2) eps: absolute round-off of cos(mean of h vectors, x) over d coordinates."""
    return (d + h + 2) * eps
