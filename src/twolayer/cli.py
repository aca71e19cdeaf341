"""The ``twolayer`` command line.

User errors (bad configs, unknown runs) print a message that names the field and exit with code
2, without a traceback. ``run`` exits 0 when the run completed, 1 when it diverged or failed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from twolayer.config import ConfigError
from twolayer.store import DEFAULT_OUT, RunStore

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Simulate, measure and explain how two-layer neural networks learn.")
console = Console()
err_console = Console(stderr=True, soft_wrap=True)

OutOption = Annotated[Path, typer.Option("--out", "-o", help="Output folder holding run directories.")]


class UsageError(Exception):
    """A user error: printed without traceback, exit code 2."""


def fail_usage(message: str) -> None:
    raise UsageError(message)


def progress_bar():
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("t = {task.fields[t]:.4g}"), TimeElapsedColumn(), console=err_console,
                    transient=False, disable=not err_console.is_terminal and not _force_progress())


def _force_progress() -> bool:
    import os

    return os.environ.get("TWOLAYER_PROGRESS", "") == "1"


def execute_run(config, out: Path, force: bool, overrides=None, label: str | None = None):
    """Run one config with a progress bar; returns the Run."""
    import twolayer

    with progress_bar() as bar:
        task = bar.add_task(label or "run", total=None, t=0.0)

        def progress(done, total, t):
            bar.update(task, completed=done, total=total, t=t)

        return twolayer.run(config, out=out, force=force, overrides=overrides, progress=progress)


@app.command("run")
def run_cmd(
    config: Annotated[Path, typer.Argument(help="YAML config file.")],
    set_: Annotated[list[str] | None, typer.Option("--set", "-s", help="Override a dotted key: train.lr=0.01")] = None,
    out: OutOption = Path(DEFAULT_OUT),
    force: Annotated[bool, typer.Option("--force", help="Re-run even when an identical run is stored.")] = False,
):
    """Run one simulation from a config file (cached by config hash; resumes if interrupted)."""
    from twolayer.api import RunError

    try:
        run = execute_run(config, out, force, overrides=set_ or [], label=config.stem)
    except RunError as e:
        err_console.print(f"[red]failed:[/red] {e}\n  see {e.path / 'summary.json'}")
        raise typer.Exit(1) from None
    summary = run.summary
    note = " (cached)" if run.cached else ""
    console.print(f"{summary['status']}{note}: {run.path}")
    _print_final(summary)
    if summary["status"] != "completed":
        err_console.print(f"[red]{summary['status']}:[/red] {summary.get('message', '')}")
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
    """List stored runs in the output folder."""
    rows = RunStore(out).list()
    if not rows:
        console.print(f"no runs in {out}")
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
    console.print(f"[bold]{path}[/bold]")
    console.print_json(json.dumps({k: v for k, v in r.summary.items() if k != "final"}))
    _print_final(r.summary)
    console.print((path / "config.yaml").read_text())
    if (path / "trajectory.npz").is_file():
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in r.trajectory.items())
        console.print(f"trajectory.npz: {shapes}")


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
    console.print(f"{s['status']}{' (cached)' if run.cached else ''}: run directory {run.path}")
    _print_final(s)
    console.print(f"inspect it with: twolayer show {run.path}")


def main(argv: list[str] | None = None) -> int:
    """Console entry point: maps user errors to exit code 2 without a traceback."""
    try:
        app(args=argv, standalone_mode=False)
    except (ConfigError, UsageError) as e:
        err_console.print(f"[red]error:[/red] {e}", highlight=False)
        return 2
    except typer.Exit as e:
        return e.exit_code
    except typer.Abort:
        err_console.print("aborted")
        return 130
    except KeyboardInterrupt:
        err_console.print("interrupted: run the same command again to resume from the last checkpoint")
        return 130
    except Exception as e:  # click usage errors
        import click

        if isinstance(e, click.ClickException):
            e.show()
            return 2
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
