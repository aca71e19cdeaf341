"""Method ``gd_paper``: GD on eq. (3) with the multi-index paper's training schedule (App. A.2).

    w_i <- w_i - lr (lambda_t w_i + gamma_{t,i} m grad_{w_i} L)

* Weight decay lambda_t = ``train.weight_decay`` (= r lambda_0) until Stage 2.2 is over, then 0 (Stage 2.3).
* Step-size multiplier gamma_{t,i} = gamma = m on the aligned neurons of a direction while that direction's
  aligned mass a_hat_j is still below ``WINDOW / r`` (the paper's window T_21 <= t <= T_gamma, where a_hat_j
  reaches Theta(1/r), Lemma D.17), 1 otherwise. A step with any boosted neuron is integrated with gamma
  sub-steps of lr/gamma (the boosted neurons then move lr g per sub-step), so it cannot diverge.

The stage tests are evaluated from the current weights at every step (no hidden state, so checkpoints
resume exactly), with the finite-size thresholds of spec §4.7 / §7.6:
  found      every direction j has a neuron with <u_i, w*_j>^2 >= 1 - EPS_DIR^2             (T_21)
  G_j        neurons with <u_i, w*_j>^2 >= 1 - EPS_DIR;  a_hat_j = (1/m) sum_{i in G_j} ||w_i||^2
  b_hat_j    (1/m) sum_{i not in any G} ||w_i||^2 <u_i, w*_j>^2 (mass version, spec §7.8)
  done       found and max_j b_hat_j <= EPS_NORM and min_j a_hat_j >= a* - EPS_NORM             (T_22)
with a* = 1 - lambda/(2 sigma_hat_0^2 r + 2 sigma_hat_{>=2}^2) (Lemma D.18). "done" is a one-sided test
(a_hat only grows and b_hat only shrinks once lambda is off), so the switch does not flicker.
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
from jax import lax
from pydantic import model_validator

from twolayer.fields import field_errors
from twolayer.theory.stages import stage_state
from twolayer.train.methods import DiscreteParams, discrete_advance, register_method


class GDPaperParams(DiscreteParams):
    """GD's parameters (``weight_decay`` is lambda = r lambda_0, switched off after Stage 2.2); ``layers``
    must be ``both`` (the mean-field weights W)."""

    method: Literal["gd_paper"] = "gd_paper"

    @model_validator(mode="after")
    def _trains_w(self):
        if self.layers != "both":
            raise field_errors(type(self).__name__, [("layers", "gd_paper trains the mean-field weights W "
                                                                "(layers: both)")])
        return self


@register_method("gd_paper", GDPaperParams, needs=("target_dirs",), nets=("mean_field",), doc=(
    "GD on eq. (3) with the multi-index paper's schedule: weight decay until Stage 2.2 ends, gamma = m window "
    "on aligned neurons with sub-stepping"))
def build_gd_paper(train: GDPaperParams, shape):
    """One step: the stage tests at the current W decide lambda_t and the boosted neurons; a step with a
    boosted neuron is gamma = m sub-steps of lr/gamma."""

    def step(p, k, aux, key, ctx, hyper):
        W = p["W"]
        m = W.shape[0]
        _, done, boost, _, _ = stage_state(W, ctx.arrays["target_dirs"], hyper["weight_decay"],
                                           ctx.problem.activation)
        lam = jnp.where(done, 0.0, hyper["weight_decay"])
        grad = jax.grad(lambda W: ctx.objective({"W": W}))
        n_sub = jnp.where(jnp.any(boost), m, 1)  # gamma sub-steps of lr/gamma while any neuron is boosted
        h = hyper["lr"] / n_sub
        mult = jnp.where(boost, n_sub, 1).astype(W.dtype)[:, None]

        def body(c):
            i, V = c
            return i + 1, V - h * mult * (lam * V + m * grad(V))

        _, W = lax.while_loop(lambda c: c[0] < n_sub, body, (0, W))
        return {**p, "W": W}, aux

    return discrete_advance(step, lambda start, key, ctx: ())
