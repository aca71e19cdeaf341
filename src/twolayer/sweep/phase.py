"""Phase diagrams from sweep tables: a line over one swept key with seed bands, or a heatmap over
two, with a theory prediction overlaid.

Aggregates over seeds (``AGGREGATES``): ``median`` (min-max band), ``mean`` (± 2 standard errors),
``fraction`` (share of seeds whose value is finite and non-zero, e.g. a success indicator or an
event that happened; Wilson 95 % band). Theory overlays (``THEORIES``) give a basis ``g`` per
point from the swept values, the runs' resolved configs and their datasets; the free constant is
fitted to the aggregated measurements (``scale``: C g, fitted in log space; ``offset``: g + c;
``none``: g as is). ``slope`` reports d(measured)/d(g) (d log / d log for ``scale``): 1 when the
theory's functional form is right.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from twolayer.registry import Registry
from twolayer.plotting import panels
from twolayer.theory.alignment import separability

# -- aggregates over seeds ---------------------------------------------------------------------


@dataclass(frozen=True)
class Aggregate:
    """An aggregate over seeds for sweep plots: the central value and the band it draws."""

    name: str
    fn: Callable[[np.ndarray], tuple[float, float, float]]  # values of one point -> (center, lo, hi)
    band: str


def _median(v):
    v = v[np.isfinite(v)]
    return (float(np.median(v)), float(v.min()), float(v.max())) if v.size else (math.nan,) * 3


def _mean(v):
    v = v[np.isfinite(v)]
    if not v.size:
        return (math.nan,) * 3
    m = float(v.mean())
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
    return m, m - 2 * se, m + 2 * se


def _fraction(v):
    """Share of values that are finite and non-zero, with the Wilson score interval (z = 1.96)."""
    n = v.size
    if not n:
        return (math.nan,) * 3
    p = float(np.mean(np.isfinite(v) & (v != 0)))
    z = 1.96
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return p, max(0.0, center - half), min(1.0, center + half)


AGGREGATES: Registry[Aggregate] = Registry("--agg")
AGGREGATES.register("median", Aggregate("median", _median, "min-max over seeds"))
AGGREGATES.register("mean", Aggregate("mean", _mean, "mean ± 2 s.e."))
AGGREGATES.register("fraction", Aggregate("fraction", _fraction, "Wilson 95% interval"))


# -- theory overlays ----------------------------------------------------------------------------


@dataclass
class TheoryInputs:
    """What a theory basis reads, one entry per point: swept values (``columns``) and resolved
    configs (``configs``); ``value(key)`` looks a dotted key up in either, ``dataset(i)`` builds
    point i's training data."""

    columns: dict[str, np.ndarray]
    configs: list[dict | None]
    _datasets: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.configs)

    def value(self, key: str) -> np.ndarray:
        if key in self.columns:
            return np.asarray(self.columns[key], dtype=np.float64)
        return np.array([_lookup(c, key) for c in self.configs], dtype=np.float64)

    def dataset(self, i: int):
        if i not in self._datasets:
            from twolayer.config import load_config
            from twolayer.data import build_dataset

            self._datasets[i] = build_dataset(load_config(self.configs[i]).data)
        return self._datasets[i]


def _lookup(config: dict | None, key: str) -> float:
    node = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return math.nan
        node = node[part]
    try:
        return float(node)
    except (TypeError, ValueError):
        return math.nan


FITS = ("none", "scale", "offset")


@dataclass(frozen=True)
class Assumption:
    """A premise of a theory overlay: ``what`` it says, and ``holds(config)``, whether a run's resolved config
    satisfies it. The plot warns (in the figure and on the terminal) when some run breaks it."""

    what: str
    holds: Callable[[dict], bool]


