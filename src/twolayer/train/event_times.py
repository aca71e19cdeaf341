"""Trajectory events (``twolayer.events``: t1, norm_growth, t2, ...) refined from the observation grid, and the
uncertainty of every event time.

A detector reports the first observation time t_k at which its condition holds, so the event lies in
(t_{k-1}, t_k]. For every seed and event with k >= 1 the bracket is re-run from the state at t_{k-1} (kept in
memory during the run, or re-simulated from the initial state: the compiled advance is deterministic, so the
states are bitwise the same), observed at a few points inside it, and the detector is run again on the
trajectory with those points inserted; the new value narrows the bracket. This repeats until

* event-driven continuous methods (``Method.events.refine``, flow_exact): the bracket is below ``RTOL``
  relative (``SUBPOINTS`` points per level), so the time is within RTOL of where the condition first holds
  along the integrated solution;
* discrete methods (gd, sgd, gd_paper): the bracket is one step (``STEP_SUBPOINTS`` points per level), so the
  time is the first step k at which the condition holds, t = lr k, whatever the observation grid.

Other methods (the adaptive ``flow``) keep the grid value, and so does an event that reads an
``observe.sparse`` metric not observed at the start of its bracket (its uncertainty then reaches back to the
last point where it was). ``refine_events`` returns the events and their
uncertainty: the width of the interval (t - width, t] known to hold the event (one step lr for a discrete
method; the final bracket for a refined flow; the grid interval otherwise; 0 for an event that holds at
t = 0; None for a value that is not a time on the grid).
"""

from __future__ import annotations

import numpy as np

from twolayer.events import EVENTS

SUBPOINTS = 4  # per level: calls ~ SUBPOINTS log(1/RTOL) / log(SUBPOINTS), least near 3-4
STEP_SUBPOINTS = 8  # discrete methods: cheap calls, so fewer levels
SINGLE_SEED_STEPS = 200_000  # frozen seeds' steps a batched refinement may waste before brackets run seed by seed
RTOL = 1e-10
MAX_LEVELS = 24


def refinement(sim) -> str | None:
    """How ``sim``'s events are refined: ``"solver"`` (event-driven flows that ask for it), ``"step"``
    (discrete methods) or None (the grid value is kept)."""
    if sim.method.events is not None:
        return "solver" if sim.method.events.refine else None
    return None if sim.method.continuous else "step"


def _states_at(sim, state, indices: set[int]) -> dict[int, dict]:
    """Parameters (all seeds) at the given observation indices: the run's snapshots, else re-simulated from the
    latest snapshot before them (or the initial state)."""
    for target in sorted(i for i in indices if i not in state.snapshots):
        kept = [i for i in state.snapshots if i < target]
        if kept:
            i = max(kept)
            params = state.snapshots[i]
        else:
            i, params = 0, sim.initial_state().params
        bad = np.full(len(sim.seeds), -1, dtype=sim.bad_dtype)
        for j in range(i + 1, target + 1):
            if sim.points[j] > sim.points[j - 1]:
                params = sim.advance_between(params, bad, sim.points[j - 1], sim.points[j])[0]
        state.snapshots[target] = params
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


def _last_observed(one: dict, k: int) -> int:
    """The last grid index before ``k`` at which every output in ``one`` was observed (not NaN: an
    ``observe.sparse`` metric between its points), or 0. An event found at ``k`` lies after it."""
    for j in range(k - 1, 0, -1):
        if all(not (np.issubdtype(v.dtype, np.floating) and np.any(np.isnan(v[j]))) for n, v in one.items() if n != "t"):
            return j
    return 0


