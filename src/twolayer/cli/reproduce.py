"""``twolayer reproduce``, ``report`` and ``explore``: the papers' experiments, their claims, the report and
the explorer pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from twolayer.cli.app import app
from twolayer.cli.console import DEFAULT_OUT_PATH, OutOption, console, fail_usage, interruptible, path_arg, progress_bar


MAX_DEFAULT_JOBS = 4  # reproduce's default worker processes: the usable cores, at most this many (memory)


def default_jobs() -> int:
    """``reproduce --jobs``'s default: the usable CPU cores, at most ``MAX_DEFAULT_JOBS``."""
    from twolayer.claims.workers import usable_cores

    return min(usable_cores(), MAX_DEFAULT_JOBS)


class RichProgress:
    """Reproduce progress: one bar for the suite (runs done) and one bar per run."""

    def __init__(self, bar):
        self.bar, self.suite, self.task, self.premises = bar, None, None, None

    @staticmethod
    def bar():
        return progress_bar("{task.fields[note]}")

    def start(self, total_runs: int) -> None:
        self.suite = self.bar.add_task("suite", total=total_runs, note="runs")

    def run_started(self, experiment: str, key: str) -> None:
        self.task = self.bar.add_task(f"  {experiment} {key}", total=None, note="")

    def run_progress(self, done: int, total: int, t: float) -> None:
        self.bar.update(self.task, completed=done, total=total, note=f"t = {t:.4g}")

    def run_finished(self, experiment: str, key: str, record) -> None:
        task = next(t for t in self.bar.tasks if t.id == self.task)
        if task.total is None:  # cache hit or failure: no progress was reported
            self.bar.update(self.task, total=1, completed=1)
        note = f"{record.status}, cached" if record.cached else record.status
        self.bar.update(self.task, description=f"  {experiment} {key} ({note})")
        self.bar.advance(self.suite)

    def premise_started(self, experiment: str, claim: str, premise: str, done: int, total: int) -> None:
        if self.premises is None:
            self.premises = self.bar.add_task(f"  {experiment} premises", total=total, note="")
        self.bar.update(self.premises, completed=done, note=f"{claim}: without {premise}")

    def premises_finished(self, experiment: str, total: int) -> None:
        if self.premises is not None:
            self.bar.update(self.premises, completed=total, note="done")
        self.premises = None

    def lane(self) -> RichProgress:
        """A worker process's bars (``reproduce --jobs``): its own run and premise bars, the shared suite bar."""
        other = RichProgress(self.bar)
        other.suite = self.suite
        return other


