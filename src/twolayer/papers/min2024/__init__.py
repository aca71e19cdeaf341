"""Min, Mallada & Vidal (ICLR 2024), "Early neuron alignment in two-layer ReLU networks with small
initialization": every numerical figure (Figs. 5-13), the geometry figures (Figs. 1-3), the theory
checks P1-P19 of the spec that are checkable at simulation sizes, and experiments beyond the paper
(alignment-time scaling, Lemmas 1-4 over the init scale, low rank on d > 2 data, the early saddle of
the unbalanced init), and, on the exact ReLU flow (``flow_exact``), Figs. 4 and 14-21: activation
paths at event times and App. E's Caratheodory examples. One module per experiment; ``_shared`` and ``_plots`` hold their helpers.

MNIST experiments need the IDX files (``twolayer data download mnist`` or ``TWOLAYER_DATA``);
``requires=mnist_requirement`` makes ``reproduce`` skip them with a note when the files are missing.
"""

from twolayer.papers.min2024 import (  # noqa: F401  (_shared registers the paper, each module its experiments)
    toy, two_points, theory, two_point_theory, scaling, lemmas, low_rank, geometry, activation_paths, caratheodory,
    mnist, sgd, broken, t2_scaling, eps_floor,
)
