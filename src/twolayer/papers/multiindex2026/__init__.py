"""Experiments of "Learning Orthogonal Multi-Index Models Beyond Small Initialization: Incremental Learning,
Competitive Dynamics and Symmetry" (paper id ``multiindex2026``; spec 002), one module per experiment.

Setting: mean-field net f(x) = (1/m) sum_i ||w_i||^2 sigma(w_i.x/||w_i||), sigma = |x|, Gaussian inputs, target
f*(x) = sum_{j<=r} sigma(x_j), square loss, standard init w_i ~ N(0, I/d), GD on eq. (3). What the modules share
(sizes, config builders, the ideal synthetic Figure-1 run) is in ``_shared``.
"""

from twolayer.papers.multiindex2026 import (  # noqa: F401  (each module registers its experiments)
    figure1, figure1_empirical, theorem31_table, overlays, figure2, activations, finite_size, gd_stability, schedule,
    coupling, non_orthogonal, stays_high, monte_carlo, scalings,
    stage21, balance,
)
