"""``twolayer run``, ``list``, ``show``, ``index`` and ``demo``: single runs and the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from twolayer.cli.app import app
from twolayer.cli.console import (DEFAULT_OUT_PATH, OutOption, console, err_console, fail_usage, path_arg,
                                  progress_bar, styled)


def execute_run(config, out: Path, force: bool, overrides=None, label: str | None = None,
                notes: list[str] | None = None, **options):
    """Run one config with a progress bar, printing the run's notes on stderr (and appending them to
    ``notes``); returns the Run."""
    from twolayer.api import run

    with progress_bar("t = {task.fields[t]:.4g}") as bar:
        task = bar.add_task(label or "run", total=None, t=0.0)

        def progress(done, total, t):
            bar.update(task, completed=done, total=total, t=t)

        def notify(message: str) -> None:
            if notes is not None:
                notes.append(message)
            bar.console.print(styled("note:", "yellow", message))

        return run(config, out=out, force=force, overrides=overrides, progress=progress, notify=notify, **options)


@app.command("run")
def run_cmd(
    config: Annotated[Path, typer.Argument(help="YAML config file.", parser=path_arg)],
    set_: Annotated[list[str] | None, typer.Option("--set", "-s", help="Override a dotted key: train.lr=0.01")] = None,
    out: OutOption = DEFAULT_OUT_PATH,
    force: Annotated[bool, typer.Option("--force", help="Re-run even when an identical run is stored.")] = False,
    mlflow: Annotated[str | None, typer.Option("--mlflow", help="Log params, scalar observables and final metrics "
                                                                "to this MLflow tracking URI (needs twolayer[mlflow]).")] = None,
    strict_resume: Annotated[bool, typer.Option("--strict-resume", help="Stop (exit 1) instead of starting from "
                                                "scratch when the run's checkpoint does not belong to this config.")] = False,
):
    """Run one simulation from a config file (cached by config hash; resumes if interrupted)."""
    from twolayer.api import RunError
    from twolayer.store import SUMMARY
    from twolayer.tracking import TrackingError

    overrides = [*(set_ or []), *([f"mlflow.uri={json.dumps(mlflow)}"] if mlflow else [])]
    notes: list[str] = []
    try:
        run = execute_run(config, out, force, overrides=overrides, label=config.stem, notes=notes,
                          refused_checkpoint="stop" if strict_resume else "restart")
    except RunError as e:
        err_console.print(styled("failed:", "red", f"{e}\n  see {e.path / SUMMARY}"))
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
    _print_events(summary)
    if (run.path / "mlflow.json").is_file() and mlflow:
        record = json.loads((run.path / "mlflow.json").read_text())
        console.print(f"mlflow: run {record['run_id']} in experiment {record['experiment']!r} at {record['uri']}",
                      highlight=False)
    if summary["status"] != "completed":
        err_console.print(styled(f"{summary['status']}:", "red", summary.get("message", "")))
        raise typer.Exit(1)


MAX_SEED_COLUMNS = 8  # more seeds: the events are summarized (reached k / n, min, median, max)


def _print_events(summary: dict) -> None:
    """The detected events (phase times: t1, loss_halved, ...) per seed, after the final values, each with its
    uncertainty w in brackets (the event lies in (t - w, t]: one step for gd and sgd)."""
    import math

    events = summary.get("events") or {}
    if not events:
        return
    seeds = summary.get("seeds") or [0]
    per_seed = {name: (v if isinstance(v, list) else [v]) for name, v in events.items()}
    widths = summary.get("event_uncertainty") or {}
    per_width = {name: (w if isinstance(w, list) else [w]) for name, w in widths.items()}
    cell = _event_cell
    if len(seeds) <= MAX_SEED_COLUMNS:
        table = Table("event", *[f"seed {s}" for s in seeds], header_style="bold")
        for name, values in per_seed.items():
            w = per_width.get(name) or [None] * len(values)
            table.add_row(name, *[Text(cell(v, u)) for v, u in zip(values, w)])
    else:
        table = Table("event", "reached", "min", "median", "max", "uncertainty (max)", header_style="bold")
        for name, values in per_seed.items():
            got = sorted(float(v) for v in values if isinstance(v, int | float) and not math.isnan(v))
            stats = [cell(got[0]), cell(got[len(got) // 2]), cell(got[-1])] if got else ["", "", ""]
            w = [u for u in per_width.get(name) or [] if isinstance(u, int | float)]
            table.add_row(name, f"{len(got)} / {len(values)}", *stats, f"{max(w):.3g}" if w else "")
    console.print(table)
    if widths:
        console.print("[w]: the event lies in (t - w, t] (one step for gd and sgd; the observation interval where a "
                      "method's events are not refined)", markup=False, highlight=False)


def _event_cell(value, width=None) -> str:
    import math

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "not reached"
    return f"{value:.6g}" + (f" [{width:.3g}]" if isinstance(width, int | float) else "")


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
def list_cmd(
    out: OutOption = DEFAULT_OUT_PATH,
    runs: Annotated[bool, typer.Option("--runs", help="Only the stored runs.")] = False,
    experiments: Annotated[bool, typer.Option("--experiments", help="Only the registered experiments.")] = False,
):
    """List the stored runs in the output folder, then the registered experiments."""
    store = _readable_store(out)
    if not experiments:
        _list_runs(store, out)
    if not runs:
        _list_experiments(out)


def _costs(out: Path) -> tuple[dict[str, str], str]:
    """``({experiment id: cost}, where from)``: each experiment's wall time in the last reproduction in ``out``
    (its ``report/summary.json``: runs, claims and figures, with the scale it ran at)."""
    path = out / "report" / "summary.json"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}, ""
    scale = manifest.get("scale") or "?"
    costs = {}
    for e in manifest.get("experiments") or []:
        wall = e.get("wall_seconds")
        if isinstance(e, dict) and isinstance(wall, int | float) and not e.get("skipped"):
            cached = e.get("cached_runs") or 0
            costs[str(e.get("id"))] = f"{wall:.1f} s ({scale}" + (f", {cached} cached run(s)" if cached else "") + ")"
    return costs, f"cost: the wall time of each experiment in the last reproduction in {out} ({path})"


def _list_experiments(out: Path) -> None:
    from twolayer.claims import DISCOVERY_ERRORS, catalog

    costs, source = _costs(out)
    table = Table("experiment", "title", "reproduces", "claims", "cost", header_style="bold", title="experiments")
    entries = catalog()
    ids = table.columns[0]  # an id is never cut short: the titles give way
    ids.no_wrap, ids.min_width = True, max((len(e["id"]) for e in entries), default=10)
    table.columns[4].no_wrap = True
    for e in entries:  # titles may hold brackets
        table.add_row(e["id"], Text(e["title"]), Text(e["figure"]), str(e["claims"]), costs.get(e["id"], "-"))
    console.print(table)
    console.print(source or f"cost: none known (no reproduction in {out}; `twolayer reproduce --plan` estimates one "
                            f"from the store)", markup=False, highlight=False)
    for module, tb in DISCOVERY_ERRORS.items():
        err_console.print(styled(f"experiment module {module} failed to import:", "red", tb.strip().splitlines()[-1]))


def _list_runs(store, out: Path) -> None:
    rows = store.list()
    if not rows:
        console.print(f"no runs in {out}", markup=False, highlight=False)
        return
    table = Table("run id", "status", "created", "wall s", "final loss", header_style="bold", title=f"runs in {out}")
    ids = table.columns[0]  # an id is never cut short: the other columns give way
    ids.no_wrap, ids.min_width = True, max(len(r["run_id"]) for r in rows)
    for r in rows:
        s = r["summary"]
        table.add_row(r["run_id"], r["status"] + (" (flagged)" if r["problem"] else ""), r["created"] or "",
                      _number(s.get("wall_seconds"), ".1f"), _number((s.get("final") or {}).get("loss"), ".4g"))
    console.print(table)
    for r in rows:
        if r["problem"]:
            err_console.print(styled("flagged:", "yellow", f"{r['run_id']}: {r['problem']}"))


def _readable_store(out: Path):
    """The store at ``--out`` for reading: a usage error when it is a file (a missing folder holds no runs)."""
    from twolayer.store import RunStore

    if out.exists() and not out.is_dir():
        fail_usage(f"--out: {out} is a file, not a folder of runs")
    return RunStore(out)


def _number(value, spec: str) -> str:
    """A table cell for a summary number: a list over seeds shows its smallest value, anything else blank."""
    if isinstance(value, list):
        values = [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)]
        return f"{min(values):{spec}}.." if values else ""
    return f"{value:{spec}}" if isinstance(value, int | float) and not isinstance(value, bool) else ""


@app.command("show")
def show_cmd(run: Annotated[str, typer.Argument(help="A run directory or run id.")], out: OutOption = DEFAULT_OUT_PATH):
    """Show a stored run: its summary, resolved config and recorded observables."""
    try:
        path = _readable_store(out).find(run)
    except FileNotFoundError as e:
        fail_usage(str(e))
    from twolayer.store import CONFIG, TRAJECTORY, RunStore
    from twolayer.stored import StoredRun  # not twolayer.api: reading a run needs no JAX (show stays under a second)

    stored = RunStore.stored_state(path)
    if stored.foreign:
        fail_usage(f"{path} cannot be shown as that run: {stored.problem}")
    r = StoredRun(path)
    console.print(Text(str(path), style="bold"))
    if stored.problem:
        err_console.print(styled("damaged:", "red", f"{stored.problem}; `twolayer run` of its config recomputes it"))
    elif r.summary.get("status") == "running" and not (path / ".lock").exists():
        err_console.print(styled("stopped:", "yellow", "it says running but no process holds its lock (killed?); "
                                                       "`twolayer run` of its config resumes it"))
    console.print_json(json.dumps({k: v for k, v in r.summary.items() if k != "final"}))
    _print_final(r.summary)
    if (path / CONFIG).is_file():
        console.print((path / CONFIG).read_text(errors="replace"), markup=False, highlight=False)
    if (path / TRAJECTORY).is_file():
        try:
            shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in r.trajectory.items())
        except (OSError, ValueError, EOFError) as e:  # an empty or truncated file
            shapes = f"cannot be read ({type(e).__name__}: {e or 'empty or truncated file'})"
        console.print(f"trajectory.npz: {shapes}", markup=False, highlight=False)


@app.command("index")
def index_cmd(
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Re-create OUT/runs.sqlite from the run directories.")] = False,
    out: OutOption = DEFAULT_OUT_PATH,
):
    """Check the run index OUT/runs.sqlite against the run directories, or rebuild it (it is rebuilt
    automatically when it is missing or cannot be read)."""
    if not out.is_dir():
        fail_usage(f"--out: {out} is not a folder")
    store = _readable_store(out)
    if rebuild:
        count, flagged = store.rebuild_index()
        console.print(f"indexed {count} runs in {out / 'runs.sqlite'}", markup=False, highlight=False)
        for d, problem in flagged:
            err_console.print(styled("flagged:", "yellow", f"{d.name}: {problem}"))
        return
    state = store.index_state()
    console.print(f"{out / 'runs.sqlite'}: {state['indexed']} runs indexed, {state['directories']} run directories",
                  markup=False, highlight=False)
    if state["stale"]:
        err_console.print(styled("out of date:", "yellow", f"{state['stale']}; run `twolayer index --rebuild "
                                                            f"--out {out}` (reading the store repairs it too)"))
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
def demo_cmd(out: OutOption = DEFAULT_OUT_PATH, force: bool = False):
    """A built-in demo run (Min et al. Fig. 7 setting, 4 seeds) that writes a run directory."""
    run = execute_run(DEMO_CONFIG, out, force, label="demo")
    s = run.summary
    console.print(f"{s['status']}{' (cached)' if run.cached else ''}: run directory {run.path}", markup=False)
    _print_final(s)
    console.print(f"inspect it with: twolayer show {run.path}", markup=False, highlight=False)
