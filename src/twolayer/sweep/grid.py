"""Sweeps: grids of runs over dotted config keys, seeds batched inside each point, run locally or
on a Dask cluster, collected into one results table.

A sweep file (YAML or dict)::

    name: fit-time                 # the table goes to <out>/fit-time/results.parquet (and .csv)
    base: base.yaml                # a run config, inline (a mapping) or a path relative to this file
    grid:                          # cartesian product over dotted keys
      init.scale: [1.0e-2, 1.0e-4, 1.0e-6]
      model.width: [10, 20]
    zip:                           # optional lock-step lists (equal lengths), crossed with the grid
      train.lr: [0.1, 0.05]
      train.steps: [1000, 2000]
    seeds: 8                       # batched inside each point (one compiled run), not separate tasks

Every point is a normal run in the run store (``<out>/<name>-<key><value>...-<hash8>/``): finished points are
cache hits on a re-run, interrupted ones resume, ``force`` redoes everything. A point that fails
(invalid combination, divergence, a crashed worker) is recorded with its status and message;
the others complete. The table has one row per point and seed: ``point``, the swept keys,
``seed``, ``run_id``, ``status``, ``run_status``, ``message``, ``cached``, ``wall_seconds``
(simulation time of the run), ``task_seconds`` (time of this invocation), ``final.<metric>`` and
``event.<event>`` columns.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from twolayer.config import (ConfigError, RunConfig, check_seeds, closest_errors, error_entry, field_errors, load_config,
                              set_dotted)
from twolayer.fields import StrictNumbers
from twolayer.fileio import check_yaml_size, plain_data, read_yaml_file, write_text_atomic
from twolayer.registry import Registry
from twolayer.store import DEFAULT_OUT, RunStore
from twolayer.table import (  # noqa: F401  (read_table, has_parquet: part of this module's interface)
    RESULTS, SWEEP_FILE, Point, first_line, has_parquet, not_run, read_table, short, table_rows,
)

FAILED_STATUSES = ("invalid", "failed", "diverged", "interrupted", "not run")
MAX_POINTS = 100_000  # points of one sweep (each is a run directory)
RESERVED_KEYS = {"name": "every point is named after the sweep", "seed": "use the sweep's `seeds`",
                 "seeds": "use the sweep's `seeds` (seeds are batched inside each point)"}


class SweepError(ConfigError):
    """An invalid sweep file; each entry names the field (``grid.train.lr``, ``zip``, ``base``...)."""

    title = "invalid sweep"


class SweepSpec(StrictNumbers):
    """A validated sweep file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", max_length=60)
    base: dict[str, Any]
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    zip_: dict[str, list[Any]] = Field(default_factory=dict, alias="zip")
    seeds: int | list[int] | None = None

    @field_validator("grid", "zip_")
    @classmethod
    def _keys(cls, v: dict[str, list], info: ValidationInfo):
        errors = []
        for key, values in v.items():
            section = key.split(".", 1)[0]
            if section not in RunConfig.model_fields:
                errors.append((key, f"unknown config section {section!r} (one of {', '.join(RunConfig.model_fields)})"))
            elif key in RESERVED_KEYS:
                errors.append((key, f"cannot be swept: {RESERVED_KEYS[key]}"))
            elif not values:
                errors.append((key, "needs at least one value"))
            elif mixed := _mixed_kinds(values):
                errors.append((key, mixed))
            elif info.field_name == "grid" and (repeated := _repeated(values)):  # zip rows: see _consistent
                errors.append((key, f"lists {repeated!r} twice (two table rows for one run): list each value once"))
        if errors:
            raise field_errors("SweepSpec", errors)
        return v

    _seeds = field_validator("seeds")(classmethod(lambda cls, v: check_seeds(v)))

    @model_validator(mode="after")
    def _consistent(self):
        errors = []
        lengths = {k: len(v) for k, v in self.zip_.items()}
        if len(set(lengths.values())) > 1:
            first = next(iter(lengths))
            errors += [(f"zip.{k}", f"has {n} values but zip.{first} has {lengths[first]} (zip lists run in "
                                    "lock-step and need equal lengths)") for k, n in lengths.items() if n != lengths[first]]
        errors += _overlapping_keys([f"grid.{k}" for k in self.grid] + [f"zip.{k}" for k in self.zip_])
        if not errors and (repeated := _repeated(list(zip(*self.zip_.values())))):
            errors.append(("zip", f"row {dict(zip(self.zip_, repeated))} appears twice (two table rows for one run): "
                                  "list each combination once"))
        count = math.prod(len(v) for v in self.grid.values()) * (len(next(iter(self.zip_.values()))) if self.zip_ else 1)
        if not errors and count > MAX_POINTS:
            sizes = " x ".join(str(len(v)) for v in self.grid.values()) or "1"
            errors.append(("grid", f"gives {count:.4g} points ({sizes} grid values{' x zip' if self.zip_ else ''}); a "
                                   f"sweep may have at most {MAX_POINTS} (each point is a run): split it"))
        if errors:
            raise field_errors("SweepSpec", errors)
        return self

    @property
    def keys(self) -> list[str]:
        """The swept keys: grid keys, then zip keys."""
        return [*self.grid, *self.zip_]

    def normalized(self) -> dict:
        out = {"name": self.name, "base": self.base, "grid": self.grid, "zip": self.zip_}
        if self.seeds is not None:
            out["seeds"] = self.seeds
        return out


