"""What every ``twolayer`` command shares: the consoles, literal messages, usage errors and progress bars.

Every user string (paths, messages) is printed literally, never parsed as rich markup.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from twolayer.defaults import DEFAULT_OUT

console = Console()
err_console = Console(stderr=True, soft_wrap=True, markup=False, highlight=False)  # messages are literal text

def path_arg(value: str | Path) -> Path:
    """The ``parser`` of every path option and argument: an empty string is a usage error (``Path("")``
    would silently be the current folder)."""
    if not str(value).strip():
        raise typer.BadParameter("is empty: give a path")
    return Path(value)


OutOption = Annotated[Path, typer.Option("--out", "-o", help="Output folder holding run directories.", parser=path_arg)]
DEFAULT_OUT_PATH = Path(DEFAULT_OUT)


class UsageError(Exception):
    """A user error: printed without traceback, exit code 2."""


def fail_usage(message: str) -> None:
    """Stop the command with a usage error: ``message`` is printed literally and the exit code is 2."""
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


def force_progress() -> bool:
    """``TWOLAYER_PROGRESS=1`` draws progress bars even when stderr is not a terminal."""
    return os.environ.get("TWOLAYER_PROGRESS", "") == "1"


def progress_bar(*fields: str) -> Progress:
    """A bar on stderr: description, bar, done/total, then ``fields`` (``"t = {task.fields[t]:.4g}"``, ...)
    and the elapsed time; drawn only on a terminal (or with ``TWOLAYER_PROGRESS=1``)."""
    return Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                    *(TextColumn(f, markup=False) for f in fields), TimeElapsedColumn(), console=err_console,
                    transient=False, disable=not err_console.is_terminal and not force_progress())


