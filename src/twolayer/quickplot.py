"""Quick plots and the notebook summary of a run: ``Run.plot(name)`` and ``Run._repr_html_``.

``plot(run, name)`` draws one observable against time the way the papers do: log time when the run
observes on a log schedule or starts from a small initialization (``init.scale <= 1e-3``), a log
value axis when the values are positive and span more than two decades, the median over seeds
with the min-max range shaded (``seeds="band"``) or one line per seed (``seeds="all"`` or given
seed ids). Per-neuron observables are pooled over neurons (``neurons="band"``: median and min-max
over neurons and seeds), averaged (``"mean"``) or drawn one line per neuron (``"all"``);
``split="sign"`` draws the neurons with v_j > 0 and v_j < 0 (at the last observation) apart.
Observables with another axis (Hermite ``order``, target ``direction``) get one line per entry.
Categorical observables (``categories()``: the cone) are drawn as the number of neurons in each category
over time. ``events=`` marks the event times of the drawn seeds (the median over them for ``seeds="band"``).
Late-phase flow runs (``flow_log``) are drawn against the physical time t = expm1(tau).
"""

from __future__ import annotations

import base64
import contextlib
import io
import warnings
from html import escape

import numpy as np

from twolayer.store import TRAJECTORY

def categories() -> dict[str, dict[int, str]]:
    """The categorical observables (codes, not magnitudes) and the name of each code: ``plot`` draws how many
    neurons are in each category over time. Add one by adding an entry."""
    from twolayer.theory.alignment import CONE_NAMES

    return {"cone": CONE_NAMES}


SMALL_INIT = 1e-3  # init.scale at or below this: log time axis (small-init dynamics live on log(1/scale))
LOG_VALUES = 100.0  # positive values spanning more than this factor: log value axis
LOSS_NAMES = ("loss", "loss_population", "loss_train", "log_loss")


def _series(run, name: str):
    """``(t, values [S, T, ...], dims, seed ids)`` of observable ``name``."""
    from twolayer.observe import output_dims

    traj = run.trajectory
    if name not in traj or name in ("t", "step"):
        names = ", ".join(k for k in traj if k not in ("t", "step"))
        raise ValueError(f"plot: {name!r} is not recorded in {run.path.name} (recorded: {names}); "
                         f"add it to observe.metrics")
    cfg = run.config
    batched = cfg.get("seeds") is not None
    values = np.asarray(traj[name], dtype=np.float64)
    values = values if batched else values[None]
    dims = output_dims(name, values.ndim - 2)
    if dims is None or len(dims) > 1:
        raise ValueError(f"plot: {name!r} has axes {dims or values.shape[2:]} besides seed and time; "
                         f"select from run.to_xarray()[{name!r}] and plot that")
    seeds = list(run.summary.get("seeds") or range(values.shape[0]))
    return time_axis(run), values, dims, seeds


def time_axis(run) -> np.ndarray:
    """The time axis to draw: t, or the physical time expm1(tau) of late-phase flow runs."""
    from twolayer.train.methods import clock_of

    return clock_of(run.config).flow_time(run.trajectory["t"])


def log_time(run) -> bool:
    """True when the run is best read on a log time axis (log schedule or small initialization)."""
    cfg = run.config
    scale = (cfg.get("init") or {}).get("scale")
    small = isinstance(scale, int | float) and 0 < scale <= SMALL_INIT
    return (cfg.get("observe") or {}).get("schedule") == "log" or small


def log_values(name: str, values: np.ndarray) -> bool:
    """Whether an observable's values are drawn on a log axis: all positive and spanning more than
    ``LOG_VALUES`` (log-losses, which are already logarithms, never).
    """
    finite = values[np.isfinite(values)]
    if name == "log_loss" or finite.size == 0 or np.min(finite) <= 0:
        return False
    return float(np.max(finite) / np.min(finite)) > LOG_VALUES


def _pick_seeds(values, seed_ids, seeds):
    """Rows of ``values`` for ``seeds`` ("band", "all", a seed id or a list of ids) and their labels."""
    if isinstance(seeds, str):
        if seeds not in ("band", "all"):
            raise ValueError(f"plot: seeds={seeds!r} is not 'band', 'all', a seed id or a list of seed ids")
        return values, seed_ids, seeds == "band"
    wanted = [seeds] if isinstance(seeds, int | np.integer) else list(seeds)
    missing = [s for s in wanted if s not in seed_ids]
    if missing:
        raise ValueError(f"plot: seed(s) {missing} not in this run (seeds: {seed_ids})")
    rows = [seed_ids.index(s) for s in wanted]
    return values[rows], wanted, False