@dataclass(frozen=True)
class Theory:
    """A predicted law ``measured ~ fit(g)`` with ``g = basis(inputs)`` per point, valid under ``assumptions``."""

    name: str
    formula: str  # legend text, with the fitted constant as C or c
    reference: str
    basis: Callable[[TheoryInputs], np.ndarray]
    fit: str = "scale"
    assumptions: tuple[Assumption, ...] = ()

    def broken(self, configs: Sequence[dict | None]) -> list[str]:
        """``what (k of n runs)`` of every assumption that some of the runs break."""
        known = [c for c in configs if c]
        out = []
        for a in self.assumptions:
            bad = sum(not a.holds(c) for c in known)
            if bad:
                out.append(f"{a.what} ({bad} of {len(known)} runs break it)")
        return out

    def predict(self, inputs: TheoryInputs, measured: np.ndarray) -> tuple[np.ndarray, dict[str, float]]:
        """The prediction at each point and the fitted constants (``C`` or ``c``, and ``slope``)."""
        g = np.asarray(self.basis(inputs), dtype=np.float64)
        m = np.asarray(measured, dtype=np.float64)
        return fit_theory(self.fit, g, m)


def fit_theory(kind: str, g: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, dict[str, float]]:
    """Fit the free constant of ``kind`` (none | scale | offset) to measurements ``m`` of basis ``g``."""
    ok = np.isfinite(g) & np.isfinite(m)
    fitted: dict[str, float] = {}
    if kind == "scale":
        ok &= (g > 0) & (m > 0)
        residual = np.log(m[ok]) - np.log(g[ok])
        c = float(np.exp(np.mean(residual))) if ok.any() else math.nan
        fitted["C"] = c
        if ok.sum() >= 2:  # 95 % interval of the fitted constant from the spread of the log residuals
            half = 1.96 * float(np.std(residual, ddof=1)) / math.sqrt(ok.sum())
            fitted["C_lo"], fitted["C_hi"] = c * math.exp(-half), c * math.exp(half)
        if ok.sum() >= 2 and np.ptp(np.log(g[ok])) > 0:
            fitted["slope"] = float(np.polyfit(np.log(g[ok]), np.log(m[ok]), 1)[0])
        return c * g, fitted
    if kind == "offset":
        c = float(np.mean(m[ok] - g[ok])) if ok.any() else math.nan
        fitted["c"] = c
        if ok.sum() >= 2:
            half = 1.96 * float(np.std(m[ok] - g[ok], ddof=1)) / math.sqrt(ok.sum())
            fitted["c_lo"], fitted["c_hi"] = c - half, c + half
        if ok.sum() >= 2 and np.ptp(g[ok]) > 0:
            fitted["slope"] = float(np.polyfit(g[ok], m[ok], 1)[0])
        return g + c, fitted
    if kind == "none":
        return g, fitted
    raise ValueError(f"theory fit {kind!r} is not one of {', '.join(FITS)}")


THEORIES: Registry[Theory] = Registry("--theory")


def theory(name: str, formula: str, reference: str, fit: str = "scale", assumptions: Sequence[Assumption] = ()):
    """Decorator: register ``basis(inputs) -> g`` as the theory overlay ``name``, valid under ``assumptions``."""
    if fit not in FITS:
        raise ValueError(f"theory fit {fit!r} is not one of {', '.join(FITS)}")

    def decorator(fn):
        THEORIES.register(name, Theory(name, formula, reference, fn, fit, tuple(assumptions)))
        return fn

    return decorator


def _at(config: dict, key: str):
    node = config
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _activation_name(config: dict) -> str:
    activation = _at(config, "model.activation")
    return activation.get("name", "") if isinstance(activation, dict) else str(activation or "relu")


def is_(key: str, *allowed) -> Callable[[dict], bool]:
    """An assumption test: the config's dotted ``key`` is one of ``allowed``."""
    return lambda config: _at(config, key) in allowed


RELU = Assumption("ReLU activation", lambda c: _activation_name(c) == "relu")
LEAKY = Assumption("leaky ReLU activation, 0 < alpha < 1", lambda c: 0 < leaky_alpha_of(c) < 1)  # NaN: False
LOGISTIC = Assumption("logistic loss", is_("loss.kind", "logistic"))
EXP_OR_LOGISTIC = Assumption("exponential or logistic loss", is_("loss.kind", "exponential", "logistic"))
_SYMMETRIC_DATA: dict[str, bool] = {}  # the data section (canonical JSON) -> whether its points are symmetric


