"""Write a reproduction's report: figures (PNG), ``index.html``, ``claims.json``, ``summary.json``."""

from __future__ import annotations

import shutil
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from twolayer.claims import FLAG_NEAR_EDGE, FLAG_SAYS_LITTLE, Reproduction, Results, claims_document, get, ledger_counts
from twolayer.claims.figures import draw_figures
from twolayer.claims.reproduce import load_runs
from twolayer.fileio import write_bytes_atomic, write_json_atomic, write_text_atomic
from twolayer.report._html import render


@dataclass
class FigureOut:
    """A drawn figure of the report: its file, caption, and the error when drawing failed."""

    name: str
    caption: str
    path: str | None  # relative to the report folder
    error: str = ""


@dataclass(frozen=True)
class FalsifierOut:
    """A falsifier as the report lists it: name, kind and why the claim must fail on it."""

    name: str
    kind: str  # synthetic | counterfactual
    why: str


@dataclass
class Section:
    """What the HTML needs for one experiment besides its ExperimentResult."""

    description: str
    configs: dict[str, dict]  # key -> resolved config (from the run directory)
    figures: list[FigureOut] = field(default_factory=list)
    figure_seconds: float = 0.0
    explore: str = ""  # the experiment's explorer page, relative to the report; "" when not written
    falsifiers: dict[str, list[FalsifierOut]] = field(default_factory=dict)  # claim id -> its falsifiers


def _falsifiers(exp) -> dict[str, list[FalsifierOut]]:
    return {f"{exp.id}:{c.id}": [FalsifierOut(f.name, f.kind, f.why) for f in c.falsifiers] for c in exp.claims}


def write_report(rep: Reproduction) -> Path:
    """Draw every experiment's figures and write the report folder; returns ``index.html``."""
    start = time.perf_counter()
    out = rep.report_dir
    fig_dir = out / "figures"
    if fig_dir.exists():
        shutil.rmtree(fig_dir)
    fig_dir.mkdir(parents=True)
    sections = {e.id: _section(rep, e, fig_dir) for e in rep.experiments}
    for exp_id, href in explorer_links(rep).items():
        sections[exp_id].explore = href
    write_json_atomic(out / "claims.json", claims_document(rep.claims))
    rep.report_seconds = time.perf_counter() - start
    write_json_atomic(out / "summary.json", summary(rep, sections))
    index = out / "index.html"
    write_text_atomic(index, render(rep, sections))
    return index


def explorer_links(rep: Reproduction) -> dict[str, str]:
    """Write each experiment's explorer page (``twolayer.explore``) and return the links; none
    without the explore extra, or when the pages fail (the report must not)."""
    from twolayer.extras import MissingExtra

    try:
        from twolayer.explore import reproduction_pages

        return {exp_id: f"../explore/{page.name}" for exp_id, page in reproduction_pages(rep).items()}
    except MissingExtra:
        return {}
    except Exception as e:  # noqa: BLE001
        warnings.warn(f"explorer pages not written: {type(e).__name__}: {e}", stacklevel=2)
        return {}


def _section(rep: Reproduction, result, fig_dir: Path) -> Section:
    exp = get(result.id)
    if result.skipped:  # not run: its data is missing
        return Section(exp.description, {}, falsifiers=_falsifiers(exp))
    runs, failures = load_runs(rep.out, result.runs, may_fail=exp.may_fail)
    configs = {key: run.config for key, run in runs.items()}
    section = Section(exp.description, configs, falsifiers=_falsifiers(exp))
    if result.figures is not None:  # drawn with the claims (reproduce(figures=True))
        drawn, section.figure_seconds = result.figures, result.figure_seconds
    else:
        drawn, section.figure_seconds = draw_figures(exp, Results(exp, rep.scale, runs), failures)
    for figure in drawn:
        if figure.png is None:
            section.figures.append(FigureOut(figure.name, figure.caption, None, figure.error))
            continue
        stem = f"{exp.paper}_{exp.name}_{figure.name}".replace("/", "_")
        write_bytes_atomic(fig_dir / f"{stem}.png", figure.png)
        section.figures.append(FigureOut(figure.name, figure.caption, f"figures/{stem}.png"))
    return section


def summary(rep: Reproduction, sections: dict[str, Section]) -> dict:
    """``summary.json``: counts and timings, plus the manifest that ``load`` rebuilds from."""
    claims = rep.claims
    doc = rep.manifest()
    for entry, e in zip(doc["experiments"], rep.experiments):
        s = sections[e.id]
        entry.update(claims_passed=e.passed, claims_total=len(e.claims), claims_as_expected=e.as_expected,
                     breaks=e.breaks, claim_seconds=e.claim_seconds,
                     figure_seconds=s.figure_seconds, wall_seconds=e.run_seconds + e.claim_seconds + s.figure_seconds,
                     cached_runs=sum(r.cached for r in e.runs),
                     figure_errors=[f.error for f in s.figures if f.error])
    ordinary, broken = rep.ordinary_claims, rep.broken_claims
    doc.update(claims_total=len(ordinary), claims_passed=sum(c.passed for c in ordinary),
               claims_failed=sum(not c.passed for c in ordinary), all_passed=rep.all_passed,
               assumption_broken_total=len(broken), assumption_broken_failed=sum(c.as_expected for c in broken),
               assumption_broken_held=[c.id for c in broken if c.passed],
               all_as_expected=rep.all_as_expected,
               flags={flag: [c.id for c in claims if flag in c.flags] for flag in (FLAG_SAYS_LITTLE, FLAG_NEAR_EDGE)},
               errors=[c.to_dict() for c in rep.errors], report_seconds=rep.report_seconds,
               ledger=ledger_counts(rep.claims),
               total_seconds=rep.wall_seconds + rep.report_seconds)
    return doc


def rebuild(out) -> tuple:
    """Rebuild the report of ``out`` from its stored runs (nothing is run); returns
    ``(reproduction, index.html path)``."""
    from twolayer.claims import load

    rep = load(out)
    return rep, write_report(rep)
