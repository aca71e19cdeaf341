"""Run locks: two processes on one run directory never both compute; stale locks are taken over."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

import twolayer
from conftest import base_config

CFG = base_config(observe={"points": 6, "metrics": ["loss"]})

# Process A: computes the run, holding it at its first observation until the test says go.
HOLDER = """
import json, os, sys, time
import twolayer
cfg, out, started, go = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
def hold(state, done, total):
    if done == 1:
        open(started, "w").close()
        deadline = time.time() + 120
        while not os.path.exists(go) and time.time() < deadline:
            time.sleep(0.05)
run = twolayer.run(cfg, out=out, _on_observation=hold)
print("RESULT", run.status, run.cached, flush=True)
"""


def wait_for(predicate, timeout=120.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Lines:
    """Collects a process's output lines in a thread (so the test can wait for one)."""

    def __init__(self, stream):
        self.lines: list[str] = []
        self.thread = threading.Thread(target=lambda: self.lines.extend(iter(stream.readline, "")), daemon=True)
        self.thread.start()

    def has(self, text: str) -> bool:
        return any(text in line for line in self.lines)


def start_holder(tmp_path, out):
    started, go = tmp_path / "started", tmp_path / "go"
    a = subprocess.Popen([sys.executable, "-c", HOLDER, json.dumps(CFG), str(out), str(started), str(go)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(started.exists, what="process A to start computing")
    return a, go


@contextlib.contextmanager
def sigint_not_ignored():
    """SIGINT handled (not ignored) in this process while a child starts, so the child starts with SIGINT at its
    default and Python turns it into KeyboardInterrupt, as for a user at a terminal. A test worker may have SIGINT
    ignored (an earlier test's library can set SIG_IGN), and an ignored signal is inherited across exec, where a
    handled one is reset to the default. (Not ``preexec_fn``: it makes subprocess fork this multithreaded process and
    run Python in the child before exec, which can deadlock.)"""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_cli(tmp_path, out):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(CFG))
    with sigint_not_ignored():
        b = subprocess.Popen([sys.executable, "-m", "twolayer.cli", "run", str(path), "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return b, Lines(b.stdout)


def test_second_process_waits_and_reuses_the_first_result(tmp_path):
    out = tmp_path / "o"
    a, go = start_holder(tmp_path, out)
    b, b_out = start_cli(tmp_path, out)
    wait_for(lambda: b_out.has("note: waiting:"), what="process B to wait for the lock")
    go.touch()
    a_out, _ = a.communicate(timeout=120)
    assert b.wait(timeout=120) == 0
    b_out.thread.join(timeout=10)
    assert "RESULT completed False" in a_out  # A computed
    assert b_out.has("completed (cached)"), b_out.lines  # B reused A's result
    run_dir = next(out.glob("t-*"))
    assert not (run_dir / ".lock").exists()


def test_interrupting_the_waiting_process_leaves_the_first_alone(tmp_path):
    out = tmp_path / "o"
    a, go = start_holder(tmp_path, out)
    b, b_out = start_cli(tmp_path, out)
    wait_for(lambda: b_out.has("note: waiting:"), what="process B to wait for the lock")
    b.send_signal(signal.SIGINT)
    assert b.wait(timeout=60) == 130
    b_out.thread.join(timeout=10)
    assert b_out.has("interrupted") and not b_out.has("Traceback"), b_out.lines
    run_dir = next(out.glob("t-*"))
    assert twolayer.Run(run_dir).status == "running"  # A's run, untouched by B
    go.touch()
    a_out, _ = a.communicate(timeout=120)
    assert "RESULT completed False" in a_out
    assert twolayer.Run(run_dir).status == "completed"


def run_dir_of(cfg, out) -> Path:
    c = twolayer.load_config(cfg)
    return Path(out) / f"{c.name}-{c.config_hash()[:8]}"


def plant_lock(run_dir: Path, **info) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / ".lock"
    path.write_text(json.dumps({"token": "planted", "since": "then", **info}))
    return path


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_lock_of_a_dead_process_is_taken_over(out):
    plant_lock(run_dir_of(CFG, out), host=socket.gethostname(), pid=dead_pid())
    notes = []
    run = twolayer.run(CFG, out=out, notify=notes.append)
    assert run.status == "completed" and not run.cached
    assert any("stale" in n and "no longer exists" in n for n in notes), notes
    assert not (run.path / ".lock").exists()


def test_lock_left_by_this_process_is_taken_over(out):
    plant_lock(run_dir_of(CFG, out), host=socket.gethostname(), pid=os.getpid())
    notes = []
    assert twolayer.run(CFG, out=out, notify=notes.append).status == "completed"
    assert any("stale" in n and "this process" in n for n in notes), notes


def test_untouched_lock_of_another_host_goes_stale(out, monkeypatch):
    from twolayer import lock as lock_module

    monkeypatch.setattr(lock_module, "STALE_SECONDS", 1.0)
    path = plant_lock(run_dir_of(CFG, out), host="elsewhere.example", pid=1)
    notes = []
    t0 = time.monotonic()
    assert twolayer.run(CFG, out=out, notify=notes.append).status == "completed"
    assert time.monotonic() - t0 >= 0.5  # waited for it first: it was live until it went stale
    assert any("waiting" in n for n in notes) and any("last touched" in n for n in notes), notes
    assert not path.exists()


def test_live_lock_is_kept_and_waited_for(out, monkeypatch):
    """A heartbeat keeps a lock live past STALE_SECONDS; the waiter takes the run only after release."""
    from twolayer import lock as lock_module

    # the holder is held 2.5x STALE_SECONDS; the heartbeat beats 20 times per STALE_SECONDS, so a thread starved
    # for a few beats on a loaded machine does not make the live lock look stale
    monkeypatch.setattr(lock_module, "STALE_SECONDS", 1.0)
    monkeypatch.setattr(lock_module, "HEARTBEAT_SECONDS", 0.05)
    run_dir = run_dir_of(CFG, out)
    run_dir.mkdir(parents=True)
    holder = lock_module.RunLock(run_dir / ".lock")
    assert holder.try_acquire()
    releaser = threading.Timer(2.5, holder.release)
    releaser.start()
    t0 = time.monotonic()
    notes = []
    run = twolayer.run(CFG, out=out, notify=notes.append)
    assert time.monotonic() - t0 >= 2.4 and run.status == "completed"
    assert not any("stale" in n for n in notes), notes
    releaser.join()
