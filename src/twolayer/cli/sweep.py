"""``twolayer sweep`` and ``twolayer plot``: grids of runs and their phase diagrams.

``sweep`` exits 0 when every point completed, 1 when any point failed (invalid, diverged, failed,
crashed worker; the failures are listed at the end), 2 on usage errors (bad sweep file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from twolayer.cli.app import app
from twolayer.cli.console import (DEFAULT_OUT_PATH, console, err_console, fail_usage, interruptible, path_arg,
                                  progress_bar, styled)


def parse_resources(items: list[str] | None) -> dict[str, float] | None:
    """``--resources GPU=1 MEM=2.5 TPU`` -> ``{"GPU": 1.0, "MEM": 2.5, "TPU": 1.0}`` (None for none); a
    malformed item is a ``SweepError`` naming ``--resources``.
    """
    from twolayer.sweep import SweepError

    if not items:
        return None
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            out[name.strip()] = float(value) if sep else 1.0
        except ValueError:
            raise SweepError([("--resources", f"{item!r} is not NAME=AMOUNT (e.g. GPU=1)")]) from None
    return out


class RichSweepProgress:
    """A bar over points with running counts of done / failed / cached."""

    def __init__(self, bar, name: str):
        self.bar, self.name, self.task = bar, name, None

    def start(self, total: int) -> None:
        self.task = self.bar.add_task(self.name, total=total, note="")

    def point_done(self, point, result, counts) -> None:
        self.bar.update(self.task, completed=counts["done"],
                        note=f"failed {counts['failed']}, cached {counts['cached']}")


@app.command("sweep")
@interruptible("run the same command again to resume: finished points are reused, interrupted ones resume")
def sweep_cmd(
    sweep_file: Annotated[Path, typer.Argument(help="Sweep YAML: name, base, grid, zip, seeds.", parser=path_arg)],
    executor: Annotated[str, typer.Option("--executor", help="local (this process) or dask.")] = "local",
    address: Annotated[str | None, typer.Option("--address", help="Dask scheduler HOST:PORT (default: "
                                                                  "start a LocalCluster).")] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="LocalCluster worker processes (default 2).",
                                                min=1)] = None,
    resources: Annotated[list[str] | None, typer.Option("--resources", help="Dask worker resources each point "
                                                                            "needs, e.g. GPU=1.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (run store; the table goes to "
                                                         "OUT/<sweep name>/).", parser=path_arg)] = DEFAULT_OUT_PATH,
    force: Annotated[bool, typer.Option("--force", help="Re-run every point even when stored.")] = False,
    mlflow: Annotated[str | None, typer.Option("--mlflow", help="Log every point (cache hits too) to this MLflow "
                                                                "tracking URI, experiment = the sweep's name "
                                                                "(needs twolayer[mlflow]).")] = None,
):
    """Run a grid of configs (seeds batched per point) and write OUT/<name>/results.parquet and .csv."""
    from twolayer.sweep import EXECUTORS, load_sweep, run_sweep

    if executor not in EXECUTORS:
        fail_usage(f"--executor: {executor!r} is not one of {', '.join(EXECUTORS.names())}")
    spec = load_sweep(sweep_file)
    options = {"resources": parse_resources(resources)} if resources else {}
    if options and executor != "dask":
        fail_usage("--resources only applies to --executor dask")
    bar = progress_bar("{task.fields[note]}")
    with bar:
        result = run_sweep(spec, out=out, executor=executor, workers=workers, address=address, force=force,
                           progress=RichSweepProgress(bar, spec.name), mlflow=mlflow or None, **options)
    statuses = [r["status"] for r in result.results.values()]
    cached = sum(bool(r.get("cached")) for r in result.results.values())
    console.print(f"{len(result.points)} points ({cached} cached), "
                  + ", ".join(f"{s} {statuses.count(s)}" for s in sorted(set(statuses)))
                  + f" in {result.wall_seconds:.1f} s", highlight=False, markup=False)
    for path in result.written:
        console.print(f"table: {path}", highlight=False, soft_wrap=True, markup=False)
    if result.failures:
        err_console.print(styled(f"{len(result.failures)} of {len(result.points)} points failed:", "red"))
        for point, r in result.failures:
            run = f" [{r['run_id']}]" if r.get("run_id") else ""
            message = " ".join((r.get("message") or "").split())
            err_console.print(f"  point {point.index} ({point.label()}){run}: {r['status']}: {message}",
                              highlight=False, markup=False)
        raise typer.Exit(1)

@app.command("plot")
def plot_cmd(
    sweep_dir: Annotated[Path, typer.Argument(help="A sweep folder OUT/<sweep name>/ holding results.parquet.", parser=path_arg)],
    x: Annotated[str, typer.Option("--x", help="Swept key on the x axis, e.g. init.scale.")],
    metric: Annotated[str, typer.Option("--metric", help="A table column: loss (= final.loss), "
                                                         "loss_halved (= event.loss_halved), ...")],
    y: Annotated[str | None, typer.Option("--y", help="Second swept key: draws a heatmap.")] = None,
    theory: Annotated[str | None, typer.Option("--theory", help="A registered theory overlay.")] = None,
    agg: Annotated[str, typer.Option("--agg", help="Over seeds: median (min-max band), mean (±2 s.e.) or "
                                                   "fraction (share of seeds where the metric is finite and "
                                                   "non-zero; Wilson 95% band).")] = "median",
    output: Annotated[Path | None, typer.Option("--output", "-O", help="Image file (default SWEEP_DIR/"
                                                                       "<metric>_vs_<x>.png).", parser=path_arg)] = None,
):
    """A line plot over one swept key (seed bands) or a heatmap over two, with a theory overlay."""
    from twolayer.sweep.phase import AGGREGATES, THEORIES, plot_sweep

    if theory is not None and theory not in THEORIES:
        fail_usage(f"--theory: {theory!r} is not one of {', '.join(THEORIES.names())}")
    if agg not in AGGREGATES:
        fail_usage(f"--agg: {agg!r} is not one of {', '.join(AGGREGATES.names())}")
    if y is not None and y.strip() == x.strip():
        fail_usage(f"--y: is {y!r}, the key of --x too: a heatmap needs two different swept keys (leave out --y for a "
                   f"line plot over {x})")
    try:
        path, fitted, broken = plot_sweep(sweep_dir, x=x, y=y, metric=metric, theory=theory, agg=agg, output=output)
    except (FileNotFoundError, KeyError, ValueError) as e:
        fail_usage(e.args[0] if e.args else str(e))
    if fitted:
        console.print("theory (fitted): " + ", ".join(f"{k} = {v:.4g}" for k, v in fitted.items()), highlight=False,
                      markup=False)
    for what in broken:
        err_console.print(styled("warning:", "yellow", f"--theory {theory} assumes {what}"))
    console.print(f"figure: {path}", highlight=False, soft_wrap=True, markup=False)
