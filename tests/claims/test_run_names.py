"""`report`'s store scan (``load`` on a folder without summary.json) keeps the run names of every experiment's
configs between calls (``twolayer.claims.run_names``): a second scan makes no package experiment's configs,
and a change of the source, the environment or the configs function makes them again."""

from __future__ import annotations

import dataclasses
import importlib
import json

import pytest

from twolayer.claims import Experiment, load, registered, reproduce
from twolayer.claims import run_names
from twolayer.claims.registry import source_fingerprint
from twolayer.claims.selftest import tiny, tiny_config

reproduce_module = importlib.import_module("twolayer.claims.reproduce")  # the module (the package exports the function)


@pytest.fixture
def scan(tmp_path, monkeypatch):
    """A store holding the runs of a package experiment (``selftest/cached``: the package's ``tiny_config``) and
    of one whose configs function is this test's (``selftest/own``); the scan sees only these two, and
    ``made`` counts the configs made per experiment id."""
    monkeypatch.setenv("TWOLAYER_CACHE", str(tmp_path / "cache"))
    steps = {"n": 20}
    own = dataclasses.replace(tiny("selftest/own"), configs=lambda scale: tiny_config_steps(scale, steps["n"]))
    exps = (tiny("selftest/cached"), own)
    made: dict[str, int] = {}
    plain = Experiment.run_configs

    def counting(self, scale):
        made[self.id] = made.get(self.id, 0) + 1
        return plain(self, scale)

    monkeypatch.setattr(Experiment, "run_configs", counting)
    monkeypatch.setattr(reproduce_module, "experiments", lambda: list(exps))
    out = tmp_path / "out"
    with registered(*exps):
        reproduce([e.id for e in exps], out=out)
        made.clear()
        yield out, made, steps


def tiny_config_steps(scale, steps):
    cfg = tiny_config(scale)
    cfg["gd"]["train"] = {**cfg["gd"]["train"], "steps": steps}
    return cfg


def _runs(rep):
    return {e.id: [(r.key, r.run_id, r.status) for r in e.runs] for e in rep.experiments}


def test_a_second_scan_makes_no_package_configs_and_finds_the_same_runs(scan, tmp_path):
    out, made, _ = scan
    first = load(out)
    assert made == {"selftest/cached": 2, "selftest/own": 2}  # both scales
    (cache,) = (tmp_path / "cache").glob(f"{run_names.PREFIX}*.json")
    kept = json.loads(cache.read_text())
    assert sorted(k.split("\0")[:2] for k in kept) == [["selftest/cached", "paper"], ["selftest/cached", "quick"]]
    made.clear()
    second = load(out)
    assert made == {"selftest/own": 2}  # this test's own function is never kept
    assert _runs(second) == _runs(first) and all(r[2] == "completed" for r in _runs(first)["selftest/cached"])
    assert [c.to_dict() for c in second.claims] == [c.to_dict() for c in first.claims]


def test_an_unkept_function_is_made_afresh(scan):
    out, made, steps = scan
    assert _runs(load(out))["selftest/own"][0][2] == "completed"
    steps["n"] = 30  # the test's function now maps to a run that is not in the store
    assert "selftest/own" not in _runs(load(out))


@pytest.mark.parametrize("change", ["source", "environment", "function", "damaged file"])
def test_the_cache_is_remade_when_what_the_configs_come_from_changes(scan, tmp_path, monkeypatch, change):
    out, made, _ = scan
    first = _runs(load(out))
    made.clear()
    if change == "source":  # an edited, added or removed source file changes source_fingerprint
        monkeypatch.setattr(run_names, "source_fingerprint", lambda: "edited")
    elif change == "environment":
        monkeypatch.setenv("TWOLAYER_DATA", str(tmp_path / "elsewhere"))
    elif change == "function":  # the same id from another configs function of the package
        exps = (dataclasses.replace(tiny("selftest/cached"), configs=lambda s: tiny_config(s)), )
        exps[0].configs.__module__ = "twolayer.claims.selftest"
        monkeypatch.setattr(reproduce_module, "experiments", lambda: list(exps))
    else:
        (cache,) = (tmp_path / "cache").glob(f"{run_names.PREFIX}*.json")
        cache.write_text("{not json")
    again = _runs(load(out))
    assert made.get("selftest/cached") == 2
    assert again["selftest/cached"] == first["selftest/cached"]


def test_a_wrong_entry_is_never_used_past_its_key(scan, tmp_path):
    """The kept names are what the scan uses: a kept name that points elsewhere finds nothing (so the cache is
    read, and its key is the only thing guarding it)."""
    out, made, _ = scan
    load(out)
    (cache,) = (tmp_path / "cache").glob(f"{run_names.PREFIX}*.json")
    kept = json.loads(cache.read_text())
    cache.write_text(json.dumps({k: [[key, "elsewhere", h, ""] for key, _, h, _ in v] for k, v in kept.items()}))
    assert "selftest/cached" not in _runs(load(out))


def test_source_fingerprint_follows_every_source_file(tmp_path, monkeypatch):
    import os

    root = tmp_path / "pkg"
    (root / "papers").mkdir(parents=True)
    (root / "papers" / "a.py").write_text("x = 1\n")
    seen = [source_fingerprint(root)]
    (root / "papers" / "a.py").write_text("x = 10\n")  # edited (size)
    seen.append(source_fingerprint(root))
    os.utime(root / "papers" / "a.py", ns=(1, 1))  # edited in place (modification time)
    seen.append(source_fingerprint(root))
    (root / "b.py").write_text("")  # added
    seen.append(source_fingerprint(root))
    (root / "b.py").rename(root / "c.py")  # renamed
    seen.append(source_fingerprint(root))
    monkeypatch.setattr("twolayer.claims.registry.fingerprint", lambda: "another study installed")
    seen.append(source_fingerprint(root))
    assert len(set(seen)) == len(seen) and None not in seen
    monkeypatch.undo()
    assert source_fingerprint(root) == seen[-2]


def test_function_keys():
    assert run_names.function_key(tiny_config) == run_names.function_key(tiny_config)
    assert run_names.function_key(lambda s: {}) is None  # not the package's
    assert run_names.function_key(tiny("a/b").configs) is not None


def test_only_experiments_with_a_stored_run_of_their_prefix_are_made(tmp_path, monkeypatch):
    """A package experiment's configs are made only when a stored run's name starts with ``<paper>-``
    (``name_prefix``): a folder with one selftest run makes none of the papers' configs (lyu2021's KKT picks alone
    took ~10 s in a fresh process) and none of another paper's; an experiment whose configs are not the package's
    is made always, since its runs may have any name."""
    monkeypatch.setenv("TWOLAYER_CACHE", str(tmp_path / "cache"))
    present, absent = tiny("selftest/present"), tiny("elsewhere/absent")
    own = dataclasses.replace(tiny("elsewhere/own"), configs=lambda scale: tiny_config(scale))
    assert run_names.name_prefix(present) == "selftest-" and run_names.name_prefix(own) is None
    made: dict[str, int] = {}
    plain = Experiment.run_configs

    def counting(self, scale):
        made[self.id] = made.get(self.id, 0) + 1
        return plain(self, scale)

    out = tmp_path / "out"
    with registered(present, absent, own):
        reproduce([present.id], out=out)
        monkeypatch.setattr(Experiment, "run_configs", counting)
        rep = load(out)
    assert made == {"selftest/present": 2, "elsewhere/own": 2}  # both scales; no paper of the package, not absent
    assert [(e.id, [r.status for r in e.runs]) for e in rep.experiments] == [("selftest/present", ["completed"])]
