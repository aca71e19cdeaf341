"""Tiny experiments for testing the reproduce machinery (not discovered: the name starts with ``_``).

``tiny(id, bound)`` claims the final loss is at most ``bound``, so a small bound fails; with
``breaks=...`` it is an assumption-broken experiment (its claim is expected to fail). ``finding(id, bound)``
is the same claim as a ``finding`` (expected to fail, with an explanation and a counterfactual where it holds).
``flagged(id)`` has one bound that holds by 1000x ("holds, but says little") and one threshold met within 2 %
("near the edge"), for the report's slack flags.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from twolayer.claims.checks import Exclusion, at_most, bound
from twolayer.claims.falsifiers import Counterfactual, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results
from twolayer.plotting import band, panels, positive_times


def tiny_config(scale: str) -> dict[str, dict]:
    """The one GD run of the tiny self-test experiment (4 neurons, two points, a few steps)."""
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


def _loss_runs(final_loss: float):
    """A synthetic ``gd`` run whose loss falls from 1 to ``final_loss``."""
    def build(configs):
        loss = np.tile(np.geomspace(1.0, final_loss, 5), (2, 1))
        return {"gd": SyntheticRun(configs["gd"], {"t": np.linspace(0, 2, 5), "loss": loss}, name="synthetic-gd")}
    return build


def _final_loss(r: Results) -> float:
    return float(r["gd"].trajectory["loss"][:, -1].max())


def tiny(id: str = "selftest/tiny", bound: float = 10.0, configs=tiny_config, breaks: str = "") -> Experiment:
    """A one-run experiment (seconds) whose single claim is ``final loss <= bound``."""
    exp = Experiment(id=id, title=f"Tiny self-test (final loss <= {bound:g})", figure="none (self-test)",
                     description="A 4-neuron network trained for a few GD steps on two points.", configs=configs,
                     breaks=breaks)
    falsifier = (Synthetic("loss-stays-low", _loss_runs(bound / 100), "the final loss is 1 % of the bound")
                 if breaks else Synthetic("loss-too-high", _loss_runs(100 * bound), "the final loss is 100x the bound"))

    @exp.claim("final-loss", f"The final loss is at most {bound:g}", kind="prediction", falsifiers=[falsifier])
    def _final(r: Results):
        return at_most(_final_loss(r), bound)

    @exp.plot("loss", "Loss against t; min-max over seeds shaded.")
    def _loss(r: Results):
        fig, (ax,) = panels(1)
        t, loss = positive_times(r["gd"].trajectory["t"], r["gd"].trajectory["loss"])
        band(ax, t, loss, label="GD")
        ax.set(xscale="log", yscale="log", xlabel="t", ylabel="loss")
        ax.legend()
        return fig

    return exp


def flagged(id: str = "selftest/flagged") -> Experiment:
    """The tiny run with a loose bound (final loss <= 1000 x itself) and a tight threshold (within 2 %)."""
    exp = Experiment(id=id, title="Tiny self-test of the slack flags", figure="none (self-test)",
                     description="The tiny run, with one loose bound and one tight threshold.", configs=tiny_config)

    # fixtures for the flags only: neither claim can fail, so neither has a falsifier
    @exp.claim("loose-bound", "The final loss is at most 1000 x itself", kind="bound")
    def _loose(r: Results):
        return bound(_final_loss(r), "<=", 1000 * _final_loss(r))

    @exp.claim("tight-threshold", "The final loss is at most 1.02 x itself", kind="prediction")
    def _tight(r: Results):
        return at_most(_final_loss(r), 1.02 * _final_loss(r))

    return exp


def finding(id: str = "selftest/finding", bound: float = 1e-3) -> Experiment:
    """The tiny run, whose claim "the best seed's final loss is at most ``bound``" is a finding: 20 GD steps are
    too few for a small bound (it fails, as declared), and 400 steps at lr 0.5 (its counterfactual) are enough."""
    exp = Experiment(id=id, title="Tiny self-test of a finding", figure="none (self-test)",
                     description="The tiny run, checked against a bound it cannot reach yet.", configs=tiny_config)
    longer = Counterfactual("trained-longer", lambda c: {"gd": {**c["gd"], "train": {"method": "gd", "lr": 0.5,
                                                                                      "steps": 400}}},
                            "long enough for the bound to hold")

    @exp.claim("final-loss", f"The final loss of the best seed is at most {bound:g}", kind="finding",
               falsifiers=[longer], tolerance_source="paper: 'the loss falls below 1e-3'",
               explanation="20 GD steps are far too few for the bound; the loss is still near log 2")
    def _final(r: Results):
        check = at_most(float(r["gd"].trajectory["loss"][:, -1].min()), bound)
        return dataclasses.replace(check, exclusions=(Exclusion("seeds", (), "none: every seed counts"),))

    return exp
