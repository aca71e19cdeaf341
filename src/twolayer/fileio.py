"""Reading and writing files safely: YAML with size limits (no alias bombs) and no key given twice,
``.npz`` arrays with clear errors (a damaged file says so), sha256 digests, and atomic writes (a
temporary file in the same folder, fsync, rename) with the mode the user's umask gives. (Config
sections that name a file are ``twolayer.fields.FileRef``.)
"""

from __future__ import annotations

import errno
import functools
import hashlib
import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np


MAX_YAML_VALUES = 1_000_000  # values a config may expand to once its YAML aliases are followed
MAX_YAML_DEPTH = 100


def read_yaml_file(path: str | Path):
    """``(data, folder)`` of a YAML file; ValueError with a one-line reason if it is missing, unreadable,
    invalid (a key repeated in a mapping included: ``load_yaml``), or expands beyond ``check_yaml_size``."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"file not found: {path}" if not path.exists() else f"{path} is not a file")
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a text (YAML) file") from None
    except OSError as e:
        raise ValueError(f"{path} cannot be read: {e.strerror or e}") from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as e:
        reason = " ".join(str(e).replace('in "<unicode string>", ', "").split())
        raise ValueError(f"{path} is not valid YAML: {reason}") from None
    except ValueError as e:
        raise ValueError(f"{path} {e}") from None
    check_yaml_size(data, where=f"{path}: ")
    return data, path.resolve().parent


def load_yaml(text: str):
    """The plain data (mappings, lists, scalars) of one YAML document, read by ``yaml_loader()``.
    ``yaml.YAMLError`` when it is not valid YAML or repeats a key in a mapping (YAML would keep the
    last value and lose the first silently); ValueError when it is nested too deeply to parse."""
    import yaml

    try:
        return yaml.load(text, Loader=yaml_loader())  # noqa: S506 (a SafeLoader)
    except RecursionError:
        raise ValueError(f"is nested too deeply (more than {MAX_YAML_DEPTH} levels)") from None


@functools.cache
def yaml_loader():
    """``StrictLoader``: PyYAML's SafeLoader that refuses a key given twice in one mapping (naming the
    key's dotted path and both lines) and reads ``1e-3`` as a number, as YAML 1.2 does (YAML 1.1 wants
    ``1.0e-3`` and reads ``1e-3`` as a string)."""
    import re

    import yaml

    class DuplicateKeyError(yaml.YAMLError):
        def __init__(self, problem: str):
            super().__init__(problem)
            self.problem = problem

    class StrictLoader(yaml.SafeLoader):
        def get_single_data(self):
            node = self.get_single_node()
            if node is None:
                return None
            self._refuse_duplicate_keys(node)
            return self.construct_document(node)

        def _refuse_duplicate_keys(self, root) -> None:
            seen, stack = set(), [(root, "")]  # each node once: aliases share nodes (no alias bomb)
            while stack:
                node, path = stack.pop()
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, yaml.SequenceNode):
                    stack += [(child, _dotted(path, i)) for i, child in enumerate(node.value)]
                if not isinstance(node, yaml.MappingNode):
                    continue
                first: dict = {}
                for key_node, value in node.value:
                    if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                        stack.append((value, path))
                        continue
                    key = self.construct_object(key_node)
                    if key in first:
                        raise DuplicateKeyError(f"duplicate key {_dotted(path, key)!r} "
                                                f"{_positions(first[key], key_node.start_mark)} (a mapping takes each "
                                                f"key once: YAML would keep the last value and lose the other)")
                    first[key] = key_node.start_mark
                    stack.append((value, _dotted(path, key)))

    float_1_2 = re.compile(r"^[-+]?[0-9][0-9_]*(\.[0-9_]*)?[eE][-+]?[0-9]+$")
    StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", float_1_2, list("-+0123456789"))
    return StrictLoader


def _dotted(path: str, key) -> str:
    return f"{path}.{key}" if path else str(key)


def _positions(a, b) -> str:
    """Where two YAML marks are: ``at lines 3 and 5``, or ``at line 1, columns 2 and 9``."""
    if a.line != b.line:
        return f"at lines {a.line + 1} and {b.line + 1}"
    return f"at line {a.line + 1}, columns {a.column + 1} and {b.column + 1}"


def check_yaml_size(data, where: str = "") -> None:
    """ValueError when YAML aliases make ``data`` contain itself, or expand it to more than
    ``MAX_YAML_VALUES`` values or ``MAX_YAML_DEPTH`` levels (an "alias bomb": a few hundred bytes of
    nested aliases stand for billions of values, which a deep copy would try to build). Each shared
    node is sized once, so this takes time linear in the file."""

    def children(node):
        return iter(node.values() if isinstance(node, dict) else node)

    if not isinstance(data, dict | list):
        return
    sizes: dict[int, int] = {}  # expanded size of each finished (possibly shared) node
    active = {id(data)}  # nodes on the current path: meeting one again is a cycle
    stack = [(data, children(data), 0)]  # (node, its remaining children, count when it was entered)
    count = 1
    while stack:
        node, rest, entered = stack[-1]
        child = next(rest, _END)
        if child is _END:
            stack.pop()
            active.discard(id(node))
            sizes[id(node)] = count - entered
            continue
        if not isinstance(child, dict | list):
            count += 1
        elif id(child) in active:
            raise ValueError(f"{where}YAML aliases make the config contain itself")
        elif id(child) in sizes:
            count += sizes[id(child)]
        elif len(stack) >= MAX_YAML_DEPTH:
            raise ValueError(f"{where}the config is nested more than {MAX_YAML_DEPTH} levels deep")
        else:
            active.add(id(child))
            stack.append((child, children(child), count))
            count += 1
        if count > MAX_YAML_VALUES:
            raise ValueError(f"{where}YAML aliases expand the config to more than {MAX_YAML_VALUES:.0e} values "
                             f"(an alias bomb?); write the values out or use fewer nested aliases")


_END = object()


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive (numpy.savez), read without pickle; ValueError with a reason
    that completes a sentence starting with the file's name when it is none: a bare ``.npy`` array,
    another kind of file (random bytes included: numpy takes them for pickled data), a damaged or
    truncated archive, or object arrays."""
    import zipfile
    import zlib

    try:
        f = np.load(path, allow_pickle=False)
        if isinstance(f, np.lib.npyio.NpzFile):
            with f:
                return {k: f[k] for k in f.files}
    except ValueError as e:
        if "Object arrays" in str(e):
            raise ValueError("holds object arrays, not numeric arrays (only pickle could read them)") from None
        if "pickle" in str(e):  # neither zip nor .npy magic: numpy takes the bytes for a pickle
            raise ValueError("is not an .npz archive: neither a zip archive nor a .npy array (another kind of "
                             "file, or damaged)") from None
        raise ValueError(f"is not a readable .npz archive, damaged ({e})") from None
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as e:
        raise ValueError(f"is not a readable .npz archive, damaged or truncated ({type(e).__name__}: {e})") from None
    raise ValueError("holds one bare array (.npy), not an .npz archive of named arrays")