def refine_events(sim, state, trajectory: dict, events: dict) -> tuple[dict, dict]:
    """``(events, uncertainty)``: ``events`` (as ``detect_events`` returns them) with every grid-valued event
    time refined as ``refinement(sim)`` says, and the uncertainty of each (same shape; see the module doc)."""
    cfg = sim.cfg
    batched = cfg.batched
    t_grid = np.asarray(trajectory["t"])
    bad = np.asarray(state.bad)
    seeds = len(sim.seeds)
    mode = refinement(sim)
    refine = {"solver": _refine_key, "step": _refine_steps}.get(mode)
    refined = {k: (list(v) if batched else v) for k, v in events.items()}
    widths = {k: ([None] * seeds if batched else None) for k in events}

    def put(table, key, s, value):
        if batched:
            table[key][s] = value
        else:
            table[key] = value

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
                hits = np.flatnonzero(t_grid == v) if v is not None else np.zeros(0, int)
                if not hits.size:
                    continue
                k = int(hits[0])
                before = _last_observed(_one_seed(trajectory, det.needs, s, batched), k)  # observe.sparse: NaN between
                put(widths, key, s, 0.0 if k == 0 else float(t_grid[k] - t_grid[before]))
                if k >= 1 and before == k - 1 and bad[s] < 0 and refine is not None:
                    tasks[s] = k
            if not tasks:
                continue
            for s, (value, width) in refine(sim, state, trajectory, det, key, tasks).items():
                put(refined, key, s, value)
                put(widths, key, s, width)
    return refined, widths


def _refine_key(sim, state, trajectory, det, key, tasks: dict[int, int]) -> dict[int, tuple[float, float]]:
    """Refine one event key to solver accuracy for the seeds in ``tasks`` (seed -> grid index of its coarse
    value), every seed's bracket in the same calls (event-driven methods take start and stop per seed):
    seed -> (time, final bracket width)."""
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
    return {s: (result[s], float(hi[s] - lo[s])) for s in tasks}


def _refine_steps(sim, state, trajectory, det, key, tasks: dict[int, int]) -> dict[int, tuple[float, float]]:
    """Refine one event key to the step for the seeds in ``tasks`` (seed -> grid index of its coarse value):
    seed -> (lr k at the first step k where the condition holds, one step lr). A discrete advance takes one
    start and stop for all seeds, so each seed's bracket is run on its own: in the batch with the other seeds
    frozen, or, when that would waste more than ``SINGLE_SEED_STEPS`` steps, as a batch of that seed alone."""
    batched = sim.cfg.batched
    points = np.asarray(sim.points)
    seeds = len(sim.seeds)
    starts = _states_at(sim, state, {k - 1 for k in tasks.values()})
    step = sim.time_of(1)
    # a vmapped advance costs every seed's steps even for frozen ones: beyond SINGLE_SEED_STEPS of such waste,
    # each bracket runs on its seed alone (a one-seed program, compiled once per process)
    waste = (seeds - 1) * sum(int(points[k] - points[k - 1]) for k in tasks.values())
    alone = seeds > 1 and waste > SINGLE_SEED_STEPS
    out = {}
    for s, k in tasks.items():
        lo, hi = int(points[k - 1]), int(points[k])
        params = starts[k - 1]
        if alone:
            params = {name: v[s:s + 1] for name, v in params.items()}
        which, row = ([s], 0) if alone else (None, s)
        frozen = (np.full(1, -1) if alone else np.where(np.arange(seeds) == s, -1, 0)).astype(sim.bad_dtype)  # >= 0: frozen
        base = _one_seed(trajectory, det.needs, s, batched)
        ins_t, ins = [], {n: [] for n in det.needs}
        while hi - lo > 1:
            subs = np.unique(np.rint(lo + (hi - lo) * np.arange(1, STEP_SUBPOINTS + 1) / STEP_SUBPOINTS).astype(np.int64))
            subs = subs[(subs > lo) & (subs < hi)]
            current, position, states = params, lo, []
            for p in subs:
                current = sim.advance_between(current, frozen, position, int(p), seeds=which)[0]
                position = int(p)
                states.append(current)
                values = sim.observe(current)
                ins_t.append(sim.time_of(int(p)))
                for n in det.needs:
                    ins[n].append(values[n][row])
            one = _insert(base, np.asarray(ins_t), {n: np.stack(ins[n]) for n in det.needs})
            value = det.fn(one, sim.cfg).get(key)
            ts = np.array([sim.time_of(int(p)) for p in subs] + [sim.time_of(hi)])
            hit = np.flatnonzero(ts == value) if value is not None else np.zeros(0, int)
            if not hit.size:  # the condition moved out of the bracket (not a first-time event): keep hi
                break
            m = int(hit[0])
            if m > 0:
                lo, params = int(subs[m - 1]), states[m - 1]
            hi = int(subs[m]) if m < len(subs) else hi
        out[s] = (sim.time_of(hi), step if hi - lo <= 1 else sim.time_of(hi) - sim.time_of(lo))
    return out
