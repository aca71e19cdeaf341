"""Claims: a theory prediction compared with a measured value.

A claim function maps an experiment's runs to a ``Check`` (``predicted``, ``measured``,
``tolerance``, ``passed``, ``details``), built with the helpers below; the reproduce driver turns it
into a ``Claim`` record by adding the claim's id, experiment and statement. ``predicted`` is a
number (``close_to``), an interval ``[lo, hi]`` (``within``) or a relation string (``relation``:
``"<= 2"``, ``monotone``: ``"decreasing"``, ``ordered``: ``"order 0 before order 2 before order 4"``).
All helpers are pure functions of their arguments and produce JSON-ready values.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from twolayer.registry import Registry


@dataclass(frozen=True)
class Check:
    """The outcome of comparing one prediction with one measurement."""

    predicted: Any
    measured: Any
    passed: bool
    tolerance: Any = None
    details: str = ""


@dataclass(frozen=True)
class Claim:
    """One checked claim, as stored in ``claims.json``."""

    id: str
    experiment: str
    statement: str
    predicted: Any
    measured: Any
    tolerance: Any
    passed: bool
    details: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_check(cls, id: str, experiment: str, statement: str, check: Check) -> Claim:
        return cls(id, experiment, statement, jsonable(check.predicted), jsonable(check.measured),
                   jsonable(check.tolerance), bool(check.passed), check.details)

    @classmethod
    def failed(cls, id: str, experiment: str, statement: str, details: str) -> Claim:
        """A claim that could not be evaluated (a run failed, the claim function raised)."""
        return cls(id, experiment, statement, None, None, None, False, details)


def jsonable(x: Any) -> Any:
    """Numbers, arrays and containers as plain JSON values; non-finite floats become strings."""
    if isinstance(x, np.ndarray):
        return [jsonable(v) for v in x.tolist()] if x.ndim else jsonable(x.item())
    if isinstance(x, np.generic):
        return jsonable(x.item())
    if isinstance(x, bool) or x is None or isinstance(x, str | int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, Sequence):
        return [jsonable(v) for v in x]
    return str(x)


def fmt(x: Any) -> str:
    """A short human-readable rendering of a predicted or measured value."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, list | tuple):
        return "[" + ", ".join(fmt(v) for v in x) + "]"
    if isinstance(x, Mapping):
        return ", ".join(f"{k}: {fmt(v)}" for k, v in x.items())
    return str(x)


def _values(measured) -> np.ndarray:
    return np.atleast_1d(np.asarray(measured, dtype=np.float64))


def _scalar_or_list(a: np.ndarray, measured):
    """``a`` back in the shape of ``measured``: a scalar or a list, integers kept as integers."""
    if np.issubdtype(np.asarray(measured).dtype, np.integer):
        a = a.astype(np.int64)
    return a[0].item() if np.ndim(measured) == 0 else a.tolist()


# -- numbers and intervals --------------------------------------------------------------------

def close_to(measured, expected: float, *, rtol: float = 0.0, atol: float = 0.0, details: str = "") -> Check:
    """Passes iff every measured value satisfies ``|m - expected| <= atol + rtol |expected|``."""
    m = _values(measured)
    allowed = atol + rtol * abs(expected)
    passed = bool(np.all(np.isfinite(m)) and np.all(np.abs(m - expected) <= allowed))
    tol = " + ".join(part for part in (f"±{atol:g}" if atol else "", f"±{100 * rtol:g}%" if rtol else "") if part)
    return Check(float(expected), _scalar_or_list(m, measured), passed, tol or "exact", details)


def within(measured, lo: float, hi: float, *, details: str = "") -> Check:
    """Passes iff every measured value lies in the closed interval ``[lo, hi]``."""
    m = _values(measured)
    passed = bool(np.all(np.isfinite(m)) and np.all((m >= lo) & (m <= hi)))
    return Check([float(lo), float(hi)], _scalar_or_list(m, measured), passed, None, details)


# -- relations: "<= 2", "> 0", "== 0" ---------------------------------------------------------

RELATIONS: Registry[Callable[[Any, Any], Any]] = Registry("relation")
for _op, _fn in (("<=", operator.le), ("<", operator.lt), (">=", operator.ge), (">", operator.gt),
                 ("==", operator.eq), ("!=", operator.ne)):
    RELATIONS.register(_op, _fn)

_RELATION = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*(\S+)\s*$")


