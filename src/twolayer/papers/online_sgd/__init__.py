"""Online SGD in high dimension (issue 29): the order-parameter ODEs of Saad & Solla (1995) and Goldt et al.
(2019), with the eta^2 term, checked against one-pass SGD on teacher-student data (paper id ``online_sgd``), one
module per experiment. What they share (sizes, the config builder, the ODE of a run) is in ``_shared``.
"""

from twolayer.papers.online_sgd import ode_vs_sgd, eta2_term, small_lr, linear, noise_floor, plateau, plateau_length  # noqa: F401  (each module registers its experiments)