@app.command("reproduce")
@interruptible("run the same command again to resume: finished runs are reused, interrupted ones resume")
def reproduce_cmd(
    targets: Annotated[list[str] | None, typer.Argument(help="Paper ids, experiment ids (PAPER/NAME) or study files "
                                                             "(./my_study.py); none: every installed experiment.")] = None,
    scale: Annotated[str, typer.Option("--scale", help="quick (every experiment: about 14 min cold, 7 min warm "
                                                       "on 2 cores) or paper (the papers' sizes).")] = "quick",
    out: OutOption = DEFAULT_OUT_PATH,
    force: Annotated[bool, typer.Option("--force", help="Re-run even when identical runs are stored.")] = False,
    require_data: Annotated[bool, typer.Option("--require-data", help="Fail (exit 2) instead of skipping experiments "
                                                                      "whose data files (e.g. MNIST) are missing.")] = False,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Folder with dataset files (e.g. the MNIST IDX "
                                                                     "files); looked at before $TWOLAYER_DATA.", parser=path_arg)] = None,
    plan_only: Annotated[bool, typer.Option("--plan", help="Print every run it would make (config hash, whether "
                                                          "the store holds it, an estimated cost) and run nothing.")] = False,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes, each running whole "
                                             "experiments (default: the usable CPU cores, at most "
                                             f"{MAX_DEFAULT_JOBS}); 1 runs everything in this process.",
                                             show_default=False)] = None,
):
    """Run the registered paper experiments, check every claim and write DIR/report/.

    Exits 0 when every claim came out as declared (findings fail, as declared), 1 when one did not (a failed
    claim, a finding that holds now, an assumption-broken claim that holds), 2 on usage errors.
    """
    import os

    from twolayer.claims import SCALES, reproduce
    from twolayer.claims.reproduce import MissingDataError
    from twolayer.report import write_report
    from twolayer.store import RunStore

    if data_dir is not None:  # the data lookup reads $TWOLAYER_DATA (after a config's own data_dir)
        os.environ["TWOLAYER_DATA"] = str(data_dir)

    if scale not in SCALES:
        fail_usage(f"--scale: {scale!r} is not one of {', '.join(SCALES)}")
    if plan_only:
        _print_plan(targets or [], scale, out)
        return
    RunStore(out).check_writable()
    try:
        with RichProgress.bar() as bar:
            rep = reproduce(targets or [], scale=scale, out=out, force=force, progress=RichProgress(bar),
                            require_data=require_data, jobs=jobs or default_jobs(), figures=True)
    except LookupError as e:
        fail_usage(e.args[0] if e.args else str(e))
    except MissingDataError as e:
        fail_usage(f"--require-data: {e}")
    index = write_report(rep)
    _print_reproduction(rep, index)
    raise typer.Exit(rep.exit_code)


def _print_ledger(rep) -> None:
    """The ledger per paper: how many claims of each kind of evidence (the report links each to its claims)."""
    from twolayer.claims import LEDGER

    ledger = rep.ledger
    if not ledger:
        return
    table = Table("ledger", *ledger, header_style="bold", title="what each green is worth")
    for category in LEDGER:
        counts = [len(ledger[p].get(category, [])) for p in ledger]
        if any(counts):
            table.add_row(category, *[str(n) if n else "" for n in counts])
    console.print(table)


def _print_plan(targets: list[str], scale: str, out: Path) -> None:
    from rich.table import Table
    from rich.text import Text

    from twolayer.claims import plan

    try:
        planned = plan(targets, scale=scale, out=out)
    except LookupError as e:
        fail_usage(e.args[0] if e.args else str(e))
    table = Table("experiment", "run", "config hash", "stored", "estimate s", "note", header_style="bold",
                  title=f"reproduce --scale {scale} --out {out}: the plan (nothing is run)")
    for p in planned:
        estimate = "" if p.stored else ("unknown" if p.estimate is None else f"~{p.estimate:.0f}")
        table.add_row(Text(p.experiment), Text(p.key), (p.config_hash or "")[:12], "yes" if p.stored else "no",
                      estimate, Text(p.note))
    console.print(table)
    todo = [p for p in planned if not p.stored]
    known = [p.estimate for p in todo if p.estimate is not None]
    console.print(f"{len(planned)} runs: {len(planned) - len(todo)} stored, {len(todo)} to compute (about "
                  f"{sum(known):.0f} s for {len(known)} with an earlier version in the store, {len(todo) - len(known)} "
                  f"unknown)", highlight=False)


@app.command("report")
def report_cmd(
    out: Annotated[Path, typer.Argument(help="An output folder written by `twolayer reproduce`.", parser=path_arg)],
    study: Annotated[list[Path] | None, typer.Option("--study", help="A study file whose experiments to look for "
                                                     "(the files `reproduce` ran are remembered).", parser=path_arg)] = None,
):
    """Rebuild DIR/report/ from the stored runs, without running anything."""
    from twolayer.claims import load_study
    from twolayer.report import rebuild

    if not out.is_dir():
        fail_usage(f"{out} is not a folder")
    for path in study or []:
        load_study(path)
    try:
        rep, index = rebuild(out)
    except FileNotFoundError as e:
        fail_usage(str(e))
    _print_reproduction(rep, index)


