"""Run locks: one process computes a run directory at a time.

The lock is a file ``<run_dir>/.lock`` holding the holder's host, pid and a random token. It is
written complete under a temporary name and then hard-linked to ``.lock``, which fails when the
lock exists, so exactly one of several processes takes it, also on a shared file system (where hard
links are not supported, ``O_CREAT | O_EXCL`` is used instead). While the lock is held a background
thread touches the file every ``HEARTBEAT_SECONDS``.

Stale-lock rule: a lock is stale when its holder ran on this host and that process no longer exists
(killed, even by kill -9), when it names this very process but none of the locks this process holds
(left by an interrupt in a notebook), or when the file has not been touched for ``STALE_SECONDS`` (a
holder on another machine that died or lost the shared folder). A stale lock is set aside (renamed,
then checked to be the one that was judged stale) and taken over.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from twolayer.fileio import FILE_MODE

FILENAME = ".lock"
HEARTBEAT_SECONDS = 5.0
STALE_SECONDS = 60.0
_HELD: set[str] = set()  # tokens of the locks this process holds


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


class RunLock:
    """An exclusive lock file (see the module docstring). ``acquire`` waits; ``release`` removes it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- holder ----------------------------------------------------------------------------------
    def holder(self) -> dict | None:
        """The holder's ``{host, pid, token, since}`` (``{}`` while it is being written); None if unlocked."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        except OSError:
            return {}
        try:
            info = json.loads(text)
        except ValueError:
            return {}
        return info if isinstance(info, dict) else {}

    def stale_reason(self, info: dict | None) -> str:
        """Why the lock described by ``info`` is stale ("" when it is live or absent)."""
        if info is None:
            return ""
        try:
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return ""
        here = info.get("host") == socket.gethostname() and isinstance(info.get("pid"), int)
        if here and info["pid"] == os.getpid() and info.get("token") not in _HELD:
            return "this process left it behind (interrupted before it could remove it)"
        if here and not _pid_alive(info["pid"]):
            return f"its process {info['pid']} on this host no longer exists"
        if age > STALE_SECONDS:
            return f"it was last touched {age:.0f} s ago (more than {STALE_SECONDS:g} s)"
        return ""

    @staticmethod
    def describe(info: dict | None) -> str:
        if not info:
            return "another process"
        return f"process {info.get('pid')} on {info.get('host')} (since {info.get('since', '?')})"

    # -- acquire / release -----------------------------------------------------------------------
    def try_acquire(self) -> bool:
        content = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "token": self.token,
                              "since": time.strftime("%Y-%m-%dT%H:%M:%S")})
        if not self._create(content):
            return False
        _HELD.add(self.token)
        self._stop.clear()
        thread = threading.Thread(target=self._heartbeat, name=f"twolayer-lock-{self.path.parent.name}", daemon=True)
        thread.start()
        self._thread = thread  # only a started thread is joined by release()
        return True

    def acquire(self, *, poll: float = 0.25, on_wait: Callable[[str], None] | None = None) -> None:
        """Take the lock, waiting while a live process holds it and taking over a stale one;
        ``on_wait(message)`` is called once when waiting starts and when a stale lock is broken."""
        told = False
        while not self.try_acquire():
            info = self.holder()
            reason = self.stale_reason(info)
            if reason and self._break(info):
                if on_wait is not None:
                    on_wait(f"took over a stale lock of {self.describe(info)}: {reason}")
                continue
            if not told and on_wait is not None:
                on_wait(f"waiting: {self.describe(info)} is computing this run ({self.path.parent}); its result "
                        f"will be reused")
                told = True
            time.sleep(poll)

    def release(self) -> None:
        """Stop the heartbeat and remove the lock file, if it is this lock's (a no-op otherwise)."""
        _HELD.discard(self.token)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        info = self.holder()
        if info and info.get("token") == self.token:
            self.path.unlink(missing_ok=True)

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()

    # -- internals -------------------------------------------------------------------------------
    def _create(self, content: str) -> bool:
        """Create the lock file with ``content`` unless it exists; True if this call created it."""
        tmp = self.path.with_name(f"{self.path.name}.new-{self.token}")
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(content)
            try:
                os.link(tmp, self.path)
                return True
            except FileExistsError:
                return False
            except OSError:  # no hard links on this file system
                try:
                    fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
                except FileExistsError:
                    return False
                with os.fdopen(fd, "w") as f:
                    f.write(content)
                return True
        finally:
            tmp.unlink(missing_ok=True)

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                os.utime(self.path)
            except OSError:
                pass

    def _break(self, judged: dict | None) -> bool:
        """Set aside the lock judged stale; False if another process replaced it in the meantime."""
        aside = self.path.with_name(f"{self.path.name}.stale-{self.token}")
        try:
            os.replace(self.path, aside)
        except FileNotFoundError:
            return True  # already gone: try again
        try:
            taken = json.loads(aside.read_text())
        except (OSError, ValueError):
            taken = {}
        if (judged or {}).get("token") != (taken or {}).get("token"):  # a fresh lock: put it back
            try:
                os.link(aside, self.path)
            except FileExistsError:
                pass
            aside.unlink(missing_ok=True)
            return False
        aside.unlink(missing_ok=True)
        return True
