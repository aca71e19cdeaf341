"""twolayer: simulate, measure and explain how two-layer neural networks learn.

Float64 is enabled here, inside the package: initial scales go down to 1e-12 and the paper
experiments need double precision. ``precision: float32`` in a config opts out per run.
"""

import os

import jax

jax.config.update("jax_enable_x64", True)


def _enable_compilation_cache() -> None:
    """Persist compiled XLA programs across processes (``TWOLAYER_JAX_CACHE=off`` disables it;
    a cache directory the user configured for JAX is left alone)."""
    path = os.environ.get("TWOLAYER_JAX_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "twolayer", "jax"))
    if path.lower() == "off" or jax.config.jax_compilation_cache_dir:
        return
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.02)


_enable_compilation_cache()

from twolayer.api import Run, run  # noqa: E402
from twolayer.config import ConfigError, RunConfig, load_config  # noqa: E402
from twolayer.labelled import open_run, runs  # noqa: E402  (xarray and pandas load on first use)

__all__ = ["ConfigError", "Run", "RunConfig", "load_config", "open_run", "run", "runs"]
__version__ = "0.1.0"
