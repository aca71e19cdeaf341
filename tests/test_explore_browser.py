"""The explorer page in a real browser (headless Chromium through chromedriver): the time slider
moves the neurons, the seed boxes hide trajectories, the claims show their slack, and the console
stays free of errors. Skipped when Chromium, chromedriver or selenium is missing (the
``browser`` fixture is in tests/conftest.py)."""

from __future__ import annotations

import pytest

import twolayer
from twolayer.explore import write_experiment_page

pytestmark = pytest.mark.browser

CONFIG = {
    "name": "brw", "seeds": 2,
    "data": {"kind": "toy2d"},
    "model": {"kind": "two_layer", "activation": "relu", "width": 8},
    "init": {"kind": "gaussian", "scale": 1e-3},
    "loss": {"kind": "exponential"},
    "train": {"method": "gd", "lr": 0.05, "steps": 600},
    "observe": {"schedule": "log", "points": 15, "metrics": ["loss", "accuracy", "v", "cone", "neuron_weights"]},
}
CLAIMS = [
    {"id": "demo/page:bound", "experiment": "demo/page", "statement": "the final loss is small", "kind": "bound",
     "predicted": "<= 0.5", "measured": 0.2, "tolerance": 0.0, "slack": 0.3, "passed": True},
    {"id": "demo/page:older", "experiment": "demo/page", "statement": "a claim without slack", "predicted": 1.0,
     "measured": 1.0, "tolerance": 0.1, "passed": True},
]

NEURONS = ("return document.getElementById('neurons').data"
           ".filter(t => t.mode === 'markers' && t.legendgroup !== undefined)"
           ".map(t => [t.name, t.x.slice(), t.y.slice()]);")


def _wait_ready(browser):
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "(function poll() { document.body.dataset.ready ? requestAnimationFrame(() => done(true)) : setTimeout(poll, 20); })();")


def _slide(browser, index):
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1]; const s = document.getElementById('time');"
        f"s.value = '{index}'; s.dispatchEvent(new Event('input'));"
        "requestAnimationFrame(() => requestAnimationFrame(() => done(true)));")


def test_explorer_slider_moves_the_neurons(browser, tmp_path):
    run = twolayer.run(CONFIG, out=tmp_path / "out")
    page = write_experiment_page(tmp_path / "out" / "explore", "demo/page", "demo/page: a test page",
                                 [("gd", run.path)], CLAIMS)
    browser.get(page.resolve().as_uri())
    _wait_ready(browser)

    last = browser.execute_script(NEURONS)
    label_last = browser.find_element("id", "time-label").text
    assert label_last.endswith("point 15 / 15"), label_last
    assert sum(len(x) for _, x, _ in last) == 8  # every neuron drawn once

    _slide(browser, 0)
    first = browser.execute_script(NEURONS)
    assert browser.find_element("id", "time-label").text.startswith("t = 0 ·")
    moved = sorted(x for _, xs, _ in first for x in xs) != sorted(x for _, xs, _ in last for x in xs)
    assert moved, "the neurons did not move with the slider"
    # what is drawn at point 0 is the initial directions of seed 0
    import numpy as np

    W = run.trajectory["neuron_weights"][0, 0]
    U = W / np.linalg.norm(W, axis=-1, keepdims=True)
    np.testing.assert_allclose(sorted(x for _, xs, _ in first for x in xs), sorted(U[:, 0]), atol=1e-4)

    browser.execute_script("const c = document.getElementById('colour'); c.value = 'cone';"
                           "c.dispatchEvent(new Event('change'));")
    names = [n for n, _, _ in browser.execute_script(NEURONS)]
    assert all(n.split(" (")[0] in ("S+", "S-", "S_dead", "no cone") for n in names), names

    visible = ("return Array.from(document.querySelectorAll('.scalar'))"
               ".map(d => d.data.map(t => t.visible));")
    assert browser.execute_script(visible) == [[True, True], [True, True]]
    browser.find_element("css selector", 'input[data-seed="1"]').click()
    assert browser.execute_script(visible) == [[True, False], [True, False]]

    slack = browser.execute_script(
        "return Array.from(document.querySelectorAll('#claims tbody tr')).map(r => [r.dataset.claim, r.cells[7].textContent]);")
    assert slack == [["demo/page:bound", "0.3"], ["demo/page:older", "-"]]

    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert not errors, errors


