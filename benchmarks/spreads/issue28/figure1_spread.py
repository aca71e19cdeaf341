"""Seed spread of the Figure-1 population claims (figure1:directions-found, directions-frozen, irrelevant-collapse)
and of coupling:coupling-rate's fitted m-exponent, on seeds 100-109 (independent of the checked seeds 0..S-1), same
configs otherwise. Each statistic is the claim's own, from the claim's helper applied to one seed at a time.
Run from the repository root: .venv/bin/python benchmarks/spreads/issue28/figure1_spread.py [quick|paper] [figure1|coupling]
(SPREAD_SEEDS=100:120 in the environment for other seeds than 100-109).
"""
import copy, os, sys, time
from types import SimpleNamespace
import numpy as np
from twolayer.api import run
from twolayer.claims import get
from twolayer.papers.multiindex2026.figure1 import found_check, frozen_check, irrelevant_check
from twolayer.papers.multiindex2026.coupling import mean_coupling, power_fit

SCALE = sys.argv[1] if len(sys.argv) > 1 else "quick"
PARTS = sys.argv[2:] or ["figure1", "coupling"]
SEEDS = list(range(*map(int, os.environ.get("SPREAD_SEEDS", "100:110").split(":"))))
OUT = "/tmp/f1-spread"


def go(cfg):
    cfg = copy.deepcopy(cfg)
    cfg["seeds"] = SEEDS
    t0 = time.time()
    res = run(cfg, out=OUT)
    print(f"  ran {cfg['name']} in {time.time() - t0:.1f}s", flush=True)
    return res


def one_seed(res, s):
    """The run restricted to seed index s (trajectory arrays are [S, ...])."""
    return SimpleNamespace(config=res.config, trajectory={k: (v[s:s + 1] if np.ndim(v) and k != "t" else v)
                                                          for k, v in res.trajectory.items()})


def report(name, xs):
    a = np.asarray(xs, float)
    m, sd = a.mean(), a.std(ddof=1)
    print(f"{name}: {m:.6g} +- {sd:.3g} (n = {a.size}), min {a.min():.6g}, max {a.max():.6g}; mean - 3 sd "
          f"{m - 3 * sd:.6g}, mean + 3 sd {m + 3 * sd:.6g}", flush=True)


if "figure1" in PARTS:
    c = get("multiindex2026/figure1").run_configs(SCALE)
    pop, frz = go(c["population"]), go(c["frozen"])
    r = int(pop.config["data"]["r"])
    t = pop.trajectory["t"]
    found, irr, frozen, t_all = [], [], [], []
    for s in range(len(SEEDS)):
        tr = one_seed(pop, s).trajectory
        f = found_check(tr, r).measured  # [min directions found at t ~ 50, M_al/alpha at the end, worst M_al step]
        M = tr["mass_aligned"][0]
        found.append([f[0], f[1], f[2] / float(np.max(np.abs(M)))])  # the step as a fraction of max M_al (rtol)
        hit = np.flatnonzero(tr["directions_found"][0] >= r)
        t_all.append(t[hit[0]] if hit.size else np.inf)
        i = irrelevant_check(tr, r).measured  # [worst M_irr rise (t >= 0.5), M_irr/alpha at t = 10, at end, min frac]
        late = tr["mass_irrelevant"][0, t >= 0.5]
        irr.append([i[0] / float(np.max(np.abs(late))), i[1], i[2], i[3]])
        frozen.append(frozen_check(one_seed(frz, s).trajectory["neuron_weights"], r).measured)
    print(f"== {SCALE}: figure1 population (d = {pop.config['data']['d']}, r = {r}), seeds {SEEDS[0]}-{SEEDS[-1]}")
    found, irr, frozen = map(np.array, (found, irr, frozen))
    report("directions-found: first t all r found", t_all)
    report("directions-found: min directions found at t = 50", found[:, 0])
    report("directions-found: M_al/alpha at the end", found[:, 1])
    report("directions-found: worst M_al decrease / max M_al (rtol; <= 0: no dip)", found[:, 2])
    report("directions-frozen: min cos(w(0.15), w(0))", frozen[:, 0])
    report("directions-frozen: median in-subspace cos at t = 5", frozen[:, 1])
    report("directions-frozen: min in-subspace cos at t = 5", frozen[:, 2])
    report("irrelevant-collapse: worst M_irr rise / max M_irr, t >= 0.5 (rtol; <= 0: no rise)", irr[:, 0])
    report("irrelevant-collapse: M_irr/alpha at t = 10", irr[:, 1])
    report("irrelevant-collapse: M_irr/alpha at the end", irr[:, 2])
    report("irrelevant-collapse: min subspace fraction at the end", irr[:, 3])

if "coupling" in PARTS:
    c = get("multiindex2026/coupling").run_configs(SCALE)
    ms = sorted(int(k.split("-m")[1]) for k in c if k.startswith("actual-m"))
    pairs = {m: (go(c[f"actual-m{m}"]), go(c[f"symmetrized-m{m}"])) for m in ms}
    slopes = []
    for s in range(len(SEEDS)):
        vals = [mean_coupling(one_seed(a, s), one_seed(b, s))[0] for a, b in (pairs[m] for m in ms)]
        slopes.append(power_fit(ms, vals)[0])
    # the checked claim averages its 2 seeds before fitting: the same fit over the 5 disjoint pairs of seeds
    pair_slopes = []
    for p in range(0, len(SEEDS), 2):
        vals = [np.mean([mean_coupling(one_seed(a, s), one_seed(b, s))[0] for s in (p, p + 1)])
                for a, b in (pairs[m] for m in ms)]
        pair_slopes.append(power_fit(ms, vals)[0])
    print(f"== {SCALE}: coupling, m = {ms}, seeds {SEEDS[0]}-{SEEDS[-1]}")
    report("coupling-rate: fitted m-exponent of Delta/sqrt(alpha), one seed each", slopes)
    report("coupling-rate: fitted m-exponent, disjoint seed pairs (as checked)", pair_slopes)
    print("  upper end -(1 - 1/ln m_bar)/2 =", -(1 - 1 / np.mean(np.log(ms))) / 2)
