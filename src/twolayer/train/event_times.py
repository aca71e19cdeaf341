"""Trajectory events (``twolayer.events``: t1, norm_growth, t2, ...) refined from the observation grid to
solver accuracy, for continuous methods whose event log asks for it (``Method.events.refine``).

A detector reports the first observation time t_k at which its condition holds, so the event lies in
(t_{k-1}, t_k]. For every seed and event with k >= 1 the bracket is re-integrated from the state at
t_{k-1} (kept in memory during the run, or re-simulated from the initial state for resumed runs: the
compiled advance is deterministic, so the states are bitwise the same), observed at ``SUBPOINTS`` evenly
spaced times, and the detector is run again on the trajectory with those points inserted; the new value
narrows the bracket by ``SUBPOINTS``x. This repeats until the bracket is below ``RTOL`` relative, so the
reported time is within RTOL of where the condition first holds along the integrated solution.
"""

from __future__ import annotations

import numpy as np

from twolayer.events import EVENTS

SUBPOINTS = 4  # per level: calls ~ SUBPOINTS log(1/RTOL) / log(SUBPOINTS), least near 3-4
RTOL = 1e-10
MAX_LEVELS = 24


def _states_at(sim, state, indices: set[int]) -> dict[int, dict]:
    """Parameters (all seeds) at the given observation indices: the run's snapshots, else re-simulated."""
    missing = sorted(i for i in indices if i not in state.snapshots)
    if missing:
        replay = sim.initial_state()
        params, bad = replay.params, np.asarray(replay.bad)
        for i in range(max(missing) + 1):
            if i > 0 and sim.points[i] > sim.points[i - 1]:
                out = sim.advance_between(params, bad, sim.points[i - 1], sim.points[i])
                params, bad = out[0], np.asarray(out[1])
            state.snapshots.setdefault(i, params)
    return {i: state.snapshots[i] for i in indices}


def _one_seed(traj: dict, names, s: int, batched: bool) -> dict:
    return {"t": np.asarray(traj["t"]), **{n: (np.asarray(traj[n])[s] if batched else np.asarray(traj[n])) for n in names}}


def _insert(one: dict, extra_t: np.ndarray, extra: dict) -> dict:
    """``one`` with the points (extra_t, extra values) inserted, sorted by time."""
    t = np.concatenate([one["t"], extra_t])
    order = np.argsort(t, kind="stable")
    out = {"t": t[order]}
    for k, v in one.items():
        if k != "t":
            out[k] = np.concatenate([v, extra[k]], axis=0)[order]
    return out


def refine_events(sim, state, trajectory: dict, events: dict) -> dict:
    """``events`` (as ``detect_events`` returns them) with every grid-valued event time refined."""
    cfg = sim.cfg
    batched = cfg.batched
    t_grid = np.asarray(trajectory["t"])
    bad = np.asarray(state.bad)
    seeds = len(sim.seeds)
    refined = {k: (list(v) if batched else v) for k, v in events.items()}
    for _, det in EVENTS.items():
        if not all(n in trajectory for n in det.needs):
            continue
        for key in det.fn(_one_seed(trajectory, det.needs, 0, batched), cfg):
            if key not in events:
                continue
            values = events[key] if batched else [events[key]]
            tasks = {}
            for s in range(seeds):
                v = values[s]
                if v is None or bad[s] >= 0:
                    continue
                hits = np.flatnonzero(t_grid == v)
                if hits.size and hits[0] >= 1:
                    tasks[s] = int(hits[0])
            if not tasks:
                continue
            for s, value in _refine_key(sim, state, trajectory, det, key, tasks).items():
                if batched:
                    refined[key][s] = value
                else:
                    refined[key] = value
    return refined


def _refine_key(sim, state, trajectory, det, key, tasks: dict[int, int]) -> dict[int, float]:
    """Refine one event key for the seeds in ``tasks`` (seed -> grid index of its coarse value)."""
    batched = sim.cfg.batched
    t_grid = np.asarray(trajectory["t"])
    seeds = len(sim.seeds)
    starts = _states_at(sim, state, {k - 1 for k in tasks.values()})
    # per-seed bracket (lo, hi], the state at lo, and the extra points inserted so far
    lo = np.array([t_grid[tasks[s] - 1] if s in tasks else 0.0 for s in range(seeds)])
    hi = np.array([t_grid[tasks[s]] if s in tasks else 0.0 for s in range(seeds)])
    any_start = next(iter(starts.values()))
    params = {k: np.array(v) for k, v in any_start.items()}
    for s, k in tasks.items():
        for name in params:
            params[name][s] = np.asarray(starts[k - 1][name])[s]
    inserted = {s: ({"t": np.zeros(0)} | {n: None for n in det.needs}) for s in tasks}
    active = set(tasks)
    result = {s: float(hi[s]) for s in tasks}
    for _ in range(MAX_LEVELS):
        active = {s for s in active if hi[s] - lo[s] > RTOL * abs(hi[s])}
        if not active:
            break
        width = hi - lo
        sub_params, sub_values = [], []
        current, bad = params, np.full(seeds, -1.0)
        for m in range(1, SUBPOINTS + 1):
            a = np.where([s in active for s in range(seeds)], lo + width * (m - 1) / SUBPOINTS, 0.0)
            b = np.where([s in active for s in range(seeds)], lo + width * m / SUBPOINTS, 0.0)
            out = sim.advance_between(current, bad, a, b)
            current = out[0]
            sub_params.append(current)
            sub_values.append(sim.observe(current))
        new_lo, new_hi = lo.copy(), hi.copy()
        new_params = {k: v.copy() for k, v in params.items()}
        for s in active:
            ts = lo[s] + width[s] * np.arange(1, SUBPOINTS + 1) / SUBPOINTS
            ts[-1] = hi[s]
            extra = {n: np.stack([sv[n][s] for sv in sub_values]) for n in det.needs}
            ins = inserted[s]
            ins_t = np.concatenate([ins["t"], ts[:-1]])  # hi itself is on the grid already
            for n in det.needs:
                ins[n] = extra[n][:-1] if ins[n] is None else np.concatenate([ins[n], extra[n][:-1]], axis=0)
            ins["t"] = ins_t
            one = _insert(_one_seed(trajectory, det.needs, s, batched), ins["t"], ins)
            value = det.fn(one, sim.cfg).get(key)
            hit = np.flatnonzero(ts == value) if value is not None else np.zeros(0, int)
            if not hit.size:  # the condition moved out of the bracket (not a first-time event): keep the last
                active = active - {s}
                continue
            m = int(hit[0])
            result[s] = float(ts[m])
            new_hi[s] = ts[m]
            new_lo[s] = lo[s] if m == 0 else ts[m - 1]
            if m > 0:
                for k in new_params:
                    new_params[k][s] = np.asarray(sub_params[m - 1][k])[s]
        lo, hi, params = new_lo, new_hi, new_params
    return result
