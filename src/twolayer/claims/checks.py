"""Claims: a theory prediction compared with a measured value.

A claim function maps an experiment's runs to a ``Check`` (``predicted``, ``measured``,
``tolerance``, ``passed``, ``slack``, ``details``), built with the helpers below; the reproduce
driver turns it into a ``Claim`` record by adding the claim's id, experiment, statement, kind and
falsifiers. ``predicted`` is a number (``close_to``), an interval ``[lo, hi]`` (``within``), a
relation string (``relation``: ``"<= 2"``, ``monotone``: ``"decreasing"``, ``ordered``: ``"order 0
before order 2 before order 4"``) or a proven inequality (``bound``).

**Slack** is how far a check was from failing, as a dimensionless number (positive: passed with
room; negative: failed by that much; the worst value when several are measured):

- thresholds (``close_to``, ``within``, ``compare``/``relation``, ``monotone``, ``ordered``): the
  distance to the threshold divided by the threshold's scale: ``(bound - m) / |bound|`` for
  ``m <= bound`` (a ``scale=`` argument names another scale), ``(allowed - |m - x|) / allowed`` for
  ``close_to``, the distance to the nearer end over the half-width for ``within``, the distance to
  the allowed step over the allowed step for ``monotone``, the smallest relative gap ``(t_next - t)
  / t_next`` for ``ordered``. For counts (integers) against whole-number limits the nearest failing
  count is one unit past the limit, and that unit is part of the distance (``at_least(3, 3)``: 1/3;
  an exact equality of counts: 1); an equality of other numbers has no room (0);
- bounds (``bound``): ``log10(bound / measured)`` (2 means the bound holds by a factor 100);
- ``holds`` (a yes/no outcome) has no slack unless the caller gives one; ``all_of`` takes the
  smallest slack of its parts.

``slack_flags`` names the two cases the report marks: a bound that holds by more than 100x
("holds, but says little") and a claim that passed within 5 % of its threshold ("near the edge").
All helpers are pure functions of their arguments and produce JSON-ready values.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from twolayer.registry import Registry


# What a claim is (``Experiment.claim(kind=...)``): a statement about the dynamics, a proven
# inequality whose slack is reported, or an identity the engine must satisfy.
KINDS: Registry[str] = Registry("claim kind")
KINDS.register("prediction", "a statement of a theorem, lemma or figure about the dynamics")
KINDS.register("bound", "a proven inequality; its slack is log10(bound / measured)")
KINDS.register("consistency", "an identity the engine must satisfy, such as a conservation law")
KINDS.register("finding", "a statement of the paper that the simulation contradicts at the paper's own settings: "
                          "kept in the paper's words, expected to fail, with the numbers and the explanation")
KINDS.register("extrapolation", "the project's extension of a paper's statement to a setting the paper states "
                                "nothing for (another dataset, say): held to a prediction's standard, counted apart")
# The kinds held to a prediction's standard: a counterfactual run on which they fail, the frozen / reversed /
# scrambled probes
PREDICTIVE_KINDS = ("prediction", "extrapolation")

# Where a check's tolerance comes from (``Experiment.claim(tolerance_source="paper: ...")``): the report shows it
# beside the slack, and the exploratory ones are counted as such.
TOLERANCE_SOURCES: Registry[str] = Registry("tolerance source")
TOLERANCE_SOURCES.register("paper", "the paper's own statement (quote it: 'paper: \"after ~2000 iterations\"')")
TOLERANCE_SOURCES.register("derived", "a bound derived from the theory (say which)")
TOLERANCE_SOURCES.register("solver", "the solver's accuracy (rtol, atol, event tolerance)")
TOLERANCE_SOURCES.register("spread", "the seed-to-seed spread measured over N seeds at this scale")
TOLERANCE_SOURCES.register("exploratory", "taken from earlier runs, to be replaced by one of the others")
TOLERANCE_SOURCES.register("none", "the check has no tolerance (an exact count, an order, a yes/no outcome)")


def tolerance_source(text: str) -> str:
    """``text`` when it is ``SOURCE`` or ``SOURCE: detail`` with SOURCE one of ``TOLERANCE_SOURCES``, else
    ``ValueError`` naming them."""
    source = str(text).split(":", 1)[0].strip()
    if source not in TOLERANCE_SOURCES:
        raise ValueError(f"tolerance source {text!r} does not start with one of {', '.join(TOLERANCE_SOURCES.names())}")
    return str(text)

RELATIVE, LOG10 = "relative", "log10"  # units of Check.slack
NEAR_EDGE = 0.05  # a passed claim within 5 % of its threshold is "near the edge"
SAYS_LITTLE = 100.0  # a bound that holds by more than this factor "holds, but says little"
FLAG_NEAR_EDGE, FLAG_SAYS_LITTLE = "near the edge", "holds, but says little"


@dataclass(frozen=True)
class Exclusion:
    """Seeds or neurons a check leaves out, ``which`` by id, by a premise the paper states (``source``, its
    sentence): a claim may leave out only what its paper does, and says so."""

    what: str
    which: tuple = ()
    source: str = ""

    def __post_init__(self):
        if not str(self.source).strip():
            raise ValueError(f"an exclusion of {self.what} needs the sentence of the paper it follows (source=...)")

    def to_dict(self) -> dict:
        return {"what": self.what, "count": len(self.which), "which": jsonable(list(self.which)), "source": self.source}


@dataclass(frozen=True)
class Check:
    """The outcome of comparing one prediction with one measurement; ``slack`` (see the module
    docstring) is in ``slack_unit`` ``relative`` (thresholds) or ``log10`` (bounds); ``exclusions``: what it
    left out, by the paper's own premises."""

    predicted: Any
    measured: Any
    passed: bool
    tolerance: Any = None
    details: str = ""
    slack: float | None = None
    slack_unit: str = RELATIVE
    exclusions: tuple[Exclusion, ...] = ()