def test_claims_show_the_reports_verdict(browser, tmp_path):
    """A claim expected to fail (an assumption-broken experiment's) that fails is a green 'fails, as the theory
    says' in the explorer, as in the report; a finding that fails is the report's amber finding mark; an ordinary
    failure is a red fail."""
    from twolayer.claims_file import verdict

    run = twolayer.run(CONFIG, out=tmp_path / "out")
    claims = [{"id": "demo/broken:holds", "experiment": "demo/broken", "statement": "the theorem's statement",
               "kind": "prediction", "predicted": 1.0, "measured": 3.0, "tolerance": 0.1, "passed": False,
               "expect": "fail", "evaluated": True},
              {"id": "demo/broken:finding", "experiment": "demo/broken", "statement": "the paper says so",
               "kind": "finding", "predicted": 1.0, "measured": 2.0, "tolerance": 0.1, "passed": False,
               "expect": "fail", "evaluated": True},
              {"id": "demo/broken:plain", "experiment": "demo/broken", "statement": "an ordinary claim",
               "kind": "bound", "predicted": 1.0, "measured": 2.0, "tolerance": 0.1, "passed": False}]
    page = write_experiment_page(tmp_path / "out" / "explore", "demo/broken", "demo/broken", [("gd", run.path)], claims)
    browser.get(page.resolve().as_uri())
    _wait_ready(browser)
    cells = browser.execute_script(
        "return Array.from(document.querySelectorAll('#claims tbody tr')).map(r => "
        "[r.className, r.cells[0].textContent, getComputedStyle(r.cells[0]).color]);")
    assert [c[:2] for c in cells] == [[verdict(c)[0], verdict(c)[2]] for c in claims]
    assert cells[0][1] == "✓ fails, as the theory says" and cells[0][2] == "rgb(26, 127, 55)"  # the report's green
    assert cells[1][1].startswith("◆ finding") and cells[1][2] == "rgb(138, 90, 0)"
    assert cells[2][1] == "✗ fail" and cells[2][2] == "rgb(207, 34, 46)"


def _set_slider(browser, element_id, value):
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1]; const s = document.getElementById(arguments[0]);"
        "s.value = String(arguments[1]); s.dispatchEvent(new Event('input'));"
        "requestAnimationFrame(() => requestAnimationFrame(() => done(true)));", element_id, value)


def test_sweep_page_sliders_pick_the_point(browser, tmp_path):
    """A grid over two keys gets two sliders; moving them shows that point's run (its id, its neurons, its
    events), and the events-across-the-sweep panel follows the second key and rings the selected point."""
    from twolayer.explore import explore
    from twolayer.sweep import run_sweep

    base = {**CONFIG, "train": {"method": "gd", "lr": 0.05, "steps": 300},
            "observe": {**CONFIG["observe"], "points": 10}}
    sweep = run_sweep({"name": "grid", "base": base, "grid": {"init.scale": [1e-4, 1e-3, 1e-2], "model.width": [4, 6]}},
                      out=tmp_path / "out")
    page = explore(tmp_path / "out" / "grid")
    assert page.name == "sweep-grid.html" and (page.parent / "plotly.min.js").is_file()
    index = explore(tmp_path / "out")
    assert "sweep-grid.html" in index.read_text()
    browser.get(page.resolve().as_uri())
    _wait_ready(browser)
    run_of = {(p.values["init.scale"], p.values["model.width"]): sweep.results[p.index]["run_id"] for p in sweep.points}
    status = lambda: browser.find_element("id", "run-status").text  # noqa: E731
    widths = lambda: sum(len(x) for _, x, _ in browser.execute_script(NEURONS))  # noqa: E731
    assert browser.find_element("id", "sweep-value-0").text == "init.scale = 0.0001"
    assert status().startswith(run_of[(1e-4, 4)]) and widths() == 4
    _set_slider(browser, "sweep-1", 1)
    assert browser.find_element("id", "sweep-value-1").text == "model.width = 6"
    assert status().startswith(run_of[(1e-4, 6)]) and widths() == 6
    _set_slider(browser, "sweep-0", 2)
    assert status().startswith(run_of[(1e-2, 6)])
    events = browser.execute_script("return document.getElementById('sweep-events').data.map(t => [t.name, t.x]);")
    assert events[-1][0] == "selected point" and events[-1][1][0] == 0.01
    assert [x for name, x in events[:-1]][0] == [1e-4, 1e-3, 1e-2]
    assert browser.execute_script("return document.getElementById('sweep-events').layout.xaxis.type;") == "log"
    table = twolayer.open_run(run_of[(1e-2, 6)], out=tmp_path / "out").summary["events"]
    shown = browser.execute_script("return Array.from(document.querySelectorAll('#events tbody tr')).map(r => r.cells[0].textContent);")
    assert shown == list(table)
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert not errors, errors


