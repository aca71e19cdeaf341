"""Training: the method registry and core (``methods``), one file per method, and the compiled,
seed-batched simulation loop (``loop``). The method files are imported in the order their methods are
listed (each registers its method)."""

from twolayer.train.methods import METHODS, Method, MethodParams  # noqa: F401
from twolayer.train import gd  # noqa: F401, I001
from twolayer.train import sgd  # noqa: F401
from twolayer.train import flow  # noqa: F401
from twolayer.train import flow_log  # noqa: F401  (late-phase gradient flow, Lyu et al. 2021)
from twolayer.train import gd_paper  # noqa: F401  (the multi-index paper's schedule)
from twolayer.train import flow_exact  # noqa: F401  (event-driven exact gradient flow of ReLU-type nets)
from twolayer.train import online_sgd  # noqa: F401  (one-pass SGD on teacher-student data)
from twolayer.train.loop import Simulation, SimulationState  # noqa: F401
