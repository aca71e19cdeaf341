"""Method ``gd_paper``: GD on eq. (3) with the multi-index paper's training schedule (App. A.2).

    w_i <- w_i - lr (lambda_t w_i + gamma_{t,i} m grad_{w_i} L)

* Weight decay lambda_t = ``train.weight_decay`` (= r lambda_0) until Stage 2.2 is over (T_22), then 0
  (Stage 2.3).
* Step-size multiplier gamma_{t,i} = gamma = m on boosted neurons, 1 otherwise. A step with any boosted neuron
  is integrated with gamma sub-steps of lr/gamma (the boosted neurons then move lr g per sub-step), so it
  cannot diverge. Which neurons are boosted, and when, is ``train.schedule.boost_rule``:
  - ``per_step`` (default): at every step, the aligned neurons (G_j) of each direction whose aligned mass
    a_hat_j is still below ``window / r`` (the paper's window ends when a_hat_j reaches Theta(1/r),
    Lemma D.17), once every direction is found;
  - ``paper``: the paper's rule (App. A.2, Lemma D.17, App. F.2 line 3330): the set {||v|| >= sigma1^2} fixed
    at T_21 (``sigma1`` unset: the aligned neurons G at T_21, spec §7.6's finite-size default, since at m = 250
    any sigma1 = m^c with small c boosts every neuron), boosted for T_21 <= t <= T_21 + ``window_time``
    log(m) / gamma.
* ``boost_weight_decay`` (default true): gamma multiplies lambda w as well as the gradient, as in the paper's
  eq. (23) (a_hat' = 2 gamma_t a_hat (-lambda + ...)); false: gamma multiplies the gradient only, as eqs. (3)
  and (8) write it (-lambda_t w_i - m gamma_{t,i} grad L).

Stage tests from the current weights (spec §4.7 / §7.6 finite-size thresholds; ``eps_dir``, ``eps_norm``):
  found      every direction j has a neuron with <u_i, w*_j>^2 >= 1 - eps_dir^2                    (T_21)
  G_j        neurons with <u_i, w*_j>^2 >= 1 - eps_dir;  a_hat_j = (1/m) sum_{i in G_j} ||w_i||^2
  b_hat_j    (1/m) sum_{i not in any G} ||w_i||^2 <u_i, w*_j>^2 (mass version, spec §7.8)
  done       ``stage22_test`` one_sided (default): found, max_j b_hat_j <= eps_norm, min_j a_hat_j >= a* - eps_norm;
             two_sided (spec §4.7's T_22 with eps_norm = 0.01): found, max_j |a_hat_j - a*| <= eps_norm and
             max_j b_hat_j <= eps_norm                                                                 (T_22)
with a* = 1 - lambda/(2 sigma_hat_0^2 r + 2 sigma_hat_{>=2}^2) (Lemma D.18). With the defaults (per_step, one_sided)
every test is re-evaluated at every step and the method has no state: a_hat only grows and b_hat only shrinks once
lambda is off, so the one-sided switch does not flicker. The paper rule (a set fixed at T_21, a window measured
from T_21) and the two-sided test (a_hat passes a* + eps_norm once lambda is off) need to remember T_21, the
boosted set and T_22: they are kept in the parameters (``schedule_t21``, ``schedule_t22``: the step or -1;
``schedule_boost``: 1 for the chosen neurons), so checkpoints still resume exactly and the final parameters
record them.
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
from jax import lax
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twolayer.population import unit_rows
from twolayer.train.methods import METHODS, Method, _discrete_advance, _require, _validate_discrete

EPS_DIR = 0.1
EPS_NORM = 0.02
WINDOW = 0.5
STATE = ("t21", "t22", "boost")  # what a stateful schedule keeps in the parameters, as params["schedule_<name>"]


class PaperSchedule(BaseModel):
    """``train.schedule`` of method gd_paper; the defaults are the method's behaviour before these were
    parameters (runs without ``train.schedule`` are unchanged, bitwise)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    eps_dir: float = Field(default=EPS_DIR, gt=0, lt=0.5)  # found: 1 - eps_dir^2; G_j: 1 - eps_dir
    eps_norm: float = Field(default=EPS_NORM, gt=0)  # the Stage 2.2 test's tolerance (spec §4.7: 0.01)
    stage22_test: Literal["one_sided", "two_sided"] = "one_sided"
    boost_rule: Literal["per_step", "paper"] = "per_step"
    window: float = Field(default=WINDOW, gt=0)  # per_step: boost while a_hat_j < window / r
    sigma1: float | None = Field(default=None, gt=0)  # paper: boost {||v|| >= sigma1^2} at T_21; None: G at T_21
    window_time: float = Field(default=1.0, gt=0)  # paper: the window lasts window_time log(m) / gamma
    boost_weight_decay: bool = True  # gamma multiplies lambda w too (eq. 23); False: only the gradient (eqs. 3, 8)

    @classmethod
    def of(cls, value) -> PaperSchedule:
        """From ``train.schedule``: None (the defaults), a mapping, or a mapping frozen to sorted items."""
        if value is None:
            return cls()
        return cls.model_validate(dict(value))

    @property
    def stateful(self) -> bool:
        """Whether the schedule remembers T_21, the boosted set and T_22 (``params["schedule_*"]``)."""
        return self.boost_rule == "paper" or self.stage22_test == "two_sided"