def compare(measured, op: str, bound: float, *, tolerance: float = 0.0, details: str = "") -> Check:
    """Passes iff ``m op bound`` for every measured value, with ``tolerance`` of slack in the
    direction of the relation (``<=``/``<`` allow ``bound + tolerance``, ``>=``/``>`` allow
    ``bound - tolerance``, ``==`` allows ``|m - bound| <= tolerance``)."""
    fn = RELATIONS.get(op)
    m = _values(measured)
    slack = {"<=": tolerance, "<": tolerance, ">=": -tolerance, ">": -tolerance}.get(op, 0.0)
    if op == "==" and tolerance:
        ok = np.abs(m - bound) <= tolerance
    else:
        ok = np.array([fn(float(x), bound + slack) for x in m], dtype=bool)
    passed = bool(np.all(np.isfinite(m)) and np.all(ok))
    return Check(f"{op} {bound:g}", _scalar_or_list(m, measured), passed, tolerance or None, details)


def relation(measured, predicted: str, *, tolerance: float = 0.0, details: str = "") -> Check:
    """``compare`` from a string such as ``"<= 2"`` or ``"> 0.5"``."""
    match = _RELATION.match(predicted)
    if not match:
        raise ValueError(f"relation {predicted!r} is not '<op> <number>' with op one of {', '.join(RELATIONS)}")
    return compare(measured, match.group(1), float(match.group(2)), tolerance=tolerance, details=details)


def at_most(measured, bound: float, **kw) -> Check:
    return compare(measured, "<=", bound, **kw)


def at_least(measured, bound: float, **kw) -> Check:
    return compare(measured, ">=", bound, **kw)


# -- monotone series ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Monotone:
    sign: float  # +1: the series should go down (violations are increases); -1: up
    strict: bool


MONOTONE: Registry[Monotone] = Registry("monotone")
MONOTONE.register("decreasing", Monotone(+1.0, True))
MONOTONE.register("non-increasing", Monotone(+1.0, False))
MONOTONE.register("increasing", Monotone(-1.0, True))
MONOTONE.register("non-decreasing", Monotone(-1.0, False))


def monotone(series, kind: str = "non-increasing", *, rtol: float = 0.0, atol: float = 0.0,
             details: str = "") -> Check:
    """Passes iff ``series`` (last axis = time; leading axes such as seeds are all checked) is
    monotone. ``measured`` is the worst step against the trend (an increase for decreasing kinds),
    allowed up to ``atol + rtol * max|series|``; strict kinds need it below that, not equal."""
    spec = MONOTONE.get(kind)
    x = np.asarray(series, dtype=np.float64)
    if x.shape[-1] < 2:
        return Check(kind, None, False, None, "needs at least two points")
    steps = spec.sign * np.diff(x, axis=-1)
    worst = float(np.max(steps))
    allowed = atol + rtol * float(np.max(np.abs(x)))
    ok = worst < 0.0 if spec.strict and not allowed else worst <= allowed
    passed = bool(np.all(np.isfinite(x)) and ok)
    where = np.unravel_index(int(np.argmax(steps)), steps.shape)
    note = f"worst step at index {tuple(int(i) for i in where)}" if x.ndim > 1 else f"worst step at index {int(where[0])}"
    tol = None if not allowed else f"{allowed:.3g}"
    return Check(kind, worst, passed, tol, "; ".join(p for p in (details, note) if p))


# -- orders of events ---------------------------------------------------------------------------

def ordered(times: Mapping[str, float], order: Sequence[str], *, details: str = "") -> Check:
    """Passes iff the events happen in ``order`` (strictly increasing times; a NaN or missing
    time means the event never happened and fails). ``measured`` lists the observed order."""
    names = list(order)
    vals = {k: float(times[k]) if k in times and times[k] is not None else math.nan for k in names}
    happened = sorted((v, k) for k, v in vals.items() if math.isfinite(v))
    never = [k for k, v in vals.items() if not math.isfinite(v)]
    measured = " before ".join(f"{k} ({v:.4g})" for v, k in happened)
    if never:
        measured += ("; " if measured else "") + "never: " + ", ".join(never)
    seq = [vals[k] for k in names]
    passed = not never and all(a < b for a, b in zip(seq, seq[1:]))
    return Check(" before ".join(names), measured, passed, None, details)


# -- booleans and combinations ----------------------------------------------------------------

def holds(condition: bool, predicted: str, measured: Any = None, *, details: str = "") -> Check:
    """A yes/no claim: ``predicted`` describes what must hold, ``measured`` what was seen."""
    return Check(predicted, condition if measured is None else measured, bool(condition), None, details)


def all_of(*checks: Check, details: str = "") -> Check:
    """A compound claim that passes iff every part passes (e.g. ``t0 < t2`` and ``t2 >= 10 t0``)."""
    return Check(" and ".join(fmt(c.predicted) for c in checks), [c.measured for c in checks],
                 all(c.passed for c in checks), [c.tolerance for c in checks] if any(c.tolerance for c in checks) else None,
                 "; ".join(p for p in [details, *(c.details for c in checks)] if p))