def read_npz(path: str | Path, *, need: tuple[str, ...] = (), what: str = "") -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive (``load_npz``), as numeric numpy arrays; ValueError with a
    one-line reason when the file is not such an archive, lacks a ``need``-ed array, holds non-numeric
    (boolean included) arrays or non-finite values. ``what`` describes the needed arrays in the message."""
    path = Path(path)
    try:
        arrays = load_npz(path)
    except ValueError as e:
        raise ValueError(f"{path} {e}; need an .npz archive with arrays {what} (write it with numpy.savez)") from None
    missing = [k for k in need if k not in arrays]
    if missing:
        found = ", ".join(sorted(arrays)) or "no arrays"
        raise ValueError(f"{path} has no array {', '.join(missing)} (it holds {found}; needs {what})")
    for k in need:
        a = arrays[k]
        if a.dtype.kind == "b":
            raise ValueError(f"{path}: array {k} holds booleans; need numbers (write labels as -1.0 and 1.0, "
                             f"values as floats)")
        if a.dtype.kind not in "iuf":
            raise ValueError(f"{path}: array {k} has dtype {a.dtype}; need numbers")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{path}: array {k} has {int(np.sum(~np.isfinite(a)))} non-finite entries (NaN or inf)")
    return arrays


def sha256_of(path: Path) -> str:
    """The sha256 hex digest of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# errors of an output folder itself (the user's choice of --out, --dest), as opposed to a full disk
