"""Training methods: a registry of ways to move parameters from one observation point to the next.

Every method provides ``advance(params, key, bad, start, stop, ctx, hyper) -> (params, bad, code)``
for ONE seed (the loop vmaps it). ``start``/``stop`` are step counts for discrete methods (time
t = lr * k) and times for gradient flow. ``bad`` is -1 while the seed is healthy and otherwise
the step (or time) at which it stopped; ``code`` says why (``STOP_REASONS``). A stopped seed is
frozen at its last good state. ``hyper`` holds scalar hyper-parameters as traced values, so runs that differ
only in values share one compiled program. ``build(train, ctx)`` is called once per distinct
(method, static train settings, problem, data shape) and cached: at build time ``ctx`` exposes
only ``ctx.X.shape``; data must be read from the ``ctx`` passed to ``advance``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax

from twolayer.registry import Registry


@dataclass(frozen=True)
class Method:
    name: str
    continuous: bool
    validate: Callable  # (TrainConfig) -> None, raises ValueError naming the field
    build: Callable  # (TrainConfig, Context) -> advance for one seed
    doc: str = ""
    # Optional (event-driven methods, train/exact_flow.py). ``events``: an object with ``rows(log, seeds)``
    # (the per-interval event log that ``advance`` returns as a 4th value -> table rows, numpy columns),
    # ``derived(table, seeds, times)`` (trajectory arrays derived from the table), ``details(table, seed)``
    # (what a failed seed's stop message adds) and ``refine`` (bool: refine trajectory events to solver
    # accuracy after the run). ``check(cfg) -> [(field, message)]``: cross-section config checks.
    events: object | None = None
    check: Callable | None = None


METHODS: Registry[Method] = Registry("train.method")

NONFINITE, SOLVER, NO_SOLUTION, EVENT_LIMIT = 1, 2, 3, 4
STOP_REASONS = {NONFINITE: "parameters became non-finite (NaN/inf)", SOLVER: "the ODE solver could not advance",
                NO_SOLUTION: "the gradient flow has no Caratheodory solution for this sigma'(0) (Min et al. App. E.3)",
                EVENT_LIMIT: "the event-driven flow exceeded its event capacity"}


def tree_all_finite(tree):
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(tree)]))


def tree_where(cond, a, b):
    return jax.tree_util.tree_map(lambda x, y: jnp.where(cond, x, y), a, b)


def descent_direction(loss_fn, params, train, hyper, net):
    """-(s grad L + weight_decay * theta) on the trained layers, zero on frozen ones, where
    s = net.time_scale (1 for two_layer; m for mean_field, multi-index paper eq. 3)."""
    grads = jax.grad(loss_fn)(params)
    scale = net.time_scale(params)

    def direction(name, p, g):
        if name == "v" and train.layers == "first":
            return jnp.zeros_like(p)
        return -(scale * g + hyper["weight_decay"] * p)

    return {k: direction(k, params[k], grads[k]) for k in params}


def _discrete_advance(step, init_aux):
    """Iterate ``step`` from step ``start`` to ``stop`` in a while_loop, stopping at non-finite."""

    def advance(params, key, bad, start, stop, ctx, hyper):
        def cond(c):
            return (c[1] < stop) & (c[2] < 0)

        def body(c):
            p, k, b, aux = c
            new, aux = step(p, k, aux, key, ctx, hyper)
            ok = tree_all_finite(new)
            return tree_where(ok, new, p), jnp.where(ok, k + 1, k), jnp.where(ok, b, k + 1), aux

        p, _, b, _ = lax.while_loop(cond, body, (params, start, bad, init_aux(start, key, ctx)))
        return p, b, jnp.where(b >= 0, NONFINITE, 0)

    return advance


def _require(ok: bool, field: str, message: str):
    if not ok:
        from twolayer.config import field_errors

        raise field_errors("TrainConfig", [(field, message)])


def _validate_discrete(train, *, sgd: bool):
    _require(train.lr is not None, "lr", f"is required for method {train.method} (a positive step size)")
    _require((train.steps is None) != (train.time is None), "steps",
             "give exactly one of train.steps or train.time (time = lr * steps)")
    if sgd:
        _require(train.batch_size is not None, "batch_size", "is required for method sgd")
    else:
        _require(train.batch_size is None, "batch_size", "is only used by method sgd")
    if train.time is not None:  # resolve to steps: t = lr * k
        from twolayer.config import math_steps

        object.__setattr__(train, "steps", math_steps(train.time, train.lr))
        object.__setattr__(train, "time", None)


def _build_gd(train, ctx):
    def step(p, k, aux, key, ctx, hyper):
        d = descent_direction(ctx.objective, p, train, hyper, ctx.problem.net)
        return jax.tree_util.tree_map(lambda x, dx: x + hyper["lr"] * dx, p, d), aux

    return _discrete_advance(step, lambda start, key, ctx: ())


def _build_sgd(train, ctx):
    n = ctx.X.shape[0]
    size = min(train.batch_size, n)
    per_epoch = -(-n // size)  # the last partial batch is kept (drop_last=False)
    padded = per_epoch * size

    def permutation(epoch, key):
        perm = jax.random.permutation(jax.random.fold_in(key, epoch), n)
        return jnp.concatenate([perm, jnp.zeros(padded - n, perm.dtype)])

    def init_aux(start, key, ctx):
        epoch = start // per_epoch
        return permutation(epoch, key), epoch

    def step(p, k, aux, key, ctx, hyper):
        epoch, position = k // per_epoch, k % per_epoch
        perm, perm_epoch = aux
        perm = lax.cond(epoch == perm_epoch, lambda: perm, lambda: permutation(epoch, key))
        idx = lax.dynamic_slice(perm, (position * size,), (size,))
        mask = (position * size + jnp.arange(size) < n).astype(ctx.X.dtype)
        yb = ctx.y[idx]

        def batch_loss(q):
            X, q = ctx.training_view(q)
            return ctx.problem.empirical_loss(q, X[idx], yb, mask)

        d = descent_direction(batch_loss, p, train, hyper, ctx.problem.net)
        return jax.tree_util.tree_map(lambda x, dx: x + hyper["lr"] * dx, p, d), (perm, epoch)

    return _discrete_advance(step, init_aux)


def _validate_flow(train):
    _require(train.time is not None, "time", "is required for method flow (the ODE end time)")
    _require(train.steps is None, "steps", "is not used by method flow; give train.time")
    _require(train.lr is None, "lr", "is not used by method flow (an adaptive solver picks its steps)")
    _require(train.batch_size is None, "batch_size", "is only used by method sgd")


def flow_solvers():
    """The adaptive diffrax solvers selectable with ``train.solver``."""
    import diffrax

    return {"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5, "dopri8": diffrax.Dopri8, "heun": diffrax.Heun}


def _build_flow(train, ctx):
    import diffrax

    solver = flow_solvers()[train.solver]()
    controller = diffrax.PIDController(rtol=train.rtol, atol=train.atol)

    def vector_field(t, y, args):
        ctx, hyper = args
        return descent_direction(ctx.objective, y, train, hyper, ctx.problem.net)

    term = diffrax.ODETerm(vector_field)

    def advance(params, key, bad, start, stop, ctx, hyper):
        sol = diffrax.diffeqsolve(
            term, solver, t0=start, t1=stop, dt0=None, y0=params, args=(ctx, hyper),
            stepsize_controller=controller, saveat=diffrax.SaveAt(t1=True),
            max_steps=train.max_solver_steps, throw=False,
        )
        new = jax.tree_util.tree_map(lambda y: y[-1], sol.ys)
        finite = tree_all_finite(new)
        ok = (sol.result == diffrax.RESULTS.successful) & finite & (bad < 0)
        failed_now = (bad < 0) & ~ok
        code = jnp.where(failed_now, jnp.where(finite, SOLVER, NONFINITE), 0)
        return tree_where(ok, new, params), jnp.where(failed_now, start, bad), code

    return advance


METHODS.register("gd", Method("gd", False, lambda t: _validate_discrete(t, sgd=False), _build_gd,
                              "full-batch gradient descent: theta <- theta - lr grad L"))
METHODS.register("sgd", Method("sgd", False, lambda t: _validate_discrete(t, sgd=True), _build_sgd,
                               "mini-batch SGD, reshuffled each epoch (seeded), last partial batch kept"))
METHODS.register("flow", Method("flow", True, _validate_flow, _build_flow,
                                "gradient flow d theta/dt = -grad L by an adaptive diffrax solver"))