@app.command("explore")
def explore_cmd(
    target: Annotated[str, typer.Argument(help="An output folder (every experiment and run), a run directory or a run id.")],
    out: OutOption = DEFAULT_OUT_PATH,
    dest: Annotated[Path | None, typer.Option("--dest", help="Folder for the pages (default: <out>/explore).", parser=path_arg)] = None,
):
    """Write the interactive explorer (offline HTML pages) of an output folder or of one run."""
    from twolayer.explore import explore

    try:
        page = explore(target, out=out, dest=dest)
    except FileNotFoundError as e:
        fail_usage(str(e))
    console.print(f"explorer: {page}", highlight=False, soft_wrap=True)


def _print_reproduction(rep, index: Path) -> None:
    from twolayer.claims import FLAG_NEAR_EDGE, FLAG_SAYS_LITTLE, fmt

    entries = json.loads((index.parent / "summary.json").read_text())["experiments"]
    table = Table("experiment", "claims passed", "runs (cached)", "wall s", header_style="bold",
                  title=f"reproduce --scale {rep.scale}")
    for e, entry in zip(rep.experiments, entries):
        color = "green" if e.as_expected == len(e.claims) else "red"
        count = (f"{e.as_expected} / {len(e.claims)} fail, as expected" if e.assumption_broken
                 else f"{e.passed} / {len(e.claims)}")
        table.add_row(e.id, f"[{color}]{count}[/]", f"{len(e.runs)} ({entry['cached_runs']})",
                      f"{entry['wall_seconds']:.1f}")
    console.print(table)
    for e in rep.experiments:
        if e.skipped:
            console.print(f"[yellow]skipped[/yellow] {e.id}: {escape(e.skipped)}", highlight=False)
    for c in rep.claims:
        if c.as_expected:
            continue
        seen = f"predicted {fmt(c.predicted)}, measured {fmt(c.measured)}"
        label = ("HOLDS NOW, NO LONGER A FINDING" if c.kind == "finding" and c.passed else
                 "HOLDS ALTHOUGH AN ASSUMPTION IS BROKEN" if c.expect == "fail" and c.passed else "FAILED")
        console.print(f"[red]{label}[/red] {escape(c.id)}: {escape('; '.join(p for p in (seen, c.details) if p))}",
                      highlight=False)
    for flag in (FLAG_SAYS_LITTLE, FLAG_NEAR_EDGE):
        marked = [c for c in rep.claims if flag in c.flags]
        if marked:
            console.print(f"[yellow]{flag}[/yellow] ({len(marked)}): "
                          + escape(", ".join(f"{c.id} (slack {fmt(c.slack)})" for c in marked)), highlight=False)
    broken = rep.broken_claims
    _print_ledger(rep)
    color = ("green" if rep.claims else "default") if rep.all_as_expected else "red"
    console.print(f"[{color}]{escape(rep.verdict)}[/] "
                  f"in {rep.wall_seconds + rep.report_seconds:.1f} s (runs and claims {rep.wall_seconds:.1f} s, "
                  f"figures and report {rep.report_seconds:.1f} s)", highlight=False)
    if broken:
        held = [c for c in broken if c.passed]
        color = "green" if all(c.as_expected for c in broken) else "red"
        console.print(f"[{color}]{sum(c.as_expected for c in broken)} / {len(broken)} assumption-broken claims fail, "
                      f"as the theory says[/]" + (f"; {len(held)} hold although an assumption is broken (a finding: "
                                                   f"exit code 1)" if held else ""), highlight=False)
    if rep.findings:
        console.print(f"[yellow]{len(rep.findings)} findings[/yellow] (statements of the papers that the simulation "
                      f"contradicts; they do not change the exit code): "
                      + escape(", ".join(c.id for c in rep.findings)), highlight=False)
    console.print(f"report: {index}", highlight=False, soft_wrap=True, markup=False)
