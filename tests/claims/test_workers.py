"""``reproduce --jobs N``: experiments in worker processes give the claims of one process, the workers' progress
reaches the parent per worker, and a task that fails or kills its process fails alone."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import twolayer
from twolayer.cli import main
from twolayer.claims import Progress, registered, reproduce
from twolayer.claims.registry import portable
from twolayer.claims.selftest import tiny
from twolayer.claims.workers import WorkerDied, map_in_processes

from tests.claims import worker_tasks


def test_tasks_return_in_order_and_a_raising_or_dying_task_fails_alone():
    events = []
    out = map_in_processes(worker_tasks.square, [3, "raise", 4, "die", 5], jobs=2,
                           on_event=lambda worker, name, args: events.append((worker, name, args)))
    assert list(out) == [3, "raise", 4, "die", 5]
    assert (out[3], out[4], out[5]) == (9, 16, 25)
    assert isinstance(out["raise"], ValueError) and str(out["raise"]) == "bad item"
    assert isinstance(out["die"], WorkerDied) and "died" in out["die"].reason
    # every task announced itself from a worker process (not this one); after the death each ran alone
    assert {args[0] for _, name, args in events if name == "seen"} >= {3, "raise", 4, 5, "die"}
    assert all(isinstance(worker, int) for worker, _, _ in events)


def test_ctrl_c_in_the_parent_is_taken_at_its_next_poll_and_stops_the_workers():
    """A SIGINT that reaches the parent while it forwards the workers' events (here: inside on_event) does not cut
    the forwarding short (a KeyboardInterrupt between a message's length and its bytes left the event pipe
    unreadable and the parent hung): it is raised at the next poll, the workers are interrupted, and the process's
    SIGINT handler is restored."""
    handler = signal.getsignal(signal.SIGINT)
    seen = []

    def on_event(worker, name, args):
        if name == "seen" and not seen:
            os.kill(os.getpid(), signal.SIGINT)
        seen.append(args[0])  # reached after the kill: the interrupt waits for the parent's next poll

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        map_in_processes(worker_tasks.slow, [1, 2], jobs=2, on_event=on_event)
    assert seen and set(seen) <= {1, 2}
    assert time.monotonic() - started < 40  # the workers' 60 s tasks were interrupted
    assert signal.getsignal(signal.SIGINT) is handler


def test_an_interrupt_that_python_drops_inside_a_gc_callback_is_delivered_again():
    """The worker's SIGINT handler raises KeyboardInterrupt; raised inside a gc callback, Python drops it ("Exception
    ignored in"), and the task would run on to its end (a suite run hung so, inside JAX's gc callback). The worker
    delivers it again: the task ends at once, and its KeyboardInterrupt reaches the parent."""
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        map_in_processes(worker_tasks.interrupted_inside_a_gc_callback, [1], jobs=1)
    assert time.monotonic() - started < 40  # not the task's 60 s sleep (as the test above, for a slow machine)


STUDY = textwrap.dedent('''
    from twolayer.claims import Counterfactual, Experiment, at_most, register
    from twolayer.claims.selftest import tiny_config

    def _lr(lr):
        return lambda c: {"gd": {**c["gd"], "train": {**c["gd"]["train"], "lr": lr}}}

    for name, lr in (("a", 0.1), ("b", 0.05)):
        exp = register(Experiment(id=f"jobs/{name}", title=name, figure="none", description="tiny GD",
                                  configs=lambda scale, lr=lr: _lr(lr)(tiny_config(scale))))

        @exp.claim("final-loss", "The final loss is at most 2", kind="prediction",
                   falsifiers=[Counterfactual("no-step", _lr(1e-12), "no step")])
        def final_loss(r):
            return at_most(float(r["gd"].trajectory["loss"][:, -1].max()), 2.0)

        @exp.plot("loss", "the loss of seed 0")
        def loss_figure(r):
            from twolayer.plotting import panels
            fig, (ax,) = panels()
            ax.plot(r["gd"].trajectory["t"], r["gd"].trajectory["loss"][0])
            return fig

    dies = register(Experiment(id="jobs/dies", title="dies", figure="none", description="its claim kills the process",
                               configs=tiny_config))

    @dies.claim("exits", "never returns", kind="prediction")
    def exits(r):
        import os
        os._exit(7)
''')


class Lanes(Progress):
    def __init__(self, lanes=None):
        self.lanes, self.finished = (lanes if lanes is not None else []), []

    def lane(self):
        lane = Lanes(self.lanes)
        self.lanes.append(lane)
        return lane

    def run_finished(self, experiment, key, record):
        self.finished.append((experiment, key, record.status))


def test_experiments_in_workers_give_the_claims_of_one_process_and_a_dying_one_fails_alone(tmp_path):
    study = tmp_path / "jobs_study.py"
    study.write_text(STUDY)
    progress = Lanes()
    parallel = reproduce([str(study)], out=tmp_path / "parallel", jobs=2, progress=progress, figures=True)
    claims = {c.id: c for c in parallel.claims}
    for e in parallel.experiments[:2]:  # each drawn in its worker, after its claims
        assert [f.name for f in e.figures] == ["loss"] and e.figures[0].png.startswith(b"\x89PNG\r\n\x1a\n")
        assert e.figure_seconds > 0
    assert parallel.experiments[2].figures is None  # its worker died: the report draws what it has
    assert claims["jobs/a:final-loss"].passed and claims["jobs/b:final-loss"].passed
    died = claims["jobs/dies:exits"]
    assert not died.passed and "worker process died" in died.details
    assert [e.id for e in parallel.experiments] == ["jobs/a", "jobs/b", "jobs/dies"]  # the plan's order
    # the workers' run events reached their own lanes
    finished = sorted(f for lane in progress.lanes for f in lane.finished)
    assert ("jobs/a", "gd", "completed") in finished and ("jobs/b", "gd", "completed") in finished
    assert not progress.finished
    # one process (the dying experiment left out: it would end this one) gives the same claims
    alone = reproduce(["jobs/a", "jobs/b"], out=tmp_path / "alone", jobs=1)
    assert [c.to_dict() for c in alone.claims] == [claims[c.id].to_dict() for c in alone.claims]


def test_the_cli_takes_jobs_and_rejects_zero(tmp_path, capsys):
    assert main(["reproduce", "selftest/none", "--jobs", "0", "--out", str(tmp_path)]) == 2
    assert "--jobs" in capsys.readouterr().err


def test_experiments_known_to_this_process_only_run_here(tmp_path):
    """A test's (or a script's) registered experiments cannot be found by a fresh process: no worker starts."""
    progress = Lanes()
    with registered(tiny("selftest/pass", bound=10.0), tiny("selftest/fail", bound=1e-9)):
        assert not portable("selftest/pass")
        rep = reproduce(["selftest"], out=tmp_path, jobs=2, progress=progress)
    assert [c.passed for c in rep.claims] == [True, False]
    assert progress.lanes == [] and sorted(progress.finished) == [("selftest/fail", "gd", "completed"),
                                                                  ("selftest/pass", "gd", "completed")]
    assert portable("min2024/fig7-9-two-points")  # an installed study's module registered it, whenever imported


LONG_STUDY = textwrap.dedent('''
    from twolayer.claims import Experiment, at_most, register
    from twolayer.claims.selftest import tiny_config

    def long_gd(scale, lr):
        gd = tiny_config(scale)["gd"]
        # 1e10 steps of ~0.5 us: no run completes while the other worker is still starting (1e8 did once, on a
        # loaded machine: one run completed before both were running)
        return {"gd": {**gd, "train": {"method": "gd", "lr": lr, "steps": 10_000_000_000},
                       "observe": {"schedule": "every", "every": 1_000_000, "metrics": ["loss"]}}}

    for name, lr in (("a", 1e-3), ("b", 2e-3)):
        exp = register(Experiment(id=f"long/{name}", title=name, figure="none", description="a long GD run",
                                  configs=lambda scale, lr=lr: long_gd(scale, lr)))

        @exp.claim("final-loss", "The final loss is at most 2", kind="prediction")
        def final_loss(r):
            return at_most(float(r["gd"].trajectory["loss"][:, -1].max()), 2.0)
''')


@pytest.mark.parametrize("collect", ["as-usual", "at-every-allocation"])
def test_ctrl_c_stops_every_worker_and_each_run_records_its_interruption(tmp_path, collect):
    """With garbage collected at every allocation (in the processes that import the study), the SIGINT's handler
    mostly runs inside JAX's gc callback, where Python drops its KeyboardInterrupt: before ``twolayer.interrupts``
    the workers ran on and the parent waited for them (2 of 2 tries; once in a CI run with the usual collection)."""
    study, out = tmp_path / "long_study.py", tmp_path / "out"
    study.write_text(("import gc\ngc.set_threshold(1)\n" if collect == "at-every-allocation" else "") + LONG_STUDY)
    # a session of its own, so that a failure kills the workers too (hung workers of a failed run of this test went
    # on computing beside the rest of the suite)
    proc = subprocess.Popen([sys.executable, "-m", "twolayer.cli", "reproduce", str(study), "--jobs", "2",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)

    def statuses():
        return [twolayer.Run(p.parent).status for p in out.glob("*/summary.json")]

    try:
        deadline = time.time() + 240
        while statuses() != ["running", "running"] and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert statuses() == ["running", "running"], statuses()
        proc.send_signal(signal.SIGINT)  # the parent only (a terminal's Ctrl-C reaches the workers too)
        output, _ = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "interrupted" in output, output[-3000:]
    assert statuses() == ["interrupted", "interrupted"]
