"""Training: methods (GD, SGD, gradient flow) and the compiled, seed-batched simulation loop."""

from twolayer.train.methods import METHODS, Method  # noqa: F401
from twolayer.train.loop import Simulation, SimulationState  # noqa: F401
from twolayer.train import lateflow  # noqa: E402,F401  (method flow_log: late-phase gradient flow, Lyu et al. 2021)
from twolayer.train import multi_index_schedule  # noqa: E402,F401  (method gd_paper: multi-index paper schedule)
from twolayer.train import exact_flow  # noqa: E402,F401  (method flow_exact: event-driven exact ReLU gradient flow)
