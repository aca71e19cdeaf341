"""Run directories and the run index.

A run lives in ``<out>/<name>-<hash8>/`` (hash of the resolved config) with ``config.yaml``,
``trajectory.npz``, ``final.npz``, ``summary.json``, ``summary.sha256``, for event-driven methods
``events.npz`` (the event table) and, while unfinished, ``checkpoint.npz`` (``twolayer.checkpoint``) and
``.lock`` (``twolayer.lock``). Every file is written atomically, with the user's umask.

Integrity: ``summary.json`` of a finished run records the sha256 of every output file (``files``), and
``summary.sha256``, written after it, holds the sha256 of ``summary.json`` itself. ``stored_state``
verifies, on every read that serves a run: the summary against its digest, the directory's identity (its
``config.yaml`` hashes to the config hash the summary names, to the directory's run id and to the
requested config), and each output file against its recorded sha256. Anything that does not verify is a
``problem``: ``twolayer.run`` recomputes the run and says why, readers refuse or flag it.

``<out>/runs.sqlite`` indexes the runs (id, name, status, created, config hash, summary text). It is a
cache of the directories: ``list`` lists every run directory, serving a summary from the index only when
it matches the directory's ``summary.sha256``, and reads the directory otherwise. An index that cannot be
read (truncated, not a database, a foreign schema, a damaged row, no write access) is never fatal: it is
set aside and rebuilt, repaired row by row, or gone without. It uses WAL mode and retries so several
processes can write.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import time
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import hashlib

import numpy as np
import yaml

from twolayer.defaults import DEFAULT_OUT  # noqa: F401  (re-exported: the store's default folder)
from twolayer.errors import OutputError
from twolayer.fileio import (canonical_sha256, check_writable_folder, json_text, sha256_of, write_npz_atomic,
                             write_text_atomic)

FINISHED = ("completed", "diverged")  # deterministic end states: an identical config is a cache hit
STATUSES = ("running", "completed", "diverged", "failed", "interrupted")
INDEX = "runs.sqlite"
CONFIG, TRAJECTORY, FINAL, SUMMARY = "config.yaml", "trajectory.npz", "final.npz", "summary.json"
SUMMARY_DIGEST = "summary.sha256"  # the sha256 of summary.json's bytes, written after it
INDEX_COLUMNS = ("run_id", "name", "status", "created", "updated", "config_hash", "path", "summary")
EVENTS = "events.npz"  # event-driven methods only: verified when summary["files"] lists it
OUTPUTS = (CONFIG, TRAJECTORY, FINAL)  # hashed into summary["files"] and verified on a cache hit
REQUIRED_ARRAYS = {TRAJECTORY: ("t", "step"), FINAL: ("W",)}


def load_config_text(text: str):
    """A stored ``config.yaml``'s contents (safe YAML; libyaml's parser when PyYAML has it, the same objects as
    ``yaml.safe_load`` about 10x faster: a config with explicit initial weights holds thousands of numbers)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def now_iso() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class StoredState:
    """What a run directory holds: its summary (None if missing or unreadable) and ``problem``: why it
    cannot be trusted (empty when the summary verifies against its digest, the directory is the run of
    its config and, for a finished run, every output file is intact). ``foreign`` marks a directory
    that holds another config's run (copied or renamed)."""

    summary: dict | None
    problem: str = ""
    foreign: bool = False

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
        """A run directory from a path, a run id (``name-hash8``) or a unique id prefix, matched literally
        (``*`` is no pattern); ``FileNotFoundError`` naming what was looked for otherwise."""
        text = str(run)
        if not text.strip():
            raise FileNotFoundError("the run is empty: give a run directory or a run id from `twolayer list`")
        p = Path(run)
        if (p / SUMMARY).is_file() or (p / CONFIG).is_file():
            return p
        if p.is_absolute() or os.sep in text.rstrip(os.sep):
            what = "is not a run directory (it has no config.yaml or summary.json)" if p.exists() else "does not exist"
            raise FileNotFoundError(f"{text} {what}: give a run directory or a run id from `twolayer list`")
        if (self.root / text / CONFIG).is_file():
            return self.root / text
        matches = [d for d in self.run_dirs() if d.name.startswith(text) and (d / CONFIG).is_file()]
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = "".join(f"\n  {d.name}" for d in matches[:50]) + (f"\n  ... and {len(matches) - 50} more"
                                                                      if len(matches) > 50 else "")
            raise FileNotFoundError(f"{len(matches)} runs match {text!r} in {self.root}; give more of the id:{shown}")
        raise FileNotFoundError(f"no run matches {text!r} in {self.root} (give a run directory or a run id from "
                                f"`twolayer list`)")

    def run_dirs(self) -> list[Path]:
        """Every run directory under the root (a folder with a config.yaml or summary.json)."""
        if not self.root.is_dir():
            return []
        return sorted(d for d in self.root.iterdir() if d.is_dir() and ((d / SUMMARY).is_file() or (d / CONFIG).is_file()))

    def check_writable(self) -> None:
        """Create the root folder if needed and check that files can be written in it; ``OutputError``
        (naming ``--out``) when it is a file, lies below a file, is read-only or cannot be created."""
        check_writable_folder(self.root, "--out")

    # -- files --------------------------------------------------------------------------------
    @staticmethod
    def write_config(run_dir: Path, resolved: dict) -> str:
        return write_text_atomic(run_dir / CONFIG, yaml.safe_dump(resolved, sort_keys=False))

    @staticmethod
    def read_summary(run_dir: Path) -> dict | None:
        """The run's summary as the file says, not verified (a status to show); None when ``summary.json``
        is missing or is not a JSON mapping. What serves a run verifies it with ``stored_state``."""
        return _load_summary(Path(run_dir))[0]

    def write_summary(self, run_dir: Path, summary: dict) -> str:
        """Write ``summary.json``, then its digest ``summary.sha256``, then the index row. The run
        directory is the record: an index that cannot be written (a full disk) is not an error of the run;
        returns why it was not updated ("" when it was)."""
        text = summary_text(summary)
        digest = write_text_atomic(run_dir / SUMMARY, text)
        write_text_atomic(run_dir / SUMMARY_DIGEST, digest + "\n")
        return self.index(summary, text)

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
    def stored_state(run_dir: Path, config_hash: str | None = None) -> StoredState:
        """The summary of ``run_dir`` and whether it can be trusted, checked in this order:

        1. ``summary.json`` is a JSON mapping with a status, and its sha256 is the one in ``summary.sha256``
           (a finished run without that digest is not served either);
        2. the directory is this run's: ``config.yaml`` hashes to the summary's ``config_hash``, whose
           first 8 digits and the config's name make the directory's name, and to ``config_hash`` (the
           requested config) when given;
        3. a finished run's outputs are intact: each file of ``OUTPUTS`` exists, its sha256 matches
           ``summary["files"]`` and the archives open with their required arrays."""
        run_dir = Path(run_dir)
        summary, problem = _load_summary(run_dir)
        if problem:
            return StoredState(None, problem)
        if not summary:
            return StoredState(None, _identity_problem(run_dir, None, config_hash))
        finished = summary.get("status") in FINISHED
        problem = _digest_problem(run_dir, required=finished)
        if not problem:
            problem = _identity_problem(run_dir, summary, config_hash)
            if problem:
                return StoredState(summary, problem, foreign=True)
        if not problem and finished:
            problem = _output_problem(run_dir, summary.get("files"))
        return StoredState(summary, problem)

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
        interrupt between two Python lines can never leave a transaction open (and the index locked).
        A ``runs`` table of another schema is a damaged index (``sqlite3.DatabaseError``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        fresh = not (self.root / INDEX).is_file()
        con = sqlite3.connect(self.root / INDEX, timeout=30, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute(f"CREATE TABLE IF NOT EXISTS runs ({', '.join(f'{c} TEXT' for c in INDEX_COLUMNS)}, "
                        "PRIMARY KEY (run_id))")
            _check_schema(con)
            if fresh:  # a deleted index: put back every run directory
                _upsert(con, [_row(e, self.root / e["run_id"]) for e in map(_directory_entry, self.run_dirs())])
        except BaseException:
            con.close()
            raise
        return con

    def _retry(self, fn, attempts: int = 20):
        """``fn(connection)``, retried while the index is locked by another writer; an index that is not
        a database, is malformed or has a foreign schema is set aside (``runs.sqlite.unreadable-*``) and
        rebuilt from the run directories. A full disk is an ``OSError`` (ENOSPC) naming the index."""
        for attempt in range(attempts):
            con = None
            try:
                con = self._connect()
                return fn(con)
            except sqlite3.OperationalError as e:
                if _sqlite_code(e) == sqlite3.SQLITE_FULL:
                    raise OSError(errno.ENOSPC, "No space left on device", str(self.root / INDEX)) from e
                if _sqlite_code(e) not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) and attempt:
                    raise  # e.g. read-only: retrying cannot help
                if attempt == attempts - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
            except sqlite3.DatabaseError:  # not a database / malformed / foreign schema: set it aside, rebuild
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

    def index(self, summary: dict, text: str | None = None) -> str:
        """Put a run's summary (``text``: the text of its summary.json) in the index; returns why the index
        could not be updated ("" when it was): the index is a cache, rebuilt from the directories."""
        text = summary_text(summary) if text is None else text
        entry = {"run_id": summary["run_id"], "name": summary.get("name"), "status": summary["status"],
                 "created": summary.get("created"), "config_hash": summary.get("config_hash"), "text": text}
        try:
            self._retry(lambda con: _upsert(con, [_row(entry, self.root / summary["run_id"])]))
        except (sqlite3.Error, OSError) as e:
            return (f"the run index {self.root / INDEX} could not be updated ({_index_error(e)}); the run "
                    f"directory has every file, and the index is repaired from the run directories when it is next read")
        return ""

    def rebuild_index(self) -> tuple[int, list[tuple[Path, str]]]:
        """Re-create the rows of ``runs.sqlite`` from the run directories (an unreadable index is set aside):
        ``(runs indexed, [(directory, problem)])`` for the directories that are indexed but flagged: an
        unreadable or missing summary, a summary that does not match its digest, another config's run."""
        entries = [_directory_entry(d) for d in self.run_dirs()]
        try:
            self._retry(lambda con: _replace_rows(con, [_row(e, self.root / e["run_id"]) for e in entries]))
        except (sqlite3.Error, OSError) as e:
            raise OutputError([("--out", f"cannot write the index {self.root / INDEX}: {_index_error(e)}")]) from None
        return len(entries), [(self.root / e["run_id"], e["problem"]) for e in entries if e["problem"]]

    def list(self) -> list[dict]:
        """Every run directory of the store, oldest first: ``{run_id, name, status, created, config_hash,
        summary, problem}``, read from the directories. ``problem`` flags a directory whose summary is
        missing, unreadable or does not match its digest, or that holds another config's run (status
        ``unknown`` or ``damaged`` when there is no readable summary). Rows of the index that differ from
        the directories are repaired where the index can be written; reading needs no write access."""
        entries = [_directory_entry(d) for d in self.run_dirs()]
        cached = self._read_index()
        if cached != {e["run_id"]: e["text"] for e in entries} and os.access(self.root, os.W_OK):
            try:
                self._retry(lambda con: _replace_rows(con, [_row(e, self.root / e["run_id"]) for e in entries
                                                            if (cached or {}).get(e["run_id"]) != e["text"]],
                                                      keep=[e["run_id"] for e in entries]))
            except (sqlite3.Error, OSError):  # a full disk, a lock held for 30 s: the listing is still complete
                pass
        entries.sort(key=lambda e: (e["created"] or "", e["started"], e["run_id"]))
        return [{k: e[k] for k in ("run_id", "name", "status", "created", "config_hash", "summary", "problem")}
                for e in entries]

    def index_state(self) -> dict:
        """How the index compares with the run directories, read without repairing anything:
        ``{indexed, directories, stale}``, ``stale`` saying what is out of date ("" when nothing is)."""
        cached = self._read_index()
        rows = cached or {}
        entries = {e["run_id"]: e["text"] for e in map(_directory_entry, self.run_dirs())}
        behind = [run_id for run_id, text in entries.items() if rows.get(run_id) != text]
        orphans = set(rows) - set(entries)
        stale = [f"{INDEX} cannot be read"] if cached is None else []
        stale += [f"{len(behind)} directories not indexed or indexed with another summary"] if behind else []
        stale += [f"{len(orphans)} indexed runs without a directory"] if orphans else []
        return {"indexed": len(rows), "directories": len(entries), "stale": ", ".join(stale)}

    def _read_index(self) -> dict[str, str] | None:
        """``run_id -> summary text`` of the index's rows, opened read-only; {} when there is no index, None
        when it cannot be read (damaged, a foreign schema, a read-only folder without its WAL files)."""
        path = self.root / INDEX
        if not path.is_file():
            return {}
        for mode in ("mode=ro", "immutable=1"):  # immutable: a read-only folder where the -shm cannot be made
            try:
                con = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True, timeout=5)
                try:
                    _check_schema(con)
                    rows = con.execute("SELECT run_id, summary FROM runs").fetchall()
                finally:
                    con.close()
            except (sqlite3.Error, OSError):
                continue
            return {r: t for r, t in rows if isinstance(r, str) and isinstance(t, str)}
        return None