def test_per_neuron_panel_follows_the_picked_seed(browser, tmp_path):
    """The neurons-over-time panel draws ||w_j|| and v_j of each neuron of the picture's seed, coloured by the sign
    of v_j at the last point; picking another seed redraws it with that seed's values."""
    import numpy as np

    cfg = {**CONFIG, "name": "brw-panel", "observe": {**CONFIG["observe"], "metrics": [*CONFIG["observe"]["metrics"], "w_norm"]}}
    run = twolayer.run(cfg, out=tmp_path / "out")
    page = write_experiment_page(tmp_path / "out" / "explore", "demo/panel", "demo/panel", [("gd", run.path)], [])
    browser.get(page.resolve().as_uri())
    _wait_ready(browser)
    panels = "return Array.from(document.querySelectorAll('#per-neuron .panel')).map(d => d.data.map(t => [t.y, t.line.color]));"
    norms, vs = browser.execute_script(panels)
    assert len(norms) == len(vs) == 8
    np.testing.assert_allclose([y for y, _ in norms], run.trajectory["w_norm"][0].T, rtol=1e-3)
    sign = np.sign(run.trajectory["v"][0, -1])
    assert [c for _, c in vs] == ["#0969da" if x > 0 else "#cf222e" for x in sign]
    browser.execute_script("const c = document.getElementById('neuron-seed'); c.value = '1';"
                           "c.dispatchEvent(new Event('change'));")
    norms, _ = browser.execute_script(panels)
    np.testing.assert_allclose([y for y, _ in norms], run.trajectory["w_norm"][1].T, rtol=1e-3)


def test_event_labels_are_staggered_and_named_on_hover(browser, tmp_path):
    """Labels of events close in time would overlap: they stand at three heights in turn, and each names its event,
    time and uncertainty on hover."""
    run = twolayer.run(CONFIG, out=tmp_path / "out")
    events = {k: v for k, v in run.summary["events"].items() if any(x is not None for x in v)}
    assert len(events) >= 3
    page = write_experiment_page(tmp_path / "out" / "explore", "demo/labels", "demo/labels", [("gd", run.path)], [])
    browser.get(page.resolve().as_uri())
    _wait_ready(browser)
    notes = browser.execute_script("return document.querySelector('.scalar').layout.annotations"
                                   ".map(a => [a.text, a.y, a.hovertext]);")
    assert [n[0] for n in notes] == list(events)
    assert len({round(n[1], 6) for n in notes[:3]}) == 3  # three heights for three consecutive events
    for name, _, hover in notes:
        first = next(x for x in events[name] if x is not None)
        width = run.summary["event_uncertainty"][name][events[name].index(first)]
        assert hover.startswith(f"{name}: t = ") and hover.endswith(f"[{width:g}]")