def _groups(run, values, split, seed_rows):
    """``[(label, neuron mask [S, h])]``: every neuron, or the sign groups of v_j at the last point."""
    if split is None:
        return [(None, np.ones((values.shape[0], values.shape[-1]), dtype=bool))]
    if split != "sign":
        raise ValueError(f"plot: split={split!r} is not None or 'sign'")
    if "v" not in run.trajectory:
        raise ValueError("plot: split='sign' needs the observable v in observe.metrics")
    v = np.asarray(run.trajectory["v"], dtype=np.float64)
    v = (v if run.config.get("seeds") is not None else v[None])[seed_rows][:, -1]
    return [("v > 0", v > 0), ("v < 0", v < 0)]


def plot(run, name: str | None = None, *, seeds="band", neurons: str = "band", split: str | None = None, ax=None,
         events: bool | list[str] = False, logx: bool | None = None, logy: bool | None = None,
         label: str | None = None, color=None):
    """Draw observable ``name`` (default: the recorded loss) of ``run`` against time (module docstring).

    Arguments:
        run: a stored run.
        name: a recorded observable (a scalar, per-neuron, or per-order/direction output).
        seeds: ``band`` (median, min-max shaded), ``all`` (a line per seed) or a seed id.
        neurons: ``band``, ``mean`` or ``all`` for per-neuron observables; ``split="sign"`` separates
            v_j > 0 from v_j < 0.
        ax: an Axes to draw into (default: a new figure).
        events: draw the run's events (True: all, or a list of names) as vertical lines.
        logx, logy: force the axes' scales (default: chosen from the run and the values).
        label, color: the curve's legend label and colour.

    Returns:
        The matplotlib Axes.
    """
    import matplotlib

    from twolayer.plotting import STYLE

    name = name or loss_name(run) or "loss"
    t, values, dims, seed_ids = _series(run, name)
    picked, labels, band = _pick_seeds(values, seed_ids, seeds)
    rows = [seed_ids.index(s) for s in labels]
    if neurons not in ("band", "mean", "all"):
        raise ValueError(f"plot: neurons={neurons!r} is not 'band', 'mean' or 'all'")
    fig = None
    if ax is None:  # a pyplot figure, so notebooks show it; created outside rc_context, because the first
        import matplotlib.pyplot as plt  # pyplot figure activates a notebook's backend and rc_context would undo that

        fig = plt.figure(figsize=(4.8, 3.3), layout="constrained")
    with matplotlib.rc_context(STYLE) if fig is not None else contextlib.nullcontext():  # a given ax keeps its style
        ax = fig.add_subplot() if fig is not None else ax
        _draw(ax, run, name, t, picked, dims, labels, band, neurons, split, rows, label, color, events, logx, logy)
    return ax


def _category_curves(name, picked, labels, band, label):
    """``[(label, counts [N, T], thin)]``: how many neurons are in each category of a categorical observable
    at each time (median over seeds with the min-max band, or one line per picked seed)."""
    names = categories()[name]
    codes = np.rint(picked)
    seen = [c for c in names if np.any(codes == c)]
    curves = []
    for code in seen:
        counts = np.sum(codes == code, axis=-1).astype(np.float64)  # [S, T]
        counts[np.all(np.isnan(picked), axis=-1)] = np.nan  # a diverged seed counts nothing
        for i, seed in enumerate([None] if band else labels):
            parts = [p for p in (label, names[code], None if band else f"seed {seed}") if p]
            curves.append((" · ".join(parts), counts if band else counts[i:i + 1], False))
    return curves


