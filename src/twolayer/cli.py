"""The ``twolayer`` command line.

User errors (bad configs, unknown runs, an unwritable ``--out``) print a message that names the field
and exit with code 2, without a traceback. ``run`` exits 0 when the run completed, 1 when it diverged
or failed (a full disk included), 130 when interrupted. Every user string (paths, messages) is printed
literally, never parsed as rich markup.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from twolayer.errors import UserError
from twolayer.extras import MissingExtra
from twolayer.store import DEFAULT_OUT, RunStore

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Simulate, measure and explain how two-layer neural networks learn.")
console = Console()
err_console = Console(stderr=True, soft_wrap=True, markup=False, highlight=False)  # messages are literal text

OutOption = Annotated[Path, typer.Option("--out", "-o", help="Output folder holding run directories.")]


class UsageError(Exception):
    """A user error: printed without traceback, exit code 2."""


def fail_usage(message: str) -> None:
    raise UsageError(message)


def styled(label: str, style: str, message: str = "") -> Text:
    """``label`` in ``style``, then ``message`` as literal text (paths and messages may hold brackets,
    e.g. ``pip install 'twolayer[sweep]'``, which rich would read as markup)."""
    return Text.assemble((label, style), " " if message else "", message)


def tell(message: str) -> None:
    """A note from a run (resumed, waiting for another process, a damaged stored run recomputed)."""
    err_console.print(styled("note:", "yellow", message))


def interruptible(what: str):
    """Decorator for long commands: Ctrl-C prints how to resume (typer would exit 130 silently)."""
    import functools

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except KeyboardInterrupt:
                err_console.print(styled("interrupted:", "yellow", what))
                raise typer.Exit(130) from None

        return wrapper

    return decorate


def progress_bar():
    return Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                    TextColumn("t = {task.fields[t]:.4g}"), TimeElapsedColumn(), console=err_console,
                    transient=False, disable=not err_console.is_terminal and not _force_progress())


def _force_progress() -> bool:
    import os

    return os.environ.get("TWOLAYER_PROGRESS", "") == "1"


def execute_run(config, out: Path, force: bool, overrides=None, label: str | None = None,
                notes: list[str] | None = None, **options):
    """Run one config with a progress bar, printing the run's notes on stderr (and appending them to
    ``notes``); returns the Run."""
    import twolayer

    with progress_bar() as bar:
        task = bar.add_task(label or "run", total=None, t=0.0)

        def progress(done, total, t):
            bar.update(task, completed=done, total=total, t=t)

        def notify(message: str) -> None:
            if notes is not None:
                notes.append(message)
            bar.console.print(styled("note:", "yellow", message))

        return twolayer.run(config, out=out, force=force, overrides=overrides, progress=progress, notify=notify,
                            **options)


@app.command("run")
def run_cmd(
    config: Annotated[Path, typer.Argument(help="YAML config file.")],
    set_: Annotated[list[str] | None, typer.Option("--set", "-s", help="Override a dotted key: train.lr=0.01")] = None,
    out: OutOption = Path(DEFAULT_OUT),
    force: Annotated[bool, typer.Option("--force", help="Re-run even when an identical run is stored.")] = False,
    mlflow: Annotated[str | None, typer.Option("--mlflow", help="Log params, scalar observables and final metrics "
                                                                "to this MLflow tracking URI (needs twolayer[mlflow]).")] = None,
    strict_resume: Annotated[bool, typer.Option("--strict-resume", help="Stop (exit 1) instead of starting from "
                                                "scratch when the run's checkpoint does not belong to this config.")] = False,
):
    """Run one simulation from a config file (cached by config hash; resumes if interrupted)."""
    from twolayer.api import RunError
    from twolayer.tracking import TrackingError

    overrides = [*(set_ or []), *([f"mlflow.uri={json.dumps(mlflow)}"] if mlflow else [])]
    notes: list[str] = []
    try:
        run = execute_run(config, out, force, overrides=overrides, label=config.stem, notes=notes,
                          refused_checkpoint="stop" if strict_resume else "restart")
    except RunError as e:
        err_console.print(styled("failed:", "red", f"{e}\n  see {e.path / 'summary.json'}"))
        raise typer.Exit(1) from None
    except TrackingError as e:
        err_console.print(styled("error:", "red", str(e)))
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        if not any("interrupted at point" in n for n in notes):  # else the run's note said where and how
            err_console.print(styled("interrupted:", "yellow", "nothing was computed yet; run the same command "
                                                               "again to start"))
        raise typer.Exit(130) from None
    summary = run.summary
    note = " (cached)" if run.cached else ""
    console.print(f"{summary['status']}{note}: {run.path}", markup=False, highlight=False)
    _print_final(summary)
    if (run.path / "mlflow.json").is_file() and mlflow:
        record = json.loads((run.path / "mlflow.json").read_text())
        console.print(f"mlflow: run {record['run_id']} in experiment {record['experiment']!r} at {record['uri']}",
                      highlight=False)
    if summary["status"] != "completed":
        err_console.print(styled(f"{summary['status']}:", "red", summary.get("message", "")))
        raise typer.Exit(1)


def _print_final(summary: dict) -> None:
    final = summary.get("final") or {}
    if final:
        table = Table(show_header=True, header_style="bold")
        table.add_column("metric")
        table.add_column("final value")
        for k, v in final.items():
            table.add_row(k, ", ".join(f"{x:.6g}" for x in v) if isinstance(v, list) else f"{v:.6g}")
        console.print(table)


@app.command("list")
def list_cmd(out: OutOption = Path(DEFAULT_OUT)):
    """List the registered experiments and the stored runs in the output folder."""
    from twolayer.experiments import DISCOVERY_ERRORS, experiments

    table = Table("experiment", "title", "reproduces", "claims", header_style="bold", title="experiments")
    for e in experiments():
        table.add_row(e.id, Text(e.title), Text(e.figure), str(len(e.claims)))  # titles may hold brackets
    console.print(table)
    for module, tb in DISCOVERY_ERRORS.items():
        err_console.print(styled(f"experiment module {module} failed to import:", "red", tb.strip().splitlines()[-1]))
    rows = RunStore(out).list()
    if not rows:
        console.print(f"no runs in {out}", markup=False, highlight=False)
        return
    table = Table("run id", "status", "created", "wall s", "final loss", header_style="bold")
    for r in rows:
        s = r["summary"]
        loss = (s.get("final") or {}).get("loss")
        loss = "" if loss is None else (f"{loss:.4g}" if not isinstance(loss, list) else f"{min(loss):.4g}..")
        wall = s.get("wall_seconds")
        table.add_row(r["run_id"], r["status"], r["created"] or "", "" if wall is None else f"{wall:.1f}", loss)
    console.print(table)


@app.command("show")
def show_cmd(run: Annotated[str, typer.Argument(help="A run directory or run id.")], out: OutOption = Path(DEFAULT_OUT)):
    """Show a stored run: its summary, resolved config and recorded observables."""
    try:
        path = RunStore(out).find(run)
    except FileNotFoundError as e:
        fail_usage(str(e))
    from twolayer.api import Run

    r = Run(path)
    console.print(Text(str(path), style="bold"))
    stored = RunStore.stored_state(path)
    if stored.problem:
        err_console.print(styled("damaged:", "red", f"{stored.problem}; `twolayer run` of its config recomputes it"))
    elif r.summary.get("status") == "running" and not (path / ".lock").exists():
        err_console.print(styled("stopped:", "yellow", "it says running but no process holds its lock (killed?); "
                                                       "`twolayer run` of its config resumes it"))
    console.print_json(json.dumps({k: v for k, v in r.summary.items() if k != "final"}))
    _print_final(r.summary)
    if (path / "config.yaml").is_file():
        console.print((path / "config.yaml").read_text(errors="replace"), markup=False, highlight=False)
    if (path / "trajectory.npz").is_file():
        try:
            shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in r.trajectory.items())
        except (OSError, ValueError, EOFError) as e:  # an empty or truncated file
            shapes = f"cannot be read ({type(e).__name__}: {e or 'empty or truncated file'})"
        console.print(f"trajectory.npz: {shapes}", markup=False, highlight=False)


@app.command("index")
def index_cmd(
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Re-create OUT/runs.sqlite from the run directories.")] = False,
    out: OutOption = Path(DEFAULT_OUT),
):
    """Check the run index OUT/runs.sqlite against the run directories, or rebuild it (it is rebuilt
    automatically when it is missing or cannot be read)."""
    if not out.is_dir():
        fail_usage(f"--out: {out} is not a folder")
    store = RunStore(out)
    if rebuild:
        count, skipped = store.rebuild_index()
        console.print(f"indexed {count} runs in {out / 'runs.sqlite'}", markup=False, highlight=False)
        for d in skipped:
            err_console.print(styled("skipped:", "yellow", f"{d} (its summary.json is missing or unreadable)"))
        return
    indexed, dirs = {r["run_id"] for r in store.list()}, {d.name for d in store.run_dirs()}
    console.print(f"{out / 'runs.sqlite'}: {len(indexed)} runs indexed, {len(dirs)} run directories",
                  markup=False, highlight=False)
    if indexed != dirs:
        err_console.print(styled("out of date:", "yellow", f"{len(dirs - indexed)} directories not indexed, "
                                 f"{len(indexed - dirs)} indexed runs without a directory; run `twolayer index "
                                 f"--rebuild --out {out}`"))
        raise typer.Exit(1)


DEMO_CONFIG = {
    "name": "demo-two-points",
    "seeds": 4,
    "data": {"kind": "two_points"},
    "model": {"kind": "two_layer", "activation": "relu", "width": 50},
    "init": {"kind": "gaussian", "scale": 1.0e-6},
    "loss": {"kind": "exponential", "reduction": "mean"},
    "train": {"method": "gd", "lr": 2.0e-3, "steps": 21000},
    "observe": {"schedule": "log", "points": 100, "metrics": ["loss", "accuracy", "w_norm", "imbalance"]},
}


@app.command("demo")
def demo_cmd(out: OutOption = Path(DEFAULT_OUT), force: bool = False):
    """A built-in demo run (Min et al. Fig. 7 setting, 4 seeds) that writes a run directory."""
    run = execute_run(DEMO_CONFIG, out, force, label="demo")
    s = run.summary
    console.print(f"{s['status']}{' (cached)' if run.cached else ''}: run directory {run.path}", markup=False)
    _print_final(s)
    console.print(f"inspect it with: twolayer show {run.path}", markup=False, highlight=False)


class RichProgress:
    """Reproduce progress: one bar for the suite (runs done) and one bar per run."""

    def __init__(self, bar: Progress):
        self.bar, self.suite, self.task = bar, None, None

    @staticmethod
    def bar() -> Progress:
        return Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[note]}", markup=False), TimeElapsedColumn(), console=err_console,
                        transient=False, disable=not err_console.is_terminal and not _force_progress())

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


@app.command("reproduce")
@interruptible("run the same command again to resume: finished runs are reused, interrupted ones resume")
def reproduce_cmd(
    targets: Annotated[list[str] | None, typer.Argument(help="Paper ids or experiment ids (PAPER/NAME); none: all.")] = None,
    scale: Annotated[str, typer.Option("--scale", help="quick (minutes on 2 cores) or paper (the papers' sizes).")] = "quick",
    out: OutOption = Path(DEFAULT_OUT),
    force: Annotated[bool, typer.Option("--force", help="Re-run even when identical runs are stored.")] = False,
    require_data: Annotated[bool, typer.Option("--require-data", help="Fail (exit 2) instead of skipping experiments "
                                                                      "whose data files (e.g. MNIST) are missing.")] = False,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Folder with dataset files (e.g. the MNIST IDX "
                                                                     "files); looked at before $TWOLAYER_DATA.")] = None,
):
    """Run the registered paper experiments, check every claim and write DIR/report/.

    Exits 0 when every claim passed, 1 when any failed, 2 on usage errors.
    """
    import os

    from twolayer.experiments import SCALES, reproduce
    from twolayer.experiments._reproduce import MissingDataError
    from twolayer.report import write_report

    if data_dir is not None:  # the data lookup reads $TWOLAYER_DATA (after a config's own data_dir)
        os.environ["TWOLAYER_DATA"] = str(data_dir)

    if scale not in SCALES:
        fail_usage(f"--scale: {scale!r} is not one of {', '.join(SCALES)}")
    RunStore(out).check_writable()
    try:
        with RichProgress.bar() as bar:
            rep = reproduce(targets or [], scale=scale, out=out, force=force, progress=RichProgress(bar),
                            require_data=require_data)
    except LookupError as e:
        fail_usage(e.args[0] if e.args else str(e))
    except MissingDataError as e:
        fail_usage(f"--require-data: {e}")
    index = write_report(rep)
    _print_reproduction(rep, index)
    raise typer.Exit(rep.exit_code)


@app.command("report")
def report_cmd(out: Annotated[Path, typer.Argument(help="An output folder written by `twolayer reproduce`.")]):
    """Rebuild DIR/report/ from the stored runs, without running anything."""
    from twolayer.report import rebuild

    if not out.is_dir():
        fail_usage(f"{out} is not a folder")
    try:
        rep, index = rebuild(out)
    except FileNotFoundError as e:
        fail_usage(str(e))
    _print_reproduction(rep, index)


@app.command("explore")
def explore_cmd(
    target: Annotated[str, typer.Argument(help="An output folder (every experiment and run), a run directory or a run id.")],
    out: OutOption = Path(DEFAULT_OUT),
    dest: Annotated[Path | None, typer.Option("--dest", help="Folder for the pages (default: <out>/explore).")] = None,
):
    """Write the interactive explorer (offline HTML pages) of an output folder or of one run."""
    from twolayer.explore import explore

    try:
        page = explore(target, out=out, dest=dest)
    except FileNotFoundError as e:
        fail_usage(str(e))
    console.print(f"explorer: {page}", highlight=False, soft_wrap=True)


data_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                       help="Dataset files some experiments need (nothing is downloaded during runs).")
app.add_typer(data_app, name="data")


@data_app.command("download")
def data_download_cmd(
    name: Annotated[str, typer.Argument(help="Dataset to download: mnist.")],
    dest: Annotated[Path | None, typer.Option("--dest", help="Target folder (default: ~/.cache/twolayer/NAME).")] = None,
):
    """Download a dataset's files, checking their sha256 (for machines that are online)."""
    from twolayer.data.download import DOWNLOADERS
    from twolayer.registry import UnknownNameError

    try:
        fetch = DOWNLOADERS.get(name)
    except UnknownNameError as e:
        fail_usage(f"data download: {e}")
    try:
        folder = fetch(dest)
    except OSError as e:
        err_console.print(styled("download failed:", "red", str(e)))
        raise typer.Exit(1) from None
    console.print(f"{name}: files in {folder}", highlight=False)


