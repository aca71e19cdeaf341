"""User errors: what the user wrote or chose is wrong, and each line of the message names the field.

``UserError`` carries ``errors``, a list of ``(field, message)``; the command line prints it without a
traceback and exits with code 2. ``ConfigError`` is a bad run config (a YAML key such as
``train.lr``, a ``--set`` override, a data or init file the config names); ``OutputError`` an
output folder (``--out``) that cannot be written. Lowest in the import order, so data builders,
initializations and the loop can raise them too. ``ConfigWarning`` is a config that runs, but
probably not as the user meant; the command line prints it as ``warning: field: message``.
"""

from __future__ import annotations


class UserError(ValueError):
    """A user error: ``.errors`` is a list of ``(field path, message)``; ``title`` heads the message."""

    title = "invalid input"

    def __init__(self, errors: list[tuple[str, str]]):
        self.errors = [(str(path), str(message)) for path, message in errors]
        super().__init__(f"{self.title}:\n" + "\n".join(f"  {p}: {m}" for p, m in self.errors))


def field_error(message: str, default: str) -> tuple[str, str]:
    """``(field, message)`` from a message that starts with a dotted config field (``data.w_perp has 3
    entries``, ``init.signs: ...``; field ``default`` otherwise), without repeating the field."""
    first = message.split(" ", 1)[0].rstrip(":,")
    if "." not in first or first.split(".", 1)[0] not in ("data", "model", "init", "loss", "train", "observe"):
        return default, message
    return first, message.removeprefix(first).removeprefix(":").strip()


class ConfigWarning(UserWarning):
    """A config that runs, but probably not as meant (an SGD batch larger than the data, an all-zero
    init); ``field`` names the field as ``ConfigError`` does, and the warning reads ``field: message``."""

    def __init__(self, field: str, message: str):
        self.field = str(field)
        super().__init__(f"{self.field}: {message}")


class UnrecordedEventWarning(ConfigWarning):
    """An event the run cannot detect because an observable it reads is not recorded (the message names the
    metric to add). ``reproduce`` silences it: a registered experiment records what its claims read."""


class ConfigError(UserError):
    """A config failed validation; ``.errors`` is a list of ``(field path, message)``."""

    title = "invalid config"


class OutputError(UserError):
    """The output folder cannot hold run directories (``--out`` is a file, read-only, ...)."""

    title = "cannot write the output folder"


class StoreError(UserError):
    """A stored run cannot be read or trusted (not a run directory, another config's run, unfinished)."""

    title = "cannot use the stored run"
