"""Gap 1 - gamma/(gamma^+/2) over tau in the hinted small runs (paper cache and quick)."""
import sys, numpy as np
from twolayer.theory.margin import one_neuron_margin
from twolayer.claims.runs import run_dataset
import yaml
for path in sys.argv[1:]:
    z = np.load(path + "/trajectory.npz")
    cfg = yaml.safe_load(open(path + "/config.yaml"))
    class R: pass
    from twolayer.claims.falsifiers import SyntheticRun
    data = run_dataset(SyntheticRun(cfg))
    gp = one_neuron_margin(data.X, data.y, 0.2, +1)[1]
    t = z["t"]; g = z["normalized_margin"] / (gp / 2); ls = z["log_loss_sum"]
    print(path, "gamma+", gp)
    for i in list(range(0, len(t), max(1, len(t)//25))) + [len(t)-1]:
        print(f"tau {t[i]:9.4g}  gap {np.array2string(1-g[:, i], precision=3)}  lognL {np.array2string(ls[:, i], precision=3)}  neg {np.array2string(z['group_mass_neg'][:, i], precision=2)}")
