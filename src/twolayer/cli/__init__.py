"""The ``twolayer`` command line: ``main`` (the console entry point) and ``app``; the commands live in
``run``, ``reproduce``, ``sweep``, ``data`` and ``studies`` (importing them registers them), the shared console in
``console``."""

from twolayer.cli.app import app, main  # noqa: F401
from twolayer.cli import run  # noqa: F401, I001  (run, list, show, index, demo)
from twolayer.cli import reproduce  # noqa: F401  (reproduce, report, explore)
from twolayer.cli import data  # noqa: F401  (data download)
from twolayer.cli import sweep  # noqa: F401  (sweep, plot)
from twolayer.cli import studies  # noqa: F401  (check, new study)

__all__ = ["app", "main"]