def stage_state(W, dirs, lam, act, schedule: PaperSchedule | None = None):
    """``(found, done, boost [m], a_hat [r], b_hat [r])`` of the paper's schedule at weights ``W``, tested
    afresh at these weights (``boost``: the per_step rule's set)."""
    s = schedule or PaperSchedule()
    U, norms = unit_rows(W)
    a = norms**2
    m, r = W.shape[0], dirs.shape[0]
    P2 = (U @ dirs.T) ** 2  # [m, r]
    found = jnp.all(jnp.max(P2, axis=0) >= 1.0 - s.eps_dir**2)
    in_G = P2 >= 1.0 - s.eps_dir  # [m, r], at most one True per row since eps_dir < 1/2
    a_hat = jnp.sum(jnp.where(in_G, a[:, None], 0.0), axis=0) / m
    dense = ~jnp.any(in_G, axis=1)
    b_hat = jnp.sum(jnp.where(dense[:, None], a[:, None] * P2, 0.0), axis=0) / m
    c = act.hermite_coefficients(4)
    s0, s2p = c[0] ** 2, act.second_moment() - c[0] ** 2 - c[1] ** 2
    a_star = 1.0 - lam / (2.0 * s0 * r + 2.0 * s2p)
    if s.stage22_test == "one_sided":
        done = found & (jnp.max(b_hat) <= s.eps_norm) & (jnp.min(a_hat) >= a_star - s.eps_norm)
    else:
        done = found & (jnp.max(b_hat) <= s.eps_norm) & (jnp.max(jnp.abs(a_hat - a_star)) <= s.eps_norm)
    window = found & (a_hat < s.window / r)  # [r]
    boost = jnp.any(in_G & window[None, :], axis=1)
    return found, done, boost, a_hat, b_hat


def paper_boost_set(W, dirs, schedule: PaperSchedule):
    """The paper rule's boosted set at T_21: {||v|| >= sigma1^2}, or (sigma1 unset) the aligned neurons G."""
    U, norms = unit_rows(W)
    if schedule.sigma1 is not None:
        return norms >= schedule.sigma1**2
    return jnp.any((U @ dirs.T) ** 2 >= 1.0 - schedule.eps_dir, axis=1)


def _validate(train):
    _validate_discrete(train, sgd=False)
    _require(train.layers == "both", "layers", "gd_paper trains the mean-field weights W (layers: both)")
    try:
        PaperSchedule.of(train.schedule)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        _require(False, f"schedule.{where}" if where else "schedule", first["msg"])


