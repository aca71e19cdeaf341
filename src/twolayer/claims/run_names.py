"""The run names and config hashes of every experiment's configs, kept between calls of ``reproduce.load``.

``load`` on a folder without ``report/summary.json`` finds each registered experiment's runs in the store by the
run directory its configs map to (``name``, ``config_hash``). Making the configs is the cost, not the lookup:
lyu2021's KKT picks and sampled inits take tens of seconds. So the ``(key, name, config_hash)`` of each
experiment and scale are kept in ``<TWOLAYER_CACHE or ~/.cache/twolayer>/run-names-<fingerprint>.json``,
where the fingerprint covers everything a config is made from:

- the package's source files and the installed studies (``registry.source_fingerprint``: path, size and
  modification time of each file; any edit, addition or removal makes a new file);
- the versions of Python, NumPy, SciPy, JAX and jaxlib (inits are sampled through JAX, KKT picks by SciPy);
- every ``TWOLAYER_*``, ``JAX_*`` and ``XLA_*`` environment variable and the working folder.

Within one file an entry is keyed by experiment id, scale and the configs function (module, name, default
arguments and closure values). Only functions of the package itself are kept, and only when those values
have a faithful ``repr`` (no ``0x`` addresses, no ``...`` of a shortened array): a study's or a test's own
function, whose source the fingerprint does not cover, is made afresh on every call. A cache that cannot be
read or written is skipped, never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from twolayer.claims.registry import Experiment, cache_folder, source_fingerprint

PREFIX = "run-names-"
ENV_PREFIXES = ("TWOLAYER_", "JAX_", "XLA_")
LIBRARIES = ("numpy", "scipy", "jax", "jaxlib")


@dataclass(frozen=True)
class RunName:
    """Where the config ``key`` of an experiment is stored (``name``, ``config_hash``), or why it is invalid."""

    key: str
    name: str | None
    config_hash: str | None
    invalid: str = ""


def derive(exp: Experiment, scale: str) -> list[RunName]:
    """The run names of ``exp``'s configs at ``scale``, made from the configs (the uncached path)."""
    from twolayer.config import ConfigError, load_config

    names = []
    for key, cfg in exp.run_configs(scale).items():
        try:
            c = load_config(cfg)
        except ConfigError as e:
            names.append(RunName(key, None, None, str(e)))
            continue
        names.append(RunName(key, c.name, c.config_hash()))
    return names


def name_prefix(exp: Experiment) -> str | None:
    """``<paper>-``, the start of every run name of an experiment whose configs are the package's: the registry's
    default name is ``<paper>-<name>-<key>`` and the package's explicit names keep the prefix (checked for every
    registered experiment at both scales by tests/experiments/test_registry.py). None for an experiment whose configs
    come from elsewhere (a study, a test), which may name its runs anything. ``load`` derives an experiment's configs
    only when a stored run's name starts with its prefix: a folder of one's own runs needs none of the package's."""
    return f"{exp.paper}-" if of_package(exp.configs) else None


def of_package(fn) -> bool:
    """Whether ``fn`` is defined in a module of the package (``twolayer`` or ``twolayer.*``)."""
    module = getattr(fn, "__module__", None) or ""
    return module == "twolayer" or module.startswith("twolayer.")


def function_key(fn) -> str | None:
    """A stable key of a configs function of the package, or None when it cannot be kept (see the module)."""
    if not of_package(fn) or not hasattr(fn, "__code__"):
        return None
    parts = [fn.__module__, fn.__qualname__, repr(fn.__defaults__), repr(fn.__kwdefaults__)]
    for cell in fn.__closure__ or ():
        try:
            parts.append(repr(cell.cell_contents))
        except ValueError:  # an empty cell
            parts.append("<empty>")
    text = "\0".join(parts)
    if "0x" in text or "..." in text:
        return None
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint() -> str | None:
    """The cache file's key (see the module), or None when the source cannot be read."""
    from importlib import metadata

    source = source_fingerprint()
    if source is None:
        return None
    parts = [source, sys.version, os.getcwd()]
    for lib in LIBRARIES:
        try:
            parts.append(f"{lib}={metadata.version(lib)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{lib}=-")
    parts += sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(ENV_PREFIXES))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def cache_path() -> Path | None:
    """The scan cache file for this source tree (its fingerprint names it); None when it has none."""
    key = fingerprint()
    if key is None:
        return None
    return cache_folder() / f"{PREFIX}{key}.json"


class RunNames:
    """The run names of experiments' configs, from the cache file where it holds them (``names``), written back
    with what was made (``save``)."""

    def __init__(self):
        self.path = cache_path()
        self.entries: dict[str, list] = {}
        self.added = False
        if self.path is not None and self.path.is_file():
            try:
                entries = json.loads(self.path.read_text())
                if isinstance(entries, dict):
                    self.entries = entries
            except (OSError, ValueError):
                pass

    def names(self, exp: Experiment, scale: str) -> list[RunName]:
        fn = function_key(exp.configs)
        if fn is None or self.path is None:
            return derive(exp, scale)
        slot = f"{exp.id}\0{scale}\0{fn}"
        try:
            return [RunName(*entry) for entry in self.entries[slot]]
        except (KeyError, TypeError):
            pass
        names = derive(exp, scale)
        self.entries[slot] = [[n.key, n.name, n.config_hash, n.invalid] for n in names]
        self.added = True
        return names

    def save(self) -> None:
        if not self.added or self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self.entries))
            os.replace(tmp, self.path)
        except OSError:
            pass
        self.added = False
