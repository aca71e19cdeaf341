"""Method ``gd_paper``: GD on eq. (3) with the multi-index paper's training schedule (App. A.2).

    w_i <- w_i - lr (lambda_t w_i + gamma_{t,i} m grad_{w_i} L)

* Weight decay lambda_t = ``train.weight_decay`` (= r lambda_0) until Stage 2.2 is over (T_22), then 0
  (Stage 2.3).
* Step-size multiplier gamma_{t,i} = gamma = m on boosted neurons, 1 otherwise. A step with any boosted neuron
  is integrated with gamma sub-steps of lr/gamma (the boosted neurons then move lr g per sub-step), so it
  cannot diverge. Which neurons are boosted, and when, is ``train.boost_rule``:
  - ``per_step`` (default): at every step, the aligned neurons G_j of each direction whose aligned mass
    a_hat_j is still below ``boost_window`` / r (the paper's window ends when a_hat_j reaches Theta(1/r),
    Lemma D.17), once every direction is found;
  - ``paper``: the paper's rule (App. A.2, Lemma D.17, App. F.2 line 3330): the set {||v|| >= sigma1^2} fixed
    at T_21 (``boost_sigma1`` unset: the aligned neurons G at T_21, spec §7.6's finite-size default, since at
    m = 250 any sigma1 = m^c with small c boosts every neuron), boosted for T_21 <= t <= T_21 +
    ``boost_time`` log(m) / gamma.
* ``boost_weight_decay`` (default true): gamma multiplies lambda w as well as the gradient, as in the paper's
  eq. (23) (a_hat' = 2 gamma_t a_hat (-lambda + ...)); false: gamma multiplies the gradient only, as eqs. (3)
  and (8) write it (-lambda_t w_i - m gamma_{t,i} grad L).

The stage tests (``twolayer.theory.stages.stage_state``: ``eps_dir``, ``eps_norm``, ``stage22_test``) run on the
current weights. With the defaults (per_step, one_sided) every test is re-evaluated at every step and the
method has no state: a_hat only grows and b_hat only shrinks once lambda is off, so the one-sided switch does
not flicker. The paper rule (a set fixed at T_21, a window measured from T_21) and the two-sided test (a_hat
passes a* + eps_norm once lambda is off) need to remember T_21, the boosted set and T_22: they are kept in the
parameters (``schedule_t21``, ``schedule_t22``: the step or -1; ``schedule_boost``: 1 for the chosen neurons),
so checkpoints still resume exactly and the final parameters record them.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import jax
import jax.numpy as jnp
from jax import lax
from pydantic import Field, model_validator

from twolayer.fields import field_errors
from twolayer.numerics import unit_rows
from twolayer.theory.stages import EPS_DIR, EPS_NORM, WINDOW, aligned_set, stage_state
from twolayer.train.methods import DiscreteParams, discrete_advance, register_method

STATE = ("t21", "t22", "boost")  # what a stateful schedule keeps in the parameters, as params["schedule_<name>"]


class GDPaperParams(DiscreteParams):
    """GD's parameters (``weight_decay`` is lambda = r lambda_0, switched off after Stage 2.2; ``layers``
    must be ``both``, the mean-field weights W) and the schedule's choices (module docstring). Their
    defaults are the method before they were parameters, and a parameter at its default is left out of the
    resolved config, so such runs keep their hash and their results bitwise."""

    method: Literal["gd_paper"] = "gd_paper"
    boost_rule: Literal["per_step", "paper"] = "per_step"
    boost_window: float = Field(default=WINDOW, gt=0)  # per_step: boost while a_hat_j < boost_window / r
    boost_sigma1: float | None = Field(default=None, gt=0)  # paper: {||v|| >= sigma1^2} at T_21; None: G at T_21
    boost_time: float = Field(default=1.0, gt=0)  # paper: the window lasts boost_time log(m) / gamma
    boost_weight_decay: bool = True  # gamma multiplies lambda w too (eq. 23); False: only the gradient (eqs. 3, 8)
    eps_dir: float = Field(default=EPS_DIR, gt=0, lt=0.5)  # found: 1 - eps_dir^2; G_j: 1 - eps_dir
    eps_norm: float = Field(default=EPS_NORM, gt=0)  # the Stage 2.2 tolerance (spec §4.7: 0.01)
    stage22_test: Literal["one_sided", "two_sided"] = "one_sided"

    SCHEDULE: ClassVar[tuple[str, ...]] = ("boost_rule", "boost_window", "boost_sigma1", "boost_time",
                                           "boost_weight_decay", "eps_dir", "eps_norm", "stage22_test")

    @model_validator(mode="after")
    def _trains_w(self):
        if self.layers != "both":
            raise field_errors(type(self).__name__, [("layers", "gd_paper trains the mean-field weights W "
                                                                "(layers: both)")])
        return self

    def resolved(self) -> dict:
        """As ``MethodParams.resolved``, without the schedule parameters that are at their defaults."""
        out = super().resolved()
        for name in self.SCHEDULE:
            if out.get(name) == type(self).model_fields[name].default:
                out.pop(name, None)
        return out

    @property
    def stateful(self) -> bool:
        """Whether the schedule remembers T_21, the boosted set and T_22 (``params["schedule_*"]``)."""
        return self.boost_rule == "paper" or self.stage22_test == "two_sided"

    def stage_tests(self) -> dict[str, Any]:
        """The keyword arguments of ``stage_state``."""
        return {"eps_dir": self.eps_dir, "eps_norm": self.eps_norm, "window": self.boost_window,
                "two_sided": self.stage22_test == "two_sided"}


@register_method("gd_paper", GDPaperParams, needs=("target_dirs",), nets=("mean_field",), doc=(
    "GD on eq. (3) with the multi-index paper's schedule: weight decay until Stage 2.2 ends, gamma = m window "
    "on aligned neurons with sub-stepping (train.boost_rule, boost_*, eps_dir, eps_norm, stage22_test)"))
def build_gd_paper(train: GDPaperParams, shape):
    """One step: the stage tests at the current W (and, for the paper rule or the two-sided test, the
    remembered T_21, boosted set and T_22) decide lambda_t and the boosted neurons; a step with a boosted
    neuron is gamma = m sub-steps of lr/gamma."""
    return _stateful(train) if train.stateful else _stateless(train)


def boost_set(W, dirs, train: GDPaperParams):
    """The paper rule's boosted set at T_21: {||v|| >= sigma1^2}, or (``boost_sigma1`` unset) the aligned G."""
    if train.boost_sigma1 is not None:
        return unit_rows(W)[1] >= train.boost_sigma1**2
    return aligned_set(W, dirs, train.eps_dir)


