"""Run directories and the run index.

A run lives in ``<out>/<name>-<hash8>/`` (hash of the resolved config) with ``config.yaml``,
``trajectory.npz``, ``final.npz``, ``summary.json``, for event-driven methods ``events.npz``, and, while
unfinished, ``checkpoint.npz``.
Every file is written atomically. ``<out>/runs.sqlite`` indexes the runs (id, name, status,
created, config hash, summary); it uses WAL mode and retries so several processes can write.
"""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import yaml

from twolayer.files import write_json_atomic, write_npz_atomic, write_text_atomic

DEFAULT_OUT = "twolayer-out"
FINISHED = ("completed", "diverged")  # deterministic end states: an identical config is a cache hit
STATUSES = ("running", "completed", "diverged", "failed", "interrupted")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class RunStore:
    """An output folder holding run directories and their SQLite index."""

    def __init__(self, root: str | Path = DEFAULT_OUT):
        self.root = Path(root)

    # -- paths --------------------------------------------------------------------------------
    def run_dir(self, name: str, config_hash: str) -> Path:
        return self.root / f"{name}-{config_hash[:8]}"

    def find(self, run: str | Path) -> Path:
        """A run directory from a path, a run id (``name-hash8``) or a unique id prefix."""
        p = Path(run)
        if (p / "summary.json").is_file() or (p / "config.yaml").is_file():
            return p
        if (self.root / run / "config.yaml").is_file():
            return self.root / run
        matches = [d for d in self.root.glob(f"{run}*") if (d / "config.yaml").is_file()]
        if len(matches) == 1:
            return matches[0]
        hint = "several runs match" if matches else "no run matches"
        raise FileNotFoundError(f"{hint} {run!r} in {self.root} (give a run directory or a run id from `twolayer list`)")

    # -- files --------------------------------------------------------------------------------
    @staticmethod
    def write_config(run_dir: Path, resolved: dict) -> None:
        write_text_atomic(run_dir / "config.yaml", yaml.safe_dump(resolved, sort_keys=False))

    @staticmethod
    def read_summary(run_dir: Path) -> dict | None:
        p = Path(run_dir) / "summary.json"
        return json.loads(p.read_text()) if p.is_file() else None

    def write_summary(self, run_dir: Path, summary: dict) -> None:
        write_json_atomic(run_dir / "summary.json", summary)
        self.index(summary)

    @staticmethod
    def write_results(run_dir: Path, trajectory: dict, final_params: dict) -> None:
        write_npz_atomic(run_dir / "trajectory.npz", trajectory)
        write_npz_atomic(run_dir / "final.npz", final_params)

    @staticmethod
    def write_events(run_dir: Path, table: dict) -> None:
        """``events.npz``: the event table of an event-driven method, one array per column
        (``pandas.DataFrame(dict(np.load(path)))`` reads it as a table)."""
        write_npz_atomic(run_dir / "events.npz", table)

    @staticmethod
    def write_checkpoint(run_dir: Path, arrays: dict) -> None:
        write_npz_atomic(run_dir / "checkpoint.npz", arrays)

    @staticmethod
    def read_checkpoint(run_dir: Path) -> dict | None:
        p = Path(run_dir) / "checkpoint.npz"
        if not p.is_file():
            return None
        with np.load(p) as f:
            return {k: f[k] for k in f.files}

    # -- index --------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        self.root.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.root / "runs.sqlite", timeout=30)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute(
            "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, name TEXT, status TEXT, "
            "created TEXT, updated TEXT, config_hash TEXT, path TEXT, summary TEXT)"
        )
        return con

    def _retry(self, fn, attempts: int = 20):
        for attempt in range(attempts):
            try:
                con = self._connect()
                try:
                    with con:
                        return fn(con)
                finally:
                    con.close()
            except sqlite3.OperationalError as e:  # locked / busy under concurrent writers
                if attempt == attempts - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
                last = e  # noqa: F841

    def index(self, summary: dict) -> None:
        row = (summary["run_id"], summary.get("name"), summary["status"], summary.get("created"), now_iso(),
               summary.get("config_hash"), str(self.root / summary["run_id"]), json.dumps(summary))
        self._retry(lambda con: con.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(run_id) DO UPDATE SET "
            "status=excluded.status, updated=excluded.updated, summary=excluded.summary", row))

    def list(self) -> list[dict]:
        if not (self.root / "runs.sqlite").is_file():
            return []
        rows = self._retry(lambda con: con.execute(
            "SELECT run_id, name, status, created, config_hash, summary FROM runs ORDER BY created").fetchall())
        keys = ("run_id", "name", "status", "created", "config_hash", "summary")
        return [dict(zip(keys, r[:5] + (json.loads(r[5]),))) for r in rows]