def _print_reproduction(rep, index: Path) -> None:
    from twolayer.experiments import FLAG_NEAR_EDGE, FLAG_SAYS_LITTLE, fmt

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
        label = "HOLDS ALTHOUGH AN ASSUMPTION IS BROKEN" if c.expect == "fail" and c.passed else "FAILED"
        console.print(f"[red]{label}[/red] {escape(c.id)}: {escape('; '.join(p for p in (seen, c.details) if p))}",
                      highlight=False)
    for flag in (FLAG_SAYS_LITTLE, FLAG_NEAR_EDGE):
        marked = [c for c in rep.claims if flag in c.flags]
        if marked:
            console.print(f"[yellow]{flag}[/yellow] ({len(marked)}): "
                          + escape(", ".join(f"{c.id} (slack {fmt(c.slack)})" for c in marked)), highlight=False)
    ordinary, broken = rep.ordinary_claims, rep.broken_claims
    color = "green" if rep.all_passed else "red"
    console.print(f"[{color}]{sum(c.passed for c in ordinary)} / {len(ordinary)} claims passed[/] "
                  f"in {rep.wall_seconds + rep.report_seconds:.1f} s (runs and claims {rep.wall_seconds:.1f} s, "
                  f"figures and report {rep.report_seconds:.1f} s)", highlight=False)
    if broken:
        held = [c for c in broken if c.passed]
        color = "green" if all(c.as_expected for c in broken) else "red"
        console.print(f"[{color}]{sum(c.as_expected for c in broken)} / {len(broken)} assumption-broken claims fail, "
                      f"as the theory says[/]" + (f"; {len(held)} hold although an assumption is broken (a finding: "
                                                   f"exit code 1)" if held else ""), highlight=False)
    console.print(f"report: {index}", highlight=False, soft_wrap=True, markup=False)