def symmetric_data(config: dict) -> bool:
    """Whether the run's training data is symmetric: with every (x_i, y_i) the set holds (-x_i, -y_i)
    (Lyu et al. 2021, Section 4), checked on the data the config builds (to 1e-9)."""
    key = json.dumps(config.get("data"), sort_keys=True)
    if key not in _SYMMETRIC_DATA:
        from twolayer.config import ConfigError, load_config
        from twolayer.data import build_dataset

        try:
            data = build_dataset(load_config(config).data)
        except (ConfigError, OSError, ValueError):
            _SYMMETRIC_DATA[key] = False
        else:
            X, y = np.asarray(data.X, dtype=np.float64), np.asarray(data.y, dtype=np.float64)
            mirrored = np.abs(X[:, None, :] + X[None, :, :]).max(axis=-1) < 1e-9
            _SYMMETRIC_DATA[key] = bool(np.all(np.any(mirrored & (y[:, None] == -y[None, :]), axis=1)))
    return _SYMMETRIC_DATA[key]


SYMMETRIC = Assumption("symmetric data (with x_i, y_i also -x_i, -y_i)", symmetric_data)
TWO_LAYER = Assumption("a two-layer net (sum of v_j relu(w_j . x))", is_("model.kind", "two_layer"))
MEAN_FIELD = Assumption("a mean-field net on a multi-index target",
                        lambda c: _at(c, "model.kind") == "mean_field" and _at(c, "data.kind") == "multi_index")


def leaky_alpha_of(config: dict | None) -> float:
    """alpha of the config's activation phi(z) = max(z, alpha z) (relu 0, linear 1, leaky_relu its slope);
    NaN for other activations."""
    from twolayer.activations import leaky_alpha, make_activation  # JAX: only when a theory's premises are checked

    alpha = leaky_alpha(make_activation((config or {}).get("model", {}).get("activation", "relu")))
    return math.nan if alpha is None else alpha


@theory("alignment_time", "C log(n)/√μ",
        "Min et al. 2024, Theorem 1 / Lemma 10: t1 = 16 log n / (min{zeta, xi} sqrt(mu) X_min) in sum-loss time; "
        "mu, n from the data; times of mean-reduction runs are n times longer", fit="scale",
        assumptions=(TWO_LAYER, RELU, EXP_OR_LOGISTIC))
def _alignment_time(inp: TheoryInputs) -> np.ndarray:
    out = []
    for i, config in enumerate(inp.configs):
        data = inp.dataset(i)
        per_time = data.n if (config or {}).get("loss", {}).get("reduction") == "mean" else 1.0
        out.append(per_time * math.log(data.n) / math.sqrt(separability(data.X, data.y)) if data.n > 1 else math.nan)
    return np.array(out)


@theory("fit_time", "ln(1/scale)/λ + c, λ = (1+α)‖μ‖/4",
        "Lyu et al. 2021, Thm E.4: T2(r) = ln(1/r) / lambda with lambda = ((1+alpha)/4)||mu||, "
        "mu = (1/n) sum y_i x_i (symmetric data, leaky ReLU slope alpha, mean logistic loss)", fit="offset",
        assumptions=(TWO_LAYER, LEAKY, LOGISTIC, SYMMETRIC))
def _fit_time(inp: TheoryInputs) -> np.ndarray:
    scale = inp.value("init.scale")
    out = []
    for i, config in enumerate(inp.configs):
        data = inp.dataset(i)
        mu = np.mean(data.y[:, None] * data.X, axis=0)
        lam = (1 + leaky_alpha_of(config)) / 4 * float(np.linalg.norm(mu))
        out.append(math.log(1 / scale[i]) / lam)
    return np.array(out)


