"""Sweeps: grids over configs and seeds run through the store by local or Dask executors
(``twolayer.sweep.grid``), and their phase diagrams with theory overlays (``twolayer.sweep.phase``).

The names below load ``grid`` on first use (PEP 562), so ``twolayer plot`` (``phase``: a sweep table and a
figure) does not import the config layer, and JAX with it, unless a theory's premises are checked.
"""

GRID_NAMES = (
    "EXECUTORS", "DaskExecutor", "LocalExecutor", "Point", "SweepError", "SweepProgress", "SweepResult", "SweepSpec",
    "check_workers", "expand", "experiment_configs", "load_sweep", "precheck", "read_table", "run_point", "run_sweep",
    "runs_table", "table_rows", "to_frame", "write_table",
)

__all__ = list(GRID_NAMES)


def __getattr__(name: str):
    import importlib

    if name in GRID_NAMES:
        return getattr(importlib.import_module("twolayer.sweep.grid"), name)
    raise AttributeError(f"module 'twolayer.sweep' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *GRID_NAMES])
