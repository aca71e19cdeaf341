"""The README's online-SGD figure, made from the example config ``online-sgd.yaml`` beside this file: run it (4 seeds,
d = 200, 4,000 one-pass SGD steps; a cache hit when it was run before) and draw its order parameters against Goldt
time t = samples / d: R_in (student-teacher), Q_ik (student-student) and eps_g, SGD solid and the order-parameter
ODE (``twolayer.theory.online_sgd.integrate``, started at each seed's initial Q, R, v) dashed, one colour per entry.
The SGD and ODE series are the explorer's (``twolayer.explore.order_parameters.order_parameter_payload``).

    python examples/sweeps/online_sgd_figure.py [--out twolayer-out] [--png docs/online_sgd.png] [--seeds 2]
"""

from __future__ import annotations

import argparse
from pathlib import Path

CONFIG = Path(__file__).resolve().parent / "online-sgd.yaml"
PANELS = {"R": "R_in (student-teacher)", "Q": "Q_ik (student-student)", "eps_g": "eps_g (generalization error)"}


def draw(run, seeds: int):
    """The figure (matplotlib) of ``run``'s first ``seeds`` seeds: one panel per entry of PANELS."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from twolayer.explore.order_parameters import order_parameter_payload
    from twolayer.plotting import STYLE

    payload = order_parameter_payload(run, "online-sgd", max_seeds=seeds)
    if payload is None or not payload["seeds"]:
        raise SystemExit(f"no order parameters to draw: {payload['note'] if payload else 'not an online-SGD run'}")
    with matplotlib.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(PANELS), figsize=(4.0 * len(PANELS), 3.3), constrained_layout=True)
        for ax, (group, title) in zip(axes, PANELS.items()):
            for seed in payload["seeds"]:
                for j, x in enumerate(s for s in seed["series"] if s["group"] == group):
                    color = f"C{j % 10}"
                    ax.plot(payload["t"], x["sgd"], color=color, lw=0.9, alpha=0.8)
                    ax.plot(payload["t"], x["ode"], color=color, lw=1.5, ls="--")
            ax.set(title=title, xlabel="t = samples / d")
            if group == "eps_g":
                ax.set_yscale("log")
        cfg = run.config
        fig.suptitle(f"online SGD (solid) vs ODE (dashed): {cfg['model']['activation']} K = {cfg['model']['width']}, "
                     f"M = {cfg['data']['teacher_width']}, d = {cfg['data']['d']}, {len(payload['seeds'])} seeds "
                     f"({CONFIG.name})")
    return fig


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="twolayer-out", help="the run store (default: twolayer-out)")
    ap.add_argument("--png", default="docs/online_sgd.png", help="where the figure goes")
    ap.add_argument("--seeds", type=int, default=2, help="seeds drawn (of the config's 4)")
    args = ap.parse_args(argv)
    import twolayer

    run = twolayer.run(CONFIG, out=args.out)
    fig = draw(run, args.seeds)
    Path(args.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.png, dpi=110)
    print(f"{args.png}: run {run.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
