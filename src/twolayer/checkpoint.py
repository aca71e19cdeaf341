"""Checkpoints: the one place that builds, writes, reads, validates and restores ``checkpoint.npz``.

A checkpoint holds a simulation's committed state (``SimulationState.snapshot``): ``param/<name>``
(leading seed axis), ``record/<name>`` ([points, seeds, ...]), ``bad``, ``code``, ``index`` (points
recorded), ``wall`` (seconds) and, for event-driven methods, ``table/<column>`` (the event table), plus ``meta``: JSON with the format version, the config hash, the
number of observation points and the shape and dtype of every parameter. ``restore`` refuses
(``CheckpointRefused``, with the reason) a checkpoint that was written for another config, whose
parameters or records do not have the shapes and dtypes this simulation produces, or whose records
disagree with its index; the run then starts from scratch (or stops, when the caller asks).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from twolayer.fileio import load_npz, write_npz_atomic

FILENAME = "checkpoint.npz"
FORMAT = 1


class CheckpointRefused(ValueError):
    """A checkpoint that cannot be resumed from; the message says why."""


def path_in(run_dir: str | Path) -> Path:
    """The checkpoint file of a run directory."""
    return Path(run_dir) / FILENAME


def build(state, config_hash: str, points: int) -> dict[str, np.ndarray]:
    """The arrays of a checkpoint of ``state`` (read consistently: records up to the committed index)."""
    committed, records = state.snapshot()
    params = {name: np.asarray(value) for name, value in committed.params.items()}
    meta = {"format": FORMAT, "config_hash": config_hash, "points": int(points), "index": committed.index,
            "params": {name: {"shape": list(a.shape), "dtype": str(a.dtype)} for name, a in params.items()}}
    arrays = {f"param/{name}": a for name, a in params.items()}
    arrays.update({f"record/{name}": np.stack(values) for name, values in records.items()})
    arrays.update({f"table/{name}": np.asarray(values) for name, values in committed.table.items()})
    arrays.update(bad=np.asarray(committed.bad), code=np.asarray(committed.code), index=np.array(committed.index),
                  wall=np.array(committed.wall_seconds), meta=np.array(json.dumps(meta, sort_keys=True)))
    return arrays


def write(run_dir: str | Path, state, config_hash: str, points: int) -> None:
    """Write ``run_dir/checkpoint.npz`` atomically (an interrupted write leaves the previous one)."""
    write_npz_atomic(path_in(run_dir), build(state, config_hash, points))


def read(run_dir: str | Path) -> dict[str, np.ndarray] | None:
    """The arrays of ``run_dir/checkpoint.npz``; None when there is none. ``CheckpointRefused`` when
    the file is damaged (truncated, random bytes, not an .npz archive: ``fileio.load_npz``)."""
    path = path_in(run_dir)
    if not path.is_file():
        return None
    try:
        return load_npz(path)
    except ValueError as e:
        raise CheckpointRefused(f"the file is damaged: {path.name} {e}") from None


def restore(sim, arrays: dict[str, np.ndarray], config_hash: str):
    """A ``SimulationState`` of ``sim`` from checkpoint arrays; ``CheckpointRefused`` if they do not
    belong to this config or are inconsistent."""
    import jax.numpy as jnp

    from twolayer.train import SimulationState

    meta = _meta(arrays)
    if meta.get("config_hash") != config_hash:
        raise CheckpointRefused(f"it was written for config {str(meta.get('config_hash'))[:8]}, this run's config is "
                                f"{config_hash[:8]}")
    expected = sim.initial_state()
    params = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("param/")}
    _same_arrays("parameters", params, {k: np.asarray(v) for k, v in expected.params.items()})
    declared = {k: (tuple(v["shape"]), v["dtype"]) for k, v in meta.get("params", {}).items()}
    if declared != {k: (v.shape, str(v.dtype)) for k, v in params.items()}:
        raise CheckpointRefused("its parameters do not have the shapes and dtypes its metadata declares")
    seeds = len(sim.seeds)
    for name, dtype in (("bad", sim.bad_dtype), ("code", np.int64)):
        if name not in arrays or arrays[name].shape != (seeds,) or arrays[name].dtype != dtype:
            raise CheckpointRefused(f"'{name}' is missing or is not [{seeds}] {np.dtype(dtype).name}")
    index = int(arrays["index"]) if "index" in arrays and arrays["index"].shape == () else -1
    if not 1 <= index <= len(sim.points) or meta.get("index") != index or meta.get("points") != len(sim.points):
        raise CheckpointRefused(f"its index ({index} of {meta.get('points')} points) does not fit this run's "
                                f"{len(sim.points)} observation points")
    records = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("record/")}
    spec = sim.record_spec(expected.params)
    if set(records) != set(spec):
        raise CheckpointRefused(f"it records {sorted(records)}, this run records {sorted(spec)}")
    for name, values in records.items():
        shape, dtype = spec[name]
        if values.shape != (index, *shape) or values.dtype != dtype:
            raise CheckpointRefused(f"record {name!r} is {list(values.shape)} {values.dtype}, expected "
                                    f"{[index, *shape]} {np.dtype(dtype).name} ({index} points recorded)")
    table = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("table/")}
    events = sim.method.events
    if events is not None and table and set(table) != set(events.columns):
        raise CheckpointRefused(f"its event table has columns {sorted(table)}, this method's are {sorted(events.columns)}")
    if events is None and table:
        raise CheckpointRefused(f"it holds an event table, method {sim.cfg.train.method} records none")
    return SimulationState(params={k: jnp.asarray(v) for k, v in params.items()}, bad=arrays["bad"],
                           code=arrays["code"], index=index, records={k: list(v) for k, v in records.items()},
                           wall_seconds=float(arrays.get("wall", 0.0)), table=table)


def _meta(arrays: dict) -> dict:
    raw = arrays.get("meta")
    if raw is None or raw.shape != () or raw.dtype.kind != "U":
        raise CheckpointRefused("it carries no metadata (config hash, parameter shapes): written by an older "
                                "twolayer, or not by twolayer")
    try:
        meta = json.loads(str(raw))
    except ValueError:
        raise CheckpointRefused("its metadata is not valid JSON") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointRefused(f"its format is {meta.get('format') if isinstance(meta, dict) else '?'}, "
                                f"this twolayer reads format {FORMAT}")
    return meta


def _same_arrays(what: str, found: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    if set(found) != set(expected):
        raise CheckpointRefused(f"its {what} are {sorted(found)}, this run's are {sorted(expected)}")
    for name, a in found.items():
        e = expected[name]
        if a.shape != e.shape or a.dtype != e.dtype:
            raise CheckpointRefused(f"its {what[:-1]} {name!r} is {list(a.shape)} {a.dtype}, this run's is "
                                    f"{list(e.shape)} {e.dtype}")
