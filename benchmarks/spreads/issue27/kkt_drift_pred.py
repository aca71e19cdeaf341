"""Quasi-static prediction of the drift of flow_log started on a KKT direction theta_bar at scale rho0:
the direction flow at fixed rho is projected gradient ascent of F(u) = -ln(sum_i softplus(-rho^2 q_i(u))) / rho^2
on the unit sphere; from theta_bar it goes to the local maximizer u*(rho0). Prediction: ||u* - theta_bar|| and the
margin change (gamma(theta_bar) - gamma(u*)) / gamma(theta_bar); compared with the runs' measured drift.
Also the Lyu-Li bound on the margin fall: (gamma(0) - gamma~(0)) / gamma(0), gamma~ = -ln(expm1(nL))/rho^2."""
import sys, glob, yaml, numpy as np
from scipy.integrate import solve_ivp
from twolayer.claims.runs import run_dataset
from twolayer.claims.falsifiers import SyntheticRun
ALPHA = 0.2

def qs(u, X, y, m, d):
    W, a = u[:m * d].reshape(m, d), u[m * d:]
    z = X @ W.T
    return y * (np.where(z > 0, z, ALPHA * z) @ a)

def grad_q(u, X, y, m, d):
    W, a = u[:m * d].reshape(m, d), u[m * d:]
    z = X @ W.T                                   # [n, m]
    phi = np.where(z > 0, z, ALPHA * z)
    dphi = np.where(z > 0, 1.0, ALPHA)
    gW = y[:, None, None] * (a[None, :, None] * dphi[:, :, None] * X[:, None, :])   # [n, m, d]
    ga = y[:, None] * phi
    return np.concatenate([gW.reshape(len(X), -1), ga], axis=1)

def log_softplus_neg(z):
    return np.where(z > 30, -z + np.log1p(-0.5 * np.exp(-np.minimum(z, 700))), np.log(np.log1p(np.exp(-np.maximum(z, -700)))))

def ascent(u0, rho2, X, y, m, d, s_end=None):
    def rhs(s, u):
        u = u / np.linalg.norm(u)
        z = rho2 * qs(u, X, y, m, d)
        lw = log_softplus_neg(z) - 0 * z
        # dF/du = sum_i w_i grad q_i, w_i = (-softplus'(-z_i)) / sum softplus(-z_j) * ... (normalized weights)
        sig = 1 / (1 + np.exp(np.minimum(z, 700)))            # -l'(z_i)
        w = sig / np.exp(np.logaddexp.reduce(lw))             # sum_j softplus(-z_j)
        g = w @ grad_q(u, X, y, m, d)
        g = g - (g @ u) * u
        return g
    # time scale: the weights are ~ 1/(number of support points); run long
    sol = solve_ivp(rhs, (0, s_end), u0, rtol=1e-10, atol=1e-13, method="LSODA", dense_output=False)
    u = sol.y[:, -1]
    return u / np.linalg.norm(u), np.linalg.norm(rhs(0, u))

if __name__ == "__main__":
  for run in sys.argv[1:]:
        cfg = yaml.safe_load(open(run + "/config.yaml"))
        data = run_dataset(SyntheticRun(cfg))
        X, y = data.X, data.y
        W0 = np.asarray(cfg["init"]["W"]); a0 = np.asarray(cfg["init"]["v"])
        tr = np.load(run + "/trajectory.npz")
        Wt, at = tr["neuron_weights"], tr["v"]
        for s in range(len(a0)):
            m, d = W0[s].shape
            th = np.concatenate([W0[s].ravel(), a0[s]])
            rho2 = th @ th
            ub = th / np.sqrt(rho2)
            q = qs(ub, X, y, m, d)
            g0 = q.min()
            nL = np.sum(np.log1p(np.exp(-rho2 * q)))
            gs0 = -np.log(np.expm1(nL)) / rho2
            for s_end in (1e3, 1e4, 1e5):
                u, res = ascent(ub, rho2, X, y, m, d, s_end)
                print(f"  s_end {s_end:g}: D_pred {np.linalg.norm(u - ub):.5f} residual {res:.2e} margin change {(g0 - qs(u, X, y, m, d).min()) / g0:.5f}")
            th_t = np.concatenate([Wt[s].reshape(len(tr['t']), -1), at[s]], axis=1)
            ut = th_t / np.linalg.norm(th_t, axis=1, keepdims=True)
            dist = np.linalg.norm(ut - ut[:1], axis=1)
            gm = np.array([qs(x, X, y, m, d).min() for x in ut])
            print(f"{run.split('/')[-1]} seed {s}: rho0^2 {rho2:.2f} q_min {rho2 * g0:.2f} gamma {g0:.5f}; support q/q_min "
                  f"{np.round(np.sort(q)[:4] / g0, 4).tolist()}; Lyu-Li fall bound {(g0 - gs0) / g0:.5f}; measured drift max "
                  f"{dist.max():.5f} (at tau {tr['t'][dist.argmax()]:.3g}, end {dist[-1]:.5f}); margin change max "
                  f"{np.max(np.abs(gm - g0)) / g0:.5f}, min margin {(g0 - gm.min()) / g0:.5f}")
