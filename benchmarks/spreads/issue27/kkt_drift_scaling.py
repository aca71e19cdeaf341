"""D_pred(q_min) = ||u*(rho) - theta_bar|| for q_min = 50, 100, 300 (rho^2 = q_min / gamma): the quasi-static
target recedes toward theta_bar like 1/rho^2 (q_min x D constant) for a KKT start."""
import sys, yaml, numpy as np
sys.path.insert(0, "/tmp/h27")
from kkt_drift_pred import ascent, qs
from twolayer.claims.runs import run_dataset
from twolayer.claims.falsifiers import SyntheticRun
for run in sys.argv[1:]:
    cfg = yaml.safe_load(open(run + "/config.yaml"))
    data = run_dataset(SyntheticRun(cfg)); X, y = data.X, data.y
    W0 = np.asarray(cfg["init"]["W"]); a0 = np.asarray(cfg["init"]["v"])
    for s in range(len(a0)):
        m, d = W0[s].shape
        th = np.concatenate([W0[s].ravel(), a0[s]]); ub = th / np.linalg.norm(th)
        g = qs(ub, X, y, m, d).min()
        out = []
        for q in (50, 100, 300, 1000):
            u, res = ascent(ub, q / g, X, y, m, d, 1e4)
            out.append(q * np.linalg.norm(u - ub))
        print(run.split("/")[-1], s, "q x D at q = 50, 100, 300, 1000:", np.round(out, 4).tolist())
