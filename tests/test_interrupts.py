"""``twolayer.interrupts``: a KeyboardInterrupt that Python drops (raised inside a gc callback) is raised again."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
import yaml

import twolayer
from conftest import base_config
from twolayer.interrupts import dropped_interrupts_delivered_again

from tests.claims.worker_tasks import send_sigint_inside_a_gc_callback


@pytest.fixture
def sigint_raises():
    """SIGINT raises KeyboardInterrupt in this process while the test runs (a test worker may ignore it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def interrupted_within(seconds: float) -> bool:
    """Whether a KeyboardInterrupt is raised here, from a SIGINT sent inside a gc callback, within ``seconds`` (the
    resent one may come while the collection is still running: caught here too, never by pytest)."""
    try:
        send_sigint_inside_a_gc_callback()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(0.01)
    except KeyboardInterrupt:
        return True
    return False


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the drop outside the block
def test_an_interrupt_dropped_in_a_gc_callback_is_raised_again_only_within_the_block(sigint_raises):
    lost = []
    with dropped_interrupts_delivered_again(on_lost=lambda: lost.append(1)):
        # raised at an ordinary line; a resent SIGINT that lands in a gc callback again (a collection longer than
        # REDELIVER_SECONDS, with JAX's callback at its end) is dropped and resent once more
        assert interrupted_within(5.0) and len(lost) >= 1
    assert not interrupted_within(0.5)  # outside the block, Python drops it, as it always did


def test_other_unraisable_exceptions_reach_the_previous_hook(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(unraisable.exc_type))

    class Broken:
        def __del__(self):
            raise ValueError("in __del__")

    with dropped_interrupts_delivered_again():
        Broken()
    assert seen == [ValueError]


# ``twolayer`` with garbage collected at every allocation: the SIGINT's handler then mostly runs inside JAX's gc
# callback. SIGINT raises KeyboardInterrupt in it, as at a terminal (a test worker may have it ignored).
COLLECTING_CLI = ("import gc, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                  "import twolayer.train; from twolayer.cli import main; gc.set_threshold(1); sys.exit(main())")


def test_ctrl_c_stops_twolayer_run_when_python_drops_its_first_interrupt(tmp_path):
    """Before ``twolayer.interrupts`` the run went on to its end (1e10 steps) after the dropped interrupt."""
    cfg = base_config(train={"method": "gd", "lr": 1e-3, "steps": 10_000_000_000},
                      observe={"schedule": "every", "every": 1_000_000, "metrics": ["loss"]})
    path, out = tmp_path / "long.yaml", tmp_path / "out"
    path.write_text(yaml.safe_dump(cfg))
    proc = subprocess.Popen([sys.executable, "-c", COLLECTING_CLI, "run", str(path), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def status():
        return [twolayer.Run(p.parent).status for p in out.glob("*/summary.json")]

    deadline = time.time() + 240
    while status() != ["running"] and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert status() == ["running"], status()
    proc.send_signal(signal.SIGINT)
    try:
        output, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "interrupted" in output, output[-3000:]
    assert status() == ["interrupted"]
