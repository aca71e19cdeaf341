"""File references inside configs, and atomic file writes.

A config that names a file (``data.path``, ``init.path``) is resolved to an absolute path and the
file's sha256 is recorded in the resolved config, so a run's hash changes when the file does.
Relative paths are taken from the config file's folder (the validation context ``base_dir``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ValidationInfo, field_validator, model_validator


def read_yaml_file(path: str | Path):
    """``(data, folder)`` of a YAML file; ValueError with a one-line reason if it is missing or invalid."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"file not found: {path}")
    try:
        return yaml.safe_load(path.read_text()), path.resolve().parent
    except yaml.YAMLError as e:
        raise ValueError(f"{path} is not valid YAML: {e}") from None


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class FileRef(BaseModel):
    """Mixin for config sections that read a file: ``path`` (required) and its ``sha256``."""

    path: str
    sha256: str | None = None

    @field_validator("path")
    @classmethod
    def _absolute_existing(cls, v: str, info: ValidationInfo) -> str:
        p = Path(v).expanduser()
        base = (info.context or {}).get("base_dir")
        if not p.is_absolute() and base is not None:
            p = Path(base) / p
        p = p.resolve()
        if not p.is_file():
            raise ValueError(f"file not found: {p}")
        return str(p)

    @model_validator(mode="after")
    def _record_hash(self):
        digest = sha256_of(Path(self.path))
        if self.sha256 is not None and self.sha256 != digest:
            raise ValueError(f"{self.path} has sha256 {digest[:12]}..., the config expects {self.sha256[:12]}...")
        object.__setattr__(self, "sha256", digest)
        return self

    def checked_path(self) -> Path:
        return Path(self.path)


def _atomic(path: Path, write) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``."""
    _atomic(path, lambda f: f.write(data))


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode())


def write_json_atomic(path: Path, obj) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def write_npz_atomic(path: Path, arrays: dict[str, np.ndarray]) -> None:
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    write_bytes_atomic(path, buf.getvalue())


def _json_default(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
