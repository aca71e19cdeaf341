"""`twolayer reproduce` and `twolayer report` end to end on tiny experiments (and the built-in one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twolayer.cli import main
from twolayer.claims import CLAIMS_FORMAT, Claim, claim_records, ledger_counts, registered, reproduce
from twolayer.claims.selftest import tiny, tiny_config


@pytest.fixture
def tiny_pair():
    """Two temporarily registered experiments: `selftest/pass` (claim holds), `selftest/fail` (it does not)."""
    with registered(tiny("selftest/pass", bound=10.0), tiny("selftest/fail", bound=1e-9)) as exps:
        yield exps


def read(out: Path, name: str):
    """A report file; for ``claims.json`` its claim records (format 2: ``{format, ledger, claims}``)."""
    doc = json.loads((out / "report" / name).read_text())
    if name == "claims.json":
        assert doc["format"] == CLAIMS_FORMAT and set(doc) == {"format", "ledger", "claims"}
        return doc["claims"]
    return doc


def run_dirs(out: Path) -> dict[str, float]:
    return {p.name: (p / "summary.json").stat().st_mtime_ns for p in out.iterdir() if (p / "config.yaml").is_file()}


def test_reproduce_exit_0_when_all_claims_pass(tiny_pair, tmp_path, capsys):
    assert main(["reproduce", "selftest/pass", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "selftest/pass" in text and "1 / 1" in text and str(tmp_path / "report" / "index.html") in text
    claims = read(tmp_path, "claims.json")
    assert [c["id"] for c in claims] == ["selftest/pass:final-loss"]
    assert claims[0]["passed"] is True and claims[0]["predicted"] == "<= 10"
    assert set(claims[0]) == {"id", "experiment", "statement", "kind", "predicted", "measured", "tolerance", "slack",
                              "passed", "falsifiers", "details", "expect", "evaluated", "tolerance_source",
                              "exclusions", "explanation", "premises", "probes"}
    assert claims[0]["kind"] == "prediction"
    assert claims[0]["falsifiers"] == [{"name": "loss-too-high", "kind": "synthetic"}]
    assert claims[0]["tolerance_source"] == "exploratory" and claims[0]["exclusions"] == []
    assert 0 < claims[0]["slack"] <= 1  # (10 - final loss) / 10
    summary = read(tmp_path, "summary.json")
    assert summary["claims_total"] == 1 and summary["claims_passed"] == 1 and summary["all_passed"]
    assert summary["experiments"][0]["wall_seconds"] > 0
    html = (tmp_path / "report" / "index.html").read_text()
    assert "figures/selftest_pass_loss.png" in html and (tmp_path / "report/figures/selftest_pass_loss.png").is_file()
    run_id = summary["experiments"][0]["runs"][0]["run_id"]
    assert f'href="../{run_id}/"' in html and (tmp_path / run_id / "summary.json").is_file()
    assert "http://" not in html and "https://" not in html  # offline


def test_figures_drawn_with_the_claims_are_written_by_the_report_as_drawn(tiny_pair, tmp_path, monkeypatch):
    """reproduce(figures=True) draws each figure where the claims are evaluated; the report writes those bytes and
    draws nothing. Without it the report draws them (a reproduction rebuilt by ``load``, or the API's default)."""
    from twolayer.report import _build, write_report

    drawn = reproduce(["selftest/pass"], out=tmp_path / "drawn", figures=True)
    (figure,) = drawn.experiments[0].figures
    assert figure.name == "loss" and figure.png.startswith(b"\x89PNG\r\n\x1a\n") and not figure.error
    undrawn = reproduce(["selftest/pass"], out=tmp_path / "undrawn")
    assert undrawn.experiments[0].figures is None
    write_report(undrawn)
    assert (tmp_path / "undrawn/report/figures/selftest_pass_loss.png").is_file()

    def no_drawing(*args, **kwargs):
        raise AssertionError("the report drew a figure that was drawn already")

    monkeypatch.setattr(_build, "draw_figures", no_drawing)
    write_report(drawn)
    assert (tmp_path / "drawn/report/figures/selftest_pass_loss.png").read_bytes() == figure.png
    summary = read(tmp_path / "drawn", "summary.json")
    assert summary["experiments"][0]["figure_seconds"] == drawn.experiments[0].figure_seconds > 0


def test_reproduce_exit_1_when_a_claim_fails(tiny_pair, tmp_path, capsys):
    assert main(["reproduce", "selftest", "--out", str(tmp_path)]) == 1
    assert "FAILED selftest/fail:final-loss" in capsys.readouterr().out
    claims = {c["id"]: c["passed"] for c in read(tmp_path, "claims.json")}
    assert claims == {"selftest/pass:final-loss": True, "selftest/fail:final-loss": False}
    summary = read(tmp_path, "summary.json")
    assert (summary["claims_passed"], summary["claims_failed"], summary["all_passed"]) == (1, 1, False)


def test_assumption_broken_claims_are_expected_to_fail(tmp_path, capsys):
    """A claim of an assumption-broken experiment that fails is the expected outcome (exit 0); one that
    holds is a finding: `reproduce` names it and exits 1."""
    fails = tiny("selftest/broken-fails", bound=1e-9, breaks="the bound is far below any loss")
    holds = tiny("selftest/broken-holds", bound=10.0, breaks="nothing, really")
    with registered(fails, tiny("selftest/pass", bound=10.0)):
        assert main(["reproduce", "selftest", "--out", str(tmp_path / "a")]) == 0
        out = capsys.readouterr().out
        assert "1 / 1 fail, as expected" in out and "1 / 1 assumption-broken claims fail, as the theory says" in out
        claims = {c["id"]: c for c in read(tmp_path / "a", "claims.json")}
        assert claims["selftest/broken-fails:final-loss"]["expect"] == "fail"
        assert claims["selftest/broken-fails:final-loss"]["passed"] is False
        summary = read(tmp_path / "a", "summary.json")
        assert summary["claims_total"] == 1 and summary["assumption_broken_failed"] == 1 and summary["all_as_expected"]
        html = (tmp_path / "a" / "report" / "index.html").read_text()
        assert 'id="assumption-broken"' in html and "fails, as the theory says" in html
    with registered(holds):
        assert main(["reproduce", "selftest", "--out", str(tmp_path / "b")]) == 1
        out = capsys.readouterr().out
        assert "HOLDS ALTHOUGH AN ASSUMPTION IS BROKEN selftest/broken-holds:final-loss" in out
        summary = read(tmp_path / "b", "summary.json")
        assert summary["assumption_broken_held"] == ["selftest/broken-holds:final-loss"]
        assert summary["all_passed"] and not summary["all_as_expected"]
        assert "holds although an assumption is broken" in (tmp_path / "b" / "report" / "index.html").read_text()


def test_usage_errors_exit_2(tiny_pair, tmp_path, capsys):
    assert main(["reproduce", "nope/nothing", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "nope/nothing" in err and "selftest/pass" in err and "engine/conservation" in err
    assert main(["reproduce", "selftest/pass", "--scale", "huge", "--out", str(tmp_path)]) == 2
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert main(["report", str(tmp_path)]) == 2  # empty folder: nothing to rebuild
    assert not (tmp_path / "report").exists()


def test_report_rebuild_equals_original_and_runs_nothing(tiny_pair, tmp_path):
    assert main(["reproduce", "selftest", "--out", str(tmp_path)]) == 1
    claims = (tmp_path / "report" / "claims.json").read_bytes()
    before = run_dirs(tmp_path)
    (tmp_path / "report" / "index.html").unlink()
    (tmp_path / "report" / "figures" / "selftest_pass_loss.png").unlink()
    assert main(["report", str(tmp_path)]) == 0
    assert (tmp_path / "report" / "claims.json").read_bytes() == claims
    assert (tmp_path / "report" / "index.html").is_file()
    assert (tmp_path / "report" / "figures" / "selftest_pass_loss.png").is_file()
    assert run_dirs(tmp_path) == before
    # without summary.json the report is rebuilt by finding the experiments' runs in the store
    (tmp_path / "report" / "summary.json").unlink()
    assert main(["report", str(tmp_path)]) == 0
    assert (tmp_path / "report" / "claims.json").read_bytes() == claims
    assert run_dirs(tmp_path) == before


def test_second_reproduce_is_all_cache_hits(tiny_pair, tmp_path):
    first = reproduce(["selftest"], out=tmp_path)
    assert not any(r.cached for e in first.experiments for r in e.runs)
    second = reproduce(["selftest"], out=tmp_path)
    assert all(r.cached for e in second.experiments for r in e.runs)
    assert [c.to_dict() for c in second.claims] == [c.to_dict() for c in first.claims]
    forced = reproduce(["selftest/pass"], out=tmp_path, force=True)
    assert not any(r.cached for r in forced.experiments[0].runs)


def test_failures_are_isolated(tmp_path):
    def invalid(scale):
        cfg = tiny_config(scale)
        cfg["gd"]["model"] = {**cfg["gd"]["model"], "activation": "relu2"}
        return cfg

    broken = tiny("selftest/broken", configs=invalid)
    raising = tiny("selftest/raising")
    raising.claim("explodes", "a claim whose function raises")(lambda r: r["missing"])
    with registered(broken, raising, tiny("selftest/fine")):
        rep = reproduce(["selftest"], out=tmp_path)
    claims = {c.id: c for c in rep.claims}
    assert rep.exit_code == 1
    bad = claims["selftest/broken:final-loss"]
    assert not bad.passed and "relu2" in bad.details and "invalid" in bad.details
    assert rep.experiments[0].runs[0].status == "invalid"
    assert claims["selftest/raising:final-loss"].passed
    assert not claims["selftest/raising:explodes"].passed and "KeyError" in claims["selftest/raising:explodes"].details
    assert claims["selftest/fine:final-loss"].passed


def test_list_shows_experiments(tmp_path, capsys):
    assert main(["list", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "engine/conservation" in out and "experiments" in out


def test_engine_conservation_quick_passes(tmp_path):
    """The built-in experiment at quick scale: every conservation claim holds on real runs."""
    rep = reproduce(["engine/conservation"], out=tmp_path)
    failed = [c for c in rep.claims if not c.passed]
    assert not failed, failed
    assert len(rep.claims) == 4 and rep.wall_seconds < 60


def test_import_errors_and_unregistered_experiments_fail_loudly(tmp_path, monkeypatch):
    from twolayer.claims import DISCOVERY_ERRORS, assemble, load
    from twolayer.report import write_report

    monkeypatch.setitem(DISCOVERY_ERRORS, "twolayer.papers.gone", "Traceback ...\nImportError: no module x")
    rep = assemble(tmp_path, "quick", [])
    assert rep.exit_code == 1 and rep.errors[0].experiment == "twolayer.papers.gone"
    assert "ImportError: no module x" in rep.errors[0].details
    monkeypatch.delitem(DISCOVERY_ERRORS, "twolayer.papers.gone")

    with registered(tiny("selftest/gone")):
        write_report(reproduce(["selftest/gone"], out=tmp_path))
    rebuilt = load(tmp_path)  # the experiment is no longer registered
    assert rebuilt.experiments == [] and rebuilt.exit_code == 1
    assert "no module registers it" in rebuilt.errors[0].details


@pytest.mark.parametrize("damage", ["truncated trajectory", "edited summary"])
def test_report_never_uses_a_damaged_run(tiny_pair, tmp_path, capsys, damage):
    """Issue 23: a truncated trajectory (or an edited summary) made the claims pass with a Python warning."""
    assert main(["reproduce", "selftest/pass", "--out", str(tmp_path)]) == 0
    run_id = read(tmp_path, "summary.json")["experiments"][0]["runs"][0]["run_id"]
    run_dir = tmp_path / run_id
    if damage == "truncated trajectory":
        data = (run_dir / "trajectory.npz").read_bytes()
        (run_dir / "trajectory.npz").write_bytes(data[: len(data) // 2])
    else:
        summary = json.loads((run_dir / "summary.json").read_text())
        summary["final"]["loss"] = 1e-3
        (run_dir / "summary.json").write_text(json.dumps(summary))
    capsys.readouterr()
    main(["report", str(tmp_path)])
    (claim,) = read(tmp_path, "claims.json")
    assert claim["passed"] is False and "cannot be used" in json.dumps(claim)
    assert "FAILED selftest/pass:final-loss" in capsys.readouterr().out
    assert main(["reproduce", "selftest/pass", "--out", str(tmp_path)]) == 0  # recomputed, and it passes again


def test_the_summary_records_provenance_and_every_config_hash(tiny_pair, tmp_path):
    from twolayer.claims.selftest import tiny_config
    from twolayer.config import load_config

    assert main(["reproduce", "selftest/pass", "--out", str(tmp_path)]) == 0
    summary = read(tmp_path, "summary.json")
    prov = summary["provenance"]
    assert len(prov["engine_sha256"]) == 64 and prov["twolayer"] and "commit" in prov
    (record,) = summary["experiments"][0]["runs"]
    assert record["config_hash"] == load_config({**tiny_config("quick")["gd"], "name": "selftest-pass-gd"}).config_hash()


def test_plan_lists_the_runs_and_runs_nothing(tiny_pair, tmp_path, capsys):
    assert main(["reproduce", "selftest/pass", "--plan", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 runs: 0 stored, 1 to compute" in out and not list(tmp_path.iterdir())
    assert main(["reproduce", "selftest/pass", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["reproduce", "selftest/pass", "--plan", "--out", str(tmp_path)]) == 0
    assert "1 runs: 1 stored, 0 to compute" in capsys.readouterr().out


def test_a_reproduction_without_claims_gets_a_neutral_badge(tmp_path):
    from twolayer.claims import Experiment
    from twolayer.report import write_report

    bare = Experiment("selftest/bare", "No claims", "none", "a run and no claim", tiny_config)
    with registered(bare):
        index = write_report(reproduce(["selftest/bare"], out=tmp_path))
    html = index.read_text()
    assert '<div class="verdict none" id="verdict">no claims to check</div>' in html
    assert '<span class="none">no claims</span>' in html and "0 / 0" not in html


def finding_experiment(bound: float):
    from twolayer.claims.selftest import finding

    return finding(f"selftest/finding-{'low' if bound < 1 else 'high'}", bound)


def test_a_finding_is_reported_and_does_not_fail_reproduce(tmp_path, capsys):
    from twolayer.claims import conformance

    exp = finding_experiment(1e-3)
    with registered(exp):
        assert main(["reproduce", exp.id, "--out", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "1 findings" in out and "FAILED" not in out
        (claim,) = read(tmp_path, "claims.json")
        assert claim["kind"] == "finding" and claim["expect"] == "fail" and not claim["passed"]
        assert claim["tolerance_source"].startswith("paper:") and "log 2" in claim["explanation"]
        html = (tmp_path / "report" / "index.html").read_text()
        assert 'id="findings"' in html and "finding: the paper's statement fails here" in html
        assert "paper: &#x27;the loss falls below 1e-3&#x27;" in html and "left out 0 seeds" in html
        (verdict,) = conformance([exp], tmp_path)  # its falsifier is a world where the statement holds
        assert verdict.conforms, verdict.why


def test_the_headline_is_the_ledger_and_claims_json_alone_recomputes_it(tiny_pair, tmp_path, capsys):
    """The terminal and the report lead with the ledger and a verdict that counts no passes; ``claims.json``
    carries the ledger's counts, and its records alone give them back (issue 25, section 5)."""
    exp = finding_experiment(1e-3)
    with registered(exp):
        assert main(["reproduce", "selftest", exp.id, "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "claims passed" not in out.split("what each green is worth")[-1]
    assert "1 of 3 claims did not come out as declared: selftest/fail:final-loss" in " ".join(out.split())
    assert out.index("what each green is worth") < out.index("did not come out as declared")
    doc = json.loads((tmp_path / "report" / "claims.json").read_text())
    records = claim_records(doc)
    assert doc["ledger"] == ledger_counts([Claim.from_dict(r) for r in records])
    assert doc["ledger"] == read(tmp_path, "summary.json")["ledger"]
    assert doc["ledger"]["selftest"]["finding"] == 1 and sum(doc["ledger"]["selftest"].values()) >= len(records)
    html = (tmp_path / "report" / "index.html").read_text()
    assert html.index('id="verdict"') < html.index('id="ledger"') < html.index('class="experiment"')
    assert "claims passed</div>" not in html


def test_claims_json_of_format_1_is_still_read():
    record = {"id": "p/e:c", "experiment": "p/e", "statement": "s", "kind": "consistency", "predicted": None,
              "measured": None, "tolerance": None, "slack": None, "passed": True}
    assert claim_records([record]) == [record]
    assert Claim.from_dict({**record, "someday": 1}).kind == "consistency"
    with pytest.raises(ValueError, match="claims.json"):
        claim_records({"ledger": {}})


def test_a_finding_that_holds_again_fails_reproduce(tmp_path, capsys):
    exp = finding_experiment(10.0)
    with registered(exp):
        assert main(["reproduce", exp.id, "--out", str(tmp_path)]) == 1
    assert "HOLDS NOW, NO LONGER A FINDING" in capsys.readouterr().out


@pytest.mark.parametrize("kwargs, words", [
    ({"kind": "prediction", "tolerance_source": "gut feeling"}, "does not start with one of"),
    ({"kind": "finding"}, "a finding needs its explanation"),
])
def test_claim_declarations_are_checked(kwargs, words):
    from twolayer.claims import Experiment

    exp = Experiment("selftest/declared", "t", "none", "d", tiny_config)
    with pytest.raises(ValueError, match=words):
        exp.claim("c", "s", **kwargs)


def test_the_readme_explains_every_ledger_category():
    from twolayer.claims import LEDGER

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Reading the report", 1)[1].split("\n## ", 1)[0]
    missing = [c for c in LEDGER if f"**{c}**" not in section]
    assert not missing, f"README 'Reading the report' lacks a paragraph for {missing}"
