"""The store never serves a tampered or foreign run (issue 23, class 1), and its index heals itself (class 2).

Every test here failed on the commit before this work (7d43189): an edited ``summary.json`` was served as a
cache hit, a run directory copied under another config's id was served as that config's run, and a
damaged ``runs.sqlite`` gave a traceback or a short listing.
"""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
import yaml

import twolayer
from conftest import base_config
from twolayer.cli import main
from twolayer.config import load_config
from twolayer.errors import StoreError
from twolayer.store import RunStore

CFG = base_config(seeds=2, observe={"points": 6, "metrics": ["loss", "w_norm"]})
OTHER = base_config(seeds=2, train={"method": "gd", "lr": 0.1, "steps": 100},
                    observe={"points": 6, "metrics": ["loss", "w_norm"]})


def edit_summary(run_dir, change) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    change(summary)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


def set_first_loss(value):
    def change(summary):
        summary["final"]["loss"][0] = value
    return change


def flip_digit(run_dir) -> None:
    """One digit of summary.json changed (the kind of damage one flipped bit gives), the file still JSON."""
    text = (run_dir / "summary.json").read_text()
    i = text.index('"wall_seconds": ') + len('"wall_seconds": ')
    digit = text[i]
    (run_dir / "summary.json").write_text(text[:i] + ("1" if digit != "1" else "2") + text[i + 1:])


TAMPERS = {
    "a final value edited": lambda d: edit_summary(d, set_first_loss(123.0)),
    "the status edited": lambda d: edit_summary(d, lambda s: s.update(status="diverged")),
    "one digit flipped": flip_digit,
    "the summary digest removed": lambda d: (d / "summary.sha256").unlink(),
    "the summary digest rewritten": lambda d: (d / "summary.sha256").write_text("0" * 64 + "\n"),
}


@pytest.mark.parametrize("how", list(TAMPERS))
def test_a_tampered_summary_is_recomputed_and_says_why(out, how):
    first = twolayer.run(CFG, out=out)
    truth = first.summary["final"]
    TAMPERS[how](first.path)
    assert not RunStore.stored_state(first.path).cache_hit
    notes = []
    again = twolayer.run(CFG, out=out, notify=notes.append)
    assert not again.cached
    assert again.summary["final"] == truth and again.summary["status"] == "completed"
    assert any("cannot be reused" in n and "summary" in n for n in notes), notes
    assert twolayer.run(CFG, out=out).cached  # and the recomputed run verifies


def test_the_summary_digest_is_written_after_the_summary(out):
    import hashlib

    run = twolayer.run(CFG, out=out)
    digest = (run.path / "summary.sha256").read_text().strip()
    assert digest == hashlib.sha256((run.path / "summary.json").read_bytes()).hexdigest()


def copy_under_other_id(out):
    """Config CFG's run directory copied to the directory of config OTHER (same name, other lr)."""
    a = twolayer.run(CFG, out=out)
    b_hash = load_config(OTHER).config_hash()
    b_dir = out / f"t-{b_hash[:8]}"
    shutil.copytree(a.path, b_dir)
    return a, b_dir


def test_a_foreign_run_directory_is_not_served_as_the_requested_run(out):
    _, b_dir = copy_under_other_id(out)
    state = RunStore.stored_state(b_dir)
    assert state.foreign and "copied or renamed" in state.problem
    notes = []
    b = twolayer.run(OTHER, out=out, notify=notes.append)
    assert not b.cached and b.path == b_dir and b.config["train"]["lr"] == 0.1
    assert any("cannot be reused" in n for n in notes)
    assert twolayer.run(OTHER, out=out).cached


def test_a_summary_of_another_run_beside_the_right_config_is_refused(out):
    """The directory's config is right, but its summary (and outputs) are another run's."""
    a = twolayer.run(CFG, out=out)
    b = twolayer.run(OTHER, out=out)
    for name in ("summary.json", "summary.sha256", "trajectory.npz", "final.npz"):
        shutil.copy(a.path / name, b.path / name)
    state = RunStore.stored_state(b.path)
    assert state.foreign and "summary.json is the run" in state.problem
    assert not twolayer.run(OTHER, out=out).cached


