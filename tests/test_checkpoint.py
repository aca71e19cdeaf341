"""Checkpoints: an interrupt anywhere leaves a consistent checkpoint (resume is bitwise the same as an
uninterrupted run), and a checkpoint that belongs to another config is refused."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import twolayer
from conftest import base_config

DENSE = dict(seeds=2, train={"method": "gd", "lr": 0.05, "steps": 2},
             observe={"schedule": "every", "every": 1, "metrics": ["loss", "v"]})  # every step observed
ENGINE_FILES = ("api.py", "checkpoint.py", "files.py", "lock.py", "store.py", "loop.py")
# where a point's records, its index and the checkpoint are assembled (before the fix: the records were
# appended in Simulation.run and the checkpoint built by api._checkpoint_arrays): interrupted at every line
CRITICAL = {("loop.py", "run"), ("loop.py", "commit"), ("loop.py", "snapshot"), ("checkpoint.py", "build"),
            ("checkpoint.py", "write"), ("api.py", "on_checkpoint"), ("api.py", "save_checkpoint"),
            ("api.py", "_checkpoint_arrays")}


@pytest.fixture
def ram_path(tmp_path):
    """A folder in memory (/dev/shm) when there is one: the interrupt tests write thousands of small
    files, and fsync on a disk makes them ten times slower."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="twolayer-test-", dir=shm))
    yield path
    shutil.rmtree(path, ignore_errors=True)


class LineInterrupt:
    """A trace function over the engine's own files: counts line events, and raises KeyboardInterrupt
    at the ``at``-th (as a Ctrl-C arriving just before that line would)."""

    def __init__(self, at: int | None = None):
        self.at, self.count, self.labels = at, 0, []
        import twolayer.api
        import twolayer.train.loop
        folder = Path(twolayer.api.__file__).parent
        self.files = {str(p) for p in folder.rglob("*.py") if p.name in ENGINE_FILES}

    def __call__(self, frame, event, arg):
        if frame.f_code.co_filename not in self.files:
            return None
        return self._line

    def _line(self, frame, event, arg):
        if event == "line":
            if self.at is None:
                self.labels.append((Path(frame.f_code.co_filename).name, frame.f_code.co_name))
            elif self.count == self.at:
                raise KeyboardInterrupt(f"injected at line event {self.at}")
            self.count += 1
        return self._line


def traced_run(cfg, out, tracer):
    sys.settrace(tracer)
    try:
        return twolayer.run(cfg, out=out, checkpoint_seconds=0)
    finally:
        sys.settrace(None)


def assert_same_outputs(run, reference):
    assert run.status == "completed"
    for name, arr in reference.trajectory.items():
        np.testing.assert_array_equal(run.trajectory[name], arr, err_msg=name)
        assert run.trajectory[name].shape == arr.shape
    for k, arr in reference.final_params.items():
        np.testing.assert_array_equal(run.final_params[k], arr)


def interrupt_everywhere(tmp_path, cfg, select) -> int:
    """Interrupt a run at every selected line event, resume it, compare with an uninterrupted run."""
    reference = twolayer.run(cfg, out=tmp_path / "ref")
    counter = LineInterrupt()
    traced_run(cfg, tmp_path / "count", counter)
    chosen = select(counter.labels)
    interrupted = 0
    for k in chosen:
        out = tmp_path / f"k{k}"
        try:
            traced_run(cfg, out, LineInterrupt(at=k))
        except KeyboardInterrupt:
            interrupted += 1
        resumed = twolayer.run(cfg, out=out)
        assert_same_outputs(resumed, reference)
        assert resumed.trajectory["loss"].shape[-1] == resumed.trajectory["t"].size
    return interrupted


def test_interrupt_at_any_line_of_the_loop_resumes_bitwise(ram_path):
    """Every line where records, index and checkpoint are assembled (and every 50th line elsewhere in
    the engine) is interrupted once, including between the records of one observation. (The slow test
    below interrupts at every line of the engine.)"""
    def select(labels):
        return [i for i, label in enumerate(labels) if label in CRITICAL or i % 50 == 0]

    assert interrupt_everywhere(ram_path, base_config(**DENSE), select) >= 150


@pytest.mark.slow
def test_interrupt_at_every_engine_line_resumes_bitwise(ram_path):
    assert interrupt_everywhere(ram_path, base_config(**DENSE), lambda labels: range(len(labels))) > 500


