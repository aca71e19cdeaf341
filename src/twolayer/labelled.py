"""Labelled results: a run as an ``xarray.Dataset``, stored runs by id, and queries over the run index.

``to_xarray(run)`` names every axis: ``seed`` (batched runs; a scalar coordinate otherwise), ``t``
(with ``step`` as a second coordinate on it), then the axes each observable declares
(``twolayer.observe.AXES``: ``neuron``, ``sample``, ``input``, ``direction``, ``order``, ...). The
final parameters are ``final_W`` and ``final_v``. The resolved config and the summary are the JSON
attributes ``config`` and ``summary`` (plain strings, so ``ds.to_netcdf`` / ``ds.to_zarr`` write
them and ``xarray.open_dataset`` gives back an identical dataset).

``runs(out, **where)`` is the run index as a pandas DataFrame in the form of a sweep's results table
(``twolayer.sweep``): one row per run and seed with ``run_id``, ``seed``, ``status`` (of that seed),
``run_status``, ``message``, ``wall_seconds``, ``final.<metric>``, ``event.<event>``,
``uncertainty.<event>``, ``sweep`` (the sweep folders in ``out`` whose table lists the run, by name) and
``sweep_point`` (its point index there, when it is in one sweep), plus every field of the resolved config
as a dotted column (``model.width``, ``init.scale``, ...).
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from twolayer.extras import require
from twolayer.store import CONFIG, DEFAULT_OUT, RunStore, load_config_text
from twolayer.table import Point, cell, config_seeds, sweep_memberships, table_rows

PARAM_DIMS = {"W": ("neuron", "input"), "v": ("neuron",)}  # final.npz arrays (mean-field nets have W only)
INDEX_COLUMNS = ("run_id", "name", "sweep", "sweep_point", "seed", "status", "run_status", "message", "created",
                 "wall_seconds")
SWEEP_SEPARATOR = ", "  # a run in several sweeps (a cache hit of another sweep's point) names them all


def to_xarray(run):
    """The run as an ``xarray.Dataset`` (see the module docstring for the layout).

    Arguments:
        run: a stored run (``twolayer.Run``).

    Returns:
        The dataset: dimensions seed, t (with step as a second coordinate), neuron, sample, ...; the
        resolved config and the summary as JSON attributes.
    """
    xr = require("xarray", "notebook", "Run.to_xarray")
    from twolayer.observe import OBSERVABLES, output_dims

    config, summary, traj = run.config, run.summary, run.trajectory
    batched = config.get("seeds") is not None
    seeds = np.asarray(summary.get("seeds") or config_seeds(config), dtype=np.int64)
    lead = ("seed", "t") if batched else ("t",)
    docs = {}
    for name in (config.get("observe") or {}).get("metrics") or []:
        if name in OBSERVABLES:
            docs[name] = OBSERVABLES.get(name).doc.split("\n")[0]
    data_vars, sizes = {}, {}
    for key, arr in traj.items():
        if key in ("t", "step"):
            continue
        rank = arr.ndim - len(lead)
        dims = output_dims(key, rank) or tuple(f"{key}_axis{k}" for k in range(rank))
        data_vars[key] = xr.Variable(lead + tuple(dims), arr, attrs={"description": docs[key]} if key in docs else {})
        sizes.update(zip(dims, arr.shape[len(lead):]))
    final = _final_params(run)
    for key, arr in final.items():
        dims = (("seed",) if batched else ()) + PARAM_DIMS.get(key, tuple(f"final_{key}_axis{k}" for k in range(arr.ndim)))
        data_vars[f"final_{key}"] = xr.Variable(dims, arr, attrs={"description": f"final parameters {key}"})
        sizes.update({d: n for d, n in zip(dims, arr.shape) if d != "seed"})
    coords = {"t": ("t", traj["t"], {"description": _time_doc(config)}),
              "step": ("t", traj["step"], {"description": "training steps (0 for gradient flow)"})}
    coords["seed"] = ("seed", seeds) if batched else ((), seeds[0])
    coords.update({dim: (dim, np.arange(n)) for dim, n in sizes.items() if not dim.startswith("final_")})
    attrs = {"run_id": run.path.name, "name": str(config.get("name", "")), "status": str(summary.get("status", "")),
             "config_hash": str(summary.get("config_hash", "")),
             "config": json.dumps(config, sort_keys=True), "summary": json.dumps(summary, sort_keys=True)}
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


def _final_params(run) -> dict:
    try:
        return run.final_params
    except FileNotFoundError:  # an unfinished run has a trajectory only after it ends
        return {}


def _time_doc(config: dict) -> str:
    from twolayer.train.methods import clock_of

    return clock_of(config).doc


def attrs_json(ds, key: str):
    """The JSON attribute ``key`` (``config`` or ``summary``) of a dataset from ``to_xarray``."""
    return json.loads(ds.attrs[key])


# -- the run index as a table ----------------------------------------------------------------------

def flatten(config: dict, prefix: str = "") -> dict:
    """A nested config as dotted keys; lists and other non-scalars become JSON text (table cells)."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        elif value is None or isinstance(value, bool | int | float | str):
            flat[f"{prefix}{key}"] = value
        else:
            flat[f"{prefix}{key}"] = json.dumps(value, sort_keys=True)
    return flat


