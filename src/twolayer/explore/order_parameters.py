"""The explorer's order-parameter page for online SGD on teacher-student data (issue 29): Q, R, v and eps_g of each
run's seeds against time, the simulation (solid) and the order-parameter ODE started at the same seed's initial
state (dashed) on the same axes.

``order_parameter_payload(run)`` is the data (or None for a run that is not online SGD with Q, R, v recorded);
``write_order_parameter_page(dest, exp_id, runs)`` writes ``<page_name>-order-parameters.html`` beside the
experiment's page (Plotly.js from beside it, as every explorer page), or returns None when no run fits."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import numpy as np

from twolayer.explore.page import CSS, PLOTLY_JS, write_page, write_plotly
from twolayer.store import FINISHED
from twolayer.stored import StoredRun

MAX_SEEDS = 3
NEEDED = ("Q", "R", "v", "T")

SCRIPT = """
const D = window.ORDER;
const sel = document.getElementById('run'), seedSel = document.getElementById('seed');
D.runs.forEach((r, i) => sel.add(new Option(r.key, i)));
function seeds() {
  const r = D.runs[+sel.value]; seedSel.innerHTML = '';
  r.seeds.forEach((s, i) => seedSel.add(new Option('seed ' + s.seed, i)));
}
function draw() {
  const r = D.runs[+sel.value], s = r.seeds[+seedSel.value || 0];
  document.getElementById('note').textContent = r.note;
  for (const panel of ['Q', 'R', 'v', 'eps_g']) {
    const traces = [];
    s.series.filter(x => x.group === panel).forEach((x, j) => {
      traces.push({x: r.t, y: x.sgd, name: x.name + ' SGD', mode: 'lines', line: {width: 1.2}, legendgroup: x.name});
      traces.push({x: r.t, y: x.ode, name: x.name + ' ODE', mode: 'lines', line: {dash: 'dash', width: 1.6},
                   legendgroup: x.name});
    });
    // pair the colours of a quantity's SGD and ODE lines
    const palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
    traces.forEach((tr, j) => { tr.line.color = palette[Math.floor(j / 2) % palette.length]; });
    Plotly.react('panel-' + panel, traces, {
      title: {text: D.labels[panel], font: {size: 13}}, margin: {l: 55, r: 10, t: 34, b: 40}, height: 330,
      xaxis: {title: 't = samples / d'}, yaxis: {type: panel === 'eps_g' ? 'log' : 'linear'}, showlegend: true,
      legend: {font: {size: 10}}}, {displaylogo: false});
  }
}
sel.onchange = () => { seeds(); draw(); }; seedSel.onchange = draw;
seeds(); draw();
"""


def _vstar(config: dict) -> np.ndarray:
    data = config["data"]
    return np.asarray(data.get("teacher_weights") or np.ones(int(data["teacher_width"])), dtype=np.float64)


def order_parameter_payload(run, key: str, max_seeds: int = MAX_SEEDS) -> dict | None:
    """SGD and ODE series of the first ``max_seeds`` seeds of ``run`` (None when it is not online SGD on
    teacher-student data with Q, R, v and T observed). Time is Goldt time: twolayer's t = lr * step is eta times it."""
    import jax

    from twolayer.theory.online_sgd import ODEError, generalization_error, integrate

    config, traj = run.config, run.trajectory
    if (config.get("data") or {}).get("kind") != "teacher_student" or any(k not in traj for k in NEEDED):
        return None
    batched = config.get("seeds") is not None
    arrays = {k: np.asarray(traj[k], dtype=np.float64) for k in NEEDED}
    if not batched:
        arrays = {k: a[None] for k, a in arrays.items()}
    eta = float(config["train"]["lr"]) * int(config["data"]["d"])
    t = np.asarray(traj["t"], dtype=np.float64) / eta
    activation = config["model"]["activation"]
    vstar = _vstar(config)
    seed_ids = list((run.summary or {}).get("seeds") or [config.get("seed") or 0])
    seeds = []
    for s in range(min(arrays["Q"].shape[0], max_seeds)):
        Q, R, v, T = (arrays[k][s] for k in NEEDED)
        try:
            sol = integrate(Q[0], R[0], v[0], T[0], vstar, t, activation=activation, eta=eta,
                            layers=config["train"].get("layers", "both"), noise=float(config["data"].get("noise", 0)),
                            batch=int(config["train"].get("batch_size") or 1), rtol=1e-7, atol=1e-9)
        except (ODEError, ValueError) as e:
            return {"key": key, "t": [], "seeds": [], "note": f"no ODE: {e}"}
        eps = (np.asarray(traj["eps_g"], dtype=np.float64).reshape(arrays["Q"].shape[0], -1)[s] if "eps_g" in traj
               else np.asarray(jax.vmap(lambda Q, R, T, v: generalization_error(Q, R, T, v, vstar, activation))(
                   Q, R, T, v)))
        K, M = R.shape[1:]
        series = [{"group": "Q", "name": f"Q{i}{k}", "sgd": Q[:, i, k], "ode": sol.Q[:, i, k]}
                  for i in range(K) for k in range(i, K)]
        series += [{"group": "R", "name": f"R{i}{n}", "sgd": R[:, i, n], "ode": sol.R[:, i, n]}
                   for i in range(K) for n in range(M)]
        series += [{"group": "v", "name": f"v{i}", "sgd": v[:, i], "ode": sol.v[:, i]} for i in range(K)]
        series.append({"group": "eps_g", "name": "eps_g", "sgd": eps, "ode": sol.eps_g})
        seeds.append({"seed": seed_ids[s] if s < len(seed_ids) else s,
                      "series": [{**x, "sgd": _list(x["sgd"]), "ode": _list(x["ode"])} for x in series]})
    note = (f"{activation}, K = {config['model']['width']}, M = {config['data']['teacher_width']}, "
            f"d = {config['data']['d']}, eta = {eta:g}, layers {config['train'].get('layers', 'both')}; solid: SGD, "
            f"dashed: the ODE from the seed's initial order parameters")
    return {"key": key, "id": run.path.name, "t": _list(t), "seeds": seeds, "note": note}