@theory("success_probability", "1 - 2^-(m-1)",
        "Lyu et al. 2021, Cor. 4.4: a run fails only if all m neurons start in one sign group", fit="none",
        assumptions=(TWO_LAYER, LEAKY, SYMMETRIC))
def _success_probability(inp: TheoryInputs) -> np.ndarray:
    m = inp.value("model.width")
    return 1.0 - 2.0 ** (-(m - 1))


@theory("transition_time", "C r/log(m)",
        "multi-index paper, Stage 2.1: T2 - T1 = O(r / log m) (r = data.r, m = model.width)", fit="scale",
        assumptions=(MEAN_FIELD,))
def _transition_time(inp: TheoryInputs) -> np.ndarray:
    return inp.value("data.r") / np.log(inp.value("model.width"))


# -- the plot -----------------------------------------------------------------------------------


def resolve_metric(columns: Sequence[str], name: str) -> str:
    """A table column from a metric name: exact, else ``final.NAME``, else ``event.NAME``."""
    for candidate in (name, f"final.{name}", f"event.{name}"):
        if candidate in columns:
            return candidate
    known = [c for c in columns if c.startswith(("final.", "event."))]
    raise KeyError(f"--metric: {name!r} is not a column of the table; known: {', '.join(known) or 'none'}")


def is_scale(values: Sequence[float]) -> bool:
    """True when a swept key is a scale (log axis): positive values that are evenly spaced in log
    (>= 3 values, e.g. doublings), or that span at least a factor 10 and are closer to geometric
    than to arithmetic spacing."""
    v = np.unique(np.asarray([x for x in values if isinstance(x, int | float | np.number)], dtype=np.float64))
    v = v[np.isfinite(v)]
    if v.size < 2 or np.any(v <= 0):
        return False
    lin, log = np.diff(v), np.diff(np.log(v))
    if v.size >= 3 and np.std(log) < 0.05 * np.mean(log):
        return True
    if v.max() / v.min() < 10:
        return False
    return v.size == 2 or float(np.std(log) / np.mean(log)) < float(np.std(lin) / np.mean(lin))


@dataclass
class Aggregated:
    """One row per (x[, y][, group]) cell: the center and band of the metric over seeds."""

    keys: list[str]
    cells: list[dict]  # {key: value, ..., "center", "lo", "hi", "n", "k", "config"}: k of the n seeds have a value

    def column(self, name: str) -> np.ndarray:
        return np.array([c[name] for c in self.cells], dtype=np.float64)

    @cached_property
    def inputs(self) -> TheoryInputs:
        return TheoryInputs({k: self.column(k) for k in self.keys if _numeric(self.cells, k)},
                            [c["config"] for c in self.cells])


def _numeric(cells, key) -> bool:
    return all(isinstance(c[key], int | float | np.number) and not isinstance(c[key], bool) for c in cells)


