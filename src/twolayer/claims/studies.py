"""Where studies come from: installed packages and single files.

A *study* is a module that registers experiments (``register``) when it is imported. The three papers
are studies of this package; another package declares its own under the entry point group
``twolayer.studies`` in its ``pyproject.toml``::

    [project.entry-points."twolayer.studies"]
    my_study = "my_package.my_study"

and ``twolayer list`` and ``twolayer reproduce`` then find it. A study in a single file needs no
packaging: ``twolayer reproduce ./my_study.py`` imports it (``import_file``; ``twolayer.claims.load_study``
keeps what it registered) and runs it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import re
import sys
import traceback
from pathlib import Path

from twolayer.errors import UserError

GROUP = "twolayer.studies"
BUILTIN = "twolayer."  # entry points whose module lies in this package: the papers, listed first


class StudyError(UserError):
    """A study file cannot be loaded (missing, not Python, raises on import, registers nothing)."""

    title = "cannot load the study"


def study_entry_points() -> list[importlib.metadata.EntryPoint]:
    """The entry points of the group ``twolayer.studies``: this package's first, then the others, each
    group by name (the order in which the report lists them)."""
    points = {(ep.name, ep.value): ep for ep in importlib.metadata.entry_points(group=GROUP)}.values()
    return sorted(points, key=lambda ep: (not ep.value.startswith(BUILTIN), ep.name))


def load_installed() -> dict[str, str]:
    """Import every installed study (``study_entry_points``); returns the traceback (or the reason) of each
    one that failed, by module. No study at all means an install without this package's entry points
    (an editable install older than them): that is reported too, with the fix."""
    points = study_entry_points()
    if not any(ep.value.startswith(BUILTIN) for ep in points):
        return {GROUP: f"no study of twolayer itself is installed under the entry point group {GROUP!r}, so its "
                       f"papers are not registered: reinstall twolayer (pip install -e . in a checkout)"}
    errors = {}
    for ep in points:
        module = ep.value.split(":")[0]
        try:
            importlib.import_module(module)
        except Exception:
            errors[module] = traceback.format_exc(limit=6)
    return errors


def fingerprint() -> str:
    """What the installed studies are: each entry point with its distribution's version and the size and
    modification time of its module's files (the experiment catalog's cache key)."""
    parts = []
    for ep in study_entry_points():
        version = ep.dist.version if ep.dist is not None else ""
        parts.append(f"{ep.name}={ep.value}@{version}")
        if not ep.value.startswith(BUILTIN):
            parts += _source_stats(ep.value.split(":")[0])
    return ";".join(parts)


def _source_stats(module: str) -> list[str]:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return [f"{module}:?"]
    if spec is None or not spec.origin:
        return [f"{module}:?"]
    origin = Path(spec.origin)
    files = sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
    return [f"{f}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files if f.is_file()]


def is_study_file(target: str) -> bool:
    """True when a ``reproduce``/``report``/``check`` target names a Python file rather than an experiment."""
    return target.endswith(".py") or Path(target).is_file()


def import_file(path: str | Path):
    """Import a study file as a module of its own (``twolayer_study_<stem>_<hash8>``); ``StudyError`` naming
    the file when it is missing or raises on import (with the line in that file)."""
    path = Path(path)
    if not path.is_file():
        raise StudyError([(str(path), "no such file (a study is a Python file that registers experiments)")])
    resolved = path.resolve()
    name = f"twolayer_study_{resolved.stem}_{hashlib.sha256(str(resolved).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise StudyError([(str(path), "is not a Python file")])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        sys.modules.pop(name, None)
        frame = next((f for f in reversed(traceback.extract_tb(e.__traceback__)) if Path(f.filename) == resolved), None)
        where = f" (line {frame.lineno})" if frame else ""
        raise StudyError([(str(path), f"raised {type(e).__name__}: {e}{where}")]) from None
    return module


STUDY_NAME = re.compile(r"^[a-z][a-z0-9_\-]{0,40}$")


def write_template(name: str, dest: str | Path = ".") -> Path:
    """Write ``dest/name/name.py`` (one experiment, one claim with a counterfactual and a premise, one figure)
    and its ``README.md``; returns the study file. ``StudyError`` when the name is not a study id or the
    folder exists."""
    from importlib.resources import files

    from twolayer.fileio import check_writable_folder, write_text_atomic

    if not STUDY_NAME.match(name):
        raise StudyError([("NAME", f"{name!r} is not a study id: lower-case letters, digits, - and _, starting "
                                   f"with a letter (it prefixes the experiment ids, NAME/EXPERIMENT)")])
    folder = Path(dest) / name
    if folder.exists():
        raise StudyError([("NAME", f"{folder} exists already: choose another name or --dest")])
    check_writable_folder(folder, "--dest")
    template = files("twolayer.claims") / "template"
    write_text_atomic(folder / f"{name}.py", (template / "study.py.txt").read_text().format(name=name))
    write_text_atomic(folder / "README.md", (template / "README.md.txt").read_text().format(name=name))
    return folder / f"{name}.py"


__all__ = ["GROUP", "StudyError", "fingerprint", "import_file", "is_study_file", "load_installed", "study_entry_points",
           "write_template"]
