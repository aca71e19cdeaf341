"""twolayer: simulate, measure and explain how two-layer neural networks learn.

Float64 is enabled here, inside the package: initial scales go down to 1e-12 and the paper
experiments need double precision. ``precision: float32`` in a config opts out per run.
"""

import jax

jax.config.update("jax_enable_x64", True)

from twolayer.api import Run, run  # noqa: E402
from twolayer.config import ConfigError, RunConfig, load_config  # noqa: E402

__all__ = ["ConfigError", "Run", "RunConfig", "load_config", "run"]
__version__ = "0.1.0"
