"""The results table: one row per run (a sweep's grid point, or any stored run) and seed.

Columns: ``point``, the swept keys, ``seed``, ``run_id``, ``status`` (of this seed: a seed that ran to the
end of a batch in which another seed diverged is ``completed``), ``run_status`` (of the run), ``message``,
``cached``, ``wall_seconds`` (simulation time of the run), ``task_seconds`` (time of this invocation), and
``final.<metric>``, ``event.<event>`` and ``uncertainty.<event>`` (the width w of the interval (t - w, t]
known to hold the event: one step for gd and sgd, see ``train/event_times.py``) from the run's summary.
Built by ``twolayer sweep`` (its ``results.parquet``/``.csv``) and by ``twolayer.runs`` (the run index as a
DataFrame).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


RESULTS = "results"  # <out>/<sweep-name>/results.parquet and results.csv
SWEEP_FILE = "sweep.yaml"  # the normalized sweep (base inlined) next to the table


def sweep_memberships(out: Path) -> dict[str, list[tuple[str, int]]]:
    """run id -> ``(sweep name, point index)`` of every sweep folder in ``out`` (a ``SWEEP_FILE`` beside its
    ``results.csv``) whose table lists the run, sorted by sweep name."""
    found: dict[str, set[tuple[str, int]]] = {}
    for table in sorted(Path(out).glob(f"*/{RESULTS}.csv")):
        if not (table.parent / SWEEP_FILE).is_file():
            continue
        try:
            with table.open(newline="") as f:
                for row in csv.DictReader(f):
                    if row.get("run_id") and (row.get("point") or "").isdigit():
                        found.setdefault(row["run_id"], set()).add((table.parent.name, int(row["point"])))
        except (OSError, UnicodeDecodeError, csv.Error):  # a damaged table lists nothing
            continue
    return {run_id: sorted(points) for run_id, points in found.items()}


def sweep_points(sweep_dir: Path) -> tuple[list[str], list[tuple[int, dict, str | None]]]:
    """``(swept keys, [(point index, {key: value}, run id or None)])`` of a sweep folder (its ``SWEEP_FILE`` and
    ``results.csv``), one entry per point, values as in the table (numbers parsed)."""
    import yaml

    spec = yaml.safe_load((Path(sweep_dir) / SWEEP_FILE).read_text()) or {}
    keys = [*(spec.get("grid") or {}), *(spec.get("zip") or {})]
    points: dict[int, tuple[int, dict, str | None]] = {}
    with (Path(sweep_dir) / f"{RESULTS}.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            if (row.get("point") or "").isdigit() and int(row["point"]) not in points:
                values = {k: _number_or_text(row.get(k, "")) for k in keys}
                points[int(row["point"])] = (int(row["point"]), values, row.get("run_id") or None)
    return keys, [points[i] for i in sorted(points)]


def _number_or_text(text: str):
    try:
        return float(text) if any(c in text for c in ".eE") or text in ("nan", "inf") else int(text)
    except ValueError:
        return text


@dataclass(frozen=True)
class Point:
    """One grid point: its index, the swept values and the run config it expands to."""

    index: int
    values: dict[str, Any]
    config: dict

    def label(self) -> str:
        return ", ".join(f"{k}={short(v)}" for k, v in self.values.items())


def not_run() -> dict:
    """The result of a point that never ran."""
    return {"status": "not run", "run_id": None, "cached": False, "message": "the sweep stopped before this point ran",
            "summary": {}, "seconds": math.nan}


def first_line(text: str) -> str:
    """The first non-empty line of a message ('' for none)."""
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def table_rows(points: Iterable[Point], results: dict[int, dict]) -> list[dict]:
    """One row per point and seed (see the module docstring for the columns)."""
    rows = []
    for p in points:
        r = results.get(p.index) or not_run()
        s = r.get("summary") or {}
        seeds = s.get("seeds") or config_seeds(p.config)
        batched = "seeds" in p.config
        finished = "final" in s
        diverged = set(s.get("diverged_seeds") or [])
        for k, seed in enumerate(seeds):
            status = r["status"]
            if finished and status in ("diverged", "failed") and seed not in diverged:
                status = "completed"  # this seed ran to the end; another seed of the batch stopped
            row = {"point": p.index, **{key: cell(v) for key, v in p.values.items()}, "seed": seed,
                   "run_id": r.get("run_id"), "status": status, "run_status": r["status"],
                   "message": first_line(r.get("message", "")), "cached": bool(r.get("cached")),
                   "wall_seconds": as_float(s.get("wall_seconds")), "task_seconds": as_float(r.get("seconds"))}
            for prefix, values in (("final", s.get("final") or {}), ("event", s.get("events") or {}),
                                   ("uncertainty", s.get("event_uncertainty") or {})):
                for name, v in values.items():
                    row[f"{prefix}.{name}"] = as_float(v[k] if batched and isinstance(v, list) else v)
            rows.append(row)
    return rows


def config_seeds(config: dict) -> list[int]:
    """The seeds a (resolved) config runs."""
    seeds = config.get("seeds")
    if seeds is None:
        return [config.get("seed") or 0]
    return list(range(seeds)) if isinstance(seeds, int) else list(seeds)


def as_float(v) -> float:
    """A table number: NaN for None or anything that is not a number."""
    try:
        return math.nan if v is None else float(v)
    except (TypeError, ValueError):
        return math.nan


def cell(v):
    """Table cells are scalars: lists and mappings (e.g. an activation) become JSON text."""
    return v if v is None or isinstance(v, bool | int | float | str) else json.dumps(v, sort_keys=True)


def short(v) -> str:
    """A swept value as a short label (``1e-06``, ``relu``)."""
    return f"{v:g}" if isinstance(v, float) else str(cell(v))


def has_parquet() -> bool:
    """True when pyarrow (the optional ``sweep`` extra) is installed: tables are then also parquet."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def read_table(sweep_dir: str | Path):
    """``(DataFrame, swept keys)`` of a sweep folder written by ``run_sweep`` (``twolayer.sweep``)."""
    import pandas as pd
    import yaml

    folder = Path(sweep_dir)
    parquet, text = folder / f"{RESULTS}.parquet", folder / f"{RESULTS}.csv"
    if parquet.is_file() and has_parquet():
        df = pd.read_parquet(parquet)
    elif text.is_file():
        df = pd.read_csv(text)
    else:
        raise FileNotFoundError(f"{folder} has no {RESULTS}.parquet or {RESULTS}.csv (run `twolayer sweep` first)")
    keys: list[str] = []
    if (folder / SWEEP_FILE).is_file():
        spec = yaml.safe_load((folder / SWEEP_FILE).read_text()) or {}
        keys = [*(spec.get("grid") or {}), *(spec.get("zip") or {})]
    return df, keys
