"""Helpers shared by the min2024 experiments: the paper's settings, observation schedules, the
Theorem-1 aligned state and its first time per seed, the neuron sets the claims speak about, and
builders for synthetic and counterfactual falsifiers.

Times: runs use t = lr k; the theory's sum-loss time is t for ``reduction: sum`` and t / n for
``mean`` (``theory.alignment.sum_time``). Paper iterations are quoted at lr = 2e-3 (``PAPER_LR``):
a run at another lr reports ``t / 2e-3`` "paper-equivalent iterations" (the same dynamics in t).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
from collections.abc import Callable, Mapping

import numpy as np

from twolayer.claims.checks import LOG10, Check, holds
from twolayer.claims.falsifiers import SyntheticRun
from twolayer.claims.registry import register_paper
from twolayer.observe.alignment import aligned

PAPER = "min2024"
register_paper(PAPER, "Early Neuron Alignment in Two-layer ReLU Networks with Small Initialization",
               "H. Min, E. Mallada, R. Vidal. ICLR 2024 (arXiv 2307.12851).")
PAPER_LR = 2e-3  # the paper's step size; "iterations" are t / PAPER_LR
COMMON = {"model": {"kind": "two_layer", "activation": "relu", "width": 50},
          "init": {"kind": "gaussian", "scale": 1e-6}, "loss": {"kind": "exponential", "reduction": "mean"}}
CONE_METRICS = ["loss", "cone", "cos_pos", "cos_neg", "v", "w_norm", "stable_rank", "spectral_norm_sq",
                "subnet_fit", "activation_counts", "margin_min"]
THEORY_EPS = 1e-8  # the balanced init scale of the theory runs (eq. 3); W0 rows ~ N(0, I/d)
TOY = {"kind": "toy2d"}  # TOY-A (spec §3): positives at 20, 35, 50 degrees, negatives at 240, 255
# the exact ReLU flow (flow_exact) on TOY-A under the theory's setting, shared by fig4-14-17-activation-paths
# and app-e-caratheodory (one run, cached by its config hash)
EXACT_TIME = {"quick": 40.0, "paper": 80.0}  # sum time: alignment (t1 ~ 1-3), growth and fitting
EXACT_SEEDS = {"quick": 4, "paper": 20}
EXACT_TRAIN = {"method": "flow_exact", "rtol": 1e-10, "atol": 1e-30}
EXACT_METRICS = ["loss", "cone", "v", "w_norm", "activation_pattern", "neuron_weights"]
MU_NEGATIVE_DATA = {"kind": "toy2d", "pos_angles": [-60.0, 60.0, 70.0], "neg_angles": []}  # mu = cos 130 deg < 0
# Assumption 1 broken for both classes: those positives and TOY-A's negatives (y x at 60, 75 deg; mu = cos 135 deg)
MU_NEGATIVE_TWO_CLASS = {"kind": "toy2d", "pos_angles": [-60.0, 60.0, 70.0], "neg_angles": [240.0, 255.0]}
# Assumption 1 broken, small: the counterfactual of the exact-flow claims (dotted overrides of exact_toy)
MU_NEGATIVE_EXACT = {"name": "min2024-exact-flow-mu-negative", "data": MU_NEGATIVE_DATA, "seeds": 2,
                     "model.width": 8, "train.time": 12.0}


def schedule(steps: int, points: int, at=()) -> dict:
    """Log-spaced observation steps plus the given snapshot steps."""
    pts = np.unique(np.concatenate([[0], np.rint(np.geomspace(1, steps, points)), list(at)]).astype(int))
    return {"schedule": "at", "at": [int(p) for p in pts if p <= steps]}


def iter_index(run, iteration: float, lr: float = PAPER_LR) -> int:
    """Index of the first observation at or after paper iteration ``iteration`` (t = lr * it)."""
    t = run.trajectory["t"]
    return int(min(np.searchsorted(t, iteration * lr - 1e-12), len(t) - 1))


def data_of(run):
    """(X, y) of a run (or of a config dict), rebuilt from its config."""
    from twolayer.config import load_config
    from twolayer.data import build_dataset

    d = build_dataset(load_config(run if isinstance(run, dict) else run.config).data)
    return d.X, d.y


def two_point_data(theta0: float) -> dict:
    """Figs. 7-9: x1 = [1, 0] and x2 at angle pi/2 - theta0 (mu = sin theta0), both y = +1."""
    if theta0 == 0:
        return {"kind": "orthogonal", "n": 2}
    return {"kind": "two_points", "angle": math.pi / 2 - theta0, "labels": [1, 1]}


def exact_toy(scale: str) -> dict:
    """TOY-A, balanced init eps = 1e-8, h = 50, exp loss with sum reduction, flow_exact to t = 40 / 80."""
    return {"name": "min2024-exact-flow-toy", "model": COMMON["model"], "data": TOY,
            "loss": {"kind": "exponential", "reduction": "sum"}, "seeds": EXACT_SEEDS[scale],
            "init": {"kind": "balanced", "scale": THEORY_EPS}, "train": {**EXACT_TRAIN, "time": EXACT_TIME[scale]},
            "observe": {"schedule": "log", "points": 120, "metrics": EXACT_METRICS}}


def first_time(t, mask) -> float:
    hits = np.flatnonzero(mask)
    return float(t[hits[0]]) if hits.size else math.inf


# -- neuron sets --------------------------------------------------------------------------------

def sign_stable(run) -> np.ndarray:
    """[S, h]: neurons whose sign(v_j) is the same at every observation. Theorem 1's V+ and V- are
    fixed sets (a balanced init keeps |v_j| = ||w_j||, so v_j never crosses 0); under an unbalanced
    init a neuron's direction moves at speed |v_j|/||w_j|| (eq. 4 with the factor of an unbalanced
    neuron), which is 0 where v_j changes sign, and the theorem says nothing about it (its early
    dynamics are the saddle of ``theory.alignment.EarlyNeuron``)."""
    v = run.seeded("v")
    return np.all(np.sign(v) == np.sign(v[:, :1]), axis=1)


def aligned_state(run, neurons=None) -> np.ndarray:
    """[S, T]: Theorem 1's aligned state at each observation over ``neurons`` [S, h] (default all):
    every V+ neuron (v_j > 0 at that time) in S+ u S_dead and every V- neuron in S- u S_dead."""
    ok = aligned(run.seeded("cone"), run.seeded("v"))
    if neurons is not None:
        ok = ok | ~np.asarray(neurons)[:, None, :]
    return np.all(ok, axis=-1)


def t1_indices(run, neurons=None) -> list[int | None]:
    """Per seed: the first observation in the aligned state (``aligned_state``), None if never."""
    return [int(np.argmax(d)) if d.any() else None for d in aligned_state(run, neurons)]


def t1_or_fail(run, neurons=None) -> tuple[list[int], Check | None]:
    """The t1 index of every seed, or a failed check naming the first seed that never aligned:
    ``idx, failed = t1_or_fail(run); if failed: return failed``."""
    idx = t1_indices(run, neurons)
    missing = [s for s, i in enumerate(idx) if i is None]
    if missing:
        return [], holds(False, "t1 reached in every seed", f"seeds {missing} never aligned")
    return idx, None


THEOREM1_EPS = (" (Theorem 1 is stated for eps <= e^-2067, which no float reaches: this is an empirical extrapolation "
                "of the theorem to the representable scales)")
UNINFORMATIVE = 2.0  # log10 slack above which a bound "holds, but says little" (checks.SAYS_LITTLE = 100x)


def reported(fn: Callable) -> Callable:
    """A bound claim's function whose details say, when the bound holds by more than 100x, by how much: such a bound
    is reported as uninformative (its slack), not as a tested prediction (issue 26, section 3)."""
    @functools.wraps(fn)
    def wrapper(r):
        check = fn(r)
        if check.passed and check.slack_unit == LOG10 and check.slack is not None and check.slack > UNINFORMATIVE:
            note = (f"uninformative bound: holds by a factor {10 ** check.slack:.3g} (log10 slack {check.slack:.2f} > "
                    f"{UNINFORMATIVE:g}), so it says little about the dynamics")
            return dataclasses.replace(check, details="; ".join(p for p in (check.details, note) if p))
        return check
    return wrapper


def as_bound(check: Check) -> Check:
    """A failed check (no measurement: t1 never reached, too few observations) in a ``bound`` claim's units."""
    return dataclasses.replace(check, slack=-math.inf, slack_unit=LOG10) if not check.passed else check


