"""Studies outside the package (issue 24): a single file run by path, a package found through the entry point
group ``twolayer.studies``, the template of ``twolayer new study``, and ``twolayer check``."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import pytest

from twolayer.cli import main
from twolayer.claims import EXPERIMENTS, GROUP, Premise, claim_records, get, load_study

PLUGIN = '''
from twolayer.claims import Counterfactual, Experiment, at_most, register
from twolayer.claims.selftest import tiny_config

exp = register(Experiment(id="plugstudy/tiny", title="A study from an installed package", figure="none",
                          description="four neurons, a few GD steps", configs=tiny_config))


@exp.claim("final-loss", "The final loss is at most 10", kind="prediction",
           falsifiers=[Counterfactual("tiny-lr", lambda c: {"gd": {**c["gd"], "train": {**c["gd"]["train"], "lr": 1e-12}}},
                                      "no step")])
def final_loss(r):
    return at_most(float(r["gd"].trajectory["loss"][:, -1].max()), 10.0)
'''


def test_the_template_reproduces_checks_and_reports(tmp_path, capsys):
    assert main(["new", "study", "demo", "--dest", str(tmp_path)]) == 0
    study = tmp_path / "demo" / "demo.py"
    assert study.is_file() and "Growing it" in (tmp_path / "demo" / "README.md").read_text()
    out = tmp_path / "out"
    assert main(["reproduce", str(study), "--out", str(out)]) == 0
    claims = claim_records(json.loads((out / "report" / "claims.json").read_text()))
    assert [c["id"] for c in claims] == ["demo/loss-falls:loss-falls-100x"] and claims[0]["passed"]
    assert (out / "report" / "figures").is_dir()
    spec = get("demo/loss-falls").claims[0]
    assert [f.kind for f in spec.falsifiers] == ["counterfactual", "premise"] and isinstance(spec.premises[0], Premise)
    capsys.readouterr()
    assert main(["check", str(study), "--out", str(out)]) == 0
    assert "1 claims conform on 2 falsifiers" in capsys.readouterr().out
    (out / "report" / "index.html").unlink()
    assert main(["report", str(out)]) == 0  # the manifest remembers the study file
    assert (out / "report" / "index.html").is_file()
    assert main(["new", "study", "demo", "--dest", str(tmp_path)]) == 2  # never overwrites


def test_check_fails_a_claim_that_holds_on_its_falsifier(tmp_path, capsys):
    study = tmp_path / "vacuous.py"
    study.write_text(textwrap.dedent('''
        from twolayer.claims import Counterfactual, Experiment, at_most, register
        from twolayer.claims.selftest import tiny_config

        exp = register(Experiment(id="vacuous/tiny", title="t", figure="none", description="d", configs=tiny_config))

        @exp.claim("loss-finite", "The final loss is at most 1e9", kind="prediction",
                   falsifiers=[Counterfactual("more-steps", lambda c: {"gd": {**c["gd"], "train": {**c["gd"]["train"],
                                                                                                   "steps": 30}}}, "")])
        def loss_finite(r):
            return at_most(float(r["gd"].trajectory["loss"].max()), 1e9)
    '''))
    assert main(["check", str(study), "--out", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    assert "NO" in captured.out and "not conforming: 1 of 1" in captured.err


@pytest.mark.parametrize("body, words", [
    ("raise RuntimeError('boom')\n", "raised RuntimeError: boom (line 1)"),
    ("x = 1\n", "registers no experiment"),
])
def test_a_broken_study_file_is_a_clear_error(tmp_path, capsys, body, words):
    study = tmp_path / "broken.py"
    study.write_text(body)
    assert main(["reproduce", str(study), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert main(["reproduce", str(tmp_path / "missing.py"), "--out", str(tmp_path / "out")]) == 2


def test_a_study_file_is_loaded_once(tmp_path):
    study = tmp_path / "once.py"
    study.write_text(PLUGIN.replace("plugstudy/tiny", "oncestudy/tiny"))
    assert load_study(study) == load_study(study) == ["oncestudy/tiny"]
    assert "oncestudy/tiny" in EXPERIMENTS


def test_an_installed_package_with_a_study_is_discovered_listed_and_reproduced(tmp_path):
    """A throwaway package with one study, installed as metadata on sys.path (what pip writes: a dist-info
    folder with entry_points.txt), found by ``twolayer list`` and run by ``twolayer reproduce plugstudy``."""
    site = tmp_path / "site"
    (site / "plugstudy").mkdir(parents=True)
    (site / "plugstudy" / "__init__.py").write_text(PLUGIN)
    info = site / "plugstudy-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugstudy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nplugstudy = plugstudy\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "TWOLAYER_CACHE": str(tmp_path / "cache")}
    cli = [sys.executable, "-m", "twolayer.cli"]
    listed = subprocess.run([*cli, "list", "--out", str(tmp_path / "out")], capture_output=True, text=True, env=env)
    assert listed.returncode == 0 and "plugstudy/tiny" in listed.stdout and "min2024/" in listed.stdout, listed.stderr
    done = subprocess.run([*cli, "reproduce", "plugstudy", "--out", str(tmp_path / "out")], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    claims = claim_records(json.loads((tmp_path / "out" / "report" / "claims.json").read_text()))
    assert [(c["id"], c["passed"]) for c in claims] == [("plugstudy/tiny:final-loss", True)]


def test_report_on_runs_without_a_study_says_how_to_add_claims(tmp_path, capsys):
    from conftest import base_config
    import twolayer

    twolayer.run(base_config(), out=tmp_path)
    assert main(["report", str(tmp_path)]) == 2
    assert "twolayer new study NAME" in capsys.readouterr().err


def test_report_finds_a_study_given_by_file_without_a_manifest(tmp_path):
    study = tmp_path / "bystudy.py"
    study.write_text(PLUGIN.replace("plugstudy/tiny", "bystudy/tiny"))
    out = tmp_path / "out"
    assert main(["reproduce", str(study), "--out", str(out)]) == 0
    (out / "report" / "summary.json").unlink()
    assert main(["report", str(out), "--study", str(study)]) == 0
    claims = claim_records(json.loads((out / "report" / "claims.json").read_text()))
    assert [(c["id"], c["passed"]) for c in claims] == [("bystudy/tiny:final-loss", True)]


def test_check_refuses_a_prediction_with_only_synthetic_falsifiers(tmp_path, capsys):
    study = tmp_path / "synthonly.py"
    study.write_text(textwrap.dedent('''
        from twolayer.claims.selftest import tiny
        from twolayer.claims import register

        register(tiny("synthonly/tiny", bound=10.0))   # its one falsifier is synthetic
    '''))
    assert main(["check", str(study), "--out", str(tmp_path / "out")]) == 1
    from twolayer.claims import conformance

    verdicts = conformance([get("synthonly/tiny")], tmp_path / "out")
    assert [v.conforms for v in verdicts] == [False, True]  # the rule fails; the synthetic falsifier itself refutes
    assert "needs a counterfactual run" in verdicts[0].why


def test_reproduce_records_each_premise_ablation_and_the_ledger(tmp_path):
    """The template's claim fails without its premise (discriminates); the same claim with a 'premise' whose
    removal changes nothing holds without it, and the ledger says so."""
    assert main(["new", "study", "ledgered", "--dest", str(tmp_path)]) == 0
    study = tmp_path / "ledgered" / "ledgered.py"
    text = study.read_text().replace('''    premises=[Premise("step-size",''', '''    premises=[Premise("width", with_width(19), "19 neurons instead of 20", source="a width of 20"),
              Premise("step-size",''')
    text = text.replace('''def with_train(change):''', '''def with_width(width):
    return lambda runs: {key: {**cfg, "model": {**cfg["model"], "width": width}} for key, cfg in runs.items()}


def with_train(change):''')
    study.write_text(text)
    out = tmp_path / "out"
    assert main(["reproduce", str(study), "--out", str(out)]) == 0
    (claim,) = claim_records(json.loads((out / "report" / "claims.json").read_text()))
    outcome = {p["name"]: p["discriminates"] for p in claim["premises"]}
    assert outcome == {"width": False, "step-size": True}
    summary = json.loads((out / "report" / "summary.json").read_text())
    assert summary["ledger"] == {"ledgered": {"holds without a premise": 1, "exploratory tolerance": 1}}
    html = (out / "report" / "index.html").read_text()
    assert 'id="ledger"' in html and 'data-category="holds without a premise"' in html
    assert "holds without width" in html and "fails without step-size" in html


def test_ledger_categories_from_the_records_alone():
    from twolayer.claims import Claim, ledger, ledger_categories

    def claim(kind, slack=0.5, falsifiers=("synthetic",), premises=(), source="paper: 'x'", excluded=0):
        return Claim(f"p/e:{kind}-{slack}", "p/e", "s", kind, None, None, None, slack, True,
                     [{"name": k, "kind": k} for k in falsifiers], tolerance_source=source,
                     premises=[{"name": "a", "discriminates": d} for d in premises],
                     exclusions=[{"what": "seeds", "count": excluded, "which": [], "source": ""}])

    assert ledger_categories(claim("prediction")) == ["no counterfactual run"]
    assert ledger_categories(claim("prediction", falsifiers=("counterfactual",))) == ["no premise ablated"]
    broken = dataclasses.replace(claim("prediction", falsifiers=("counterfactual",)), expect="fail")
    assert ledger_categories(broken) == ["assumption broken"]  # its falsifier restores the broken assumption
    assert ledger_categories(claim("extrapolation", falsifiers=("counterfactual",))) == ["extrapolation"]
    assert ledger_categories(claim("prediction", falsifiers=("premise",), premises=(True,))) == ["discriminates"]
    assert ledger_categories(claim("prediction", falsifiers=("premise",), premises=(True, False))) == [
        "holds without a premise"]
    assert ledger_categories(claim("prediction", falsifiers=("premise",), premises=(None,))) == [
        "discriminates", "premise not run"]
    assert ledger_categories(claim("bound", slack=0.9)) == ["informative bound"]
    assert ledger_categories(claim("bound", slack="inf", source="exploratory")) == [
        "uninformative bound", "exploratory tolerance"]
    assert ledger_categories(claim("consistency", excluded=2)) == ["consistency", "exclusions"]
    assert ledger_categories(claim("finding")) == ["finding"]
    assert ledger_categories(claim(None)) == ["undeclared"]
    assert ledger([claim("finding"), claim("bound", slack=3.0)]) == {
        "p": {"uninformative bound": ["p/e:bound-3.0"], "finding": ["p/e:finding-0.5"]}}
