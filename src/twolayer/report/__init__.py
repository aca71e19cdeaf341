"""The reproduction report: figures (PNG), ``index.html``, ``claims.json`` and ``summary.json``
in ``<out>/report/``, readable offline from the file system."""

from twolayer.report._build import rebuild, summary, write_report  # noqa: F401


__all__ = ["rebuild", "summary", "write_report"]