def aggregate(df, keys: Sequence[str], metric: str, agg: str = "median",
              configs: Callable[[str], dict | None] | None = None) -> Aggregated:
    """Aggregate ``metric`` over seeds for every combination of ``keys``; ``configs(run_id)``
    gives a point's resolved config (for theories). Rows of invalid or failed runs are dropped
    (a seed that did not complete counts as NaN: missing for median/mean, a failure for fraction)."""
    fn = AGGREGATES.get(agg).fn
    run_status = df["run_status"] if "run_status" in df.columns else df["status"]
    df = df[df["status"].isin(["completed", "diverged"]) | run_status.isin(["completed", "diverged"])]
    cells = []
    for values, group in df.groupby(list(keys), sort=True, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        v = group[metric].to_numpy(dtype=np.float64, na_value=np.nan)
        v = np.where(group["status"].to_numpy() == "completed", v, np.nan)
        center, lo, hi = fn(v)
        run_id = group["run_id"].dropna().iloc[0] if group["run_id"].notna().any() else None
        cells.append({**{k: _plain(x) for k, x in zip(keys, values)}, "center": center, "lo": lo, "hi": hi,
                      "n": int(len(group)), "k": int(np.isfinite(v).sum()),
                      "config": configs(run_id) if configs and run_id else None})
    return Aggregated(list(keys), cells)


def _plain(x):
    return x.item() if isinstance(x, np.generic) else x


def phase_figure(df, *, x: str, metric: str, y: str | None = None, keys: Sequence[str] = (), theory: str | None = None,
                 agg: str = "median", configs: Callable[[str], dict | None] | None = None, title: str | None = None,
                 ax=None):
    """The figure of ``metric`` against ``x`` (1-D, one line per value of the other swept keys, seed
    band) or over ``x`` and ``y`` (heatmap, theory as contour lines); returns ``(fig, fitted)``."""
    metric = resolve_metric(list(df.columns), metric)
    for key, flag in ((x, "--x"), (y, "--y")):
        if key is not None and key not in df.columns:
            raise KeyError(f"{flag}: {key!r} is not a swept key; swept: {', '.join(keys) or 'none'}")
    if y is not None and y == x:
        raise KeyError(f"--y: is {y!r}, the key of --x too: a heatmap needs two different swept keys")
    th = THEORIES.get(theory) if theory else None
    spec = AGGREGATES.get(agg)
    fig = None
    if ax is None:
        fig, (ax,) = panels(1, width=4.6, height=3.4)
    else:
        fig = ax.figure
    label = metric if agg == "median" else f"{agg}({metric})"
    fitted: dict[str, float] = {}
    if y is None:
        others = [k for k in keys if k not in (x,) and df[k].nunique(dropna=False) > 1]
        data = aggregate(df, [*others, x], metric, agg, configs)
        groups = _split(data, others)
        values = sorted({c[x] for c in data.cells}, key=lambda v: (isinstance(v, str), v))
        numeric = _numeric(data.cells, x)
        positions = {v: (float(v) if numeric else float(i)) for i, v in enumerate(values)}
        notes = []
        for gi, (gvals, cells) in enumerate(groups.items()):
            xs = np.array([positions[c[x]] for c in cells], dtype=np.float64)
            sub = Aggregated(data.keys, cells)
            name = (", ".join(f"{k}={_fmt(v)}" for k, v in zip(others, gvals))
                    or f"{agg} over seeds ({spec.band}; k/n: seeds with a value)")
            line, = ax.plot(xs, sub.column("center"), "o-", label=name, markersize=4)
            ax.fill_between(xs, sub.column("lo"), sub.column("hi"), color=line.get_color(), alpha=0.2, linewidth=0)
            _seed_counts(ax, xs, cells, line.get_color(), first=gi == 0)
            if th is not None:
                pred, fit = th.predict(sub.inputs, sub.column("center"))
                suffix = f" [{name}]" if others else ""
                fitted.update({f"{k}{suffix}": v for k, v in fit.items()})
                notes.append(_fitted_text(fit) + suffix)
                ax.plot(xs, pred, "--", color=line.get_color() if others else "black",
                        label=f"theory: {th.formula}" if gi == 0 else None)
        if notes and any(notes):
            ax.set_title("\n".join(n for n in notes if n), fontsize=7, color="dimgray", loc="left")
        ax.set(xlabel=x, ylabel=label, xscale="log" if numeric and is_scale(values) else "linear")
        if not numeric:  # categories (e.g. activations): evenly spaced, labelled
            ax.set_xticks(list(positions.values()), [str(v) for v in values], rotation=20, fontsize=7)
        if agg != "fraction" and np.all(np.nan_to_num(data.column("lo"), nan=1.0) > 0) and is_scale(
                [v for v in data.column("center") if np.isfinite(v)]):
            ax.set_yscale("log")
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    else:
        others = [k for k in keys if k not in (x, y) and df[k].nunique(dropna=False) > 1]
        data = aggregate(df, [*others, y, x], metric, agg, configs)
        groups = _split(data, others)
        if len(groups) > 1:  # one heatmap per combination of the other swept keys
            fig, axes = panels(min(len(groups), 3), math.ceil(len(groups) / 3), width=4.6, height=3.4)
        else:
            axes = [ax]
        for gax, (gvals, cells) in zip(axes, groups.items()):
            name = ", ".join(f"{k}={_fmt(v)}" for k, v in zip(others, gvals))
            fit = _heatmap(fig, gax, Aggregated(data.keys, cells), x, y, label, agg, th)
            fitted.update({f"{k}{f' [{name}]' if name else ''}": v for k, v in fit.items()})
            if name:
                gax.set_title(f"{name}\n{gax.get_title()}".strip(), fontsize=8)
        for extra in axes[len(groups):]:
            extra.set_visible(False)
    warnings = th.broken([c["config"] for c in data.cells]) if th is not None else []
    if title:
        fig.suptitle(title, fontsize=10)
    if warnings:  # a theory drawn outside its premises: say so in the figure (plot_sweep tells the caller too)
        import textwrap

        fig.supxlabel(textwrap.fill("theory drawn outside its assumptions: " + "; ".join(warnings), 95),
                      color="firebrick", fontsize=7)
    return fig, fitted


def _seed_counts(ax, xs: np.ndarray, cells: list[dict], color, first: bool) -> None:
    """The seed count behind every point (``k/n``) and, where no seed has a value, a "not reached" marker at
    the foot of the axis (a point a plain line would leave out)."""
    from matplotlib.transforms import blended_transform_factory

    foot = blended_transform_factory(ax.transData, ax.transAxes)
    missing = [(xv, c) for xv, c in zip(xs, cells) if c["k"] == 0]
    for xv, c in zip(xs, cells):
        if c["k"]:
            ax.annotate(f"{c['k']}/{c['n']}", (xv, c["center"]), textcoords="offset points", xytext=(0, 5),
                        fontsize=6, color=color, ha="center")
    if missing:
        ax.plot([xv for xv, _ in missing], [0.04] * len(missing), "x", color=color, transform=foot, clip_on=False,
                label="not reached (0 seeds)" if first else None)
        for xv, c in missing:
            ax.text(xv, 0.07, f"not reached, 0/{c['n']}", transform=foot, fontsize=6, color=color, ha="center")


def _fitted_text(fit: dict) -> str:
    """``fitted C = 1.23 [1.1, 1.4] (95 %), slope = 0.98``: each fitted constant with its interval."""
    parts = []
    for name in ("C", "c"):
        if name in fit:
            interval = (f" [{fit[name + '_lo']:.3g}, {fit[name + '_hi']:.3g}] (95 %)"
                        if f"{name}_lo" in fit else " (one point: no interval)")
            parts.append(f"fitted {name} = {fit[name]:.3g}{interval}")
    if "slope" in fit:
        parts.append(f"log-log slope = {fit['slope']:.3g}" if "C" in fit else f"slope = {fit['slope']:.3g}")
    return ", ".join(parts)


def _heatmap(fig, ax, data: Aggregated, x: str, y: str, label: str, agg: str, th: Theory | None) -> dict[str, float]:
    """One heatmap of the cells' centers over (x, y), the theory as dashed contours; returns its fit."""
    order = lambda v: (isinstance(v, str), v)  # noqa: E731
    xs = sorted({c[x] for c in data.cells}, key=order)
    ys = sorted({c[y] for c in data.cells}, key=order)
    Z = np.full((len(ys), len(xs)), np.nan)
    for c in data.cells:
        Z[ys.index(c[y]), xs.index(c[x])] = c["center"]
    numx, numy = _numeric(data.cells, x), _numeric(data.cells, y)
    px = [float(v) for v in xs] if numx else list(range(len(xs)))  # categories: evenly spaced
    py = [float(v) for v in ys] if numy else list(range(len(ys)))
    logx, logy = numx and is_scale(xs), numy and is_scale(ys)
    mesh = ax.pcolormesh(_edges(px, logx), _edges(py, logy), np.ma.masked_invalid(Z), shading="flat", cmap="viridis")
    for c in data.cells:  # the seed count of each cell; an empty cell says it was not reached
        if c["k"] < c["n"]:
            ax.text(px[xs.index(c[x])], py[ys.index(c[y])], f"{c['k']}/{c['n']}" if c["k"] else f"not reached\n0/{c['n']}",
                    fontsize=6, ha="center", va="center", color="white" if c["k"] else "black")
    fig.colorbar(mesh, ax=ax, label=f"{label} ({agg} over seeds)" if agg == "median" else label)
    fitted: dict[str, float] = {}
    if th is not None:
        pred, fitted = th.predict(data.inputs, data.column("center"))
        P = np.full_like(Z, np.nan)
        for c, p in zip(data.cells, pred):
            P[ys.index(c[y]), xs.index(c[x])] = p
        if len(xs) > 1 and len(ys) > 1 and np.isfinite(P).sum() >= 4:
            cs = ax.contour(px, py, P, colors="white", linewidths=1.0, linestyles="--")
            ax.clabel(cs, fontsize=7, fmt="%.3g")
        ax.set_title(f"dashed: {_legend(th, fitted)}", fontsize=8)
    ax.set(xlabel=x, ylabel=y, xscale="log" if logx else "linear", yscale="log" if logy else "linear")
    ax.grid(False)
    if not logx and len(xs) <= 12:
        ax.set_xticks(px, [_fmt(v) for v in xs], fontsize=7)
    if not logy and len(ys) <= 12:
        ax.set_yticks(py, [_fmt(v) for v in ys], fontsize=7)
    return fitted


def _split(data: Aggregated, others: list[str]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for c in data.cells:
        groups.setdefault(tuple(c[k] for k in others), []).append(c)
    return groups


def _edges(values: Sequence[float], log: bool) -> np.ndarray:
    v = np.log(np.asarray(values, dtype=np.float64)) if log else np.asarray(values, dtype=np.float64)
    if v.size == 1:
        e = np.array([v[0] - 0.5, v[0] + 0.5])
    else:
        mid = (v[1:] + v[:-1]) / 2
        e = np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]])
    return np.exp(e) if log else e


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _legend(th: Theory, fitted: dict[str, float]) -> str:
    consts = _fitted_text(fitted)
    return f"{th.formula}" + (f" ({consts})" if consts else "")