def _click_exceptions() -> tuple[type, ...]:
    """ClickException of typer's vendored click and of a separately installed click, if any."""
    classes = []
    for module in ("typer._click", "click"):
        try:
            classes.append(__import__(module, fromlist=["ClickException"]).ClickException)
        except (ImportError, AttributeError):
            pass
    return tuple(classes)


from twolayer.cli_sweep import register as _register_sweep_commands  # noqa: E402

_register_sweep_commands(app)  # `twolayer sweep` and `twolayer plot`


def main(argv: list[str] | None = None) -> int:
    """Console entry point: maps user errors to exit code 2 without a traceback."""
    try:
        code = app(args=argv, standalone_mode=False)  # click returns typer.Exit's code here
    except (UserError, UsageError, MissingExtra) as e:
        err_console.print(styled("error:", "red", str(e)))
        return 2
    except typer.Exit as e:
        return e.exit_code
    except typer.Abort as e:  # click turns an EOFError (an empty or truncated file) into Abort
        if isinstance(e.__context__, EOFError):
            err_console.print(styled("error:", "red", "unexpected end of a file (an empty or truncated file?)"))
            return 1
        err_console.print("aborted")
        return 130
    except KeyboardInterrupt:
        err_console.print("interrupted: run the same command again to resume from the last checkpoint")
        return 130
    except OSError as e:  # a full disk, a vanished folder: not a bug, no traceback
        err_console.print(styled("error:", "red", str(e)))
        return 1
    except Exception as e:  # click usage errors (typer >= 0.20 vendors click as typer._click)
        if isinstance(e, _click_exceptions()):
            e.show()
            return 2
        raise
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
