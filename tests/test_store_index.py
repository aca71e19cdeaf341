"""The run index (runs.sqlite) is rebuilt from the run directories: on request and when unreadable."""

from __future__ import annotations

import twolayer
from conftest import base_config
from twolayer.cli import main
from twolayer.store import RunStore


def two_runs(out):
    twolayer.run(base_config(), out=out)
    twolayer.run(base_config(name="other"), out=out)


def test_deleted_index_is_rebuilt_automatically(out):
    two_runs(out)
    for p in out.glob("runs.sqlite*"):
        p.unlink()
    assert sorted(r["name"] for r in RunStore(out).list()) == ["other", "t"]


def test_corrupt_index_is_set_aside_and_rebuilt(out, capsys):
    two_runs(out)
    for p in out.glob("runs.sqlite-*"):
        p.unlink()
    (out / "runs.sqlite").write_bytes(b"this is not a database" * 100)
    assert main(["list", "--out", str(out)]) == 0
    listing = capsys.readouterr().out
    assert "t-" in listing and "other-" in listing
    assert list(out.glob("runs.sqlite.unreadable-*"))  # the damaged file is kept for inspection
    twolayer.run(base_config(name="third"), out=out)  # and writing works again
    assert len(RunStore(out).list()) == 3


def test_index_rebuild_command(out, capsys):
    two_runs(out)
    broken = out / "broken-12345678"
    broken.mkdir()
    (broken / "summary.json").write_text("{ nope")
    (broken / "config.yaml").write_text("name: broken\n")
    assert main(["index", "--out", str(out)]) == 1  # out of date: a directory that is not indexed
    assert "--rebuild" in capsys.readouterr().err
    assert main(["index", "--rebuild", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "indexed 3 runs" in captured.out and "flagged: broken-12345678" in captured.err
    rows = {r["run_id"]: r for r in RunStore(out).list()}  # every directory, the broken one flagged
    assert sorted(r["name"] for r in rows.values() if not r["problem"]) == ["other", "t"]
    assert rows["broken-12345678"]["status"] == "damaged" and "unreadable" in rows["broken-12345678"]["problem"]


def test_rebuild_drops_rows_of_deleted_runs(out):
    import shutil

    two_runs(out)
    shutil.rmtree(next(out.glob("other-*")))
    count, skipped = RunStore(out).rebuild_index()
    assert count == 1 and not skipped and [r["name"] for r in RunStore(out).list()] == ["t"]