@dataclass(frozen=True)
class Claim:
    """One checked claim, as stored in ``claims.json``.

    ``kind`` is one of ``KINDS`` (None while a claim is not converted yet), ``falsifiers`` the
    inputs on which the claim function must fail (``{name, kind}``), ``expect`` ``"pass"`` for ordinary
    claims and ``"fail"`` for findings and the claims of an assumption-broken experiment, ``evaluated``
    False when no check was made (a run failed, the claim function raised), ``tolerance_source`` where the
    tolerance comes from (``TOLERANCE_SOURCES``), ``exclusions`` what the check left out (``Exclusion``),
    ``explanation`` why a finding's statement fails.
    """

    id: str
    experiment: str
    statement: str
    kind: str | None
    predicted: Any
    measured: Any
    tolerance: Any
    slack: Any
    passed: bool
    falsifiers: list[dict] = field(default_factory=list)
    details: str = ""
    expect: str = "pass"
    evaluated: bool = True
    tolerance_source: str = ""
    exclusions: list[dict] = field(default_factory=list)
    explanation: str = ""
    premises: list[dict] = field(default_factory=list)  # {name, source, discriminates, measured}: the claim with one
    # premise of its theorem removed; discriminates: it fails there (None: the ablation could not be run)
    probes: dict = field(default_factory=dict)  # {frozen, reversed, scrambled: passed}: a passed prediction on its own
    # runs with the dynamics taken out (twolayer.claims.probes); passing all three, it does not depend on them

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, record: dict) -> Claim:
        """The claim of a ``claims.json`` record (``to_dict``'s output; unknown keys are ignored, missing
        optional ones take their defaults)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in record.items() if k in names})

    @property
    def as_expected(self) -> bool:
        """Passed (ordinary claims), or evaluated and failed (claims of an assumption-broken experiment)."""
        return self.passed if self.expect == "pass" else self.evaluated and not self.passed

    @property
    def flags(self) -> list[str]:
        return slack_flags(self.kind, self.slack, self.passed)

    @classmethod
    def from_check(cls, id: str, experiment: str, statement: str, check: Check, *, kind: str | None = None,
                   falsifiers: Sequence[dict] = (), expect: str = "pass", tolerance_source: str = "",
                   explanation: str = "") -> Claim:
        return cls(id, experiment, statement, kind, jsonable(check.predicted), jsonable(check.measured),
                   jsonable(check.tolerance), jsonable(check.slack), bool(check.passed), list(falsifiers),
                   check.details, expect, tolerance_source=tolerance_source,
                   exclusions=[e.to_dict() for e in check.exclusions], explanation=explanation)

    @classmethod
    def failed(cls, id: str, experiment: str, statement: str, details: str, *, kind: str | None = None,
               falsifiers: Sequence[dict] = (), expect: str = "pass", tolerance_source: str = "",
               explanation: str = "") -> Claim:
        """A claim that could not be evaluated (a run failed, the claim function raised)."""
        return cls(id, experiment, statement, kind, None, None, None, None, False, list(falsifiers), details,
                   expect, evaluated=False, tolerance_source=tolerance_source, explanation=explanation)


def slack_flags(kind: str | None, slack: Any, passed: bool) -> list[str]:
    """The report's marks for a passed claim: ``"holds, but says little"`` for a bound that holds by
    more than ``SAYS_LITTLE`` (log10 slack > 2), ``"near the edge"`` within ``NEAR_EDGE`` (5 %) of
    its threshold (relative slack < 0.05; for a bound, measured > 0.95 bound)."""
    value = _float_or_none(slack)
    if not passed or value is None or math.isnan(value):
        return []
    if kind == "bound":
        if value > math.log10(SAYS_LITTLE):
            return [FLAG_SAYS_LITTLE]
        return [FLAG_NEAR_EDGE] if value < -math.log10(1 - NEAR_EDGE) else []
    return [FLAG_NEAR_EDGE] if value < NEAR_EDGE else []


def _float_or_none(x: Any) -> float | None:
    """A slack as stored (a number, or 'inf'/'-inf'/'nan' text for non-finite values) as a float."""
    if x is None or isinstance(x, bool):
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


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


# -- slack ------------------------------------------------------------------------------------

def _worst(distance: np.ndarray, scale: float) -> float:
    """min(distance) / scale; -inf when a distance is not finite (a NaN measurement fails)."""
    d = np.asarray(distance, dtype=np.float64)
    if d.size == 0:
        return math.nan
    if not np.all(np.isfinite(d)):
        return -math.inf
    with np.errstate(over="ignore"):  # a subnormal scale: +-inf keeps the sign
        return float(np.min(d) / scale)


def _counts(measured, *limits: float) -> bool:
    """Whether ``measured`` holds integers (counts: an integer dtype, Python ints) and the limits are whole."""
    lim = np.asarray(limits, dtype=np.float64)
    return (np.issubdtype(np.asarray(measured).dtype, np.integer) and bool(np.all(np.isfinite(lim)))
            and bool(np.all(lim == np.round(lim))))


def _exact_slack(m: np.ndarray, target: float) -> float:
    """Slack of ``m == target`` with no tolerance: for integers the nearest failing value is one
    unit away (slack 1 when equal, -|m - target| / max(|target|, 1) otherwise); for other numbers an
    equality has no room (0 when equal)."""
    if not (np.all(np.isfinite(m)) and math.isfinite(float(target))):
        return -math.inf
    off = float(np.max(np.abs(m - target)))
    integral = bool(np.all(np.isfinite(m)) and np.all(m == np.round(m))) and float(target) == round(float(target))
    if off == 0.0:
        return 1.0 if integral else 0.0
    return -off / max(abs(float(target)), 1.0 if integral else 1e-300)


# -- numbers and intervals --------------------------------------------------------------------

def close_to(measured, expected: float, *, rtol: float = 0.0, atol: float = 0.0, details: str = "") -> Check:
    """Passes iff every measured value satisfies ``|m - expected| <= atol + rtol |expected|``;
    slack ``(allowed - |m - expected|) / allowed`` (1: exact, 0: at the edge)."""
    m = _values(measured)
    allowed = atol + rtol * abs(expected)
    passed = bool(np.all(np.isfinite(m)) and np.all(np.abs(m - expected) <= allowed))
    tol = " + ".join(part for part in (f"±{atol:g}" if atol else "", f"±{100 * rtol:g}%" if rtol else "") if part)
    slack = _worst(allowed - np.abs(m - expected), allowed) if allowed > 0 else _exact_slack(m, expected)
    return Check(float(expected), _scalar_or_list(m, measured), passed, tol or "exact", details, slack)


def within(measured, lo: float, hi: float, *, details: str = "") -> Check:
    """Passes iff every measured value lies in the closed interval ``[lo, hi]``; slack: the distance
    to the nearer end over the half-width (1 at the centre, 0 at an end; for counts in an interval
    of whole numbers the nearest failing count is one past an end, so an end is 1 / half-width)."""
    m = _values(measured)
    passed = bool(np.all(np.isfinite(m)) and np.all((m >= lo) & (m <= hi)))
    half = (hi - lo) / 2
    unit = 1.0 if _counts(measured, lo, hi) else 0.0
    slack = _worst(np.minimum(m - lo, hi - m) + unit, half) if half > 0 else _exact_slack(m, lo)
    return Check([float(lo), float(hi)], _scalar_or_list(m, measured), passed, None, details, slack)


# -- relations: "<= 2", "> 0", "== 0" ---------------------------------------------------------

RELATIONS: Registry[Callable[[Any, Any], Any]] = Registry("relation")
for _op, _fn in (("<=", operator.le), ("<", operator.lt), (">=", operator.ge), (">", operator.gt),
                 ("==", operator.eq), ("!=", operator.ne)):
    RELATIONS.register(_op, _fn)

_RELATION = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*(\S+)\s*$")
_UPPER, _LOWER = ("<=", "<"), (">=", ">")


def compare(measured, op: str, bound: float, *, tolerance: float = 0.0, scale: float | None = None,
            details: str = "") -> Check:
    """Passes iff ``m op bound`` for every measured value, with ``tolerance`` of slack in the
    direction of the relation (``<=``/``<`` allow ``bound + tolerance``, ``>=``/``>`` allow
    ``bound - tolerance``, ``==`` allows ``|m - bound| <= tolerance``). Slack: the distance to the
    allowed limit over ``scale`` (default ``|bound| + tolerance``, or max |m| when both are 0). Give
    ``scale`` when the threshold's magnitude is not its natural scale: ``at_least(ratio, 0.999,
    scale=0.001)`` measures the distance in units of the allowed shortfall from 1, where the default
    would call every ratio below 1.05 "near the edge". For counts against a whole-number limit with
    ``<=``/``>=`` the nearest failing count is one past the limit, so the distance counts that unit."""
    fn = RELATIONS.get(op)
    m = _values(measured)
    shift = {"<=": tolerance, "<": tolerance, ">=": -tolerance, ">": -tolerance}.get(op, 0.0)
    if op == "==" and tolerance:
        ok = np.abs(m - bound) <= tolerance
    else:
        ok = np.array([fn(float(x), bound + shift) for x in m], dtype=bool)
    passed = bool(np.all(np.isfinite(m)) and np.all(ok))
    finite = m[np.isfinite(m)]
    counts = op in ("<=", ">=") and _counts(measured, bound, tolerance)
    if scale is None:
        scale = abs(bound) + tolerance or (float(np.max(np.abs(finite))) if finite.size else 0.0) or 1.0
        scale = max(scale, 1.0) if counts else scale
    unit = 1.0 if counts else 0.0
    if op in _UPPER:
        slack = _worst(bound + shift - m + unit, scale)
    elif op in _LOWER:
        slack = _worst(m - (bound + shift) + unit, scale)
    elif op == "==":
        slack = _worst(tolerance - np.abs(m - bound), tolerance) if tolerance else _exact_slack(m, bound)
    else:  # "!=": how far from the excluded value
        slack = _worst(np.abs(m - bound), max(abs(bound), scale))
    return Check(f"{op} {bound:g}", _scalar_or_list(m, measured), passed, tolerance or None, details, slack)


def relation(measured, predicted: str, *, tolerance: float = 0.0, scale: float | None = None,
             details: str = "") -> Check:
    """``compare`` from a string such as ``"<= 2"`` or ``"> 0.5"``."""
    match = _RELATION.match(predicted)
    if not match:
        raise ValueError(f"relation {predicted!r} is not '<op> <number>' with op one of {', '.join(RELATIONS)}")
    return compare(measured, match.group(1), float(match.group(2)), tolerance=tolerance, scale=scale, details=details)


def at_most(measured, bound: float, **kw) -> Check:
    """``compare(measured, "<=", bound)``: every measured value at most ``bound`` (a threshold, not a
    proven bound: for those use ``bound``).
    """
    return compare(measured, "<=", bound, **kw)


def at_least(measured, bound: float, **kw) -> Check:
    """``compare(measured, ">=", bound)``: every measured value at least ``bound``."""
    return compare(measured, ">=", bound, **kw)


# -- proven inequalities ------------------------------------------------------------------------

def bound(measured, op: str, limit: float, *, details: str = "") -> Check:
    """A proven inequality ``m op limit`` (``<=``/``<`` for an upper bound, ``>=``/``>`` for a lower
    bound) on a positive quantity; slack ``log10(limit / m)`` (upper) or ``log10(m / limit)``
    (lower): 0 at the bound, 2 when it holds by a factor 100, negative when it is violated."""
    if op not in (*_UPPER, *_LOWER):
        raise ValueError(f"bound: op {op!r} is not one of {', '.join((*_UPPER, *_LOWER))}")
    if not limit > 0:
        raise ValueError(f"bound: the limit must be positive, got {limit!r}")
    m = _values(measured)
    fn = RELATIONS.get(op)
    passed = bool(np.all(np.isfinite(m)) and all(fn(float(x), limit) for x in m))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = limit / m if op in _UPPER else m / limit
        logs = np.where(ratio > 0, np.log10(np.where(ratio > 0, ratio, 1.0)), -np.inf)
    if op in _UPPER:
        logs = np.where(m <= 0, np.inf, logs)  # a non-positive measurement is below any positive bound
    slack = -math.inf if not np.all(np.isfinite(m)) else float(np.min(logs))
    return Check(f"{op} {limit:.4g} (bound)", _scalar_or_list(m, measured), passed, None, details, slack, LOG10)


# -- monotone series ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Monotone:
    """A monotone kind: ``sign`` +1 when the series should go down, -1 up; ``strict`` or not."""

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
    allowed up to ``atol + rtol * max|series|``; strict kinds need it below that, not equal.
    Slack: ``(allowed - worst) / allowed``, or ``-worst / max|step|`` when nothing is allowed."""
    spec = MONOTONE.get(kind)
    x = np.asarray(series, dtype=np.float64)
    if x.shape[-1] < 2:
        return Check(kind, None, False, None, "needs at least two points", -math.inf)
    steps = spec.sign * np.diff(x, axis=-1)
    worst = float(np.max(steps))
    allowed = atol + rtol * float(np.max(np.abs(x)))
    ok = worst < 0.0 if spec.strict and not allowed else worst <= allowed
    passed = bool(np.all(np.isfinite(x)) and ok)
    where = np.unravel_index(int(np.argmax(steps)), steps.shape)
    note = f"worst step at index {tuple(int(i) for i in where)}" if x.ndim > 1 else f"worst step at index {int(where[0])}"
    tol = None if not allowed else f"{allowed:.3g}"
    scale = allowed or float(np.max(np.abs(steps))) or 1.0
    slack = _worst(np.array([allowed - worst]), scale) if np.all(np.isfinite(x)) else -math.inf
    return Check(kind, worst, passed, tol, "; ".join(p for p in (details, note) if p), slack)