def summary_text(summary: dict) -> str:
    """The text of ``summary.json`` (and of its index row): indented, key-sorted JSON."""
    return json_text(summary)


def _sqlite_code(e: sqlite3.Error) -> int | None:
    code = getattr(e, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF  # the primary code of an extended one


def _index_error(e: BaseException) -> str:
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no space left on device"
    return f"{type(e).__name__}: {e}"


def _check_schema(con: sqlite3.Connection) -> None:
    columns = tuple(r[1] for r in con.execute("PRAGMA table_info(runs)").fetchall())
    if columns != INDEX_COLUMNS:
        raise sqlite3.DatabaseError(f"the runs table has columns {columns}, not {INDEX_COLUMNS}")


def _directory_entry(run_dir: Path) -> dict:
    """A listing entry read from the run directory, its summary verified as ``stored_state`` verifies it
    except for the output files (a listing does not hash arrays); ``text`` is the summary's file text."""
    summary, problem = _load_summary(run_dir)
    if summary is None:
        status = "damaged" if problem else "unknown"
        return _listed(run_dir, {"run_id": run_dir.name, "status": status},
                       problem or f"it has no {SUMMARY} (the run never started, or it was removed)")
    problem = _digest_problem(run_dir, required=summary.get("status") in FINISHED)
    problem = problem or _identity_problem(run_dir, summary, None)
    return _listed(run_dir, summary, problem)


def _listed(run_dir: Path, summary: dict, problem: str) -> dict:
    return {"run_id": run_dir.name, "name": summary.get("name"), "status": str(summary.get("status")),
            "created": summary.get("created") if isinstance(summary.get("created"), str) else None,
            "config_hash": summary.get("config_hash"), "summary": summary, "problem": problem,
            "text": summary_text(summary), "started": _mtime_ns(run_dir / CONFIG)}


def _mtime_ns(path: Path) -> int:
    """When a file was last written (0 when it is missing): orders runs created within the same second."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _row(entry: dict, path: Path) -> tuple:
    return (entry["run_id"], entry.get("name"), entry["status"], entry.get("created"), now_iso(),
            entry.get("config_hash"), str(path), entry["text"])


def _upsert(con: sqlite3.Connection, rows: list[tuple], chunk: int = 1000) -> None:
    """Insert or update index rows, each chunk in one (atomic) statement."""
    for start in range(0, len(rows), chunk):
        part = rows[start:start + chunk]
        values = ",".join(["(?,?,?,?,?,?,?,?)"] * len(part))
        con.execute(f"INSERT INTO runs VALUES {values} ON CONFLICT(run_id) DO UPDATE SET name=excluded.name, "
                    f"status=excluded.status, created=excluded.created, updated=excluded.updated, "
                    f"config_hash=excluded.config_hash, path=excluded.path, summary=excluded.summary",
                    [v for r in part for v in r])


def _replace_rows(con: sqlite3.Connection, rows: list[tuple], keep: list[str] | None = None) -> None:
    """Upsert ``rows`` and delete every other row (but those of ``keep``, when given)."""
    _upsert(con, rows)
    keep = [r[0] for r in rows] if keep is None else keep
    con.execute(f"DELETE FROM runs WHERE run_id NOT IN ({','.join('?' * len(keep))})", keep)


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


def _digest_problem(run_dir: Path, required: bool) -> str:
    """Why ``summary.json`` does not verify against ``summary.sha256`` ("" when it does, or when there is no
    digest and ``required`` is False: an unfinished run of an older twolayer)."""
    try:
        recorded = (run_dir / SUMMARY_DIGEST).read_text().strip()
    except FileNotFoundError:
        return f"it has no {SUMMARY_DIGEST} to verify its {SUMMARY} by (written by an older twolayer, or removed)" \
            if required else ""
    except (OSError, UnicodeDecodeError) as e:
        return f"{SUMMARY_DIGEST} is unreadable ({type(e).__name__})"
    if recorded != sha256_of(run_dir / SUMMARY):
        return f"{SUMMARY} does not match the sha256 in {SUMMARY_DIGEST} (edited or damaged)"
    return ""


def _identity_problem(run_dir: Path, summary: dict | None, config_hash: str | None) -> str:
    """Why ``run_dir`` is not the run of its own ``config.yaml``, of its summary and of the requested
    ``config_hash`` ("" when it is, or when there is no config.yaml yet to compare)."""
    path = run_dir / CONFIG
    if not path.is_file():
        return ""
    try:
        config = load_config_text(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        return f"{CONFIG} is unreadable ({type(e).__name__})"
    if not isinstance(config, dict):
        return f"{CONFIG} is not a run config"
    actual = canonical_sha256(config)
    own_id = f"{config.get('name')}-{actual[:8]}"
    if run_dir.name != own_id:
        return f"it holds the run {own_id} (its {CONFIG} hashes to {actual[:8]}), not {run_dir.name}: copied or renamed"
    if summary is not None and (summary.get("config_hash") != actual or summary.get("run_id", own_id) != own_id):
        return (f"its {SUMMARY} is the run {summary.get('run_id')}'s (config hash {str(summary.get('config_hash'))[:8]}), "
                f"not the run of its {CONFIG}")
    if config_hash is not None and actual != config_hash:
        return f"its {CONFIG} hashes to {actual[:12]}, not to the requested config's {config_hash[:12]}"
    return ""


def _output_problem(run_dir: Path, hashes) -> str:
    """Why the output files of a finished run cannot be served ("" when they are intact)."""
    if not isinstance(hashes, dict):
        return f"its {SUMMARY} records no sha256 of its files"
    for name in OUTPUTS + ((EVENTS,) if EVENTS in hashes else ()):
        path = run_dir / name
        if not path.is_file():
            return f"{name} is missing"
        if hashes.get(name) != sha256_of(path):
            return f"{name} does not match the sha256 recorded in {SUMMARY} (changed or damaged)"
    for name, required in REQUIRED_ARRAYS.items():
        try:
            with np.load(run_dir / name, allow_pickle=False) as f:
                missing = [k for k in required if k not in f.files]
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            return f"{name} cannot be loaded ({type(e).__name__}: {e})"
        if missing:
            return f"{name} has no array {', '.join(missing)}"
    return ""
