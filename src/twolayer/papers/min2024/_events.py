"""The exact flow's event table (``events.npz`` of a ``flow_exact`` run) as the theory reads it.

A row is one event (``t, seed, neuron, point, kind, side, lam``; kind cross, slide, release, nonunique
or fail; ``side`` the neuron's side of the point's hyperplane afterwards: +1 active, -1 inactive, 0 on
it). With sigma'(0) = 0 a neuron on a hyperplane does not activate that point, so after an event
point i is active for neuron j iff side = +1. From the initial activation pattern and the events this
module rebuilds each neuron's pattern between events (Fig. 4), its activation-count path (k+, k-)
(App. C.2, Figs. 14-17), the direction of every pattern change (eq. 46), and the durations of the
path's edges against the bound Delta t(n_a) = 4 / (min{zeta, xi} sqrt(mu) X_min n_a) (App. C.2).

Parallel data points share one hyperplane; an event names the group's first point, and the other
members change with it (x_k = c x_i: the same side for c > 0, the opposite side for c < 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twolayer.papers.min2024._shared import data_of
from twolayer.store import EVENTS

COLUMNS = ("t", "seed", "neuron", "point", "kind", "side", "lam")
PARALLEL_TOL = 1e-12  # |cos(x_i, x_k)| >= 1 - this: one hyperplane (as train/kinks.py groups them)


def event_table(run) -> dict[str, np.ndarray]:
    """The event table of a run: ``events.npz`` in its directory, or ``summary["event_table"]`` (a
    synthetic run). Raises FileNotFoundError for a run of a method that records no events."""
    given = run.summary.get("event_table")
    if given is not None:
        return {k: np.asarray(given[k]) for k in COLUMNS}
    path = run.path / EVENTS
    if not path.is_file():
        raise FileNotFoundError(f"run {run.path.name} has no events.npz (only method flow_exact records events)")
    with np.load(path) as f:
        return {k: np.asarray(f[k]) for k in COLUMNS}


def seed_values(run) -> list[int]:
    """The seed of each batch index (the event table's ``seed`` column holds seeds, not indices)."""
    seeds = run.config.get("seeds")
    if seeds is None:
        return [int(run.config.get("seed", 0) or 0)]
    return list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]


def parallel_groups(X) -> tuple[np.ndarray, np.ndarray]:
    """(rep [n], orient [n]): each point's group representative (the first parallel point) and
    x_k = orient_k c x_rep with c > 0."""
    X = np.asarray(X, dtype=np.float64)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    rep, orient = np.arange(len(X)), np.ones(len(X))
    for k in range(len(X)):
        for i in range(k):
            if rep[i] == i and abs(U[i] @ U[k]) >= 1 - PARALLEL_TOL:
                rep[k], orient[k] = i, np.sign(U[i] @ U[k])
                break
    return rep, orient


@dataclass(frozen=True)
class Change:
    """One change of a neuron's activation pattern: at time ``t`` point ``point`` became active
    (``gained``) or inactive; ``kind`` is the event's; ``right`` whether it goes the way eq. 46 allows
    (y_i sign(v_j) <x_i, w_j> increasing: a V+ neuron gains positives and loses negatives)."""

    t: float
    point: int
    kind: str
    gained: bool
    right: bool


@dataclass(frozen=True)
class Timeline:
    """One neuron's activation pattern over time: ``start`` [n] at t = 0, then ``changes`` in time
    order; ``sign`` is sign(v_j(0))."""

    seed: int
    neuron: int
    sign: float
    start: np.ndarray
    changes: tuple[Change, ...]

    def patterns(self) -> list[tuple[float, np.ndarray]]:
        """(time from which it holds, pattern [n]) for the start and after each change."""
        out, cur = [(0.0, self.start.copy())], self.start.copy()
        for c in self.changes:
            cur = cur.copy()
            cur[c.point] = c.gained
            if out[-1][0] == c.t:
                out[-1] = (c.t, cur)
            else:
                out.append((c.t, cur))
        return out


