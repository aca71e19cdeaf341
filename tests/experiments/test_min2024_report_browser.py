"""The min2024 figures added by the paper issue (Figs. 1-3, the full Fig. 5 heatmap, the saddle sign
changes, the entry times, Lemmas 1-3 over eps, low rank in d = 20, Figs. 4 and 14-21 from the exact
flow) in a real report, loaded by headless
Chromium: every image of the page loads, and each new figure is among them. The figures are the experiments'
own functions, on their own quick runs where other tests of the session make those runs too (the session's
``shared_store``: cache hits there), and on small versions of the rest (Lemmas 1-3: two scales, one seed; Fig. 5:
60 images a class, 200 steps)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from twolayer.claims import get, registered, reproduce
from twolayer.papers.min2024._shared import set_dotted
from twolayer.report import write_report

pytestmark = pytest.mark.browser

SHARED_MNIST = Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist"
NEW_FIGURES = {"fig1-3-geometry": ["fig1", "fig2", "fig3"], "fig6-toy": ["sign-changes"],
               "fig7-9-two-points": ["entry-times"], "lemma1-3-scaling": ["scaling"], "low-rank": ["stable-rank"],
               "fig5-mnist-0-1": ["heatmap"],
               "fig4-14-17-activation-paths": ["fig4-timeline", "fig14-15-paths", "fig16-17-edges"],
               "app-e-caratheodory": ["fig18-19-zeno", "fig20-e3", "fig21-e4"]}


def _small(name: str, change=lambda c: c):
    """The experiment with its quick configs (their own run names, so that they share the runs other tests make)
    changed by ``change``, its new figures and no claims."""
    exp = get(f"min2024/{name}")
    return dataclasses.replace(exp, id=f"min2024/zz-{name}", configs=lambda scale: change(exp.run_configs("quick")),
                               claims=[], figures=[f for f in exp.figures if f.name in NEW_FIGURES[name]])


def test_new_min2024_figures_load_in_chromium(browser, shared_store, monkeypatch):
    exps = [_small("fig1-3-geometry"), _small("fig7-9-two-points"), _small("fig6-toy"), _small("low-rank"),
            _small("lemma1-3-scaling", lambda c: {k: {**v, "seeds": 1} for k, v in list(c.items())[:2]}),
            _small("fig4-14-17-activation-paths", lambda c: {"exact": c["exact"]}),  # figures: flow only
            _small("app-e-caratheodory")]
    if (SHARED_MNIST / "t10k-images-idx3-ubyte.gz").is_file():
        monkeypatch.setenv("TWOLAYER_DATA", str(SHARED_MNIST))
        exps.append(_small("fig5-mnist-0-1", lambda c: {"gd": set_dotted(c["gd"], {
            "data.max_per_class": 60, "train.steps": 200, "observe": {"schedule": "log", "points": 8,
                                                                      "metrics": c["gd"]["observe"]["metrics"]}})}))
    with registered(*exps):
        rep = reproduce([e.id for e in exps], scale="quick", out=shared_store)
        index = write_report(rep)

    browser.get(index.resolve().as_uri())
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Promise.all(Array.from(document.images).map(i => i.complete ? null :"
        " new Promise(r => { i.onload = r; i.onerror = r; }))).then(() => done(true));")
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]);")
    assert images and all(complete and width > 0 for _, complete, width in images), images
    sources = {Path(src).name for src, _, _ in images}
    for exp in exps:
        for fig in NEW_FIGURES[exp.id.split("zz-", 1)[1]]:
            assert f"min2024_zz-{exp.id.split('zz-', 1)[1]}_{fig}.png" in sources, (exp.id, fig, sorted(sources))