# -- falsifier builders ---------------------------------------------------------------------------

def synthetic(config: dict, t, name: str = "synthetic", summary: Mapping | None = None,
              final: Mapping | None = None, **trajectory) -> SyntheticRun:
    """A hand-built run with the config of a real one: ``t`` and trajectory entries (with a seed
    axis when the config has ``seeds``), optional summary (``events``) and final parameters."""
    return SyntheticRun(config, {"t": np.asarray(t, dtype=np.float64), **{k: np.asarray(v) for k, v in trajectory.items()}},
                        final_params=final, summary={"events": {}, **dict(summary or {})}, name=name)


def set_dotted(cfg: dict, dotted: Mapping[str, object]) -> dict:
    """A copy of ``cfg`` with ``section.key`` entries replaced (``{"init.scale": 1.0}``); a value of
    None removes the key."""
    cfg = copy.deepcopy(cfg)
    for path, value in dotted.items():
        node = cfg
        *parents, last = path.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return cfg


def shorter(steps: int, points: int = 80) -> dict:
    """Dotted overrides for a shorter GD run observed at ``points`` log-spaced steps."""
    return {"train.steps": steps, "observe.schedule": "log", "observe.points": points, "observe.at": None}


def changed(keys: Mapping[str, Mapping[str, object]] | None = None, *, every: Mapping[str, object] | None = None,
            drop: bool = True) -> Callable[[dict], dict]:
    """A counterfactual change: ``keys`` maps config keys to their dotted overrides (``every``
    applies to each of them); with ``drop`` the other keys are left out (only the runs the claim
    reads are run)."""
    def change(configs: dict) -> dict:
        names = list(keys) if keys else list(configs)
        out = {} if drop else dict(configs)
        for k in names:
            out[k] = set_dotted(configs[k], {**dict(every or {}), **dict((keys or {}).get(k, {}))})
        return out
    return change
