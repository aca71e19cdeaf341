"""Optional MLflow tracking of a run: params, scalar observables over time, final metrics.

Asked for by ``mlflow: {uri: ..., experiment: ...}`` in a config or ``twolayer run ... --mlflow
URI``; the settings are not part of the resolved config, so they never change a run's hash. One
MLflow run per twolayer run, named by the run id:

- params: every field of the resolved config, as dotted keys (``model.width``, ``init.scale``), with the
  ``train`` section as the method uses it (``train.steps`` and ``train.time`` = lr * steps both, whichever
  the config gave; no other method's placeholders) and no empty fields;
- metrics: each scalar observable against the observation step (GD/SGD steps; the observation
  index for gradient flow), with ``t`` logged beside it; batched runs log ``seed_<id>/<name>``
  per seed and ``<name>`` as the median over seeds; ``final.<name>`` and ``event.<name>`` (medians
  over seeds) as single values;
- tags ``twolayer.run_id``, ``twolayer.config_hash``, ``twolayer.status``, ``twolayer.run_dir``;
- artifacts: ``config.yaml``, ``summary.json`` and ``twolayer_run.json``, the link to the run
  directory where the per-neuron arrays stay (their names and shapes are listed, the arrays
  are not copied).

A cache hit that was already logged to the same experiment is not logged again; one that was not (a sweep's
point computed before, now swept with ``--mlflow``) is logged, tagged ``twolayer.cached``. The MLflow run
is recorded in ``<run dir>/mlflow.json``. File stores (``file:`` URIs or plain paths) are
allowed even though MLflow 3 keeps them in maintenance mode (``MLFLOW_ALLOW_FILE_STORE``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from twolayer.extras import require
from twolayer.fileio import write_json_atomic
from twolayer.store import CONFIG, FINAL, SUMMARY

BATCH = 1000  # metrics per log_batch call (MLflow's limit)
PARAM_BATCH = 100  # params per log_batch call (MLflow's limit)
PARAM_CHARS = 6000  # longest param value MLflow stores
RECORD = "mlflow.json"
LINK = "twolayer_run.json"


class TrackingError(RuntimeError):
    """Logging to MLflow failed (the run itself is stored)."""


def require_mlflow():
    """The mlflow module, or ``MissingExtra`` naming the extra."""
    return require("mlflow", "mlflow", "MLflow logging (mlflow.uri or --mlflow)")


def is_file_store(uri: str) -> bool:
    """Whether an MLflow tracking URI is a local file store (``file:`` or a plain path)."""
    return uri.startswith("file:") or "://" not in uri and not uri.startswith(("databricks", "sqlite:", "postgresql"))


def client_for(uri: str):
    """An ``MlflowClient`` for ``uri`` (file stores allowed)."""
    require_mlflow()
    from mlflow.tracking import MlflowClient

    if is_file_store(uri):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    return MlflowClient(tracking_uri=uri)


def _experiment_id(client, name: str) -> str:
    exp = client.get_experiment_by_name(name)
    return exp.experiment_id if exp is not None else client.create_experiment(name)


def _median(value) -> float | None:
    values = [v for v in (value if isinstance(value, list) else [value]) if v is not None and np.isfinite(v)]
    return float(np.median(values)) if values else None


def metric_series(run) -> list[tuple[str, float, int]]:
    """``(key, value, step)`` of every finite value of every scalar observable (module docstring)."""
    from twolayer.observe import output_dims

    traj, config = run.trajectory, run.config
    batched = config.get("seeds") is not None
    seeds = run.summary.get("seeds") or [config.get("seed") or 0]
    steps = np.asarray(traj["step"])
    steps = np.arange(len(steps)) if not np.any(steps) else steps
    out = [("t", float(t), int(s)) for t, s in zip(traj["t"], steps)]
    for name, arr in traj.items():
        if name in ("t", "step") or output_dims(name, np.ndim(arr) - (2 if batched else 1)) != ():
            continue
        arr = np.asarray(arr, dtype=np.float64)
        series = ({name: _nanmedian(arr), **{f"seed_{seed}/{name}": arr[k] for k, seed in enumerate(seeds)}}
                  if batched else {name: arr})
        for key, values in series.items():
            out += [(key, float(v), int(s)) for v, s in zip(values, steps) if np.isfinite(v)]
    return out


def _nanmedian(arr: np.ndarray) -> np.ndarray:
    """The median over seeds, NaN where no seed is finite (without numpy's all-NaN warning)."""
    finite = np.isfinite(arr)
    filled = np.where(finite, arr, np.nan)
    out = np.full(arr.shape[1:], np.nan)
    some = np.any(finite, axis=0)
    out[some] = np.nanmedian(filled[:, some], axis=0)
    return out


def resolved_params(config: dict) -> dict:
    """The params to log: every field of the resolved config as dotted keys, the ``train`` section as its method
    uses it (a run given in steps logs ``train.time`` = lr * steps, and a run given in time its ``train.steps``;
    no placeholders of other methods' parameters), and no empty (None) field."""
    from twolayer.config import load_config
    from twolayer.errors import ConfigError
    from twolayer.labelled import flatten

    plain = json.loads(json.dumps(config))
    try:
        train = load_config(plain).train
    except ConfigError:  # a run stored by an older version whose config no longer validates: as stored
        return {k: v for k, v in flatten(plain).items() if v is not None}
    section = train.model_dump(mode="json")
    section["time"] = train.time_of(train.end)  # the horizon in time, for discrete methods too
    return {k: v for k, v in flatten({**plain, "train": section}).items() if v is not None}


def _link(run) -> dict:
    from twolayer.observe import output_dims

    batched = run.config.get("seeds") is not None
    arrays = {k: list(np.shape(v)) for k, v in run.trajectory.items()
              if k not in ("t", "step") and output_dims(k, np.ndim(v) - (2 if batched else 1)) != ()}
    return {"run_id": run.path.name, "run_dir": str(run.path.resolve()), "uri": run.path.resolve().as_uri(),
            "note": "per-neuron and other array observables stay in the run directory (trajectory.npz)",
            "arrays": arrays, "final_params": [FINAL]}


def log_run(run, settings, *, cached: bool = False) -> str:
    """Log ``run`` to MLflow as ``settings`` (``MlflowConfig``) say; returns the MLflow run id.
    Raises ``TrackingError`` when MLflow refuses (bad URI, unreachable server, ...)."""
    require_mlflow()
    from mlflow.exceptions import MlflowException

    try:
        return _log(run, settings, cached)
    except (MlflowException, OSError) as e:
        raise TrackingError(f"MLflow logging to {settings.uri} failed: {type(e).__name__}: {e} "
                            f"(the run itself is stored in {run.path})") from e


def _log(run, settings, cached: bool) -> str:
    from mlflow.entities import Metric, Param

    client = client_for(settings.uri)
    exp_id = _experiment_id(client, settings.experiment)
    summary = run.summary
    if cached:
        found = client.search_runs([exp_id], filter_string=f"tags.`twolayer.run_id` = '{run.path.name}'", max_results=1)
        if found:
            return _record(run, settings, exp_id, found[0].info.run_id)
    tags = {"twolayer.run_id": run.path.name, "twolayer.config_hash": str(summary.get("config_hash", "")),
            "twolayer.status": str(summary.get("status", "")), "twolayer.run_dir": str(run.path.resolve())}
    mlrun = client.create_run(exp_id, run_name=run.path.name, tags=tags)
    rid = mlrun.info.run_id
    try:
        params = [Param(k, str(v)[:PARAM_CHARS]) for k, v in resolved_params(run.config).items()]
        for i in range(0, len(params), PARAM_BATCH):
            client.log_batch(rid, params=params[i:i + PARAM_BATCH])
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, s) for k, v, s in metric_series(run)]
        last = max((m.step for m in metrics), default=0)
        for prefix, values in (("final", summary.get("final") or {}), ("event", summary.get("events") or {})):
            metrics += [Metric(f"{prefix}.{k}", m, now, last) for k, v in values.items() if (m := _median(v)) is not None]
        for i in range(0, len(metrics), BATCH):
            client.log_batch(rid, metrics=metrics[i:i + BATCH])
        for name in (CONFIG, SUMMARY):
            if (run.path / name).is_file():
                client.log_artifact(rid, str(run.path / name))
        with tempfile.TemporaryDirectory() as tmp:
            link = Path(tmp) / LINK
            link.write_text(json.dumps(_link(run), indent=2))
            client.log_artifact(rid, str(link))
        client.set_tag(rid, "twolayer.cached", str(bool(cached)).lower())
        client.set_terminated(rid, "FINISHED" if summary.get("status") == "completed" else "FAILED")
    except BaseException:
        client.set_terminated(rid, "FAILED")
        raise
    return _record(run, settings, exp_id, rid)


def _record(run, settings, exp_id: str, rid: str) -> str:
    write_json_atomic(run.path / RECORD, {"uri": settings.uri, "experiment": settings.experiment,
                                          "experiment_id": exp_id, "run_id": rid})
    return rid

