"""The reproduction report: figures (PNG), ``index.html``, ``claims.json`` and ``summary.json``
in ``<out>/report/``, readable offline from the file system."""

from twolayer.report._build import summary, write_report


def rebuild(out) -> "tuple":
    """Rebuild the report of ``out`` from its stored runs (nothing is run); returns
    ``(reproduction, index.html path)``."""
    from twolayer.experiments import load

    rep = load(out)
    return rep, write_report(rep)


__all__ = ["rebuild", "summary", "write_report"]
