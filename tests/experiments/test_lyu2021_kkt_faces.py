"""lyu2021.kkt_faces: the face census of KKT-margin directions (kinks included) and its exact LP verification
(issue 27, section 1: Figure 1 left on symmetric data)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twolayer.papers.lyu2021 import kkt_faces as kf
from twolayer.theory import margin as th
from twolayer.theory.kkt import random_margin_net

ALPHA = 0.2


def pairs(*degrees):
    """Points at the given angles (y = +1) and their mirror images (y = -1): symmetric data."""
    ang = np.deg2rad(degrees)
    Xp = np.stack([np.cos(ang), np.sin(ang)], axis=1)
    return np.vstack([Xp, -Xp]), np.concatenate([np.ones(len(ang)), -np.ones(len(ang))])


def gamma_max(X, y):
    return th.global_max_margin(X, y, ALPHA, th.max_margin_linear(X, y)[1])


def test_arrangement_of_two_lines():
    faces = kf.arrangement(pairs(0, 120)[0])  # the 4 points lie on 2 lines: 4 rays, 4 arcs
    assert [f.kind for f in faces].count("ray") == 4 and [f.kind for f in faces].count("arc") == 4


def test_exact_kkt_global_max_and_a_random_net():
    X, y = pairs(0, 120)
    w, _ = th.max_margin_linear(X, y)
    assert kf.exact_kkt(np.array([w, -w]), np.array([1.0, -1.0]), X, y, ALPHA).residual < 1e-14
    W, a = random_margin_net(X, y, ALPHA, 3, np.random.default_rng(3))
    assert kf.exact_kkt(W, a, X, y, ALPHA).residual > 1e-3


def test_census_finds_the_kinked_nonlinear_point_at_120_degrees():
    X, y = pairs(0, 120)
    c = kf.census(X, y, ALPHA, 3)
    ratios = sorted(p.margin / gamma_max(X, y) for p in c.kkt())
    assert ratios == pytest.approx([1 / 3, 4 * math.sqrt(3) - 6, 1.0], abs=1e-9)  # 4 sqrt 3 - 6 = 0.9282
    (p,) = c.kkt(linear=False)
    assert p.exact.residual < 1e-13 and len(p.exact.kinks) == 4 and p.crossings == 2 and p.boundary_dev > 10
    assert max(p.exact.kink_slopes.values()) > ALPHA + 0.1  # a Clarke slope strictly inside [alpha, 1]
    # the same point without the Clarke subdifferential (kinks read with phi'(0) = alpha) is not KKT
    assert kf.exact_kkt(p.W, p.a, X, y, ALPHA, kink_tol=0.0).residual > 1e-3


def test_census_on_acute_pairs_has_only_linear_kkt_points():
    X, y = pairs(0, 60)
    c = kf.census(X, y, ALPHA, 3)
    ratios = sorted(p.margin / gamma_max(X, y) for p in c.kkt())
    assert ratios == pytest.approx([1 / 3, 1.0], abs=1e-9) and not c.kkt(linear=False)
    assert c.best_nonlinear_residual > 0.1


def test_distinct_a7_data_meets_a5_as_worded_with_a_negative_support_vector():
    """The w^+ != w* data of nonsymmetric-general: all-negative nets (width <= 2) stay below gamma^+/2 (A.5 as the
    paper words it), a negative point is a support vector of {(x^+, y)}, and w^+ is 30 degrees from w*."""
    from twolayer.config import load_config
    from twolayer.data import build_dataset
    from twolayer.papers.lyu2021.nonsymmetric_general import DISTINCT_DATA

    d = build_dataset(load_config({"data": DISTINCT_DATA}).data)
    checks = th.hinted_prechecks(d.X, d.y, ALPHA)
    assert checks["mu_plus_classifies_all"] and checks["A3_mu_plus_larger"] and not checks["A5_support_vectors_positive"]
    assert math.degrees(math.acos(checks["cos_wplus_wstar"])) == pytest.approx(30.0, abs=0.1)
    negative = kf.census(d.X, d.y, ALPHA, 2, signs=(-1,))
    assert max(p.margin for p in negative.points) < 0.75 * checks["gamma_plus"] / 2