def plot_sweep(sweep_dir: str | Path, *, x: str, metric: str, y: str | None = None, theory: str | None = None,
               agg: str = "median", output: str | Path | None = None) -> tuple[Path, dict[str, float], list[str]]:
    """Draw a sweep folder's phase plot to ``output`` (default ``SWEEP_DIR/<metric>_vs_<x>[_<y>].png``); returns
    ``(path, fitted constants, the theory's assumptions that the runs break)``, also written beside it as JSON."""
    from twolayer.store import CONFIG, RunStore
    from twolayer.table import read_table

    sweep_dir = Path(sweep_dir)
    df, keys = read_table(sweep_dir)
    store = RunStore(sweep_dir.parent)

    def configs(run_id: str) -> dict | None:
        import yaml

        p = store.root / run_id / CONFIG
        return yaml.safe_load(p.read_text()) if p.is_file() else None

    from twolayer.plotting import style

    with style():
        fig, fitted = phase_figure(df, x=x, y=y, metric=metric, keys=keys or [x] + ([y] if y else []), theory=theory,
                                   agg=agg, configs=configs, title=sweep_dir.name)
        stem = "_vs_".join([metric, x] + ([y] if y else [])).replace("/", "_")
        output = Path(output) if output else sweep_dir / f"{stem}.png"
        fig.savefig(output)
    broken = THEORIES.get(theory).broken([configs(r) for r in df["run_id"].dropna().unique()]) if theory else []
    (output.with_suffix(".json")).write_text(json.dumps({"theory": theory, "fitted": fitted,
                                                         "assumptions_broken": broken}, indent=1))
    return output, fitted, broken


__all__ = ["AGGREGATES", "THEORIES", "Aggregate", "Theory", "TheoryInputs", "aggregate", "fit_theory", "is_scale",
           "phase_figure", "plot_sweep", "resolve_metric", "theory"]
