"""Run directories and the run index.

A run lives in ``<out>/<name>-<hash8>/`` (hash of the resolved config) with ``config.yaml``,
``trajectory.npz``, ``final.npz``, ``summary.json``, for event-driven methods ``events.npz`` (the event
table) and, while unfinished, ``checkpoint.npz``
(``twolayer.checkpoint``) and ``.lock`` (``twolayer.lock``). Every file is written atomically, with
the user's umask. ``summary.json`` of a finished run records the sha256 of every output file
(``files``); ``stored_state`` checks them before a run is served from the store. ``<out>/runs.sqlite``
indexes the runs (id, name, status, created, config hash, summary); it uses WAL mode and retries so
several processes can write, and is rebuilt from the run directories when it is missing or unreadable.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import tempfile
import time
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import yaml

from twolayer.defaults import DEFAULT_OUT  # noqa: F401  (re-exported: the store's default folder)
from twolayer.errors import OutputError
from twolayer.fileio import sha256_of, write_json_atomic, write_npz_atomic, write_text_atomic

FINISHED = ("completed", "diverged")  # deterministic end states: an identical config is a cache hit
STATUSES = ("running", "completed", "diverged", "failed", "interrupted")
INDEX = "runs.sqlite"
CONFIG, TRAJECTORY, FINAL, SUMMARY = "config.yaml", "trajectory.npz", "final.npz", "summary.json"
EVENTS = "events.npz"  # event-driven methods only: verified when summary["files"] lists it
OUTPUTS = (CONFIG, TRAJECTORY, FINAL)  # hashed into summary["files"] and verified on a cache hit
REQUIRED_ARRAYS = {TRAJECTORY: ("t", "step"), FINAL: ("W",)}
# errors of the output folder itself (the user's choice of --out), as opposed to a full disk
FOLDER_ERRNOS = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EEXIST, errno.ENOENT, errno.EISDIR)


def now_iso() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class StoredRun:
    """What a run directory holds: its summary (None if missing or unreadable) and, when it claims
    to be finished, ``problem``: why it cannot be served (empty when every output file is intact)."""

    summary: dict | None
    problem: str = ""

    @property
    def finished(self) -> bool:
        return bool(self.summary) and self.summary.get("status") in FINISHED

    @property
    def cache_hit(self) -> bool:
        return self.finished and not self.problem


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
        if (p / SUMMARY).is_file() or (p / CONFIG).is_file():
            return p
        if (self.root / run / CONFIG).is_file():
            return self.root / run
        matches = [d for d in self.root.glob(f"{run}*") if (d / CONFIG).is_file()]
        if len(matches) == 1:
            return matches[0]
        hint = "several runs match" if matches else "no run matches"
        raise FileNotFoundError(f"{hint} {run!r} in {self.root} (give a run directory or a run id from `twolayer list`)")

    def run_dirs(self) -> list[Path]:
        """Every run directory under the root (a folder with a config.yaml or summary.json)."""
        if not self.root.is_dir():
            return []
        return sorted(d for d in self.root.iterdir() if d.is_dir() and ((d / SUMMARY).is_file() or (d / CONFIG).is_file()))

    def check_writable(self) -> None:
        """Create the root folder if needed and check that files can be written in it; ``OutputError``
        (naming ``--out``) when it is a file, lies below a file, is read-only or cannot be created."""
        where = f"{self.root}"
        try:
            if self.root.exists() and not self.root.is_dir():
                raise OutputError([("--out", f"{where} is a file, not a folder")])
            self.root.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self.root, prefix=".write-test-")
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            if e.errno not in FOLDER_ERRNOS:
                raise
            reason = {errno.ENOTDIR: "a part of the path is a file, not a folder",
                      errno.EEXIST: "a part of the path is a file, not a folder",
                      errno.EROFS: "it is on a read-only file system",
                      errno.ENOENT: "the folder cannot be created there"}.get(e.errno, e.strerror or str(e))
            raise OutputError([("--out", f"cannot write in {where}: {reason}")]) from None

    # -- files --------------------------------------------------------------------------------
    @staticmethod
    def write_config(run_dir: Path, resolved: dict) -> str:
        return write_text_atomic(run_dir / CONFIG, yaml.safe_dump(resolved, sort_keys=False))

    @staticmethod
    def read_summary(run_dir: Path) -> dict | None:
        """The run's summary; None when ``summary.json`` is missing or is not a JSON mapping."""
        return _load_summary(Path(run_dir))[0]

    def write_summary(self, run_dir: Path, summary: dict) -> None:
        write_json_atomic(run_dir / SUMMARY, summary)
        self.index(summary)

    @staticmethod
    def write_results(run_dir: Path, trajectory: dict, final_params: dict) -> dict[str, str]:
        """Write ``trajectory.npz`` and ``final.npz``; returns their sha256 by file name."""
        return {TRAJECTORY: write_npz_atomic(run_dir / TRAJECTORY, trajectory),
                FINAL: write_npz_atomic(run_dir / FINAL, final_params)}

    @staticmethod
    def write_events(run_dir: Path, table: dict) -> dict[str, str]:
        """Write ``events.npz``, the event table of an event-driven method, one array per column
        (``pandas.DataFrame(dict(np.load(path)))`` reads it as a table); returns its sha256 by file name."""
        return {EVENTS: write_npz_atomic(run_dir / EVENTS, table)}

    @staticmethod
    def stored_state(run_dir: Path) -> StoredRun:
        """The summary of ``run_dir`` and, if it says the run finished, whether its outputs are intact:
        each file of ``OUTPUTS`` exists, its sha256 matches ``summary["files"]`` and the archives open
        with their required arrays. A summary written before hashes were recorded is checked by
        loading every array instead."""
        run_dir = Path(run_dir)
        summary, problem = _load_summary(run_dir)
        if problem:
            return StoredRun(None, problem)
        if not summary or summary.get("status") not in FINISHED:
            return StoredRun(summary)
        return StoredRun(summary, _output_problem(run_dir, summary.get("files")))

    @staticmethod
    def clear(run_dir: Path, keep: tuple[str, ...] = ()) -> None:
        """Remove every file of ``run_dir`` except those named in ``keep``."""
        import shutil

        for p in Path(run_dir).iterdir() if Path(run_dir).is_dir() else ():
            if p.name in keep:
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)

    # -- index --------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        """A connection in autocommit mode: every write is ONE statement, atomic inside SQLite, so an
        interrupt between two Python lines can never leave a transaction open (and the index locked)."""
        self.root.mkdir(parents=True, exist_ok=True)
        fresh = not (self.root / INDEX).is_file()
        con = sqlite3.connect(self.root / INDEX, timeout=30, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute(
                "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, name TEXT, status TEXT, "
                "created TEXT, updated TEXT, config_hash TEXT, path TEXT, summary TEXT)"
            )
            if fresh:  # a deleted index: put back every run directory
                _upsert(con, [_row(summary, path) for path, summary in self._summaries()])
        except BaseException:
            con.close()
            raise
        return con

    def _retry(self, fn, attempts: int = 20):
        for attempt in range(attempts):
            con = None
            try:
                con = self._connect()
                return fn(con)
            except sqlite3.OperationalError:  # locked / busy under concurrent writers
                if attempt == attempts - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
            except sqlite3.DatabaseError:  # not a database / malformed: set it aside, rebuild
                if attempt == attempts - 1:
                    raise
                if con is not None:
                    con.close()
                    con = None
                self._set_aside_index()
            finally:
                if con is not None:
                    con.close()

    def _set_aside_index(self) -> Path:
        aside = self.root / f"{INDEX}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        for suffix in ("", "-wal", "-shm"):
            p = self.root / f"{INDEX}{suffix}"
            if p.exists():
                os.replace(p, aside.with_name(aside.name + suffix))
        return aside

    def _summaries(self):
        """``(directory, summary)`` of every run directory with a readable summary (``run_id`` filled in)."""
        for d in self.run_dirs():
            summary = _load_summary(d)[0]
            if summary is not None:
                yield d, {**summary, "run_id": summary.get("run_id", d.name)}

    def index(self, summary: dict) -> None:
        row = _row(summary, self.root / summary["run_id"])
        self._retry(lambda con: _upsert(con, [row]))

    def rebuild_index(self) -> tuple[int, list[Path]]:
        """Re-create the rows of ``runs.sqlite`` from the run directories: ``(runs indexed, directories
        skipped because their summary.json is missing or unreadable)``. An unreadable index is set aside."""
        skipped = [d for d in self.run_dirs() if _load_summary(d)[0] is None]
        rows = [_row(s, d) for d, s in self._summaries()]

        def rebuild(con):
            _upsert(con, rows)
            keep = [r[0] for r in rows]
            con.execute(f"DELETE FROM runs WHERE run_id NOT IN ({','.join('?' * len(keep))})", keep)
            return len(rows)

        return self._retry(rebuild), skipped

    def list(self) -> list[dict]:
        if not (self.root / INDEX).is_file() and not self.run_dirs():
            return []
        rows = self._retry(lambda con: con.execute(
            "SELECT run_id, name, status, created, config_hash, summary FROM runs ORDER BY created").fetchall())
        keys = ("run_id", "name", "status", "created", "config_hash", "summary")
        return [dict(zip(keys, r[:5] + (json.loads(r[5]),))) for r in rows]


def _row(summary: dict, path: Path) -> tuple:
    return (summary["run_id"], summary.get("name"), summary["status"], summary.get("created"), now_iso(),
            summary.get("config_hash"), str(path), json.dumps(summary))


def _upsert(con: sqlite3.Connection, rows: list[tuple], chunk: int = 1000) -> None:
    """Insert or update index rows, each chunk in one (atomic) statement."""
    for start in range(0, len(rows), chunk):
        part = rows[start:start + chunk]
        values = ",".join(["(?,?,?,?,?,?,?,?)"] * len(part))
        con.execute(f"INSERT INTO runs VALUES {values} ON CONFLICT(run_id) DO UPDATE SET status=excluded.status, "
                    f"updated=excluded.updated, summary=excluded.summary", [v for r in part for v in r])


def _load_summary(run_dir: Path) -> tuple[dict | None, str]:
    """``(summary, problem)``: ``(None, "")`` when there is no summary.json, ``(None, why)`` when it
    cannot be read as a JSON mapping with a status."""
    p = run_dir / SUMMARY
    if not p.is_file():
        return None, ""
    try:
        summary = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return None, f"{SUMMARY} is unreadable ({type(e).__name__})"
    if not isinstance(summary, dict) or not isinstance(summary.get("status"), str):
        return None, f"{SUMMARY} is not a run summary (no status)"
    return summary, ""


def _output_problem(run_dir: Path, hashes) -> str:
    """Why the output files of a finished run cannot be served ("" when they are intact)."""
    legacy = not isinstance(hashes, dict)
    for name in OUTPUTS + (() if legacy or EVENTS not in hashes else (EVENTS,)):
        path = run_dir / name
        if not path.is_file():
            return f"{name} is missing"
        if not legacy and hashes.get(name) != sha256_of(path):
            return f"{name} does not match the sha256 recorded in {SUMMARY} (changed or damaged)"
    for name, required in REQUIRED_ARRAYS.items():
        try:
            with np.load(run_dir / name, allow_pickle=False) as f:
                missing = [k for k in required if k not in f.files]
                if legacy:  # no hash to compare: read every array
                    for k in f.files:
                        f[k]
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            return f"{name} cannot be loaded ({type(e).__name__}: {e})"
        if missing:
            return f"{name} has no array {', '.join(missing)}"
    return ""
