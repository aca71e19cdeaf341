"""twolayer: simulate, measure and explain how two-layer neural networks learn.

``import twolayer`` is cheap: the JAX settings (``twolayer.backend``: float64, the compilation cache) are
put in place, and the names below load their modules on first use.
"""

from twolayer import backend  # noqa: F401  (float64 and the compilation cache, before JAX is imported)
from twolayer.version import __version__  # noqa: F401

# name -> module it lives in (PEP 562: loaded on first access)
LAZY = {"Run": "twolayer.api", "run": "twolayer.api", "open_run": "twolayer.api", "ConfigError": "twolayer.errors",
        "RunConfig": "twolayer.config", "load_config": "twolayer.config", "runs": "twolayer.labelled"}

__all__ = ["ConfigError", "Run", "RunConfig", "load_config", "open_run", "run", "runs"]


def __getattr__(name: str):
    import importlib

    if name in LAZY:
        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module 'twolayer' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *LAZY])
