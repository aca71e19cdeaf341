"""Issue 26: fig1-eq4-direction: measured first-step velocity error vs the first-order GD bound
(lr/2) |u''|/|u'| = (lr/2) sqrt(4 (u.a)^2 + |P_u a|^2) <= lr |a|, a = (v/||w||) x_a."""
import numpy as np
from twolayer.api import Run
from twolayer.papers.min2024 import geometry as g
from twolayer.papers.min2024._shared import data_of

run = Run("/work/paper-out/min2024/min2024-fig1-3-geometry-fig1-88586908")
X, y = data_of(run)
W, v, t = run.seeded("neuron_weights"), run.seeded("v"), run.trajectory["t"]
print("t[:3]", t[:3], "lr", run.config["train"]["lr"])
for s, j, _ in g.fig1_neurons(run):
    w0 = W[s, 0, j]; u0 = w0 / np.linalg.norm(w0)
    a = v[s, 0, j] / np.linalg.norm(w0) * (X[0] - X[1])
    Pa = a - (a @ u0) * u0
    rate = (W[s, 1, j] / np.linalg.norm(W[s, 1, j]) - u0) / (t[1] - t[0])
    err = np.linalg.norm(rate - Pa) / np.linalg.norm(Pa)
    first = (t[1] - t[0]) / 2 * np.sqrt(4 * (a @ u0) ** 2 + Pa @ Pa)
    print(s, j, f"err {err:.4g}  first-order {first:.4g}  ratio {err / first:.4f}  lr|a| {(t[1] - t[0]) * np.linalg.norm(a):.4g}")
print("--- debug")
s, j, _ = g.fig1_neurons(run)[0]
w0, w1 = W[s, 0, j], W[s, 1, j]
xa = X[0] - X[1]
lr = t[1] - t[0]
print("v0", v[s, 0, j], "|w0|", np.linalg.norm(w0), "v1", v[s, 1, j])
print("w1 - w0", w1 - w0, "lr v0 xa", lr * v[s, 0, j] * xa, "ratio", (w1 - w0) / (lr * v[s, 0, j] * xa))
print("X", X, "y", y, "loss cfg", run.config["loss"])
