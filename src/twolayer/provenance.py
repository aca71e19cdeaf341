"""Where results come from: the commit and a digest of the engine's source files, recorded in every
reproduction's ``summary.json`` so that a committed reference can be told from a stale one."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CONTENT = ("papers",)  # the studies' own folders: their configs are recorded per run (config hashes)


def engine_digest() -> str:
    """sha256 over the path and bytes of every ``.py`` file of the package except the papers'
    (``CONTENT``): it changes when the engine, the store or the claim machinery changes."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in CONTENT:
            continue
        digest.update(f"{relative}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def git_commit() -> dict:
    """``{commit, dirty}`` of the git checkout the package runs from (both None outside one)."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=PACKAGE, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no", "--", str(PACKAGE)) if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def provenance() -> dict:
    """``{twolayer, commit, dirty, engine_sha256}``: what a reproduction's numbers depend on besides its
    configs (whose hashes it records run by run)."""
    from twolayer.version import __version__

    return {"twolayer": __version__, **git_commit(), "engine_sha256": engine_digest()}
