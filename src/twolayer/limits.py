"""How big a run may be: counts with a hard limit, and a memory estimate made from the shapes before
anything large is allocated.

Hard limits (checked when the config is validated): integers of number fields at most ``MAX_INT`` =
2^63 - 1 (int64, what NumPy and JAX count with; ``fields.StrictNumbers``), at most ``MAX_STEPS`` = 2^53
steps (beyond it t = lr k is no longer exact in float64, and at a microsecond a step such a run takes
centuries), at most ``MAX_POINTS`` observation points and ``MAX_SEEDS`` seeds, seeds in [0, 2^63)
(JAX's PRNG key takes a 64-bit signed seed). The memory estimate (``check_memory``, once the data's n and d are
known) adds up the parameters and their working copies, the hidden-layer activations of every seed,
the data and the records of every observation point, and refuses the run (``ConfigError`` naming
the field that dominates) when that exceeds this machine's memory.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from twolayer.errors import ConfigError

MAX_INT = 2**63 - 1
MAX_STEPS = 2**53
MAX_POINTS = 10**7
MAX_SEEDS = 10**6
MAX_SEED = MAX_INT
PARAM_COPIES = 4  # parameters, gradient, updated parameters, the kept copy of a frozen seed
ACTIVATION_COPIES = 3  # pre-activations, activations and their gradient, per sample and neuron


def machine_memory() -> int:
    """Bytes of memory this process may use: the physical memory, or a smaller cgroup limit."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 1 << 62
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            total = min(total, int(Path(limit).read_text().strip()))
        except (OSError, ValueError):
            pass
    return total


def memory_maps() -> tuple[int, int] | None:
    """(memory mappings this process holds, the kernel's limit ``vm.max_map_count``), or None where
    /proc does not say (not Linux). Each compiled XLA:CPU program holds about 10 mappings, and at the
    limit the compiler's next mmap fails and the process dies (SIGSEGV or abort), so long processes
    watch this count (``train.loop.release_compiled_programs``)."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            count = sum(1 for _ in maps)
        limit = int(Path("/proc/sys/vm/max_map_count").read_text().strip())
    except (OSError, ValueError):
        return None
    return count, limit


def fmt_bytes(n: float) -> str:
    """A byte count in binary units: ``1.5e9`` -> ``'1.4 GiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} EiB"


def point_count(schedule: str, points: int, every: float | None, at: list | None, end: float,
                continuous: bool) -> float:
    """How many observation points a schedule gives at most (as a float: it may be astronomically large)."""
    if schedule == "log":
        return float(points) if continuous else float(min(points, end + 1))
    if schedule == "every":
        return math.floor(end / every) + 2 if every else 1.0
    return float(len(at or []) + 1)


def check_memory(cfg, n: int, d: int, per_point_bytes: float | None = None, memory: int | None = None) -> None:
    """Refuse a run whose arrays would not fit in memory, with the estimate; ``per_point_bytes`` is
    what one observation point records for every seed (None: not known yet)."""
    itemsize = 4 if cfg.precision == "float32" else 8
    seeds, width = cfg.seed_count(), cfg.width()
    per_seed = width * (d + 1)  # W [h, d] and v [h] (mean_field has no v: an upper bound)
    continuous = cfg.train.entry.continuous
    end = float(cfg.train.end)
    obs = cfg.observe
    count = point_count(obs.schedule, obs.points, obs.every, obs.at, end, continuous)
    parts = {
        "parameters": (float(seeds) * per_seed * itemsize * PARAM_COPIES, "model.width" if width >= seeds else "seeds"),
        "hidden activations": (float(seeds) * n * width * itemsize * ACTIVATION_COPIES, "model.width"),
        "data": (2.0 * n * d * itemsize, "data"),
        "observation points": (3.0 * 8 * max(count, float(obs.points)), f"observe.{_schedule_field(obs.schedule)}"),
    }
    if per_point_bytes is not None:
        parts["records"] = (count * per_point_bytes, f"observe.{_schedule_field(obs.schedule)}")
    total = sum(b for b, _ in parts.values())
    memory = machine_memory() if memory is None else memory
    if total <= memory:
        return
    name, (biggest, field) = max(parts.items(), key=lambda kv: kv[1][0])
    shapes = (f"{seeds} seed(s) x {width} neurons x {d} inputs, n = {n} samples, {count:.4g} observation points, "
              f"{cfg.precision}")
    raise ConfigError([(field, f"the run needs about {fmt_bytes(total)} of memory (the {name} alone "
                               f"{fmt_bytes(biggest)}; {shapes}), more than this machine's {fmt_bytes(memory)}")])


def _schedule_field(schedule: str) -> str:
    return {"log": "points", "every": "every", "at": "at"}[schedule]


def record_bytes(spec: dict) -> float:
    """Bytes one observation point records, from ``{name: (shape, dtype)}``."""
    return float(sum(np.prod(shape, dtype=float) * np.dtype(dtype).itemsize for shape, dtype in spec.values()))