def _list(a) -> list:
    """Floats rounded to 7 significant digits, non-finite values as None (JSON)."""
    return [float(f"{x:.7g}") if np.isfinite(x) else None for x in np.asarray(a, dtype=np.float64).ravel()]


def page_file(exp_page: str) -> str:
    """The order-parameter page beside an experiment's page ``<name>.html``: ``<name>-order-parameters.html``."""
    return exp_page.removesuffix(".html") + "-order-parameters.html"


def _json(obj) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def render(title: str, runs: list[dict], back: str) -> str:
    """The order-parameter page (HTML) of ``runs``: one panel per order parameter (Q, R, v, eps_g), SGD and the ODE
    overlaid per run and seed, with a link ``back`` to the experiment page."""
    labels = {"Q": "Q_ik (student-student)", "R": "R_in (student-teacher)", "v": "v_i (second layer)",
              "eps_g": "eps_g (generalization error)"}
    panels = "".join(f'<div class="panel" id="panel-{p}"></div>' for p in labels)
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', '<link rel="icon" href="data:,">',
        f"<title>{escape(title)} · order parameters</title><style>{CSS}</style>",
        f'<script src="{PLOTLY_JS}"></script></head><body>',
        f"<h1>{escape(title)}</h1>", '<div class="muted">order parameters of online SGD against the ODE</div>',
        f'<nav><a href="{escape(back)}">experiment page</a></nav>',
        '<div class="controls"><label>run <select id="run"></select></label>'
        '<label><select id="seed"></select></label></div>', '<div class="muted" id="note"></div>',
        f'<div id="scalars">{panels}</div>',
        f"<script>window.ORDER = {_json({'runs': runs, 'labels': labels})};</script>",
        f"<script>{SCRIPT}</script>", "</body></html>", ""])


def write_order_parameter_page(dest: Path, exp_page: str, title: str, runs: list[tuple[str, Path]]) -> Path | None:
    """The order-parameter page of an experiment whose runs (``[(config key, run dir)]``) include online SGD on
    teacher-student data; None (nothing written) when none does."""
    payloads = []
    for key, path in runs:
        try:
            run = StoredRun(path)
            finished = (run.summary or {}).get("status") in FINISHED
        except (OSError, ValueError):
            continue
        p = order_parameter_payload(run, key) if finished else None
        if p is not None and p["seeds"]:
            payloads.append(p)
    if not payloads:
        return None
    write_plotly(dest)
    return write_page(dest / page_file(exp_page), render(title, payloads, exp_page))
