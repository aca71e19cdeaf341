"""A tiny experiment for testing the reproduce machinery (not discovered: its name starts with
``_``). ``tiny(id, bound)`` claims the final loss is at most ``bound``, so a small bound fails."""

from __future__ import annotations

from twolayer.experiments._claims import at_most
from twolayer.experiments._registry import Experiment, Results
from twolayer.report.plotting import band, panels, positive_times


def tiny_config(scale: str) -> dict[str, dict]:
    steps = {"quick": 20, "paper": 40}[scale]
    return {"gd": {
        "seeds": 2,
        "data": {"kind": "two_points", "labels": [1, 1]},
        "model": {"kind": "two_layer", "activation": "relu", "width": 4},
        "init": {"kind": "gaussian", "scale": 0.5},
        "loss": {"kind": "exponential", "reduction": "mean"},
        "train": {"method": "gd", "lr": 0.1, "steps": steps},
        "observe": {"schedule": "every", "every": 5, "metrics": ["loss"]},
    }}


def tiny(id: str = "selftest/tiny", bound: float = 10.0, configs=tiny_config) -> Experiment:
    """A one-run experiment (seconds) whose single claim is ``final loss <= bound``."""
    exp = Experiment(id=id, title=f"Tiny self-test (final loss <= {bound:g})", figure="none (self-test)",
                     description="A 4-neuron network trained for a few GD steps on two points.", configs=configs)

    @exp.claim("final-loss", f"The final loss is at most {bound:g}")
    def _final_loss(r: Results):
        return at_most(float(r["gd"].trajectory["loss"][:, -1].max()), bound)

    @exp.plot("loss", "Loss against t; min-max over seeds shaded.")
    def _loss(r: Results):
        fig, (ax,) = panels(1)
        t, loss = positive_times(r["gd"].trajectory["t"], r["gd"].trajectory["loss"])
        band(ax, t, loss, label="GD")
        ax.set(xscale="log", yscale="log", xlabel="t", ylabel="loss")
        ax.legend()
        return fig

    return exp
