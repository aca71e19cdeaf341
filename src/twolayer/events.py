"""Events: named moments detected from a finished trajectory (phase times, thresholds).

A detector is ``fn(trajectory, cfg) -> {event_name: value}`` registered with ``@event("name",
needs=("loss",))``; it runs after every run whose trajectory has the observables it needs, and
its results land in ``summary.json`` under ``events`` (a list over seeds for batched runs,
``None`` when the event did not happen).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twolayer.registry import Entry, Registry


@dataclass(frozen=True, kw_only=True)
class EventDetector(Entry):
    """A registered event: ``fn(trajectory of ONE seed: {"t": [T], name: [T, ...]}, cfg) -> {event: float |
    None}``; ``needs`` names the observables it reads (not context arrays: events run after the run), ``marks`` those
    of them whose recording shows that a run sets out to observe this event (all of ``needs`` unless a need is a
    generic observable, as ``v`` is for ``t1``)."""

    marks: tuple[str, ...] = ()


EVENTS: Registry[EventDetector] = Registry("event")


def event(name: str, *, needs: tuple[str, ...], marks: tuple[str, ...] | None = None):
    """Decorator: register ``fn(trajectory of one seed, cfg) -> {event: time or None}`` as the event
    detector ``name``; it runs after every run whose trajectory holds the outputs in ``needs``. ``marks`` (default:
    ``needs``): the needs whose recording means the run meant to observe the event (``unrecorded_needs``).
    """
    def decorator(fn):
        EVENTS.register(name, EventDetector(name=name, fn=fn, doc=(fn.__doc__ or "").strip(), needs=tuple(needs),
                                            marks=tuple(needs if marks is None else marks)))
        return fn

    return decorator


def first_time(t: np.ndarray, mask: np.ndarray) -> float | None:
    """The first time at which ``mask`` holds, or None."""
    hits = np.flatnonzero(mask)
    return float(t[hits[0]]) if hits.size else None


def detect_events(trajectory: dict, cfg) -> dict:
    """Run every applicable detector on every seed of a trajectory."""
    batched = cfg.batched
    seeds = len(cfg.seed_list())
    out: dict = {}
    for _, det in EVENTS.items():
        if not all(n in trajectory for n in det.needs):
            continue
        per_seed = []
        for s in range(seeds if batched else 1):
            one = {"t": trajectory["t"], **{n: (trajectory[n][s] if batched else trajectory[n]) for n in det.needs}}
            per_seed.append(det.fn(one, cfg))
        for key in per_seed[0]:
            values = [_plain(r[key]) for r in per_seed]
            out[key] = values if batched else values[0]
    return out


def unrecorded_needs(recorded) -> dict[str, tuple[str, ...]]:
    """The events that cannot be detected although the run set out to observe them: event -> the outputs it
    ``needs`` that are not in ``recorded``, listed when some of its ``marks`` are recorded (t1 with ``cone`` but not
    ``v``). An event none of whose marks is recorded is not listed (the run did not set out to observe it: an
    online-SGD run records ``v``, an order parameter, and has no ``cone`` for t1)."""
    recorded = set(recorded)
    out = {}
    for name, det in EVENTS.items():
        missing = tuple(n for n in det.needs if n not in recorded)
        if missing and any(n in recorded for n in det.marks):
            out[name] = missing
    return out


def _plain(v):
    if v is None:
        return None
    v = float(v)
    return None if not np.isfinite(v) else v


@event("loss_halved", needs=("loss",))
def loss_halved(traj, cfg):
    """The first observed time at which the loss is at most half its initial value."""
    loss = traj["loss"]
    return {"loss_halved": first_time(traj["t"], loss <= 0.5 * loss[0])}
