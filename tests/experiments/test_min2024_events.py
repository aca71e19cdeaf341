"""The event-table analysis of the min2024 exact-flow experiments (``experiments/min2024/_events.py``):
patterns rebuilt from events (with parallel points sharing a hyperplane), the direction of each change,
activation-count paths, and the travel time of the maximal path against Theorem 1's T(P_max)."""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.falsifiers import SyntheticRun
from twolayer.papers.min2024._events import (
    event_table, maximal_path, outside, parallel_groups, paths, timelines, travel_time,
)
from twolayer.theory import alignment as th

# x1 (+), x2 (+), x3 = -2 x1 (-: the same hyperplane as x1, opposite side)
DATA = {"kind": "toy2d", "pos_angles": [0.0, 90.0], "neg_angles": [180.0], "radii": [1.0, 1.0, 2.0]}


def _run(rows, start, v0):
    """A synthetic run on DATA: one seed, ``start`` [h, n] initial pattern, events (t, neuron, point, kind, side)."""
    cfg = {"data": DATA, "model": {"kind": "two_layer", "activation": "relu", "width": len(v0)},
           "init": {"kind": "gaussian", "scale": 1.0}, "train": {"method": "gd", "lr": 0.1, "steps": 1},
           "observe": {"metrics": ["activation_pattern", "v"]}}
    table = {"t": np.array([r[0] for r in rows], float), "seed": np.zeros(len(rows), int),
             "neuron": np.array([r[1] for r in rows]), "point": np.array([r[2] for r in rows]),
             "kind": np.array([r[3] for r in rows]), "side": np.array([r[4] for r in rows]),
             "lam": np.zeros(len(rows))}
    T = 3
    return SyntheticRun(cfg, {"t": np.arange(T, dtype=float),
                              "activation_pattern": np.repeat(np.asarray(start, np.int8)[None], T, axis=0),
                              "v": np.tile(np.asarray(v0, float), (T, 1))}, summary={"event_table": table})


def test_parallel_points_share_a_hyperplane():
    rep, orient = parallel_groups(np.array([[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0], [3.0, 1e-14]]))
    assert list(rep) == [0, 1, 0, 0] and list(orient) == [1, 1, -1, 1]


def test_timeline_rebuilds_patterns_and_directions():
    """Neuron 0 (V+) active on x3 = -2 x1 only: crossing x1's hyperplane gains x1 and loses x3 at once (both
    the right way); a slide onto x2's plane with x2 inactive changes nothing; neuron 1 (V+) crossing back
    loses x1, a positive point, and gains x3, a negative one: both the wrong way."""
    run = _run([(0.5, 0, 0, "cross", 1), (0.7, 0, 1, "slide", 0), (0.9, 1, 0, "cross", -1)],
               start=[[0, 0, 1], [1, 0, 0]], v0=[1.0, 2.0])
    (tl0, tl1), = timelines(run)
    assert [(c.t, c.point, c.gained, c.right) for c in tl0.changes] == [(0.5, 0, True, True), (0.5, 2, False, True)]
    assert [p.tolist() for _, p in tl0.patterns()] == [[False, False, True], [True, False, False]]
    assert [(c.point, c.gained, c.right) for c in tl1.changes] == [(0, False, False), (2, True, False)]
    edges = paths(run)[0]
    assert [(e.counts, e.start, e.end) for e in edges] == [((0, 1), 0.0, 0.5), ((1, 0), 0.5, math.inf)]
    assert outside(edges[0], [1, 1, -1]) and outside(edges[1], [1, 1, -1])  # (1, 0) is not S+ (n+ = 2)
    assert event_table(run)["kind"].tolist() == ["cross", "slide", "cross"]


def test_fail_rows_change_nothing():
    run = _run([(0.0, 0, 0, "fail", -1)], start=[[1, 0, 1]], v0=[1.0])
    assert timelines(run)[0][0].changes == ()


def test_maximal_path_travel_time_is_theorem_T_Pmax():
    """App. C.2: T(P_max) = 4/(m sqrt(mu) X_min) (H(n-) + 1/2 + H(n+ - 1)) (TOY-A, n+ = 3, n- = 2)."""
    assert maximal_path(3, 2) == [(0, 2), (0, 1), (1, 1), (1, 0), (2, 0), (3, 0)]
    assert maximal_path(2, 0) == [(1, 0), (2, 0)]
    X = np.array([[math.cos(math.radians(a)), math.sin(math.radians(a))] for a in (20, 35, 50, 240, 255)])
    y = np.array([1, 1, 1, -1, -1.0])
    W0 = np.random.default_rng(0).normal(size=(6, 2))
    q = th.theorem_quantities(X, y, W0, np.linalg.norm(W0, axis=1) * [1, -1, 1, -1, 1, -1], 1e-8)
    assert abs(travel_time(maximal_path(3, 2), q.delta_t) - q.T_Pmax) <= 1e-12 * q.T_Pmax
