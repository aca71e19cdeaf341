"""Sweeps: grids over configs and seeds run through the store by local or Dask executors
(``twolayer.sweep.grid``), and their phase diagrams with theory overlays (``twolayer.sweep.phase``)."""

from twolayer.sweep.grid import (
    EXECUTORS, DaskExecutor, LocalExecutor, Point, SweepError, SweepProgress, SweepResult, SweepSpec, check_workers,
    expand, experiment_configs, load_sweep, precheck, read_table, run_point, run_sweep, runs_table, table_rows, to_frame,
    write_table,
)

__all__ = [
    "EXECUTORS", "DaskExecutor", "LocalExecutor", "Point", "SweepError", "SweepProgress", "SweepResult", "SweepSpec",
    "check_workers", "expand", "experiment_configs", "load_sweep", "precheck", "read_table", "run_point", "run_sweep",
    "runs_table", "table_rows", "to_frame", "write_table",
]
