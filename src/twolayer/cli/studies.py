"""``twolayer check`` (the claim conformance test of a study, as a command) and ``twolayer new study``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from twolayer.cli.app import app
from twolayer.cli.console import DEFAULT_OUT_PATH, OutOption, console, err_console, fail_usage, path_arg, styled

new_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Write a working template.")
app.add_typer(new_app, name="new")


@app.command("check")
def check_cmd(
    targets: Annotated[list[str], typer.Argument(help="Study files (./my_study.py), paper ids or experiment ids.")],
    out: OutOption = DEFAULT_OUT_PATH,
):
    """Run every falsifier of every claim: each claim must fail on each of its counterfactuals and premises
    (pass, for an assumption-broken experiment) and read what its runs produced. Exit 0 when all conform."""
    from twolayer.claims import conformance, expand_study_files, select
    from twolayer.store import RunStore

    ids, _ = expand_study_files(targets)
    try:
        exps = select(ids)
    except LookupError as e:
        fail_usage(e.args[0] if e.args else str(e))
    RunStore(out).check_writable()
    verdicts = conformance(exps, out)
    table = Table("claim", "falsifier", "kind", "conforms", "why", header_style="bold")
    for v in verdicts:
        table.add_row(Text(v.claim), Text(v.falsifier or "-"), v.kind or "-", "yes" if v.conforms else "NO", Text(v.why))
    console.print(table)
    bad = [v for v in verdicts if not v.conforms]
    claims = {v.claim for v in verdicts}
    if bad:
        err_console.print(styled("not conforming:", "red", f"{len(bad)} of {len(verdicts)} falsifier checks "
                                 f"({len({v.claim for v in bad})} of {len(claims)} claims)"))
        raise typer.Exit(1)
    console.print(f"{len(claims)} claims conform on {len(verdicts)} falsifiers", highlight=False)


@new_app.command("study")
def new_study_cmd(
    name: Annotated[str, typer.Argument(help="The study id: lower-case letters, digits, - and _.")],
    dest: Annotated[Path, typer.Option("--dest", help="The folder to write NAME/ in.", parser=path_arg)] = Path("."),
):
    """Write NAME/NAME.py (one experiment, one claim with a counterfactual and a premise, one figure) and
    NAME/README.md, which says how to grow it."""
    from twolayer.claims.studies import write_template

    path = write_template(name, dest)
    console.print(f"wrote {path} and {path.with_name('README.md')}", highlight=False)
    console.print(f"run it: twolayer reproduce {path} --out {path.parent / (name + '-out')}", highlight=False)