def _substeps(W, boost, lam, grad, lr, on_decay: bool):
    """One GD step with gamma = m on the ``boost`` neurons, as m sub-steps of lr/m while any is boosted."""
    m = W.shape[0]
    n_sub = jnp.where(jnp.any(boost), m, 1)  # gamma sub-steps of lr/gamma while any neuron is boosted
    h = lr / n_sub
    mult = jnp.where(boost, n_sub, 1).astype(W.dtype)[:, None]

    if on_decay:
        def body(c):
            i, V = c
            return i + 1, V - h * mult * (lam * V + m * grad(V))
    else:
        def body(c):
            i, V = c
            return i + 1, V - h * (lam * V + mult * m * grad(V))

    _, W = lax.while_loop(lambda c: c[0] < n_sub, body, (0, W))
    return W


def _stateless(train: GDPaperParams):
    tests = train.stage_tests()

    def step(p, k, aux, key, ctx, hyper):
        W = p["W"]
        _, done, boost, _, _ = stage_state(W, ctx.arrays["target_dirs"], hyper["weight_decay"],
                                           ctx.problem.activation, **tests)
        lam = jnp.where(done, 0.0, hyper["weight_decay"])
        grad = jax.grad(lambda W: ctx.objective({"W": W}))
        return {**p, "W": _substeps(W, boost, lam, grad, hyper["lr"], train.boost_weight_decay)}, aux

    return discrete_advance(step, lambda start, key, ctx: ())


def _stateful(train: GDPaperParams):
    tests = train.stage_tests()

    def step(p, k, aux, key, ctx, hyper):
        W = p["W"]
        st = {name: p[f"schedule_{name}"] for name in STATE}
        m = W.shape[0]
        dirs = ctx.arrays["target_dirs"]
        found, done_now, boost_now, _, _ = stage_state(W, dirs, hyper["weight_decay"], ctx.problem.activation,
                                                       **tests)
        first = (st["t21"] < 0) & found
        t21 = jnp.where(first, k, st["t21"])
        chosen = jnp.where(first, boost_set(W, dirs, train).astype(W.dtype), st["boost"])
        if train.boost_rule == "paper":  # T_21 <= t <= T_21 + boost_time log(m) / gamma, gamma = m
            in_window = (t21 >= 0) & ((k - t21) * hyper["lr"] <= train.boost_time * jnp.log(m) / m)
            boost = in_window & (chosen > 0)
        else:
            boost = boost_now
        t22 = jnp.where((st["t22"] < 0) & done_now, k, st["t22"])
        lam = jnp.where(t22 >= 0, 0.0, hyper["weight_decay"])
        grad = jax.grad(lambda W: ctx.objective({"W": W}))
        W = _substeps(W, boost, lam, grad, hyper["lr"], train.boost_weight_decay)
        return {**p, "W": W, "schedule_t21": t21, "schedule_t22": t22, "schedule_boost": chosen}, aux

    inner = discrete_advance(step, lambda start, key, ctx: ())

    def advance(params, key, bad, start, stop, ctx, hyper):
        if "schedule_t21" not in params:  # the first interval: nothing remembered yet
            W = params["W"]
            params = {**params, "schedule_t21": jnp.asarray(-1, jnp.int64), "schedule_t22": jnp.asarray(-1, jnp.int64),
                      "schedule_boost": jnp.zeros(W.shape[0], W.dtype)}
        return inner(params, key, bad, start, stop, ctx, hyper)

    return advance
