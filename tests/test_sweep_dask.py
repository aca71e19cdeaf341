"""Distributed sweeps on a real 2-worker Dask LocalCluster, and the run store under concurrent writers."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
import threading

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")

from twolayer.store import RunStore  # noqa: E402
from twolayer.sweep import DaskExecutor, SweepProgress, run_sweep  # noqa: E402

BASE = {
    "data": {"kind": "two_points", "angle": 3.141592653589793, "labels": [1, -1]},
    "model": {"kind": "two_layer", "activation": {"name": "leaky_relu", "slope": 0.2}, "width": 4},
    "init": {"kind": "balanced", "scale": 1e-2},
    "loss": {"kind": "logistic", "reduction": "mean"},
    "train": {"method": "gd", "lr": 0.1, "steps": 60},
    "observe": {"schedule": "every", "every": 10, "metrics": ["loss", "accuracy"]},
}

RUN_COLUMNS = ["cached", "wall_seconds", "task_seconds"]  # differ between executors by nature


@pytest.fixture(scope="module")
def client():
    import logging

    import dask

    # a task is declared lost (KilledWorker) after its second dead worker: one retry, fast tests
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


def _spec(name: str, scales, steps: int = 60) -> dict:
    return {"name": name, "base": {**BASE, "train": {"method": "gd", "lr": 0.1, "steps": steps}},
            "grid": {"init.scale": scales}, "zip": {"model.width": [3, 6]}, "seeds": 2}


def _run_with_timeout(fn, seconds: float):
    """Run fn in a thread; fail (instead of hanging the suite) if it takes longer than ``seconds``."""
    box = {}
    thread = threading.Thread(target=lambda: box.update(result=fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"sweep did not finish within {seconds} s"
    return box["result"]


def test_dask_sweep_equals_local_sweep(tmp_path, client):
    spec = _spec("eq", [1e-2, 1e-3])
    local = run_sweep(spec, out=tmp_path / "local")
    dask = _run_with_timeout(lambda: run_sweep(spec, out=tmp_path / "dask", executor="dask", client=client), 90)
    assert local.exit_code == dask.exit_code == 0
    a, b = local.table().drop(columns=RUN_COLUMNS), dask.table().drop(columns=RUN_COLUMNS)
    assert list(a.columns) == list(b.columns) and len(a) == 2 * 2 * 2
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12)
    # both workers wrote into one store: its index holds every point exactly once
    rows = RunStore(tmp_path / "dask").list()
    assert sorted(r["run_id"] for r in rows) == sorted(set(b["run_id"]))
    assert all(r["status"] == "completed" for r in rows)


class KillOnce(SweepProgress):
    """After the first finished point, SIGKILL a worker process that is busy with another point."""

    def __init__(self, client):
        self.client, self.killed = client, None

    def point_done(self, point, result, counts) -> None:
        if self.killed is not None:
            return
        busy = {w for w, keys in self.client.processing().items() if keys}
        pids = self.client.run(os.getpid)
        for worker in busy:
            os.kill(pids[worker], signal.SIGKILL)
            self.killed = (worker, pids[worker])
            return


def test_worker_killed_mid_sweep_every_point_exactly_once(tmp_path, client):
    spec = _spec("kill", [1e-2, 1e-3, 1e-4], steps=4000)  # 6 points, long enough to be caught running
    progress = KillOnce(client)
    res = _run_with_timeout(lambda: run_sweep(spec, out=tmp_path, executor="dask", client=client, progress=progress),
                            120)
    assert progress.killed is not None, "no point was running when the first one finished"
    assert res.exit_code == 0, [(p.index, r["status"], r["message"]) for p, r in res.failures]
    df = res.table()
    assert sorted(df["point"].unique()) == list(range(6))
    assert df.groupby(["point", "seed"]).size().eq(1).all() and len(df) == 12
    assert (df["status"] == "completed").all() and df["final.loss"].notna().all()
    rows = RunStore(tmp_path).list()
    assert len(rows) == 6 and len({r["run_id"] for r in rows}) == 6
    assert all(r["status"] == "completed" for r in rows)
    # the point that was running on the killed worker was redone, not lost or duplicated
    local = run_sweep(spec, out=tmp_path / "ref")
    np.testing.assert_allclose(df["final.loss"], local.table()["final.loss"], rtol=1e-12)


def test_executor_reports_a_point_whose_worker_always_dies(tmp_path, client):
    """A task that kills every worker it runs on ends as a failed point (KilledWorker), and the
    sweep's other points complete."""
    calls = []

    def on_done(index, result):
        calls.append((index, result))

    tasks = [(0, {"crash": True}), (1, {**BASE, "name": "ok", "seed": 0})]
    import sys

    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
    ex = DaskExecutor(client=client, task=_crash_or_run)
    _run_with_timeout(lambda: ex.map(tasks, str(tmp_path), False, on_done), 120)
    results = dict(calls)
    assert results[1]["status"] == "completed"
    assert results[0]["status"] == "failed" and "worker crashed" in results[0]["message"]
    client.wait_for_workers(2, timeout=60)


def _crash_or_run(config, out, force=False):
    if config.get("crash"):
        os.kill(os.getpid(), signal.SIGKILL)
    from twolayer.sweep import run_point

    return run_point(config, out, force)


def test_workers_are_probed_before_submitting(client, monkeypatch):
    from twolayer.sweep import SweepError, check_workers

    versions = check_workers(client)
    assert len(versions) == 2 and set(versions.values()) == {__import__("twolayer").__version__}
    monkeypatch.setattr("twolayer.version.__version__", "0.0.0-other")  # the client now differs from its workers
    with pytest.raises(SweepError, match="install the same twolayer there"):
        check_workers(client)


# -- the store under concurrent writers ---------------------------------------------------------

def _writer(root: str, worker: int, count: int) -> None:
    from twolayer.store import RunStore

    store = RunStore(root)
    for i in range(count):  # index() returns why a write failed ("" when it did not)
        assert store.index({"run_id": f"w{worker}-{i:03d}", "name": f"w{worker}", "status": "running",
                            "created": "now", "config_hash": f"{worker:02d}{i:06d}"}) == ""
        assert store.index({"run_id": f"w{worker}-{i:03d}", "name": f"w{worker}", "status": "completed",
                            "created": "now", "config_hash": f"{worker:02d}{i:06d}", "final": {"loss": float(i)}}) == ""


@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")
def test_concurrent_writers_leave_the_index_intact(tmp_path):
    workers, count = 4, 40
    # fork: the writers only use sqlite, and spawning would re-import JAX in each (seconds each)
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, count)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * workers
    con = sqlite3.connect(tmp_path / "runs.sqlite")  # the index rows themselves (list() reads the directories)
    try:
        rows = [(r, st, json.loads(t)) for r, st, t in con.execute("SELECT run_id, status, summary FROM runs")]
        assert len(rows) == workers * count and len({r for r, _, _ in rows}) == workers * count
        assert all(st == "completed" and s["final"]["loss"] == int(r[-3:]) for r, st, s in rows)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        con.close()
