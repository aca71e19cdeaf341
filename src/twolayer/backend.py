"""JAX settings of twolayer, in force before any of its modules uses JAX.

- Float64 is on: initial scales go down to 1e-12 and the paper experiments need double precision
  (``precision: float32`` in a config opts out per run).
- Compiled XLA programs persist across processes in ``~/.cache/twolayer/jax`` (``TWOLAYER_JAX_CACHE``
  names another folder, ``off`` disables it; a cache folder the user configured for JAX is left alone),
  for programs that took at least 20 ms to compile.
- Equinox's runtime checks (``EQX_ON_ERROR``) default to ``nan`` instead of ``raise``: a raising check is a host
  callback, and JAX never writes a program with a host callback to the persistent cache, so every process compiled
  diffrax's ``SaveAt(ts=...)`` solves again (the online-SGD ODE: 2.8 s for erf K = M = 2). With ``nan`` a failed
  check makes the output NaN, which twolayer treats as a failure; its callers check what diffrax would (the save
  times of ``theory.online_sgd.integrate``). A value the user set, or an equinox imported before twolayer, is left
  alone.

Importing ``twolayer`` does not import JAX (a command such as ``twolayer --help`` never needs it): when
JAX is not loaded yet, the settings go into the environment variables JAX reads when it is first
imported, so they also reach worker processes started from here; when it is, into ``jax.config``.
"""

from __future__ import annotations

import os
import sys

MIN_COMPILE_SECONDS = 0.02


def cache_folder() -> str | None:
    """The persistent compilation cache folder, or None when it is off or cannot be created."""
    path = os.environ.get("TWOLAYER_JAX_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "twolayer", "jax"))
    if path.lower() == "off":
        return None
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return path


def configure() -> None:
    """Float64, the compilation cache and equinox's NaN checks, for a JAX (and equinox) already imported or for their
    first import."""
    if "equinox" not in sys.modules:
        os.environ.setdefault("EQX_ON_ERROR", "nan")
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        if not jax.config.jax_compilation_cache_dir and (path := cache_folder()):
            jax.config.update("jax_compilation_cache_dir", path)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
        return
    os.environ["JAX_ENABLE_X64"] = "True"
    if not os.environ.get("JAX_COMPILATION_CACHE_DIR") and (path := cache_folder()):
        os.environ["JAX_COMPILATION_CACHE_DIR"] = path
        os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(MIN_COMPILE_SECONDS)


configure()