def timelines(run) -> list[list[Timeline]]:
    """[seed][neuron] timelines of a flow_exact run, from its initial ``activation_pattern`` (observed)
    and ``v``, and its event table (fail rows change nothing)."""
    X, y = data_of(run)
    rep, orient = parallel_groups(X)
    members = {i: np.flatnonzero(rep == i) for i in np.unique(rep)}
    start = run.seeded("activation_pattern")[:, 0].astype(bool)  # [S, h, n]
    v0 = run.seeded("v")[:, 0]
    table = event_table(run)
    order = np.argsort(table["t"], kind="stable")
    table = {k: table[k][order] for k in COLUMNS}
    out = []
    for s, seed in enumerate(seed_values(run)):
        mine = (table["seed"] == seed) & (table["kind"] != "fail")
        per = {j: [] for j in range(start.shape[1])}
        cur = start[s].copy()
        sign = np.sign(v0[s])
        for t, j, i, kind, side in zip(table["t"][mine], table["neuron"][mine], table["point"][mine],
                                       table["kind"][mine], table["side"][mine]):
            for k in members.get(int(rep[int(i)]), [int(i)]):
                active = (orient[k] * side) > 0
                if active == cur[j, k]:
                    continue
                cur[j, k] = active
                per[j].append(Change(float(t), int(k), str(kind), bool(active),
                                     bool(active == (y[k] * sign[j] > 0))))
        out.append([Timeline(s, j, float(sign[j]), start[s, j].copy(), tuple(per[j])) for j in range(start.shape[1])])
    return out


def own_cone(pattern: np.ndarray, y: np.ndarray, sign: float) -> bool:
    """Whether a pattern is the neuron's own cone: S+ (exactly the positives) for sign +1, S- for -1."""
    return bool(np.array_equal(pattern, (np.asarray(y) * sign) > 0))


@dataclass(frozen=True)
class Edge:
    """One edge of an activation-count path: the neuron (``sign`` = sign(v_j(0))) held ``counts``
    (k_own, k_other) = (active points of its own class, of the other) from ``start`` to ``end`` (inf:
    it never changed again)."""

    seed: int
    neuron: int
    sign: float
    counts: tuple[int, int]
    start: float
    end: float

    @property
    def n_a(self) -> int:
        return self.counts[0] + self.counts[1]


def counts_of(pattern, y, sign: float) -> tuple[int, int]:
    """(k_own, k_other): active points of the neuron's own class (y_i sign(v_j) > 0) and of the other."""
    own = (np.asarray(y) * sign) > 0
    return int(np.sum(pattern & own)), int(np.sum(pattern & ~own))


def paths(run) -> list[list[Edge]]:
    """Per neuron (seeds concatenated), the edges of its activation-count path, in the neuron's own
    terms (k_own, k_other): (k+, k-) for V+, (k-, k+) for V- (the paper's path for V+, mirrored)."""
    _, y = data_of(run)
    out = []
    for per_seed in timelines(run):
        for tl in per_seed:
            pats = tl.patterns()
            edges = [Edge(tl.seed, tl.neuron, tl.sign, counts_of(p, y, tl.sign), t0,
                          pats[k + 1][0] if k + 1 < len(pats) else math.inf) for k, (t0, p) in enumerate(pats)]
            out.append(edges)
    return out


def own_class_size(y, sign: float) -> int:
    """n_own: the number of points of the neuron's own class (n+ for V+, n- for V-)."""
    return int(np.sum((np.asarray(y) * sign) > 0))


def outside(edge: Edge, y) -> bool:
    """The neuron is neither in its own cone (k = (n_own, 0)) nor dead (k = (0, 0)) on this edge."""
    return edge.counts != (own_class_size(y, edge.sign), 0) and edge.counts != (0, 0)


def travel_time(counts: list[tuple[int, int]], delta_t) -> float:
    """T(P) = sum over the path's edges before its last vertex of Delta t(k_own + k_other) (App. C.2)."""
    return float(sum(delta_t(a + b) for a, b in counts[:-1]))


def maximal_path(n_own: int, n_other: int) -> list[tuple[int, int]]:
    """P_max (App. C.2): (0, n_other), (0, n_other - 1), ..., (0, 1), (1, 1), (1, 0), (2, 0), ..., (n_own, 0)."""
    path = ([(0, k) for k in range(n_other, 0, -1)] + [(1, 1)]) if n_other else []
    path += [(k, 0) for k in range(1, n_own + 1)]
    return path
