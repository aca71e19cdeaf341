"""Lemmas 1, 3 and 4 (App. B) over a range of initialization scales: their bounds are O(eps), while
under the balanced init the measured quantities are O(eps^2) up to the growth allowed on [0, T].

For t <= T = log(1/(sqrt(h) eps))/(4 n X_max), every ||w_j||^2 grows at most like exp(2 n X_max t)
(||x_a(w)|| <= n X_max, the argument of Lemma 3's proof), i.e. by at most (sqrt(h) eps)^(-1/2) at T;
starting from eps^2 ||W0_j||^2 this gives max_j ||w_j||^2 and max_i |f(x_i)| between eps^2 and
eps^1.5 up to constants, and the direction error of Lemma 1 (<= 2 n X_max max|f|, Lemma 4) the same.
So the fitted exponent p of each against eps lies in [1.5, 2], while the bounds have p = 1.
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import bound, holds, within
from twolayer.claims.falsifiers import Counterfactual, Premise, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.min2024._shared import COMMON, PAPER, TOY, data_of, reported, set_dotted, synthetic
from twolayer.plotting import panels

SCALES = {"quick": (1e-3, 1e-4, 1e-5, 1e-6), "paper": (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)}
METRICS = ["output_max", "w_norm", "direction_error", "v", "loss"]
EXPONENT = (1.5, 2.0)


def end_time(eps: float, h: int = 50, n: int = 5, x_max: float = 1.0) -> float:
    """T = log(1/(sqrt(h) eps)) / (4 n X_max) (Lemma 1; TOY-A: n = 5, X_max = 1)."""
    return math.log(1 / (math.sqrt(h) * eps)) / (4 * n * x_max)


def key_of(eps: float) -> str:
    return f"eps{eps:g}"


def lemma_configs(scale: str) -> dict:
    seeds = 3 if scale == "quick" else 8
    return {key_of(eps): {"seeds": seeds, "data": TOY, "model": COMMON["model"],
                          "init": {"kind": "balanced", "scale": eps}, "loss": {"kind": "exponential", "reduction": "sum"},
                          "train": {"method": "flow", "time": end_time(eps), "rtol": 1e-10, "atol": 1e-14 * eps},
                          "observe": {"schedule": "log", "points": 40, "metrics": METRICS}}
            for eps in SCALES[scale]}


lemmas = register(Experiment(
    id=f"{PAPER}/lemma1-3-scaling", title="Lemmas 1, 3, 4 over the initialization scale (balanced init, TOY-A)",
    figure="Lemmas 1, 3, 4 (App. B; spec P6)",
    description=("TOY-A, h = 50, balanced init W(0) = eps W0 (eq. 3) for eps = 1e-3 ... 1e-6 (paper scale to 1e-7), exp loss "
                 "with sum reduction, gradient flow (Tsit5, rtol 1e-10, atol 1e-14 eps) to Lemma 1's T = log(1/(sqrt(h) "
                 "eps))/(4 n X_max). On [0, T]: max_i |f(x_i)|, max_j ||w_j||^2 and Lemma 1's direction error "
                 "||d/dt(w_j/||w_j||) - (v_j/||w_j||) P_w x_a(w_j)||, each with its O(eps) bound and the fitted exponent of "
                 "its growth with eps (predicted in [1.5, 2]; the bounds have 1)."),
    configs=lemma_configs))


def measurements(run):
    """Per seed: (eps, W_max, max_{t <= T} |f|, max ||w_j||^2, max direction error) and the theorem quantities."""
    X, y = data_of(run)
    eps = run.config["init"]["scale"]
    f, w, e = run.seeded("output_max"), run.seeded("w_norm"), run.seeded("direction_error")
    out = []
    for s in range(f.shape[0]):
        w_max = float(w[s, 0].max()) / eps
        h = w.shape[-1]
        out.append(dict(eps=eps, W_max=w_max, f=float(f[s].max()), w2=float((w[s] ** 2).max()), err=float(e[s].max()),
                        f_bound=2 * eps * math.sqrt(h) * float(np.linalg.norm(X, axis=1).max()) * w_max**2,
                        w2_bound=2 * eps * w_max**2 / math.sqrt(h),
                        err_bound=4 * eps * len(y) * math.sqrt(h) * float(np.linalg.norm(X, axis=1).max()) ** 2 * w_max**2,
                        eps_ok=eps <= 1 / (4 * math.sqrt(h) * float(np.linalg.norm(X, axis=1).max()) * w_max**2)))
    return out


def _rows(r: Results):
    return r.memo("rows", lambda: [m for run in r.runs.values() for m in measurements(run)])


def exponent(rows, name: str) -> float:
    """Least-squares slope of log(max over seeds of ``name``) against log(eps)."""
    eps = sorted({x["eps"] for x in rows})
    vals = [max(x[name] for x in rows if x["eps"] == e) for e in eps]
    return float(np.polyfit(np.log(eps), np.log(vals), 1)[0])


def _lemma_like(configs, *, power: float = 2.0, over: float = 1.0):
    """Synthetic runs: |f|, ||w_j||^2 and the direction error ~ eps^power (times ``over`` the bound when
    ``over`` > 1), 2 seeds, 4 neurons."""
    out = {}
    for key, cfg in configs.items():
        eps = cfg["init"]["scale"]
        t = np.linspace(0.0, cfg["train"]["time"], 5)
        w0 = eps * np.array([1.0, 1.2, 0.8, 1.1])
        wn = np.broadcast_to(w0, (2, 5, 4)).copy()
        wn[:, 1:] *= eps ** (power / 2) / eps  # ||w_j||^2 ~ eps^power after t = 0
        bound_f, bound_err = 2 * eps * math.sqrt(4) * 1.2**2, 4 * eps * 5 * math.sqrt(4) * 1.2**2  # TOY-A, h = 4
        f = np.full((2, 5), over * bound_f if over > 1 else eps**power)
        err = np.full((2, 5, 4), over * bound_err if over > 1 else eps**power)
        out[key] = synthetic({**cfg, "seeds": 2}, t, name=f"synthetic-{key}", output_max=f, w_norm=wn,
                             direction_error=err, v=wn, loss=np.full((2, 5), 5.0))
    return out


def _defect(**kw):
    return lambda configs: _lemma_like(configs, **kw)


def as_gd(cfg: dict, lr: float = 1e-3) -> dict:
    """The same run by GD with a small lr to the same time (cheaper to compile than the adaptive flow)."""
    return set_dotted(cfg, {"train": {"method": "gd", "lr": lr, "steps": max(1, int(round(cfg["train"]["time"] / lr)))}})


def _first_layer(configs):
    """v_j = +-1 fixed, W ~ N(0, eps^2) (App. A.5's first-layer scheme) at the three largest scales (GD)."""
    out = {}
    for key, cfg in list(configs.items())[:3]:
        out[key] = set_dotted(as_gd(cfg), {"init": {"kind": "gaussian_signs", "scale": cfg["init"]["scale"]},
                                           "train.layers": "first", "seeds": 2})
    return out


FIRST_LAYER = Counterfactual(
    "first-layer-fixed-v", _first_layer,
    "W ~ N(0, eps^2) with v_j = +-1 fixed (not balanced): f = sum_j v_j sigma(<w_j, x>) is O(eps), not O(eps^2), and "
    "w_j grows by t x_a from the start (dw/dt = v_j x_a): the exponents are about 1 and 0.")
PLAIN_LOGISTIC = Counterfactual(
    "plain-logistic", lambda configs: {k: set_dotted(as_gd(c), {"loss.kind": "logistic", "seeds": 2})
                                       for k, c in list(configs.items())[:2]},
    "plain logistic loss: -dl/df = y/2 at f = 0, so Lemma 2 fails and the exact direction rate is half of "
    "(v_j/||w_j||) P_w x_a: the direction error is O(1) (spec: 2.4), not O(eps).")


def _gaussian_init(configs):
    """The same runs (every eps, 2 seeds) with a Gaussian init of the same scale in place of the balanced one."""
    return {key: set_dotted(cfg, {"init.kind": "gaussian", "seeds": 2}) for key, cfg in configs.items()}


# measured: the exponents stay in [1.5, 2] without the balanced init (lemma1-3-scaling: 1.70 for |f|, 1.76 for
# ||w_j||^2; leaky 1.67, 1.77; square 1.70, 1.80), so the exponent claims are evidence for O(eps^2) growth from an
# eps-scale init, not for the balanced init
BALANCED_HOLDS = Premise(
    "balanced-init", _gaussian_init,
    "a Gaussian init of the same scale eps (v_j independent of ||w_j||, both O(eps)), nothing else changed: f = sum_j "
    "v_j sigma(<w_j, x>) is still O(eps^2) at t = 0 and grows at most like exp(2 n X_max t), so the exponents stay in "
    "[1.5, 2] (measured: 1.70 for |f| and 1.76 for ||w_j||^2 on lemma1-3-scaling)",
    source="Lemma 3 / eq. 3: balanced initialization, v_j(0) = +-||w_j(0)||", holds=True)
# the same run as Lemma 2's premise on the loss, removed alone (Lemma 4, and so Lemma 1, rests on it)
LEMMA2_LOSS = Premise(
    "lemma2-loss", PLAIN_LOGISTIC.change, PLAIN_LOGISTIC.why,
    source="Lemma 2 (used by Lemmas 1 and 4): the loss has |-grad_yhat l(y, yhat) - y| <= 2 |yhat| for |yhat| <= 1 "
           "(the exponential loss; Remark 4: any loss with this property)")


def _exponent_claim(name: str, what: str):
    def fn(r: Results):
        rows = _rows(r)
        p = exponent(rows, name)
        vals = {f"{e:g}": f"{max(x[name] for x in rows if x['eps'] == e):.3g}" for e in sorted({x['eps'] for x in rows})}
        return within(p, *EXPONENT, details=f"fitted exponent of max {what} against eps; max per eps: {vals}")
    return fn


lemmas.claim("lemma3-output-exponent",
             "Lemma 3's proof on [0, T]: max_i |f(x_i)| grows like eps^p with p in [1.5, 2] (balanced init: f = "
             "sum_j v_j sigma(<w_j, x>) ~ ||w||^2 ~ eps^2, times at most exp(2 n X_max T) = (sqrt(h) eps)^(-1/2)); the "
             "bound 2 eps sqrt(h) X_max W_max^2 is O(eps)",
             kind="prediction",
             tolerance_source="derived: Lemma 3's proof (eps^2 growth times at most (sqrt(h) eps)^(-1/2))",
             falsifiers=[Synthetic("linear-in-eps", _defect(power=1.0), "|f| ~ eps, the order of the bound"), FIRST_LAYER],
             premises=[BALANCED_HOLDS])(_exponent_claim("f", "|f|"))
lemmas.claim("lemma3-norm-exponent",
             "Lemma 3's proof on [0, T]: max_j ||w_j||^2 grows like eps^p with p in [1.5, 2] (the bound 2 eps W_max^2 / "
             "sqrt(h) is O(eps))",
             kind="prediction",
             tolerance_source="derived: Lemma 3's proof (eps^2 growth times at most (sqrt(h) eps)^(-1/2))",
             falsifiers=[Synthetic("linear-in-eps", _defect(power=1.0), "||w||^2 ~ eps"), FIRST_LAYER],
             premises=[BALANCED_HOLDS])(_exponent_claim("w2", "||w_j||^2"))
lemmas.claim("lemma1-error-exponent",
             "Lemma 1 via Lemma 4 on [0, T]: the direction error ||d/dt(w_j/||w_j||) - (v_j/||w_j||) P_w x_a(w_j)|| is "
             "<= 2 n X_max max|f|, so it grows like eps^p with p in [1.5, 2] (the bound 4 eps n sqrt(h) X_max^2 W_max^2 "
             "is O(eps))",
             kind="prediction", tolerance_source="derived: Lemma 4 (error <= 2 n X_max max|f|)",
             falsifiers=[Synthetic("linear-in-eps", _defect(power=1.0), "error ~ eps"), FIRST_LAYER],
             premises=[LEMMA2_LOSS],
             )(_exponent_claim("err", "direction error"))


@lemmas.claim("lemma3-bounds",
              "Lemma 3: with eps <= 1/(4 sqrt(h) X_max W_max^2), for t <= T max_j ||w_j||^2 <= 2 eps W_max^2/sqrt(h) and "
              "max_i |f(x_i)| <= 2 eps sqrt(h) X_max W_max^2, every eps and seed (slack: the tightest of the two, "
              "reached at the largest eps)",
              kind="bound", tolerance_source="derived: Lemma 3",
              falsifiers=[Synthetic("above-bound", _defect(over=3.0), "|f| three times the bound"), FIRST_LAYER])
@reported
def _lemma3(r: Results):
    rows = _rows(r)
    if not all(x["eps_ok"] for x in rows):
        return holds(False, "eps <= 1/(4 sqrt(h) X_max W_max^2)", [x["eps"] for x in rows if not x["eps_ok"]])
    ratio = max(max(x["f"] / x["f_bound"], x["w2"] / x["w2_bound"]) for x in rows)
    return bound(ratio, "<=", 1.0, details="max over eps, seeds and both quantities of measured / bound; smallest eps: "
                                           f"{min(x['f'] / x['f_bound'] for x in rows):.3g} (|f|)")


@lemmas.claim("lemma1-bound",
              "Lemma 1 (eq. 6): for t <= T, max_j ||d/dt(w_j/||w_j||) - (v_j/||w_j||) P_w x_a(w_j)|| <= 4 eps n sqrt(h) "
              "X_max^2 W_max^2, every eps and seed (exp loss, sum reduction)",
              kind="bound", tolerance_source="derived: Lemma 1, eq. 6",
              falsifiers=[Synthetic("above-bound", _defect(over=3.0), "the error is three times the bound"), PLAIN_LOGISTIC])
@reported
def _lemma1(r: Results):
    rows = _rows(r)
    return bound(max(x["err"] / x["err_bound"] for x in rows), "<=", 1.0,
                 details="max over eps and seeds of measured direction error / bound")


# -- App. B states Lemmas 1, 3 and 4 for any alpha-ReLU sigma(x) = max{x, alpha x}: the same claims, leaky ReLU -----------

LEAKY_SLOPE = 0.2


def leaky_configs(scale: str) -> dict:
    """The lemma1-3-scaling runs with sigma(x) = max{x, 0.2 x} (quick: the three largest eps, 2 seeds)."""
    configs = lemma_configs(scale)
    if scale == "quick":
        configs = {k: {**c, "seeds": 2} for k, c in list(configs.items())[:3]}
    return {k: set_dotted(c, {"model.activation": {"name": "leaky_relu", "slope": LEAKY_SLOPE}}) for k, c in configs.items()}


leaky = register(Experiment(
    id=f"{PAPER}/lemma1-3-leaky", title="Lemmas 1, 3, 4 for the leaky ReLU (alpha-ReLU, App. B)",
    figure="Lemmas 1, 3, 4 (App. B.1: 'any alpha-ReLU activation sigma(x) = max{x, alpha x}')",
    description=("The lemma1-3-scaling runs with the leaky ReLU sigma(x) = max{x, 0.2 x}, which App. B.1 covers (Lemmas 1, "
                 "3 and 4 are stated for any alpha-ReLU, x_a(w) = sum_{<x_i, w> > 0} y_i x_i + alpha sum_{<x_i, w> <= 0} "
                 "y_i x_i): the same exponents and bounds. Quick scale: eps = 1e-3, 1e-4, 1e-5, 2 seeds."),
    configs=leaky_configs))


def square_configs(scale: str) -> dict:
    """The lemma1-3-scaling runs with the square loss (1/2)(y - f)^2 (quick: the three largest eps, 2 seeds)."""
    configs = lemma_configs(scale)
    if scale == "quick":
        configs = {k: {**c, "seeds": 2} for k, c in list(configs.items())[:3]}
    return {k: set_dotted(c, {"loss.kind": "square"}) for k, c in configs.items()}


square = register(Experiment(
    id=f"{PAPER}/lemma1-3-square", title="Lemmas 1, 3, 4 for the square loss (Remark 4)",
    figure="Lemmas 1, 3, 4 (Remark 4: 'any loss function that satisfies the condition stated in Lemma 2, which includes "
           "the l2 loss (1/2)(y - y_hat)^2')",
    description=("The lemma1-3-scaling runs with the square loss l(y, f) = (1/2)(y - f)^2 (sum reduction), which Remark 4 "
                 "covers: -dl/df = y - f, so |-dl/df - y| = |f| <= 2 |f| (Lemma 2) and Lemmas 1, 3, 4 hold as stated: the "
                 "same exponents and bounds. Quick scale: eps = 1e-3, 1e-4, 1e-5, 2 seeds."),
    configs=square_configs))


def _variant_claims(exp: Experiment, lead: str) -> None:
    """The lemma1-3-scaling claims, unchanged, on ``exp``'s runs (App. B.1's leaky ReLU, Remark 4's square loss)."""
    for spec in lemmas.claims:
        fn = spec.fn.__wrapped__ if hasattr(spec.fn, "__wrapped__") else spec.fn
        fn = reported(fn) if spec.kind == "bound" else fn
        exp.claim(spec.id, lead + spec.statement, kind=spec.kind, tolerance_source=spec.tolerance_source,
                  falsifiers=spec.falsifiers)(fn)


_variant_claims(leaky, f"App. B.1 for the leaky ReLU (alpha = {LEAKY_SLOPE:g}; the lemmas hold for any alpha-ReLU): ")
_variant_claims(square, "Remark 4 for the square loss (1/2)(y - f)^2 (Lemma 2 holds: |-dl/df - y| = |f|): ")


@lemmas.plot("scaling", "Lemmas 1 and 3 against the init scale eps (max over [0, T] and seeds): max |f|, max ||w_j||^2 "
                        "and the direction error (points) with their O(eps) bounds (dashed, same colour) and the eps^2 "
                        "guide (dotted).")
def _plot(r: Results):
    rows = _rows(r)
    eps = np.array(sorted({x["eps"] for x in rows}))
    fig, (ax,) = panels(1, width=4.4, height=3.4)
    for idx, (name, label) in enumerate((("f", "max |f|"), ("w2", "max ||w_j||^2"), ("err", "direction error"))):
        vals = [max(x[name] for x in rows if x["eps"] == e) for e in eps]
        bounds = [max(x[f"{name}_bound"] for x in rows if x["eps"] == e) for e in eps]
        p = exponent(rows, name)
        ax.plot(eps, vals, "o-", color=f"C{idx}", label=f"{label} (p = {p:.2f})")
        ax.plot(eps, bounds, "--", color=f"C{idx}", lw=0.8)
    ax.plot(eps, eps**2 * max(x["w2"] for x in rows if x["eps"] == eps[-1]) / eps[-1] ** 2, "k:", lw=0.8, label="eps^2")
    ax.set(xscale="log", yscale="log", xlabel="eps", title="Lemmas 1, 3: measured vs O(eps) bounds")
    ax.legend(fontsize=7)
    return fig