def test_a_request_for_another_config_is_refused_even_when_the_directory_verifies(out):
    a = twolayer.run(CFG, out=out)
    assert RunStore.stored_state(a.path, load_config(CFG).config_hash()).cache_hit
    state = RunStore.stored_state(a.path, load_config(OTHER).config_hash())
    assert state.foreign and "requested config" in state.problem


def test_show_refuses_a_foreign_directory_and_open_run_raises(out, capsys):
    _, b_dir = copy_under_other_id(out)
    assert main(["show", b_dir.name, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "copied or renamed" in err and "Traceback" not in err
    with pytest.raises(StoreError, match="copied or renamed"):
        twolayer.open_run(b_dir)


def test_open_run_warns_about_a_tampered_summary(out):
    run = twolayer.run(CFG, out=out)
    TAMPERS["a final value edited"](run.path)
    with pytest.warns(UserWarning, match="does not match the sha256"):
        opened = twolayer.open_run(run.path)
    assert "does not match" in opened.problem


def test_index_rebuild_and_list_flag_a_foreign_directory(out, capsys):
    a, b_dir = copy_under_other_id(out)
    assert main(["index", "--rebuild", "--out", str(out)]) == 0
    assert b_dir.name in capsys.readouterr().err
    rows = {r["run_id"]: r for r in RunStore(out).list()}
    assert set(rows) == {a.path.name, b_dir.name}
    assert not rows[a.path.name]["problem"] and "copied or renamed" in rows[b_dir.name]["problem"]
    assert rows[a.path.name]["summary"]["run_id"] == a.path.name  # A's row is not overwritten by its copy
    assert main(["list", "--out", str(out)]) == 0
    assert f"flagged: {b_dir.name}" in capsys.readouterr().err


# -- class 2: the index heals itself ---------------------------------------------------------------

def three_runs(out) -> dict[str, dict]:
    runs = [twolayer.run(base_config(name=n), out=out) for n in ("a", "b", "c")]
    return {r.path.name: r.summary for r in runs}


def execute(out, sql: str, *args) -> None:
    con = sqlite3.connect(out / "runs.sqlite", isolation_level=None)
    try:
        con.execute(sql, args)
    finally:
        con.close()


def truncate(out):
    execute(out, "PRAGMA wal_checkpoint(TRUNCATE)")
    data = (out / "runs.sqlite").read_bytes()
    (out / "runs.sqlite").write_bytes(data[: len(data) // 3])


def row_not_json(out):
    execute(out, "UPDATE runs SET summary = '{ not json' WHERE name = 'b'")


def row_wrong_shape(out):
    execute(out, "UPDATE runs SET summary = '[1, 2, 3]' WHERE name = 'a'")
    execute(out, "UPDATE runs SET summary = '{\"status\": 7}' WHERE name = 'b'")


def foreign_schema(out):
    for p in out.glob("runs.sqlite*"):
        p.unlink()
    execute(out, "CREATE TABLE runs (id INTEGER PRIMARY KEY, payload BLOB)")
    execute(out, "INSERT INTO runs VALUES (1, x'00ff')")


def flipped_bit(out):
    con = sqlite3.connect(out / "runs.sqlite", isolation_level=None)
    (text,) = con.execute("SELECT summary FROM runs WHERE name = 'c'").fetchone()
    i = text.index('"status": "completed"') + len('"status": "')
    con.execute("UPDATE runs SET summary = ? WHERE name = 'c'", (text[:i] + chr(ord(text[i]) ^ 1) + text[i + 1:],))
    con.close()


def status_edited(out):
    execute(out, "UPDATE runs SET status = 'failed', summary = replace(summary, 'completed', 'failed')")


INDEX_DAMAGES = {"truncated file": truncate, "a row that is not JSON": row_not_json,
                 "rows of the wrong shape": row_wrong_shape, "a foreign runs schema": foreign_schema,
                 "one flipped bit in a summary": flipped_bit, "every row's status edited": status_edited}


@pytest.mark.parametrize("how", list(INDEX_DAMAGES))
def test_a_damaged_index_lists_every_run_with_its_own_summary(out, how, capsys):
    truth = three_runs(out)
    INDEX_DAMAGES[how](out)
    rows = RunStore(out).list()
    assert {r["run_id"]: r["summary"] for r in rows} == truth
    assert all(r["status"] == "completed" and not r["problem"] for r in rows)
    assert RunStore(out).list() == rows  # repaired, and stable


@pytest.mark.parametrize("how", list(INDEX_DAMAGES))
def test_a_damaged_index_does_not_break_list_runs_or_a_new_run(out, how, capsys):
    pytest.importorskip("pandas")
    truth = three_runs(out)
    INDEX_DAMAGES[how](out)
    assert main(["list", "--out", str(out)]) == 0
    listing = capsys.readouterr()
    assert all(run_id in listing.out for run_id in truth) and "Traceback" not in listing.err
    INDEX_DAMAGES[how](out) if how != "truncated file" else None  # damage the repaired index again
    df = twolayer.runs(out)
    assert set(df["run_id"]) == set(truth)
    INDEX_DAMAGES[how](out) if how != "truncated file" else None
    new = twolayer.run(base_config(name="d"), out=out)
    assert new.summary["status"] == "completed"
    assert {r["run_id"] for r in RunStore(out).list()} == set(truth) | {new.path.name}


def test_list_shows_directories_without_a_readable_summary(out, capsys):
    truth = three_runs(out)
    (out / next(iter(truth)) / "summary.json").write_text("{ nope")
    started = out / "never-started-12345678"
    started.mkdir()
    (started / "config.yaml").write_text("name: never-started\n")
    rows = {r["run_id"]: r for r in RunStore(out).list()}
    assert len(rows) == 4
    assert rows[next(iter(truth))]["status"] == "damaged" and "unreadable" in rows[next(iter(truth))]["problem"]
    assert rows[started.name]["status"] == "unknown"
    assert main(["list", "--out", str(out)]) == 0
    assert capsys.readouterr().err.count("flagged:") == 2


def test_index_check_reports_a_damaged_row_and_reading_repairs_it(out, capsys):
    three_runs(out)
    flipped_bit(out)
    assert main(["index", "--out", str(out)]) == 1
    assert "indexed with another summary" in capsys.readouterr().err
    RunStore(out).list()
    assert main(["index", "--out", str(out)]) == 0


# -- class 3: a store that cannot be written can be read ---------------------------------------------

def test_a_read_only_store_is_listed_and_shown(out, tmp_path):
    """A read-only bind mount (in a user and mount namespace: no privileges needed where unshare works)."""
    import subprocess
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode:
        pytest.skip(f"unshare -rm is not allowed here: {probe.stderr.decode().strip()}")
    truth = three_runs(out)
    script = (f"mount --bind {out} {out} && mount -o remount,bind,ro {out} && "
              f"! touch {out}/probe 2>/dev/null && "
              f"{sys.executable} -m twolayer.cli list --out {out} && "
              f"{sys.executable} -m twolayer.cli show {next(iter(truth))} --out {out}")
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert all(run_id in done.stdout for run_id in truth) and "Traceback" not in done.stderr


# -- class 4: a full disk while the index is written -------------------------------------------------

def full_index(monkeypatch, store_cls=RunStore):
    """Every later index write finds the disk full: SQLite's own SQLITE_FULL, from a page limit."""
    connect = store_cls._connect

    def connect_full(self):
        con = connect(self)
        (pages,) = con.execute("PRAGMA page_count").fetchone()
        con.execute(f"PRAGMA max_page_count = {pages}")
        return con

    monkeypatch.setattr(store_cls, "_connect", connect_full)


def test_a_full_disk_during_the_index_write_completes_the_run_and_the_index_recovers(out, monkeypatch, capsys):
    twolayer.run(base_config(name="a"), out=out)
    full_index(monkeypatch)
    big = base_config(name="b", seeds=64, observe={"points": 6, "metrics": ["loss", "w_norm", "accuracy"]})
    assert main(["run", str(write_config(out.parent, big)), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "could not be updated (no space left on device)" in err and "Traceback" not in err
    assert main(["list", "--out", str(out)]) == 0  # still full: listed from the directories
    assert capsys.readouterr().out.count("completed") == 2
    monkeypatch.undo()
    assert len(RunStore(out).list()) == 2
    assert main(["index", "--out", str(out)]) == 0  # the listing repaired the index


def write_config(folder, cfg):
    path = folder / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


# -- class 3 and 6: paths, run ids and unfinished runs ------------------------------------------------

def interrupted_run(out):
    def stop(state, done, total):
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        twolayer.run(CFG, out=out, _on_observation=stop)
    return out / f"t-{load_config(CFG).config_hash()[:8]}"


def test_an_interrupted_run_says_so_when_read(out):
    pytest.importorskip("xarray")
    run_dir = interrupted_run(out)
    run = twolayer.open_run(run_dir)
    for read in (lambda: run.trajectory, run.to_xarray, run.plot, lambda: run.final_params):
        with pytest.raises(StoreError, match="is interrupted and has no .* yet: run its config again"):
            read()


@pytest.mark.parametrize("make", ["garbage config", "garbage summary only", "config is a list"])
def test_open_run_of_a_garbage_directory_is_a_clear_error(tmp_path, make):
    d = tmp_path / "junk-12345678"
    d.mkdir()
    if make == "garbage config":
        (d / "config.yaml").write_text("a: [unclosed\n")
    elif make == "garbage summary only":
        (d / "summary.json").write_text("{ nope")
    else:
        (d / "config.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(StoreError, match="junk-12345678"):
        twolayer.open_run(d)


def test_run_ids_are_matched_literally(out, capsys):
    a = twolayer.run(CFG, out=out)
    for pattern in ("*", "t-*", "?-" + a.path.name[2:], "[t]-"):
        assert main(["show", pattern, "--out", str(out)]) == 2
        assert "no run matches" in capsys.readouterr().err
    assert main(["show", a.path.name[:5], "--out", str(out)]) == 0  # a literal prefix still works


@pytest.mark.parametrize("argv, words", [
    (["show", ""], "the run is empty"),
    (["show", "/no/such/run-12345678"], "does not exist"),
    (["show", "/etc"], "is not a run directory"),
    (["list", "--out", "FILE"], "--out: "),
    (["list", "--out", ""], "is empty"),
    (["show", "x", "--out", ""], "is empty"),
    (["run", "c.yaml", "--out", ""], "is empty"),
    (["explore", "OUT", "--dest", "FILE/pages"], "--dest: cannot write in"),
    (["explore", "OUT", "--dest", ""], "is empty"),
    (["index", "--out", "FILE"], "--out: "),
])
def test_paths_that_are_not_runs_or_folders_exit_2(tmp_path, capsys, argv, words):
    (tmp_path / "FILE").write_text("not a folder")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(base_config()))
    twolayer.run(base_config(), out=tmp_path / "OUT")
    argv = [str(tmp_path / a) if a in ("FILE", "OUT", "c.yaml", "FILE/pages") else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err, err


def test_show_of_an_ambiguous_prefix_lists_every_match(out, capsys):
    a, b = twolayer.run(CFG, out=out), twolayer.run(OTHER, out=out)
    assert main(["show", "t-", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "2 runs match 't-'" in err and a.path.name in err and b.path.name in err


def test_list_shows_whole_run_ids_and_takes_runs_or_experiments(out, capsys):
    long = twolayer.run(base_config(name="a-run-name-that-is-long-enough-to-fill-most-of-a-terminal-line"), out=out)
    assert main(["list", "--runs", "--out", str(out)]) == 0
    listing = capsys.readouterr().out
    assert long.path.name in listing and "experiments" not in listing
    assert main(["list", "--experiments", "--out", str(out)]) == 0
    listing = capsys.readouterr().out
    assert "min2024/" in listing and long.path.name not in listing
    assert main(["list", "--out", str(out)]) == 0
    listing = capsys.readouterr().out
    assert listing.index(long.path.name) < listing.index("min2024/")  # the user's runs first