# -- orders of events ---------------------------------------------------------------------------

def ordered(times: Mapping[str, float], order: Sequence[str], *, details: str = "") -> Check:
    """Passes iff the events happen in ``order`` (strictly increasing times; a NaN or missing
    time means the event never happened and fails). ``measured`` lists the observed order; slack
    is the smallest relative gap ``(t_next - t) / max(|t|, |t_next|)`` between consecutive events."""
    names = list(order)
    vals = {k: float(times[k]) if k in times and times[k] is not None else math.nan for k in names}
    happened = sorted((v, k) for k, v in vals.items() if math.isfinite(v))
    never = [k for k, v in vals.items() if not math.isfinite(v)]
    measured = " before ".join(f"{k} ({v:.4g})" for v, k in happened)
    if never:
        measured += ("; " if measured else "") + "never: " + ", ".join(never)
    seq = [vals[k] for k in names]
    passed = not never and all(a < b for a, b in zip(seq, seq[1:]))
    gaps = [(b - a) / (max(abs(a), abs(b)) or 1.0) for a, b in zip(seq, seq[1:])]
    slack = -math.inf if never else (min(gaps) if gaps else 1.0)
    return Check(" before ".join(names), measured, passed, None, details, slack)


# -- booleans and combinations ----------------------------------------------------------------

