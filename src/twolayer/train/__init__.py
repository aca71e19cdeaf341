"""Training: methods (GD, SGD, gradient flow) and the compiled, seed-batched simulation loop."""

from twolayer.train.methods import METHODS, Method  # noqa: F401
from twolayer.train.loop import Simulation, SimulationState  # noqa: F401
