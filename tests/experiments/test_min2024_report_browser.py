"""The min2024 figures added by the paper issue (Figs. 1-3, the full Fig. 5 heatmap, the saddle sign
changes, the entry times, Lemmas 1-3 over eps, low rank in d = 20, Figs. 4 and 14-21 from the exact
flow) in a real report, loaded by headless
Chromium: every image of the page loads, and each new figure is among them. Small versions of the
experiments keep it to seconds (the figures are the experiments' own functions)."""

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


def _small(name: str, change):
    """The experiment with small configs, its new figures and no claims."""
    exp = get(f"min2024/{name}")
    return dataclasses.replace(exp, id=f"min2024/zz-{name}", configs=lambda scale: change(exp.configs("quick")),
                               claims=[], figures=[f for f in exp.figures if f.name in NEW_FIGURES[name]])


def _short(cfg, steps, points=40):
    return set_dotted(cfg, {"seeds": 1, "train.steps": steps, "observe.schedule": "log", "observe.points": points,
                            "observe.at": None})


def _exact_short(cfg):
    return set_dotted(cfg, {"seeds": 1, "train.time": 12.0})


def test_new_min2024_figures_load_in_chromium(browser, tmp_path, monkeypatch):
    exps = [_small("fig1-3-geometry", lambda c: c),
            _small("fig7-9-two-points", lambda c: {k: _short(v, 8000) for k, v in c.items()}),
            _small("fig6-toy", lambda c: {"toy": _short(c["toy"], 8000)}),
            _small("low-rank", lambda c: {"cap": _short(c["cap"], 5000)}),
            _small("lemma1-3-scaling", lambda c: {k: {**v, "seeds": 1} for k, v in list(c.items())[:2]}),
            _small("fig4-14-17-activation-paths", lambda c: {"exact": _exact_short(c["exact"])}),  # figures: flow only
            _small("app-e-caratheodory", lambda c: {**c, "toy": _exact_short(c["toy"])})]
    if (SHARED_MNIST / "t10k-images-idx3-ubyte.gz").is_file():
        monkeypatch.setenv("TWOLAYER_DATA", str(SHARED_MNIST))
        exps.append(_small("fig5-mnist-0-1", lambda c: {"gd": set_dotted(c["gd"], {
            "data.max_per_class": 60, "train.steps": 200, "observe": {"schedule": "log", "points": 8,
                                                                      "metrics": c["gd"]["observe"]["metrics"]}})}))
    with registered(*exps):
        rep = reproduce([e.id for e in exps], scale="quick", out=tmp_path / "out")
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