def runs(out: str | Path = DEFAULT_OUT, **where):
    """The runs indexed in ``out/runs.sqlite`` as a DataFrame (module docstring), filtered by ``where``.

    Keys are columns (``status``, ``run_id``, ``name``, ``seed``...) or dotted config fields
    (``**{"model.width": 50}``, or ``model__width=50``). A value selects equal cells (a mapping, such as
    ``{"name": "leaky_relu", "slope": 0.2}``, the cells that hold it), a list/tuple/set any of its values, a
    callable the cells for which it returns True; ``sweep="NAME"`` the runs of that sweep. An unknown key
    raises ``ValueError``.

    Arguments:
        out: the output folder whose ``runs.sqlite`` is read.
        where: column or dotted config field -> value, list of values, or predicate.

    Returns:
        A pandas DataFrame, one row per run and seed.
    """
    pd = require("pandas", "notebook", "twolayer.runs")

    out = Path(out)
    entries = RunStore(out).list()
    memberships = sweep_memberships(out)
    points, results, extra = [], {}, {}
    for i, entry in enumerate(entries):
        summary = entry["summary"]
        path = out / entry["run_id"]
        config = load_config_text((path / CONFIG).read_text()) if (path / CONFIG).is_file() else {}
        points.append(Point(i, {}, config or {}))
        results[i] = {"status": entry["status"], "run_id": entry["run_id"], "cached": False,
                      "message": summary.get("message", ""), "summary": summary, "seconds": math.nan}
        sweeps = memberships.get(entry["run_id"], [])
        extra[entry["run_id"]] = {"name": entry["name"], "created": entry["created"], "path": str(path),
                                  "config_hash": entry["config_hash"], **flatten(config or {}),
                                  "sweep": SWEEP_SEPARATOR.join(name for name, _ in sweeps) or None,
                                  "sweep_point": sweeps[0][1] if len(sweeps) == 1 else None}
    rows = []
    for row in table_rows(points, results):
        for key in ("point", "cached", "task_seconds"):
            row.pop(key, None)
        rows.append({**extra[row["run_id"]], **row})  # the per-seed `seed` wins over the config field
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=[*INDEX_COLUMNS, "path", "config_hash"])
    df = df[_column_order(df.columns)]
    df["sweep_point"] = df["sweep_point"].astype("Int64")  # a point index, or <NA> outside a (single) sweep
    return _select(df, where)


def _column_order(columns) -> list[str]:
    first = [c for c in INDEX_COLUMNS if c in columns]
    metrics = [c for c in columns if c.startswith(("final.", "event.", "uncertainty."))]
    last = [c for c in ("path", "config_hash") if c in columns]
    config = [c for c in columns if c not in (*first, *metrics, *last)]
    return [*first, *config, *metrics, *last]


def _select(df, where: dict):
    return df[_mask(df, where)].reset_index(drop=True)


def _mask(df, where: dict) -> np.ndarray:
    mask = np.ones(len(df), dtype=bool)
    for key, wanted in where.items():
        key = key if key in df.columns else key.replace("__", ".")  # model__width=50 for **{"model.width": 50}
        flat = flatten(wanted, f"{key}.") if isinstance(wanted, dict) else {}
        if flat and all(k in df.columns for k in flat):  # a mapping stored as dotted columns (model.activation.name)
            hit = _mask(df, flat)
            mask &= hit | _matches(df[key], wanted) if key in df.columns else hit
            continue
        if key not in df.columns:
            close = difflib.get_close_matches(key, list(df.columns), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f" (columns: {', '.join(df.columns)})"
            raise ValueError(f"runs(): {key!r} is not a column or a config field of the stored runs{hint}")
        mask &= _matches(df[key], wanted, in_sweep=key == "sweep")
    return mask


def _matches(column, wanted, in_sweep: bool = False) -> np.ndarray:
    """Cells equal to ``wanted`` (a mapping such as an activation compares as the JSON text the column holds;
    in the ``sweep`` column a name matches every run of that sweep), any of a list's values, or a predicate's."""
    if isinstance(wanted, Callable):
        return np.array([bool(wanted(v)) for v in column], dtype=bool)
    if in_sweep:
        names = {wanted} if isinstance(wanted, str) else set(wanted)
        return np.array([isinstance(v, str) and bool(names & set(v.split(SWEEP_SEPARATOR))) for v in column],
                        dtype=bool)
    if isinstance(wanted, list | tuple | set | frozenset):
        return column.isin([cell(v) for v in wanted]).to_numpy()
    return (column == cell(wanted)).to_numpy()


__all__ = ["attrs_json", "flatten", "runs", "to_xarray"]