def holds(condition: bool, predicted: str, measured: Any = None, *, slack: float | None = None,
          details: str = "") -> Check:
    """A yes/no claim: ``predicted`` describes what must hold, ``measured`` what was seen. It has no
    slack unless the caller knows one (a dimensionless distance from failing)."""
    return Check(predicted, condition if measured is None else measured, bool(condition), None, details, slack)


def all_of(*checks: Check, details: str = "") -> Check:
    """A compound claim that passes iff every part passes (e.g. ``t0 < t2`` and ``t2 >= 10 t0``);
    its slack is the smallest slack of its parts (in log10 units only when every part is a bound;
    None when a part without a slack failed)."""
    slacks = [c for c in checks if c.slack is not None and not math.isnan(c.slack)]
    slack = min((c.slack for c in slacks), default=None)
    if any(not c.passed for c in checks if c not in slacks):
        slack = None  # a part without a slack failed: how far is unknown
    unit = LOG10 if slacks and all(c.slack_unit == LOG10 for c in slacks) else RELATIVE
    return Check(" and ".join(fmt(c.predicted) for c in checks), [c.measured for c in checks],
                 all(c.passed for c in checks), [c.tolerance for c in checks] if any(c.tolerance for c in checks) else None,
                 "; ".join(p for p in [details, *(c.details for c in checks)] if p), slack, unit)