def _build(train, ctx):
    schedule = PaperSchedule.of(train.schedule)
    if not schedule.stateful:
        return _build_stateless(schedule)
    return _build_stateful(schedule)


def _substeps(W, boost, lam, grad, lr, schedule):
    """One GD step with gamma = m on the ``boost`` neurons, as m sub-steps of lr/m while any is boosted."""
    m = W.shape[0]
    n_sub = jnp.where(jnp.any(boost), m, 1)
    h = lr / n_sub
    mult = jnp.where(boost, n_sub, 1).astype(W.dtype)[:, None]

    if schedule.boost_weight_decay:
        def body(c):
            i, V = c
            return i + 1, V - h * mult * (lam * V + m * grad(V))
    else:
        def body(c):
            i, V = c
            return i + 1, V - h * (lam * V + mult * m * grad(V))

    _, W = lax.while_loop(lambda c: c[0] < n_sub, body, (0, W))
    return W


def _build_stateless(schedule: PaperSchedule):
    def step(p, k, aux, key, ctx, hyper):
        W = p["W"]
        _, done, boost, _, _ = stage_state(W, ctx.arrays["target_dirs"], hyper["weight_decay"],
                                           ctx.problem.activation, schedule)
        lam = jnp.where(done, 0.0, hyper["weight_decay"])
        grad = jax.grad(lambda W: ctx.objective({"W": W}))
        return {**p, "W": _substeps(W, boost, lam, grad, hyper["lr"], schedule)}, aux

    return _discrete_advance(step, lambda start, key, ctx: ())


def _build_stateful(schedule: PaperSchedule):
    def step(p, k, aux, key, ctx, hyper):
        W = p["W"]
        st = {name: p[f"schedule_{name}"] for name in STATE}
        m = W.shape[0]
        dirs = ctx.arrays["target_dirs"]
        found, done_now, boost_now, _, _ = stage_state(W, dirs, hyper["weight_decay"], ctx.problem.activation,
                                                       schedule)
        first = (st["t21"] < 0) & found
        t21 = jnp.where(first, k, st["t21"])
        chosen = jnp.where(first, paper_boost_set(W, dirs, schedule).astype(W.dtype), st["boost"])
        if schedule.boost_rule == "paper":  # T_21 <= t <= T_21 + window_time log(m) / gamma, gamma = m
            open_ = (t21 >= 0) & ((k - t21) * hyper["lr"] <= schedule.window_time * jnp.log(m) / m)
            boost = open_ & (chosen > 0)
        else:
            boost = boost_now
        t22 = jnp.where((st["t22"] < 0) & done_now, k, st["t22"])
        lam = jnp.where(t22 >= 0, 0.0, hyper["weight_decay"])
        grad = jax.grad(lambda W: ctx.objective({"W": W}))
        W = _substeps(W, boost, lam, grad, hyper["lr"], schedule)
        return {**p, "W": W, "schedule_t21": t21, "schedule_t22": t22, "schedule_boost": chosen}, aux

    inner = _discrete_advance(step, lambda start, key, ctx: ())

    def advance(params, key, bad, start, stop, ctx, hyper):
        if "schedule_t21" not in params:  # the first interval: nothing remembered yet
            W = params["W"]
            params = {**params, "schedule_t21": jnp.asarray(-1, jnp.int64), "schedule_t22": jnp.asarray(-1, jnp.int64),
                      "schedule_boost": jnp.zeros(W.shape[0], W.dtype)}
        return inner(params, key, bad, start, stop, ctx, hyper)

    return advance


_build.needs = ("target_dirs",)
METHODS.register("gd_paper", Method(
    "gd_paper", False, _validate, _build,
    "GD on eq. (3) with the multi-index paper's schedule: weight decay until Stage 2.2 ends, gamma = m window "
    "on aligned neurons with sub-stepping (train.schedule: its thresholds and rules)"))
