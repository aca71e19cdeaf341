"""``twolayer data download``: dataset files some experiments need (nothing is downloaded during runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from twolayer.cli.app import app
from twolayer.cli.console import console, err_console, fail_usage, path_arg, styled


data_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                       help="Dataset files some experiments need (nothing is downloaded during runs).")
app.add_typer(data_app, name="data")


@data_app.command("download")
def data_download_cmd(
    name: Annotated[str, typer.Argument(help="Dataset to download: mnist.")],
    dest: Annotated[Path | None, typer.Option("--dest", help="Target folder (default: ~/.cache/twolayer/NAME).", parser=path_arg)] = None,
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
