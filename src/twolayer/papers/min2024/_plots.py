"""Figure helpers shared by the min2024 experiments: neurons and data on the unit circle with the
shaded cones (Figs. 1-3, 6-9), and the animated GIF of the directions."""

from __future__ import annotations

import numpy as np

from twolayer.papers.min2024._shared import PAPER_LR, data_of, iter_index
from twolayer.plotting import panels
from twolayer.theory import alignment as th

POS_COLOR, NEG_COLOR, DEAD_COLOR = "tab:red", "tab:blue", "0.5"


def shade_cones(ax, X, y, radius: float = 1.3, alpha: float = 0.12, labels: bool = False):
    """Shade S+ (red), S- (blue) and S_dead (gray) of 2-D data as wedges (a 0.5-degree grid)."""
    from matplotlib.patches import Wedge

    phi = np.linspace(0, 2 * np.pi, 721)
    code = th.cone_membership(np.stack([np.cos(phi), np.sin(phi)], axis=1), X, y)
    deg = np.rad2deg(phi)
    for c, color, name in ((th.CONE_POS, POS_COLOR, "S+"), (th.CONE_NEG, NEG_COLOR, "S-"), (th.CONE_DEAD, DEAD_COLOR, "S_dead")):
        m = np.append(code == c, False).astype(int)
        starts, ends = np.flatnonzero(np.diff(np.append(0, m)) == 1), np.flatnonzero(np.diff(np.append(0, m)) == -1)
        runs = list(zip(starts, ends))  # runs [a, b) of the angle grid
        for a, b in runs:
            ax.add_patch(Wedge((0, 0), radius, deg[a], deg[min(b, len(deg) - 1)], color=color, alpha=alpha, lw=0))
        if labels and runs:
            a, b = max(runs, key=lambda ab: ab[1] - ab[0])  # label the widest run once
            mid = np.deg2rad(0.5 * (deg[a] + deg[min(b, len(deg) - 1)]))
            ax.text(1.12 * radius * np.cos(mid), 1.12 * radius * np.sin(mid), name, ha="center", va="center",
                    fontsize=7, color=color)


def data_arrows(ax, X, y, length: float = 1.25, names: bool = False):
    """Data directions as arrows: red y = +1, blue y = -1."""
    for i, (x, lab) in enumerate(zip(X, y)):
        u = length * x / np.linalg.norm(x)
        ax.annotate("", xy=u, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=POS_COLOR if lab > 0 else NEG_COLOR))
        if names:
            ax.text(1.08 * u[0], 1.08 * u[1], f"x{i + 1}", fontsize=7, ha="center", va="center")


def circle_axes(ax, title: str = ""):
    phi = np.linspace(0, 2 * np.pi, 361)
    ax.plot(np.cos(phi), np.sin(phi), color="0.7", lw=0.6)
    ax.set(xlim=(-1.45, 1.45), ylim=(-1.45, 1.45), aspect="equal", title=title, xticks=[], yticks=[])
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)


def draw_directions(ax, X, y, W, v, cones: bool = True, title: str = ""):
    """Unit circle, data (red +, blue -), shaded cones and neurons (log-radius, coloured by sign v)."""
    if cones:
        shade_cones(ax, X, y)
    data_arrows(ax, X, y)
    norms = np.linalg.norm(W, axis=1)
    ok = norms > 0
    logn = np.log10(np.where(ok, norms, 1.0))
    lo, hi = logn[ok].min(), logn[ok].max()
    radius = 0.25 + 0.75 * (logn - lo) / max(hi - lo, 1e-9) if hi > lo else np.full_like(logn, 0.8)
    D = W / np.where(ok, norms, 1.0)[:, None] * radius[:, None]
    for d, s in zip(D[ok], v[ok]):
        ax.plot([0, d[0]], [0, d[1]], color=POS_COLOR if s > 0 else NEG_COLOR, lw=0.8, alpha=0.8)
    circle_axes(ax, title)


def direction_figure(run, iterations, title):
    """Neuron directions of seed 0 at the given paper iterations, and the loss and stable rank."""
    X, y = data_of(run)
    fig, axes = panels(len(iterations) + 1, width=2.6, height=2.6)
    W, v = run.seeded("neuron_weights")[0], run.seeded("v")[0]
    for ax, it in zip(axes, iterations):
        i = iter_index(run, it)
        draw_directions(ax, X, y, W[i], v[i], title=f"iteration {int(round(run.trajectory['t'][i] / PAPER_LR))}")
    ax = axes[-1]
    t = run.trajectory["t"] / PAPER_LR
    ax.plot(t[1:], run.seeded("loss")[0, 1:], label="loss")
    ax.plot(t[1:], run.seeded("stable_rank")[0, 1:], label="stable rank")
    ax.set(xscale="log", yscale="log", xlabel="iteration", title=title)
    ax.legend()
    return fig


def directions_gif(run, path, seed: int = 0, fps: int = 6) -> str:
    """Write an animated GIF of neuron directions over the run's observations (2-D data)."""
    from matplotlib.animation import FuncAnimation, PillowWriter

    X, y = data_of(run)
    W, v, t = run.seeded("neuron_weights")[seed], run.seeded("v")[seed], run.trajectory["t"]
    fig, (ax,) = panels(1, width=3.2, height=3.2)
    frames = np.unique(np.linspace(0, len(t) - 1, min(len(t), 40)).astype(int))

    def frame(i):
        ax.clear()
        draw_directions(ax, X, y, W[i], v[i], title=f"t = {t[i]:.3g}")

    FuncAnimation(fig, frame, frames=frames).save(str(path), writer=PillowWriter(fps=fps))
    return str(path)