def test_interrupt_while_recording_an_observation(tmp_path, monkeypatch):
    """A KeyboardInterrupt between the records of one point (the second observable's) must not leave a
    checkpoint whose records are one point longer than its index."""
    import twolayer.train.loop as loop

    cfg = base_config(**DENSE)
    reference = twolayer.run(cfg, out=tmp_path / "ref")
    calls = {"n": 0}
    real_array = np.array

    class TrappedNumpy:  # np.array is called once per observable when a point is recorded
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def array(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 4:  # point 1, second observable
                raise KeyboardInterrupt
            return real_array(*args, **kwargs)

    monkeypatch.setattr(loop, "np", TrappedNumpy())
    with pytest.raises(KeyboardInterrupt):
        twolayer.run(cfg, out=tmp_path / "b", checkpoint_seconds=0)
    monkeypatch.undo()
    run_dir = next((tmp_path / "b").glob("t-*"))
    assert twolayer.Run(run_dir).status == "interrupted"
    with np.load(run_dir / "checkpoint.npz") as ck:
        index = int(ck["index"])
        assert all(ck[k].shape[0] == index for k in ck.files if k.startswith("record/"))
    assert_same_outputs(twolayer.run(cfg, out=tmp_path / "b"), reference)


def test_every_written_checkpoint_is_restorable(tmp_path):
    from twolayer import checkpoint
    from twolayer.train import Simulation

    cfg = base_config(**DENSE)
    sim = Simulation(twolayer.load_config(cfg))
    config_hash = twolayer.load_config(cfg).config_hash()
    seen = []

    def inspect(state, done, total):
        run_dir = next((tmp_path / "o").glob("t-*"))
        arrays = checkpoint.read(run_dir)
        restored = checkpoint.restore(sim, arrays, config_hash)
        assert restored.index == done and len(restored.records["loss"]) == done
        meta = json.loads(str(arrays["meta"]))
        assert meta["config_hash"] == config_hash and meta["params"]["W"] == {"shape": [2, 8, 2], "dtype": "float64"}
        seen.append(done)

    twolayer.run(cfg, out=tmp_path / "o", checkpoint_seconds=0, _on_observation=inspect)
    assert seen == [1, 2, 3]


def interrupted_run(cfg, out, after=3):
    def stop(state, done, total):
        if done == after:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        twolayer.run(cfg, out=out, checkpoint_seconds=0, _on_observation=stop)
    return next(Path(out).glob(f"{cfg['name']}-*"))


def test_checkpoint_of_another_config_is_refused_and_the_run_restarts(tmp_path):
    """A width-50 run's checkpoint placed into an interrupted width-8 run: refused, restarted from
    scratch, and the result is the width-8 result (not width-50 parameters)."""
    small = base_config(seeds=2, observe={"points": 8, "metrics": ["loss"]})
    wide = base_config(seeds=2, model={"kind": "two_layer", "activation": "relu", "width": 50},
                       observe={"points": 8, "metrics": ["loss"]})
    reference = twolayer.run(small, out=tmp_path / "ref")
    small_dir = interrupted_run(small, tmp_path / "s")
    wide_dir = interrupted_run(wide, tmp_path / "w")
    (wide_dir / "checkpoint.npz").replace(small_dir / "checkpoint.npz")
    resumed = twolayer.run(small, out=tmp_path / "s")
    assert resumed.final_params["W"].shape == (2, 8, 2)
    assert_same_outputs(resumed, reference)
    assert any("refused" in n and "config" in n and "from scratch" in n for n in resumed.notes), resumed.notes


def test_strict_resume_stops_on_a_foreign_checkpoint(tmp_path, capsys):
    import yaml

    from twolayer.cli import main

    small = base_config(observe={"points": 8, "metrics": ["loss"]})
    wide = base_config(model={"kind": "two_layer", "activation": "relu", "width": 50}, observe={"points": 8, "metrics": ["loss"]})
    small_dir = interrupted_run(small, tmp_path / "s")
    wide_dir = interrupted_run(wide, tmp_path / "w")
    (wide_dir / "checkpoint.npz").replace(small_dir / "checkpoint.npz")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(small))
    assert main(["run", str(path), "--out", str(tmp_path / "s"), "--strict-resume"]) == 1
    err = capsys.readouterr().err
    assert "refused" in err and "checkpoint.npz" in err and "Traceback" not in err
    assert (small_dir / "checkpoint.npz").is_file()  # left in place for inspection
    assert twolayer.Run(small_dir).status == "interrupted"


@pytest.mark.parametrize("damage, words", [
    ("shape", "parameter 'W'"),
    ("dtype", "parameter 'W'"),
    ("records", "record 'loss'"),
    ("no-meta", "no metadata"),
    ("garbage", "is damaged"),
    ("random-bytes", "is damaged"),
    ("truncated", "is damaged"),
    ("npy", "is damaged"),
])
def test_inconsistent_checkpoints_are_refused(tmp_path, damage, words):
    cfg = base_config(seeds=2, observe={"points": 8, "metrics": ["loss"]})
    reference = twolayer.run(cfg, out=tmp_path / "ref")
    run_dir = interrupted_run(cfg, tmp_path / "o")
    path = run_dir / "checkpoint.npz"
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    if damage == "shape":
        arrays["param/W"] = np.zeros((2, 9, 2))
    elif damage == "dtype":
        arrays["param/W"] = arrays["param/W"].astype(np.float32)
    elif damage == "records":  # one record more than the index says: the corruption of a half-committed point
        arrays["record/loss"] = np.concatenate([arrays["record/loss"], arrays["record/loss"][-1:]])
    elif damage == "no-meta":
        arrays.pop("meta")
    if damage == "garbage":
        path.write_bytes(b"PK\x03\x04 not really a zip file")
    elif damage == "random-bytes":  # numpy takes them for a pickle ("... load it unsafely")
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "npy":
        np.save(path.with_suffix(".npy"), arrays["param/W"])
        path.with_suffix(".npy").replace(path)
    else:
        np.savez(path, **arrays)
    resumed = twolayer.run(cfg, out=tmp_path / "o")
    assert_same_outputs(resumed, reference)
    assert any("refused" in n and words in n for n in resumed.notes), resumed.notes
    assert not any("pickle" in n for n in resumed.notes), resumed.notes


def test_resumed_run_says_from_which_point(tmp_path):
    cfg = base_config(observe={"points": 8, "metrics": ["loss"]})
    interrupted_run(cfg, tmp_path / "o", after=3)
    notes = []
    run = twolayer.run(cfg, out=tmp_path / "o", notify=notes.append)
    total = np.unique(np.rint(np.concatenate([[0], np.geomspace(1, 100, 7)]))).size
    assert f"resumed from point 3 of {total}" in notes[0]
    assert run.summary["resumed_from"] == 3 and run.notes == notes