def _mixed_kinds(values: list) -> str:
    """Why a list of swept values mixes kinds that would be one table column (numbers with strings or
    booleans, e.g. 0.01 and "0.01", which also name the same run), or ""."""
    def kind(v):
        return ("boolean" if isinstance(v, bool) else "number" if isinstance(v, int | float)
                else "string" if isinstance(v, str) else None)

    kinds: dict[str, Any] = {}
    for v in values:
        if kind(v) is not None:
            kinds.setdefault(kind(v), v)
    if "number" in kinds and len(kinds) > 1:
        other = next(k for k in kinds if k != "number")
        return (f"mixes numbers and {other}s ({kinds['number']!r} and {kinds[other]!r}); write every value the same "
                f"way (numbers without quotes)")
    return ""


def _repeated(values: list):
    """The first value listed twice (numbers compared by value: 1 and 1.0 are one value), or None."""
    seen: dict[str, Any] = {}
    for v in values:
        key = json.dumps(_numbers_as_floats(v), sort_keys=True, default=str)
        if key in seen:
            return seen[key]
        seen[key] = v
    return None


def _numbers_as_floats(v):
    if isinstance(v, dict):
        return {k: _numbers_as_floats(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_numbers_as_floats(x) for x in v]
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else v


def _overlapping_keys(keys: list[str]) -> list[tuple[str, str]]:
    """Swept keys (``grid.train.lr``, ``zip.train``) that set the same config value: equal keys (after
    trimming spaces around the dots), or one inside the other (``train`` holds ``train.lr``). The run would
    take one of the two values while the table shows the other."""
    parts = {k: tuple(p.strip() for p in k.split(".", 1)[1].split(".")) for k in keys}
    errors = []
    for i, a in enumerate(keys):
        for b in keys[:i]:
            inner, outer = sorted((parts[a], parts[b]), key=len, reverse=True)
            if inner[:len(outer)] == outer:
                what = "the same key" if inner == outer else f"{'.'.join(outer)} holds {'.'.join(inner)}"
                errors.append((a, f"overlaps {b} ({what}): both set {'.'.join(inner)}, and the table would show one "
                                  f"value while the run uses the other; sweep each setting under one key, not both"))
    return errors


def load_sweep(source: str | Path | dict | SweepSpec) -> SweepSpec:
    """Read and validate a sweep file.

    Arguments:
        source: a YAML path, a dict or a ``SweepSpec``; a ``base`` given as a path is read relative to the
            sweep file.

    Returns:
        The validated ``SweepSpec``; ``SweepError`` names each bad field.
    """
    if isinstance(source, SweepSpec):
        return source
    base_dir = Path.cwd()
    if isinstance(source, str | Path):
        try:
            raw, base_dir = read_yaml_file(source)
        except ValueError as e:
            raise SweepError([("sweep", str(e))]) from None
    else:
        raw = source
    if not isinstance(raw, dict):
        raise SweepError([("sweep", f"must be a mapping with name, base, grid, zip, seeds; got {type(raw).__name__}")])
    try:
        check_yaml_size(raw)
    except ValueError as e:
        raise SweepError([("sweep", str(e))]) from None
    raw = plain_data(raw)  # a deep copy: NumPy arrays as lists
    if isinstance(raw.get("base"), str):
        base_path = Path(raw["base"]).expanduser()
        base_path = base_path if base_path.is_absolute() else base_dir / base_path
        try:
            raw["base"], _ = read_yaml_file(base_path)
        except ValueError as e:
            raise SweepError([("base", str(e))]) from None
        _absolute_paths(raw["base"], base_path.parent)
    elif isinstance(raw.get("base"), dict):
        _absolute_paths(raw["base"], base_dir)
    try:
        return SweepSpec.model_validate(raw)
    except ValidationError as e:
        raise SweepError([_sweep_error(err) for err in closest_errors(e.errors())]) from None


def _sweep_error(err: dict) -> tuple[str, str]:
    path, msg = error_entry(err)
    path = path.replace("zip_", "zip", 1) if path.startswith("zip_") else path
    if err["type"] in ("list_type",) and path.count(".") >= 1:
        msg = f"must be a list of values, got {err.get('input')!r}"
    if err["type"] == "dict_type" and path == "base":
        msg = "must be a run config (a mapping) or the path of a YAML run config"
    return path, msg


def _absolute_paths(base: dict, folder: Path) -> None:
    """Make relative ``path`` entries of data/init absolute (the base may live in another folder)."""
    for section in ("data", "init"):
        sec = base.get(section)
        if isinstance(sec, dict) and isinstance(sec.get("path"), str) and not Path(sec["path"]).is_absolute():
            sec["path"] = str((folder / sec["path"]).resolve())


def expand(spec: SweepSpec) -> list[Point]:
    """The sweep's points: the cartesian product of the grid lists, crossed with the zip rows
    (grid varies slowest, in file order). Each config is the base with the values set, named by
    ``point_name``, with the sweep's ``seeds`` (if given) replacing the base's seed(s)."""
    grid_rows = [dict(zip(spec.grid, combo)) for combo in itertools.product(*spec.grid.values())]
    n_zip = len(next(iter(spec.zip_.values()))) if spec.zip_ else 1
    zip_rows = [{k: v[i] for k, v in spec.zip_.items()} for i in range(n_zip)]
    points: list[Point] = []
    for index, (g, z) in enumerate(itertools.product(grid_rows, zip_rows)):
        values = {**g, **z}
        cfg = json.loads(json.dumps(spec.base))
        for key, value in values.items():
            set_dotted(cfg, key, value)
        cfg["name"] = point_name(spec.name, values)
        if spec.seeds is not None:
            cfg.pop("seed", None)
            cfg["seeds"] = spec.seeds
        points.append(Point(index, values, cfg))
    names = [p.config["name"] for p in points]
    if len(set(names)) != len(names):  # values that print alike (0.1 and "0.1"): name by a hash instead
        for p in points:
            p.config["name"] = point_name(spec.name, p.values, hashed=True)
    return points


def point_name(sweep: str, values: dict, hashed: bool = False) -> str:
    """The run name of a point: ``<sweep>-<key><value>-...`` from the last segment of each swept key
    (``fit-time-scale1e-06-width8``); a hash of the values when that is too long or not unique."""
    parts = [re.sub(r"[^A-Za-z0-9_.\-]", "", f"{k.rsplit('.', 1)[-1]}{short(v)}") for k, v in values.items()]
    name = "-".join([sweep, *parts])
    if hashed or len(name) > 80:
        digest = hashlib.sha1(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:8]
        name = f"{sweep[:70]}-{digest}"
    return name


def check_keys(spec: SweepSpec, points: Sequence[Point]) -> None:
    """Raise ``SweepError`` when a swept key is not a field of the run config (e.g. ``train.lrr``):
    every point would be invalid for the same reason, so it is an error of the sweep file."""
    if not points:
        return
    try:
        load_config(points[0].config)
    except ConfigError as e:
        where = {key: "grid" if key in spec.grid else "zip" for key in spec.keys}
        bad = [(f"{where[path]}.{path}", f"{msg} in the run config") for path, msg in e.errors
               if path in where and msg.startswith("unknown field")]
        if bad:
            raise SweepError(bad) from None


# -- one point ------------------------------------------------------------------------------

def run_point(config: dict, out: str, force: bool = False) -> dict:
    """Run one point through the run store and never raise (except on interrupt): returns
    ``{status, run_id, cached, message, summary, seconds}``. Picklable, for Dask workers."""
    from twolayer.api import RunError, run

    t0 = time.perf_counter()
    result = {"status": "failed", "run_id": None, "cached": False, "message": "", "summary": {}}
    try:
        stored = run(config, out=out, force=force)
        summary = stored.summary
        result.update(status=summary.get("status", "unknown"), run_id=stored.path.name, cached=stored.cached,
                      message=summary.get("message", ""), summary=summary)
    except ConfigError as e:
        result.update(status="invalid", message=_config_message(e))
    except RunError as e:
        summary = RunStore.read_summary(e.path) or {}
        result.update(status=summary.get("status", "failed"), run_id=e.path.name, summary=summary,
                      message=first_line(summary.get("message") or str(e)))
    except Exception as e:  # an engine bug in one point must not stop the sweep
        result.update(message=f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")
    result["seconds"] = time.perf_counter() - t0
    return result


def precheck(config: dict, out: str | Path, force: bool) -> dict | None:
    """The result of a point that needs no task: invalid configs, and finished runs (unless
    ``force``). None when the point must run."""
    t0 = time.perf_counter()
    try:
        cfg = load_config(config)
    except ConfigError as e:
        return {"status": "invalid", "run_id": None, "cached": False, "message": _config_message(e), "summary": {},
                "seconds": time.perf_counter() - t0}
    store = RunStore(out)
    config_hash = cfg.config_hash()
    run_dir = store.run_dir(cfg.name, config_hash)
    stored = store.stored_state(run_dir, config_hash)
    if force or not stored.cache_hit:  # unfinished or damaged: run it (twolayer.run says why)
        return None
    summary = stored.summary
    message = summary.get("message", "")
    if cfg.mlflow is not None:  # logged as `twolayer run` logs a cache hit (once per experiment)
        from twolayer.stored import StoredRun
        from twolayer.tracking import TrackingError, log_run

        try:
            log_run(StoredRun(run_dir, cached=True), cfg.mlflow, cached=True)
        except TrackingError as e:
            message = " ".join(filter(None, (message, str(e))))
    return {"status": summary["status"], "run_id": run_dir.name, "cached": True, "message": message,
            "summary": summary, "seconds": time.perf_counter() - t0}


def _config_message(e: ConfigError) -> str:
    return "invalid config: " + "; ".join(f"{path}: {msg}" for path, msg in e.errors)


# -- executors --------------------------------------------------------------------------------

Task = tuple[int, dict]  # (point index, config)
OnDone = Callable[[int, dict], None]


class LocalExecutor:
    """Runs points one after another in this process (seeds are still batched per point)."""

    def __init__(self, workers: int | None = None, address: str | None = None, **_):
        for option, value in (("--address", address), ("--workers", workers)):
            if value:
                raise SweepError([(option, "only applies to --executor dask")])

    def map(self, tasks: Sequence[Task], out: str, force: bool, on_done: OnDone) -> None:
        for index, config in tasks:
            on_done(index, run_point(config, out, force))


class DaskExecutor:
    """Submits points to a Dask distributed cluster: an existing scheduler (``address``), a given
    ``client``, or a ``LocalCluster`` with ``workers`` processes of one thread each.

    Workers write into the shared output folder (the run store is safe under concurrent writers).
    Tasks lost with a dying worker are rescheduled by Dask (up to the scheduler's
    ``allowed-failures``); a point whose task still dies is recorded as failed. ``resources``
    (e.g. ``{"GPU": 1}``) restricts points to workers started with matching ``--resources``.
    """

    def __init__(self, workers: int | None = None, address: str | None = None, client=None,
                 resources: dict[str, float] | None = None, timeout: float = 60.0, task: Callable | None = None):
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise SweepError([("--executor", "dask needs dask.distributed: pip install 'twolayer[sweep]'")]) from None
        self.workers, self.address, self.client, self.resources, self.timeout = workers, address, client, resources, timeout
        self.task = task or run_point  # (config, out, force) -> result dict

    def _client(self, stack):
        from distributed import Client, LocalCluster

        if self.client is not None:
            return self.client
        if self.address:
            return stack.enter_context(Client(self.address, timeout=self.timeout))
        import logging

        cluster = stack.enter_context(LocalCluster(
            n_workers=self.workers or 2, threads_per_worker=1, processes=True, dashboard_address=None,
            silence_logs=logging.ERROR))
        return stack.enter_context(Client(cluster, timeout=self.timeout))

    def map(self, tasks: Sequence[Task], out: str, force: bool, on_done: OnDone) -> None:
        import contextlib

        from distributed import as_completed

        with contextlib.ExitStack() as stack:
            client = self._client(stack)
            check_workers(client, wait=bool(self.address), timeout=self.timeout)
            token = f"{time.time_ns():x}"
            futures = {client.submit(self.task, config, str(Path(out).resolve()), force, pure=False,
                                     key=f"twolayer-point-{index}-{token}", resources=self.resources): index
                       for index, config in tasks}
            for fut in as_completed(list(futures)):
                index = futures[fut]
                try:
                    result = fut.result()
                except Exception as e:  # KilledWorker (a worker died on it too often), CancelledError...
                    result = {"status": "failed", "run_id": None, "cached": False, "summary": {}, "seconds": math.nan,
                              "message": f"worker crashed: {type(e).__name__}: {e}"}
                on_done(index, result)


def check_workers(client, *, wait: bool = False, timeout: float = 60.0) -> dict[str, str]:
    """The twolayer version on every connected worker; raises ``SweepError`` naming the workers
    that cannot import twolayer (their tasks could not even be unpacked) or run another version.
    With ``wait``, first waits up to ``timeout`` seconds for at least one worker."""
    from twolayer.version import __version__

    if wait:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            raise SweepError([("--address", f"no worker joined the scheduler within {timeout:g} s")]) from None
    try:
        # eval is a builtin, so the probe itself unpacks on any worker, with or without twolayer
        versions = client.run(eval, "__import__('twolayer').__version__", on_error="return")
    except Exception as e:  # noqa: BLE001 (a scheduler that cannot run the probe at all)
        raise SweepError([("workers", f"could not query the workers: {type(e).__name__}: {e}")]) from None
    bad = {w: (f"{type(v).__name__}: {v}" if isinstance(v, BaseException) else f"twolayer {v}, client {__version__}")
           for w, v in versions.items() if isinstance(v, BaseException) or v != __version__}
    if bad:
        raise SweepError([(f"worker {w}", f"cannot run twolayer points ({why}); install the same twolayer there")
                          for w, why in bad.items()])
    return versions


EXECUTORS: Registry[type] = Registry("--executor")
EXECUTORS.register("local", LocalExecutor)
EXECUTORS.register("dask", DaskExecutor)


# -- the sweep ----------------------------------------------------------------------------------

class SweepProgress:
    """Progress hooks of ``run_sweep`` (no-ops; the CLI draws a rich bar)."""

    def start(self, total: int) -> None: ...

    def point_done(self, point: Point, result: dict, counts: dict[str, int]) -> None: ...


@dataclass
class SweepResult:
    """The outcome of ``run_sweep``: points, one result per point, the table rows and its path."""

    spec: SweepSpec
    points: list[Point]
    results: dict[int, dict]
    rows: list[dict]
    path: Path  # <out>/<name>/
    wall_seconds: float = 0.0
    written: list[Path] = field(default_factory=list)

    @property
    def failures(self) -> list[tuple[Point, dict]]:
        """Points whose run did not complete (invalid, failed, diverged, interrupted, not run)."""
        return [(p, self.results.get(p.index, not_run())) for p in self.points
                if self.results.get(p.index, not_run())["status"] != "completed"]

    @property
    def exit_code(self) -> int:
        return 1 if self.failures else 0

    def table(self):
        """The results as a pandas DataFrame."""
        return to_frame(self.rows, self.spec.keys)


def run_sweep(source: str | Path | dict | SweepSpec, *, out: str | Path = DEFAULT_OUT, executor: str = "local",
              workers: int | None = None, address: str | None = None, force: bool = False,
              progress: SweepProgress | None = None, mlflow: str | None = None, **executor_options) -> SweepResult:
    """Run every point of a sweep and write ``<out>/<name>/results.parquet`` (and ``.csv``).

    Arguments:
        source: a sweep file (YAML path), a dict or a ``SweepSpec`` (see the module docstring).
        out: the output folder (the run store; the table goes to ``<out>/<name>/``).
        executor: ``local`` (this process) or ``dask``; ``workers``, ``address`` and ``executor_options``
            configure it.
        force: recompute every point.
        progress: a ``SweepProgress`` told of every finished point.
        mlflow: an MLflow tracking URI every point is logged to (``twolayer.tracking``; the base config's
            ``mlflow.experiment`` is kept, else the sweep's name), cache hits included.

    Returns:
        The ``SweepResult``: the points, their results, the table (``.table()``) and the files written.

    Invalid points and finished runs (cache hits) are resolved here without a task; the rest go
    to the executor. The table is written even when the sweep is interrupted (unfinished points
    get status ``not run``), so re-running the command resumes where it stopped.
    """
    spec = load_sweep(source)
    ex = EXECUTORS.get(executor)(workers=workers, address=address, **executor_options)
    progress = progress or SweepProgress()
    out = Path(out)
    RunStore(out).check_writable()
    sweep_dir = out / spec.name
    sweep_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(sweep_dir / SWEEP_FILE, yaml.safe_dump(spec.normalized(), sort_keys=False))
    points = expand(spec)
    check_keys(spec, points)
    if mlflow is not None:
        from twolayer.tracking import require_mlflow

        require_mlflow()  # before anything runs
        tracking = {"experiment": spec.name, **(spec.base.get("mlflow") or {}), "uri": mlflow}
        for p in points:
            p.config["mlflow"] = tracking
    by_index = {p.index: p for p in points}
    results: dict[int, dict] = {}
    counts = {"done": 0, "failed": 0, "cached": 0}
    start = time.perf_counter()
    progress.start(len(points))

    def on_done(index: int, result: dict) -> None:
        results[index] = result
        counts["done"] += 1
        counts["failed"] += result["status"] != "completed"
        counts["cached"] += bool(result.get("cached"))
        progress.point_done(by_index[index], result, dict(counts))

    sweep = SweepResult(spec, points, results, [], sweep_dir)
    try:
        pending = []
        for p in points:
            pre = precheck(p.config, out, force)
            if pre is None:
                pending.append((p.index, p.config))
            else:
                on_done(p.index, pre)
        if pending:
            ex.map(pending, str(out), force, on_done)
    finally:
        sweep.wall_seconds = time.perf_counter() - start
        sweep.rows = table_rows(points, results)
        sweep.written = write_table(sweep.rows, spec.keys, sweep_dir)
    return sweep


# -- the table -----------------------------------------------------------------------------------

def to_frame(rows: list[dict], keys: Sequence[str] = ()):
    """The rows as a pandas DataFrame (columns in a stable order)."""
    import pandas as pd

    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=["point", *keys, "seed", "run_id", "status"])
    return df


def write_table(rows: list[dict], keys: Sequence[str], folder: Path) -> list[Path]:
    """Write ``results.csv`` and, when pyarrow is installed, ``results.parquet``; returns the paths.
    A column whose cells mix types (e.g. numbers and text) is written as text, so the table of points
    that already ran is never lost to a type error."""
    df = to_frame(rows, keys)
    for column in df.columns:
        if df[column].dtype == object and len({type(v) for v in df[column] if v is not None and v == v}) > 1:
            df[column] = [None if v is None else str(v) for v in df[column]]
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / f"{RESULTS}.csv"]
    write_text_atomic(written[0], df.to_csv(index=False))
    if not has_parquet():
        return written
    tmp = folder / f".{RESULTS}.parquet.tmp"
    df.to_parquet(tmp, index=False)
    tmp.replace(folder / f"{RESULTS}.parquet")
    written.append(folder / f"{RESULTS}.parquet")
    return written


