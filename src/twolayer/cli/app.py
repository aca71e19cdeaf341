"""The ``twolayer`` application and its entry point ``main``: user errors exit 2 without a traceback.

``run`` exits 0 when the run completed, 1 when it diverged or failed (a full disk included), 130 when
interrupted. The commands live in the modules of this package (``run``, ``reproduce``, ``sweep``,
``data``), each registering on ``app``.
"""

from __future__ import annotations

import warnings

import typer

from twolayer.cli.console import UsageError, err_console, styled
from twolayer.errors import ConfigWarning, UserError
from twolayer.extras import MissingExtra
from twolayer.interrupts import dropped_interrupts_delivered_again

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Simulate, measure and explain how two-layer neural networks learn.")


def _click_exceptions() -> tuple[type, ...]:
    """ClickException of typer's vendored click and of a separately installed click, if any."""
    classes = []
    for module in ("typer._click", "click"):
        try:
            classes.append(__import__(module, fromlist=["ClickException"]).ClickException)
        except (ImportError, AttributeError):
            pass
    return tuple(classes)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: maps user errors to exit code 2 without a traceback, and prints each
    ``ConfigWarning`` (a config that runs, but probably not as meant) as ``warning: field: message``."""
    with warnings.catch_warnings():
        warnings.simplefilter("default", ConfigWarning)  # once per message, as Python shows warnings
        shown = warnings.showwarning

        def show(message, category, *args, **kwargs):
            if issubclass(category, ConfigWarning):
                err_console.print(styled("warning:", "yellow", str(message)))
            else:
                shown(message, category, *args, **kwargs)

        warnings.showwarning = show
        with dropped_interrupts_delivered_again():  # a Ctrl-C that Python drops (in JAX's gc callback) still stops
            return _main(argv)


def _main(argv: list[str] | None) -> int:
    """``main`` without the warning hook."""
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