FOLDER_ERRNOS = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EEXIST, errno.ENOENT, errno.EISDIR)


def check_writable_folder(folder: str | Path, option: str) -> None:
    """Create ``folder`` if needed and check that files can be written in it; ``OutputError`` naming
    ``option`` (``--out``, ``--dest``) when it is empty, a file, lies below a file, is read-only or cannot
    be created."""
    from twolayer.errors import OutputError

    if not str(folder).strip():
        raise OutputError([(option, "is empty: give a folder")])
    folder = Path(folder)
    try:
        if folder.exists() and not folder.is_dir():
            raise OutputError([(option, f"{folder} is a file, not a folder")])
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        if e.errno not in FOLDER_ERRNOS:
            raise
        reason = {errno.ENOTDIR: "a part of the path is a file, not a folder",
                  errno.EEXIST: "a part of the path is a file, not a folder",
                  errno.EROFS: "it is on a read-only file system",
                  errno.ENOENT: "the folder cannot be created there"}.get(e.errno, e.strerror or str(e))
        raise OutputError([(option, f"cannot write in {folder}: {reason}")]) from None


def canonical_sha256(obj) -> str:
    """sha256 of the canonical JSON of ``obj`` (sorted keys, no spaces): the config hash of a resolved
    config (``RunConfig.config_hash``), recomputed by the store from a run's ``config.yaml``."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _umask() -> int:
    """The process's umask (read without changing it where /proc tells it)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()  # what open() would give a new file: run folders may be shared (Dask)


def write_bytes_atomic(path: Path, data: bytes) -> str:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``; the file gets
    the mode open() would give it (0666 less the umask). Returns the sha256 of ``data``. An OSError
    names ``path`` (e.g. ``[Errno 28] No space left on device: '.../final.npz'``)."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), FILE_MODE)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if e.filename is None or Path(e.filename) != path:
            raise OSError(e.errno, e.strerror or str(e), str(path)) from e
        raise
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise
    return hashlib.sha256(data).hexdigest()


def write_text_atomic(path: Path, text: str) -> str:
    """Write text (UTF-8) atomically; returns its sha256."""
    return write_bytes_atomic(path, text.encode())


def json_text(obj) -> str:
    """``obj`` as indented, key-sorted JSON text with a final newline (numpy values as plain numbers)."""
    return json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n"


def write_json_atomic(path: Path, obj) -> str:
    """Write ``json_text(obj)`` atomically; returns its sha256."""
    return write_text_atomic(path, json_text(obj))


def write_npz_atomic(path: Path, arrays: dict[str, np.ndarray]) -> str:
    """Write arrays as an ``.npz`` atomically; returns its sha256."""
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return write_bytes_atomic(path, buf.getvalue())


def plain_data(data):
    """A deep copy of config data in plain JSON types: NumPy arrays become lists, NumPy scalars numbers
    (as the same values written out would be), any other object (a ``Path``) its str."""
    return json.loads(json.dumps(data, default=_plain_default))


def _plain_default(o):
    try:
        return _json_default(o)
    except TypeError:
        return str(o)


def _json_default(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
