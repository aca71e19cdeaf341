"""Slack of the claim helpers, the bound helper, the slack flags and claim kinds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from twolayer.claims import (
    FLAG_NEAR_EDGE, FLAG_SAYS_LITTLE, Check, Experiment, Results, all_of, at_least, at_most, bound, close_to, compare,
    evaluate, holds, monotone, ordered, slack_flags, within,
)
from twolayer.claims.selftest import tiny_config

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)
positive = st.floats(1e-6, 1e6)


# -- values ---------------------------------------------------------------------------------------

def test_threshold_slack_is_the_relative_distance():
    assert at_most(0.5, 1.0).slack == pytest.approx(0.5)  # (1 - 0.5) / 1
    assert at_most(1.5, 1.0).slack == pytest.approx(-0.5)
    assert at_least(12.0, 10.0).slack == pytest.approx(0.2)
    assert at_least([12.0, 10.5], 10.0).slack == pytest.approx(0.05)  # the worst value
    assert compare(2.05, "<=", 2.0, tolerance=0.1).slack == pytest.approx(0.05 / 2.1)
    assert at_least(0.3, 0.0).slack == pytest.approx(1.0)  # bound 0: relative to max |m|
    assert close_to(1.01, 1.0, rtol=0.02).slack == pytest.approx(0.5)  # (0.02 - 0.01) / 0.02
    assert close_to(1.0, 1.0, atol=0.1).slack == pytest.approx(1.0)
    assert within(0.5, 0.0, 1.0).slack == pytest.approx(1.0)  # the centre
    assert within(0.9, 0.0, 1.0).slack == pytest.approx(0.2)  # 0.1 from the end, half-width 0.5
    assert within(1.2, 0.0, 1.0).slack == pytest.approx(-0.4)


def test_counts_are_one_unit_from_failing():
    assert at_least(3, 3).slack == pytest.approx(1 / 3) and at_least(2, 3).slack == 0.0 and not at_least(2, 3).passed
    assert at_most([0, 2], 2).slack == pytest.approx(0.5) and at_most(0, 0).slack == 1.0
    assert at_least(3.0, 3.0).slack == 0.0  # floats are measurements, not counts
    assert within(0, 0, 4).slack == pytest.approx(0.5) and within(0.0, 0, 4).slack == 0.0
    assert at_least(0.99995, 0.999, scale=1e-3).slack == pytest.approx(0.95)
    assert compare(0, "==", 0).slack == 1.0
    assert compare(3, "==", 0).slack == -3.0
    assert compare([0, 0, 2], "==", 0).slack == -2.0
    assert compare(0.5, "==", 0.5).slack == 0.0  # a float equality has no room
    assert close_to(2.0, 2.0).slack == 1.0


def test_non_finite_measurements_have_minus_infinite_slack():
    assert at_most(math.nan, 1.0).slack == -math.inf
    assert within([0.5, math.inf], 0, 1).slack == -math.inf
    assert monotone([1.0, math.nan, 0.5]).slack == -math.inf


def test_an_undefined_interval_fails_instead_of_raising():
    """A fit with too few points gives NaN bounds: the check fails (slack -inf), it does not crash."""
    check = within(0.0, math.nan, math.nan)
    assert not check.passed and check.slack == -math.inf


def test_monotone_slack():
    c = monotone([1.0, 1.0 + 0.5e-9, 0.5], "non-increasing", atol=1e-9)
    assert c.passed and c.slack == pytest.approx(0.5)  # (1e-9 - 0.5e-9) / 1e-9
    c = monotone([3.0, 2.0, 0.0], "decreasing")
    assert c.passed and c.slack == pytest.approx(0.5)  # smallest decrease 1 over the largest step 2
    assert monotone([3.0, 3.0, 1.0], "decreasing").slack == 0.0 and not monotone([3.0, 3.0, 1.0], "decreasing").passed


def test_ordered_slack_is_the_smallest_relative_gap():
    c = ordered({"a": 1.0, "b": 2.0, "c": 10.0}, ["a", "b", "c"])
    assert c.passed and c.slack == pytest.approx(0.5)
    assert ordered({"a": 1.0, "b": 2.0}, ["b", "a"]).slack == pytest.approx(-0.5)
    assert ordered({"a": 1.0}, ["a", "b"]).slack == -math.inf


def test_holds_has_no_slack_unless_given_and_all_of_takes_the_smallest():
    assert holds(True, "x").slack is None and holds(True, "x", slack=0.3).slack == 0.3
    both = all_of(at_most(0.5, 1.0), at_least(12.0, 10.0))
    assert both.slack == pytest.approx(0.2)
    assert all_of(at_most(0.5, 1.0), holds(True, "yes")).slack == pytest.approx(0.5)
    assert all_of(at_most(0.5, 1.0), holds(False, "no")).slack is None  # how far the failed part is: unknown


# -- bounds ---------------------------------------------------------------------------------------

def test_bound_slack_is_log10_of_the_ratio():
    c = bound(1e-3, "<=", 1.0)
    assert c.passed and c.slack == pytest.approx(3.0) and c.slack_unit == "log10"
    assert bound(2.0, "<=", 1.0).slack == pytest.approx(-math.log10(2.0)) and not bound(2.0, "<=", 1.0).passed
    assert bound([0.5, 0.01], "<=", 1.0).slack == pytest.approx(math.log10(2.0))  # the tightest value
    assert bound(50.0, ">=", 5.0).slack == pytest.approx(1.0)  # a lower bound: log10(m / bound)
    assert bound(0.0, "<=", 1.0).slack == math.inf and bound(0.0, ">=", 1.0).slack == -math.inf
    assert bound(math.nan, "<=", 1.0).slack == -math.inf and not bound(math.nan, "<=", 1.0).passed
    assert all_of(bound(1e-3, "<=", 1.0), bound(1.0, "<=", 10.0)).slack_unit == "log10"
    assert all_of(bound(1e-3, "<=", 1.0), at_most(0.5, 1.0)).slack_unit == "relative"
    with pytest.raises(ValueError, match="positive"):
        bound(1.0, "<=", 0.0)
    with pytest.raises(ValueError, match="op"):
        bound(1.0, "==", 1.0)


@given(m=finite, b=finite)
def test_slack_sign_agrees_with_the_outcome(m, b):
    for check in (at_most(m, b), at_least(m, b), compare(m, "<", b), compare(m, ">", b), within(m, min(b, 0), max(b, 0))):
        assert (check.slack >= 0) == check.passed or (check.slack == 0 and not check.passed), check


@given(m=st.integers(-1000, 1000), b=st.integers(-1000, 1000))
def test_count_slack_is_positive_exactly_when_it_passes(m, b):
    for check in (at_most(m, b), at_least(m, b), within(m, min(b, 0), max(b, 0) + 1)):
        assert (check.slack > 0) == check.passed, check


@given(m=positive, b=positive)
def test_bound_slack_sign_agrees_with_the_outcome(m, b):
    for op in ("<=", ">="):
        c = bound(m, op, b)
        assert (c.slack >= 0) == c.passed, c


# -- flags ----------------------------------------------------------------------------------------

def test_slack_flags():
    assert slack_flags("bound", 2.5, True) == [FLAG_SAYS_LITTLE]  # holds by 10^2.5 > 100x
    assert slack_flags("bound", 1.9, True) == []
    assert slack_flags("bound", 0.01, True) == [FLAG_NEAR_EDGE]  # measured > 0.95 bound
    assert slack_flags("prediction", 0.03, True) == [FLAG_NEAR_EDGE]
    assert slack_flags("prediction", 0.3, True) == []
    assert slack_flags("prediction", 50.0, True) == []  # "says little" is for bounds only
    assert slack_flags("bound", 3.0, False) == [] and slack_flags(None, None, True) == []
    assert slack_flags("bound", "inf", True) == [FLAG_SAYS_LITTLE]  # as stored in claims.json


# -- kinds ----------------------------------------------------------------------------------------

def test_claim_kinds_are_validated_and_bounds_must_report_log10_slack():
    exp = Experiment("zz/kinds", "t", "f", "d", tiny_config)
    with pytest.raises(ValueError, match="kind"):
        exp.claim("x", "s", kind="guess")
    exp.claim("fake-bound", "a threshold dressed as a bound", kind="bound")(lambda r: at_most(0.5, 1.0))
    exp.claim("true-bound", "a bound", kind="bound")(lambda r: bound(0.5, "<=", 1.0))
    exp.claim("not-a-check", "junk", kind="prediction")(lambda r: Check("x", 1, True))
    claims = {c.id.split(":")[1]: c for c in evaluate(exp, Results(exp, "quick", {}))}
    assert not claims["fake-bound"].evaluated and "kind 'bound'" in claims["fake-bound"].details
    assert claims["true-bound"].passed and claims["true-bound"].slack == pytest.approx(math.log10(2.0))
    assert claims["not-a-check"].kind == "prediction" and claims["not-a-check"].slack is None


def test_every_registered_slack_is_a_number_or_none_in_json():
    check = Check(1.0, np.array([1.0]), True, slack=np.float64(0.25))
    from twolayer.claims import Claim

    assert Claim.from_check("a/b:c", "a/b", "s", check).slack == 0.25
