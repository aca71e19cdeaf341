"""What an explorer page shows of one run, as plain JSON-ready data (``run_payload``).

Neuron pictures come from the first recorded source that fits (``NEURON_SOURCES``):

- ``neuron_weights`` on 2-D data: the directions w_j/||w_j|| on the unit circle, with the data
  points x_i/||x_i|| and the class sums x_+ and x_- (the data is rebuilt from the config);
- ``neuron_plane_pm`` / ``neuron_plane_margin`` / ``neuron_plane_targets``: the unit directions
  projected on the plane of the paper's reference directions (``twolayer.observe.planes``);
- ``mu_projection`` with ``perp_mu``: (<mu_bar, u_j>, ||P_perp u_j||), the Phase-I coordinates of
  Lyu et al. (a half plane);
- ``neuron_weights`` on d > 2: the unit directions projected on the two leading right singular
  vectors of the seed's final first layer (no reference directions recorded).

Colours: the sign of v_j (when ``v`` is recorded) and the cone (when ``cone`` is recorded).
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.observe import output_dims
from twolayer.observe.planes import PLANES

MAX_POINTS = 400  # observation points kept per run (evenly by index, first and last always)
MAX_SEEDS = 16  # seeds drawn in the trajectories
MAX_NEURON_SEEDS = 4  # seeds whose neurons the page carries
MAX_DATA_POINTS = 400  # data points drawn on the 2-D circle
DIGITS = 6  # significant digits of scalar values
PLACES = 4  # decimals of unit-circle coordinates
CONE_NAMES = {1: "S+", -1: "S-", 0: "S_dead", 2: "none"}


def _floats(a, digits: int = DIGITS) -> list:
    """Nested lists of floats rounded to ``digits`` significant digits; NaN and inf become None."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        x = float(a)
        return None if not math.isfinite(x) else float(f"{x:.{digits}g}")
    return [_floats(row, digits) for row in a] if a.ndim > 1 else [
        None if not math.isfinite(x) else float(f"{x:.{digits}g}") for x in a.tolist()]


def _coords(a) -> list:
    """Unit-disk coordinates rounded to ``PLACES`` decimals (NaN -> None), as nested lists."""
    a = np.round(np.asarray(a, dtype=np.float64), PLACES)
    return a.tolist() if np.all(np.isfinite(a)) else _none_nan(a.tolist())


def _none_nan(x):
    if isinstance(x, list):
        return [_none_nan(v) for v in x]
    return None if isinstance(x, float) and not math.isfinite(x) else x


def keep_points(T: int, limit: int = MAX_POINTS) -> np.ndarray:
    """Indices of at most ``limit`` observation points, evenly spread by index (first and last kept)."""
    if T <= limit:
        return np.arange(T)
    return np.unique(np.rint(np.linspace(0, T - 1, limit)).astype(int))


def _seeded(traj: dict, name: str, batched: bool) -> np.ndarray:
    arr = np.asarray(traj[name])
    return arr if batched else arr[None]


