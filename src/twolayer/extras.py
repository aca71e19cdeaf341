"""Optional dependencies: features that need an extra raise ``MissingExtra`` naming it."""

from __future__ import annotations

import importlib


class MissingExtra(ImportError):
    """A feature needs an optional dependency; the message says which extra installs it."""


def require(module: str, extra: str, feature: str):
    """Import ``module`` or raise ``MissingExtra`` (``pip install 'twolayer[extra]'``)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"{feature} needs {module.split('.')[0]}: pip install 'twolayer[{extra}]'") from None