def _draw(ax, run, name, t, picked, dims, labels, band, neurons, split, rows, label, color, events, logx, logy):
    logx = log_time(run) if logx is None else logx
    keep = t > 0 if logx else np.ones_like(t, dtype=bool)
    t, picked = t[keep], picked[:, keep]
    categorical = name in categories() and dims == ("neuron",)
    if categorical:
        curves = _category_curves(name, picked, labels, band, label)
    else:
        curves = _curves(run, name, picked, dims, labels, band, neurons, split, rows, label)
    colors = iter(["C0", "C3", "C2", "C1", "C4", "C5", "C6", "C7", "C8", "C9"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns (diverged seeds, empty groups)
        for curve_label, samples, thin in curves:
            c = color or next(colors, None)
            if thin:
                for k, row in enumerate(samples):
                    ax.plot(t, row, color=c, lw=0.7, alpha=0.6, label=curve_label if k == 0 else None)
                continue
            (line,) = ax.plot(t, np.nanmedian(samples, axis=0), color=c, label=curve_label)
            if samples.shape[0] > 1:
                ax.fill_between(t, np.nanmin(samples, axis=0), np.nanmax(samples, axis=0), color=line.get_color(),
                                alpha=0.25, linewidth=0)
    logy = (False if categorical else log_values(name, picked)) if logy is None else logy
    from twolayer.train.methods import clock_of

    ax.set(xscale="log" if logx else "linear", yscale="log" if logy else "linear",
           xlabel=clock_of(run.config).label, ylabel=f"neurons per {name}" if categorical else name)
    ax.set_title(run.path.name, fontsize=9)
    if events:
        _mark_events(ax, run, events, rows, band)
    if any(lbl for lbl, _, _ in curves) or events:
        ax.legend()


def _curves(run, name, picked, dims, labels, band, neurons, split, rows, label):
    """``[(label, samples [N, T], thin)]``: each entry one median line with its min-max band, or
    (``thin``) N separate lines."""
    if dims == ("neuron",):
        curves = []
        for group, mask in _groups(run, picked, split, rows):
            data = np.where(mask[:, None, :], picked, np.nan)  # [S, T, h]
            if neurons == "mean":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    data = np.nanmean(data, axis=-1)[..., None]
            pooled = neurons == "band" or neurons == "mean"
            for s, seed in enumerate(labels if not band else [None]):
                rows_ = data if band else data[s:s + 1]
                samples = np.moveaxis(rows_, 1, -1).reshape(-1, rows_.shape[1])  # [S*h, T]
                samples = samples[~np.all(np.isnan(samples), axis=1)] if samples.size else samples
                parts = [p for p in (label, group, None if band else f"seed {seed}") if p]
                curves.append((" · ".join(parts) or None, samples, not pooled))
        return curves
    entries = [(f"{dims[0]} {k}", picked[..., k]) for k in range(picked.shape[-1])] if dims else [(None, picked)]
    curves = []
    for entry, values in entries:  # order / direction observables: one curve per entry
        for i, seed in enumerate([None] if band else labels):
            parts = [p for p in (label, entry, None if band else f"seed {seed}") if p]
            curves.append((" · ".join(parts) or None, values if band else values[i:i + 1], False))
    return curves


def _mark_events(ax, run, events, rows, band) -> None:
    """The events as vertical lines: the median over the drawn seeds (``seeds="band"``), else each drawn seed's."""
    found = run.summary.get("events") or {}
    names = list(found) if events is True else list(events)
    styles = iter(["--", ":", "-."] * 4)
    for ev in names:
        if ev not in found:
            raise ValueError(f"plot: event {ev!r} was not detected in this run ({_why_no_event(run, ev)})")
        value = found[ev]
        times = value if isinstance(value, list) else [value]
        picked = [times[r] for r in rows if r < len(times)]
        got = [float(v) for v in picked if v is not None]
        style = next(styles)
        if not got:
            ax.plot([], [], " ", label=f"{ev}: not reached")
        elif band and len(rows) > 1:
            ax.axvline(float(np.median(got)), color="0.35", lw=0.9, ls=style,
                       label=f"{ev} (median, {len(got)}/{len(picked)} seeds)")
        else:
            seed_ids = list(run.summary.get("seeds") or range(len(times)))
            for r in rows:
                if r < len(times) and times[r] is not None:
                    ax.axvline(float(times[r]), color="0.35", lw=0.9, ls=style,
                               label=f"{ev} (seed {seed_ids[r]})" if len(rows) > 1 else ev)


def _why_no_event(run, ev: str) -> str:
    """Why an event is absent: the observables it reads that the run does not record, else what was detected."""
    from twolayer.events import EVENTS

    found = run.summary.get("events") or {}
    if ev in EVENTS:
        missing = [n for n in EVENTS.get(ev).needs if n not in run.trajectory]
        if missing:
            return f"it reads {', '.join(map(repr, missing))}: add them to observe.metrics"
    return f"events: {', '.join(found) or 'none'}"


# -- notebook summary ----------------------------------------------------------------------------

def config_digest(config: dict) -> list[tuple[str, str]]:
    """The few config facts that identify a run at a glance."""
    def params(section: dict, skip=("kind",)) -> str:
        return ", ".join(f"{k}={v}" for k, v in section.items() if k not in skip and v is not None and k != "sha256")

    data, model, init = config.get("data") or {}, config.get("model") or {}, config.get("init") or {}
    loss, train, obs = config.get("loss") or {}, config.get("train") or {}, config.get("observe") or {}
    act = model.get("activation")
    act = act if isinstance(act, str) else ", ".join(f"{k}={v}" for k, v in (act or {}).items())
    seeds = config.get("seeds") if config.get("seeds") is not None else f"seed {config.get('seed') or 0}"
    horizon = f"steps={train.get('steps')}" if train.get("steps") is not None else f"time={train.get('time')}"
    return [("data", f"{data.get('kind')} ({params(data)})"),
            ("model", f"{model.get('kind')}, {act}, width {model.get('width')}"),
            ("init", f"{init.get('kind')} ({params(init)})"), ("loss", f"{loss.get('kind')} ({loss.get('reduction')})"),
            ("train", ", ".join([str(train.get("method")), *([f"lr={train['lr']}"] if train.get("lr") else []), horizon])),
            ("seeds", str(seeds)), ("observe", f"{_schedule(obs)}: {', '.join(obs.get('metrics') or [])}")]


def _schedule(obs: dict) -> str:
    schedule = obs.get("schedule")
    if schedule == "every":
        return f"every {obs.get('every'):g}"
    if schedule == "at":
        return f"at {len(obs.get('at') or [])} points"
    return f"{schedule}, {obs.get('points')} points"


def _final_cell(value) -> str:
    if isinstance(value, list):
        finite = [v for v in value if v is not None and np.isfinite(v)]
        if not finite:
            return "nan"
        med = float(np.median(finite))
        return f"{med:.4g} [{min(finite):.4g}, {max(finite):.4g}]" if len(finite) > 1 else f"{med:.4g}"
    return "nan" if value is None else f"{value:.4g}"


def loss_name(run) -> str | None:
    """The recorded loss-like observable to show first."""
    return next((n for n in LOSS_NAMES if n in run.trajectory), None)


def inline_png(run, name: str, width: float = 3.2, height: float = 2.1) -> str:
    """A small PNG of ``plot(run, name)`` as a data URI (drawn on a bare Figure, no pyplot)."""
    import matplotlib
    from matplotlib.figure import Figure

    from twolayer.plotting import STYLE

    with matplotlib.rc_context({**STYLE, "font.size": 7, "axes.titlesize": 7, "axes.labelsize": 7,
                                "xtick.labelsize": 6, "ytick.labelsize": 6}):
        fig = Figure(figsize=(width, height), layout="constrained")
        ax = fig.subplots()
        plot(run, name, ax=ax)
        ax.set_title("")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def repr_html(run) -> str:
    """The notebook summary of a run: status, config digest, final scalars, a small loss plot."""
    summary = run.summary
    try:
        config = run.config
    except FileNotFoundError:
        return f"<pre>{escape(repr(run))}</pre>"
    status = summary.get("status", "unknown")
    color = {"completed": "#1a7f37", "running": "#9a6700"}.get(status, "#cf222e")
    wall = summary.get("wall_seconds")
    head = (f'<div><b>twolayer run</b> <code>{escape(run.path.name)}</code> · '
            f'<span style="color:{color};font-weight:600">{escape(status)}</span>'
            f'{" (cached)" if run.cached else ""}'
            f'{f" · {wall:.1f} s" if isinstance(wall, int | float) else ""} · '
            f'<span style="color:#57606a">{escape(str(run.path))}</span></div>')
    cell = 'style="text-align:left;padding:1px 8px 1px 0;vertical-align:top"'
    digest = "".join(f"<tr><th {cell}>{escape(k)}</th><td {cell}>{escape(v)}</td></tr>" for k, v in config_digest(config))
    final = summary.get("final") or {}
    finals = "".join(f"<tr><th {cell}>{escape(k)}</th><td {cell}><code>{escape(_final_cell(v))}</code></td></tr>"
                     for k, v in final.items())
    img = ""
    name = loss_name(run) if (run.path / TRAJECTORY).is_file() else None
    if name:
        try:
            img = f'<img alt="{escape(name)}" src="{inline_png(run, name)}" style="max-width:300px">'
        except Exception as e:  # a summary must render even when the figure cannot
            img = f'<div style="color:#cf222e">{escape(name)} plot failed: {escape(str(e))}</div>'
    message = summary.get("message") or ""
    note = f'<div style="color:#cf222e;white-space:pre-wrap">{escape(message.strip()[:400])}</div>' if message else ""
    final_block = (f'<div><b>final</b> (median [min, max] over seeds)<table>{finals}</table></div>' if finals else "")
    return (f'<div class="twolayer-run" style="font-size:12px">{head}{note}'
            f'<div style="display:flex;gap:18px;align-items:flex-start;flex-wrap:wrap">'
            f"<table>{digest}</table>{final_block}{img}</div></div>")


__all__ = ["inline_png", "log_time", "plot", "repr_html", "time_axis"]
