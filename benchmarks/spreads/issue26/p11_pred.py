"""Issue 26: P11-law's slope predicted by P7's closed form from each run's W0 (paper runs, and quick)."""
import math, sys
import numpy as np
from twolayer.api import Run
from twolayer.papers.min2024 import two_point_theory as tpt
from twolayer.theory import alignment as th

PAPER = {"theta0.3": "ac6b36f8", "theta0.1": "8a5318d3", "theta0.01": "84288444"}


def predicted_times(run, theta):
    """Per seed: P7's alignment time from W0, the same neurons the measured time waits for."""
    cone, v = run.seeded("cone"), run.seeded("v")
    W0 = run.seeded("neuron_weights")[:, 0]
    psi = np.arctan2(W0[..., 1], W0[..., 0])
    need = (v[:, 0] > 0) & (cone[:, -1] != th.CONE_DEAD)
    x2 = math.pi / 2 - theta
    out = []
    for s in range(W0.shape[0]):
        times = []
        for j in np.flatnonzero(need[s]):
            a = psi[s, j]
            if -math.pi / 2 < a < 0:            # active on x1 only (below x1)
                times.append(float(th.two_point_crossing_time(theta, -a)))
            elif x2 < a < x2 + math.pi / 2:      # active on x2 only (beyond x2)
                times.append(float(th.two_point_crossing_time(theta, a - x2)))
            elif 0 <= a <= x2:
                times.append(0.0)
        out.append(max(times))
    return np.array(out)


def main(runs):
    keys = ["theta0.01", "theta0.1", "theta0.3"]
    x = np.array([math.log(1 / math.tan(tpt.THETAS[k] / 2)) for k in keys])
    meas = [tpt.alignment_time(runs[k]) for k in keys]
    pred = [predicted_times(runs[k], tpt.THETAS[k]) for k in keys]
    mm, mp = np.array([np.median(m) for m in meas]), np.array([np.median(p) for p in pred])
    c = (x - x.mean()) / np.sum((x - x.mean()) ** 2)
    lr = runs[keys[0]].config["train"]["lr"]
    spacing = float(np.max(np.diff(runs[keys[0]].trajectory["t"])))
    e = np.array([0.01 * np.max(p) + 2 * lr + spacing for p in pred])
    print("medians measured", mm.round(4), "predicted", mp.round(4))
    print("max per-seed |meas - pred| / allowed", [float(np.max(np.abs(m - p) / (0.01 * p + 2 * lr + spacing))) for m, p in zip(meas, pred)])
    print("slope measured", float(np.polyfit(x, mm, 1)[0]), "predicted", float(np.polyfit(x, mp, 1)[0]),
          "allowed |diff|", float(np.sum(np.abs(c) * e)))


if __name__ == "__main__":
    import glob
    if sys.argv[1] == "paper":
        runs = {k: Run(glob.glob(f"/work/paper-out/min2024/min2024-two-point-theory-{k}-{h}")[0]) for k, h in PAPER.items()}
    else:
        runs = {k: Run(p) for k, p in zip(sys.argv[2::2], sys.argv[3::2])}
    main(runs)