__all__ = [
    "EXECUTORS", "DaskExecutor", "LocalExecutor", "Point", "SweepError", "SweepProgress", "SweepResult", "SweepSpec",
    "expand", "load_sweep", "precheck", "read_table", "run_point", "run_sweep", "table_rows", "to_frame", "write_table",
]


# -- sweeps as registered experiments ------------------------------------------------------------

def point_key(point: Point) -> str:
    """The config key of a point inside an experiment (``p000``, ``p001``, ...)."""
    return f"p{point.index:03d}"


def experiment_configs(spec: SweepSpec | dict) -> dict[str, dict]:
    """A sweep's point configs keyed by ``point_key`` (an Experiment's ``configs(scale)``)."""
    return {point_key(p): p.config for p in expand(load_sweep(spec))}


def runs_table(spec: SweepSpec | dict, runs: dict):
    """The results table (as ``run_sweep`` writes it) of a sweep's stored runs, keyed by ``point_key``."""
    spec = load_sweep(spec)
    points = expand(spec)
    results = {}
    for p in points:
        run = runs.get(point_key(p))
        if run is not None:
            s = run.summary
            results[p.index] = {"status": s.get("status", "unknown"), "run_id": run.path.name, "cached": run.cached,
                                "message": s.get("message", ""), "summary": s, "seconds": math.nan}
    return to_frame(table_rows(points, results), spec.keys)