def _unit(W: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(W, axis=-1, keepdims=True)
    return np.where(norm > 0, W / np.where(norm > 0, norm, 1.0), 0.0)


def _dataset(config: dict):
    """The run's dataset rebuilt from its config, or None (a data file moved, an invalid config)."""
    from twolayer.config import load_config
    from twolayer.data import build_dataset

    try:
        return build_dataset(load_config(config).data)
    except Exception:  # the picture loses its data points, the page still renders
        return None


def _weights_2d(traj, batched, config, rows):
    W = _seeded(traj, "neuron_weights", batched)[rows]  # [S, T, h, 2]
    out = {"title": "neuron directions w_j/||w_j|| on the unit circle (2-D data)", "xy": _unit(W),
           "axes": ["x_1", "x_2"], "refs": [], "points": None, "full_circle": True}
    data = _dataset(config)
    if data is not None and data.d == 2:
        from twolayer.theory.alignment import class_sums

        X, y = data.X[:MAX_DATA_POINTS], data.y[:MAX_DATA_POINTS]
        U = _unit(X)
        out["points"] = {"x": _coords(U[:, 0]), "y": _coords(U[:, 1]), "label": [int(np.sign(v)) for v in y]}
        for label, r in zip(("x+", "x-"), class_sums(data.X, data.y)):
            if np.linalg.norm(r) > 0:
                out["refs"].append({"label": label, "xy": _coords(_unit(r))})
        out["cones"] = cone_arcs(data.X, data.y)
    return out


CIRCLE_SAMPLES = 1440  # directions sampled on the unit circle to draw the cones (a quarter degree apart)


def cone_arcs(X: np.ndarray, y: np.ndarray, samples: int = CIRCLE_SAMPLES) -> list[dict]:
    """The cones S+, S- and S_dead of 2-D data as arcs of the unit circle: ``[{code, x, y}]``, one entry per arc
    of directions u with the same cone (``theory.alignment.cone_membership``); arcs of no cone are left out. Their
    ends are the cone boundaries, the directions orthogonal to a data point."""
    from twolayer.theory.alignment import CONE_NONE, cone_membership

    theta = np.linspace(0.0, 2 * np.pi, samples, endpoint=False)
    U = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    codes = cone_membership(U, np.asarray(X, dtype=np.float64), np.asarray(y))
    starts = np.flatnonzero(codes != np.roll(codes, 1))
    if not starts.size:  # one cone all around
        return [] if codes[0] == CONE_NONE else [{"code": int(codes[0]), "x": _coords(np.append(U[:, 0], U[0, 0])),
                                                  "y": _coords(np.append(U[:, 1], U[0, 1]))}]
    arcs = []
    for a, b in zip(starts, np.append(starts[1:], starts[0] + samples)):
        code = int(codes[a])
        if code == CONE_NONE:
            continue
        idx = np.arange(a, b + 1) % samples  # through the next arc's first direction: no gaps between arcs
        arcs.append({"code": code, "x": _coords(U[idx, 0]), "y": _coords(U[idx, 1])})
    return arcs


def _plane(name):
    def source(traj, batched, config, rows):
        xy = _seeded(traj, name, batched)[rows]  # [S, T, h, 2]
        refs = _seeded(traj, f"{name}_refs", batched)[rows[0], 0]  # [2, 2], constant
        labels = PLANES[name].labels
        return {"title": f"unit neuron directions projected on span({labels[0]}, {labels[1]})", "xy": xy,
                "axes": [f"along {labels[0]}", f"{labels[1]}, orthogonal part"], "full_circle": True,
                "refs": [{"label": lab, "xy": _coords(r)} for lab, r in zip(labels, refs)], "points": None}
    return source


def _mu_halfplane(traj, batched, config, rows):
    s = _seeded(traj, "mu_projection", batched)[rows]
    p = _seeded(traj, "perp_mu", batched)[rows]
    norm = np.sqrt(s**2 + p**2)
    safe = np.where(norm > 0, norm, 1.0)
    xy = np.stack([np.where(norm > 0, s / safe, 0.0), np.where(norm > 0, p / safe, 0.0)], axis=-1)
    return {"title": "unit neuron directions as (cos(u_j, mu), sin(u_j, mu)) (Phase-I coordinates)", "xy": xy,
            "axes": ["along mu", "orthogonal to mu"], "full_circle": False,
            "refs": [{"label": "mu", "xy": [1.0, 0.0]}], "points": None}


def _weights_pca(traj, batched, config, rows):
    W = _seeded(traj, "neuron_weights", batched)[rows]  # [S, T, h, d]
    U = _unit(W)
    xy = np.empty(U.shape[:-1] + (2,))
    for s in range(U.shape[0]):
        final = np.nan_to_num(W[s, -1])
        _, _, vt = np.linalg.svd(final, full_matrices=False)
        basis = vt[:2] if vt.shape[0] >= 2 else np.vstack([vt, np.zeros_like(vt)])
        xy[s] = U[s] @ basis.T
    return {"title": "unit neuron directions projected on the two leading singular directions of the final W",
            "xy": xy, "axes": ["PC 1 of final W", "PC 2 of final W"], "refs": [], "points": None, "full_circle": True}


def _has_2d_weights(traj, batched):
    return "neuron_weights" in traj and np.asarray(traj["neuron_weights"]).shape[-1] == 2


NEURON_SOURCES = [  # (name, applies(traj, batched), build(traj, batched, config, seed rows))
    ("neuron_weights", _has_2d_weights, _weights_2d),
    *[(name, (lambda n: lambda traj, b: n in traj and f"{n}_refs" in traj)(name), _plane(name)) for name in PLANES],
    ("mu_projection", lambda traj, b: "mu_projection" in traj and "perp_mu" in traj, _mu_halfplane),
    ("neuron_weights", lambda traj, b: "neuron_weights" in traj, _weights_pca),
]
def missing_directions(traj: dict, config: dict) -> str:
    """Why a run has no neuron picture, and which metric to add to ``observe.metrics`` for one."""
    recorded = [k for k in ((config.get("observe") or {}).get("metrics") or []) if k in traj] or \
        [k for k in traj if k not in ("t", "step")]
    data = (config.get("data") or {}).get("kind", "?")
    dataset = _dataset(config)
    d = dataset.d if dataset is not None else None
    where = (f"'neuron_weights' (its {data} data is 2-D: the directions on the unit circle, with the cones)" if d == 2
             else f"'neuron_weights' (the directions projected on the final W's two leading singular directions"
                  f"{f'; its {data} data has d = {d}' if d else ''}) or one of {', '.join(map(repr, PLANES))} "
                  f"(a paper's reference plane)")
    colours = [m for m in ("v", "cone") if m not in traj]
    return (f"no neuron directions recorded: this run's observe.metrics are {', '.join(recorded) or 'empty'}; add "
            f"{where} to observe.metrics" + (f", and {' and '.join(map(repr, colours))} for the colours" if colours else ""))


def neuron_payload(traj: dict, batched: bool, config: dict, rows: list[int], keep: np.ndarray) -> dict:
    """The neuron picture of the seeds at ``rows`` (``{"missing": why}`` when none is recorded)."""
    for name, applies, build in NEURON_SOURCES:
        if applies(traj, batched):
            out = build(traj, batched, config, rows)
            xy = np.asarray(out.pop("xy"))[:, keep]  # [S, T, h, 2]
            out.update(source=name, x=_coords(xy[..., 0]), y=_coords(xy[..., 1]), width=int(xy.shape[2]))
            if "v" in traj:
                v = _seeded(traj, "v", batched)[rows][:, keep]
                out["sign"] = np.sign(np.nan_to_num(v)).astype(int).tolist()
            if "cone" in traj:
                out["cone"] = _seeded(traj, "cone", batched)[rows][:, keep].astype(int).tolist()
            return out
    return {"missing": missing_directions(traj, config)}


MAX_PANEL_NEURONS = 32  # neurons drawn in the per-neuron trajectory panel (a page stays light)
PANEL = {"w_norm": "||w_j||", "v": "v_j"}  # per-neuron observables of the panel, with their axis titles


def per_neuron_payload(traj: dict, batched: bool, rows: list[int], keep: np.ndarray) -> list[dict]:
    """The per-neuron trajectories the page draws (``PANEL``: ||w_j|| and v_j, those that are recorded) of the seeds
    at ``rows``: ``[{name, title, log, values [S][T][h]}]``, the first ``MAX_PANEL_NEURONS`` neurons."""
    from twolayer.quickplot import log_values

    out = []
    for name, title in PANEL.items():
        if name not in traj:
            continue
        values = np.asarray(_seeded(traj, name, batched), dtype=np.float64)[rows][:, keep, :MAX_PANEL_NEURONS]
        out.append({"name": name, "title": title, "log": log_values(name, values),
                    "values": _floats(values, 4)})
    return out


def digest(config: dict, summary: dict) -> list[list[str]]:
    """The config digest of a run's page (``quickplot.config_digest``) with its wall time and status."""
    from twolayer.quickplot import config_digest

    rows = [[k, v] for k, v in config_digest(config)]
    if summary.get("wall_seconds") is not None:
        rows.append(["wall time", f"{summary['wall_seconds']:.1f} s"])
    return rows


def run_payload(run, key: str | None = None, *, max_seeds: int = MAX_SEEDS,
                neuron_seeds: int = MAX_NEURON_SEEDS) -> dict:
    """Everything an explorer page draws for ``run`` (module docstring), as JSON-ready data."""
    from twolayer.quickplot import log_time, log_values, time_axis
    from twolayer.train.methods import clock_of

    config, summary, traj = run.config, run.summary, run.trajectory
    batched = config.get("seeds") is not None
    seed_ids = list(summary.get("seeds") or [config.get("seed") or 0])
    keep = keep_points(len(traj["t"]))
    rows = list(range(min(len(seed_ids), max_seeds)))
    t = time_axis(run)[keep]
    scalars = []
    metrics = (config.get("observe") or {}).get("metrics") or []
    order = {name: k for k, name in enumerate(metrics)}  # the config's order first, then the other outputs
    for name in sorted(traj, key=lambda k: (order.get(k, len(order)), k)):
        arr = traj[name]
        rank = np.asarray(arr).ndim - (2 if batched else 1)
        if name in ("t", "step") or output_dims(name, rank) != ():
            continue
        values = np.asarray(_seeded(traj, name, batched), dtype=np.float64)[rows][:, keep]
        scalars.append({"name": name, "values": _floats(values), "log": log_values(name, values)})
    events = []
    uncertainty = summary.get("event_uncertainty") or {}
    for name, value in (summary.get("events") or {}).items():
        times = value if isinstance(value, list) else [value]
        width = uncertainty.get(name)
        widths = width if isinstance(width, list) else [width] * len(times)
        events.append({"name": name, "times": [None if v is None else float(v) for v in times][:len(rows)],
                       "widths": [None if w is None else float(w) for w in widths][:len(rows)]})
    return {
        "id": run.path.name, "key": key or config.get("name", run.path.name), "status": summary.get("status", "?"),
        "message": (summary.get("message") or "").strip().splitlines()[0:1],
        "digest": digest(config, summary), "seeds": seed_ids[:len(rows)], "seeds_total": len(seed_ids),
        "time": {"t": _floats(t), "step": np.asarray(traj["step"])[keep].tolist(), "log": bool(log_time(run)),
                 "label": clock_of(config).label},
        "scalars": scalars, "events": events,
        "neurons": neuron_payload(traj, batched, config, rows[:neuron_seeds], keep),
        "per_neuron": per_neuron_payload(traj, batched, rows[:neuron_seeds], keep),
    }


def sweep_payload(name: str, keys: list[str], points: list[tuple[dict, int]], runs: list[dict]) -> dict:
    """What a sweep's page adds: the swept ``keys``, the sorted distinct values of each (``values``), each point's
    run (an index into ``runs``) and its position on each key's slider (``at``), whether a key is drawn on a log
    axis (positive values spanning a decade or more: scales, learning rates), and each event's median time over the seeds of every
    point's run (``events``: name -> [time or None], in the order of ``points``)."""
    values = {}
    for key in keys:
        seen = []
        for v, _ in points:
            if v[key] not in seen:
                seen.append(v[key])
        numeric = all(isinstance(x, int | float) and not isinstance(x, bool) for x in seen)
        values[key] = sorted(seen) if numeric else seen
    log = {k: bool(values[k]) and all(isinstance(x, int | float) and x > 0 for x in values[k])
           and max(values[k]) / min(values[k]) >= 10 for k in keys}
    names = [n for n in dict.fromkeys(ev["name"] for r in runs for ev in r["events"])]
    events = {}
    for n in names:
        row = []
        for _, k in points:
            times = [t for ev in runs[k]["events"] if ev["name"] == n for t in ev["times"] if t is not None]
            row.append(float(np.median(times)) if times else None)
        events[n] = row
    return {"name": name, "keys": keys, "values": values, "log": log,
            "points": [{"run": k, "at": [values[key].index(v[key]) for key in keys]} for v, k in points],
            "events": events}
