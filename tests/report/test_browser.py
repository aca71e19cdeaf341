"""The HTML report in a real browser (headless Chromium through chromedriver).

Skipped when Chromium, chromedriver or selenium is missing; `.ci/run` installs Debian's
`chromium` and `chromium-driver` (the ``browser`` fixture is in tests/conftest.py).
"""

from __future__ import annotations

import json

import pytest

from twolayer.claims import claim_records, registered, reproduce
from twolayer.claims.selftest import finding, flagged, tiny
from twolayer.report import write_report

pytestmark = pytest.mark.browser

def test_report_renders_in_chromium(browser, tmp_path):
    out = tmp_path / "out"
    exps = (tiny("selftest/pass", bound=10.0), tiny("selftest/fail", bound=1e-9), flagged("selftest/flags"),
            tiny("selftest/broken", bound=1e-9, breaks="a bound below any loss"), finding("selftest/finding"))
    with registered(*exps):
        rep = reproduce(["selftest"], out=out)
        index = write_report(rep)
    claims = claim_records(json.loads((out / "report" / "claims.json").read_text()))
    assert len(claims) == 6

    browser.get(index.resolve().as_uri())
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Promise.all(Array.from(document.images).map(i => i.complete ? null :"
        " new Promise(r => { i.onload = r; i.onerror = r; }))).then(() => done(true));")

    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]);")
    assert len(images) == 3, images  # one loss figure per tiny experiment
    assert all(complete and width > 0 for _, complete, width in images), images
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('section.experiment table.claims tbody tr'))"
        ".map(r => r.dataset.claim);")
    assert sorted(rows) == sorted(c["id"] for c in claims)
    # the headline counts no passes: it says whether every claim came out as declared, and which did not
    assert browser.find_element("id", "verdict").text == (
        "1 of 6 claims did not come out as declared: selftest/fail:final-loss")
    assert "claims passed" not in browser.find_element("id", "verdict").text
    failed = browser.execute_script("return document.querySelectorAll('table.claims tr.failed').length;")
    assert failed == 1

    # slack: every evaluated claim shows a number; the two flags are drawn on the right rows and listed on top
    cells = browser.execute_script(
        "return Object.fromEntries(Array.from(document.querySelectorAll('table.claims tbody tr')).map("
        "r => [r.dataset.claim, [r.querySelector('td.slack').innerText, "
        "Array.from(r.querySelectorAll('.flag')).map(f => f.innerText)]]));")
    assert all(text.split("\n")[0] not in ("", "-") for text, _ in cells.values()), cells
    assert cells["selftest/flags:loose-bound"][1] == ["holds, but says little"]
    assert cells["selftest/flags:loose-bound"][0].split("\n")[0] == "+3 (1e+03x)"  # log10(1000), and the factor
    assert cells["selftest/flags:tight-threshold"][1] == ["near the edge"]
    assert cells["selftest/pass:final-loss"][1] == []
    flags = browser.find_element("id", "flags")
    assert flags.is_displayed()
    assert "holds, but says little" in flags.text and "selftest/flags:loose-bound" in flags.text
    assert "near the edge" in flags.text and "selftest/flags:tight-threshold" in flags.text

    # the assumption-broken experiment has a section of its own, with the expected outcome in green
    section = browser.find_element("id", "assumption-broken")
    assert section.is_displayed()
    broken = browser.find_element("css selector", '[data-claim="selftest/broken:final-loss"]')
    assert "fails, as the theory says" in broken.text
    assert broken.find_element("css selector", "span.pass").value_of_css_property("color") == "rgba(26, 127, 55, 1)"
    assert browser.find_element("id", "verdict-broken").text.startswith("1 / 1 assumption-broken claims fail")

    # a finding: its own verdict and section, its explanation, the tolerance's source and the falsifier's kind
    assert browser.find_element("id", "verdict-findings").text.startswith("1 findings")
    section = browser.find_element("id", "findings")
    assert section.is_displayed()
    row = browser.find_element("css selector", '#findings ~ table [data-claim="selftest/finding:final-loss"]')
    assert "finding: the paper's statement fails here" in row.text and "near log 2" in row.text
    assert "paper: 'the loss falls below 1e-3'" in row.find_element("css selector", ".tolerance-source").text
    assert row.find_element("css selector", '.falsifier[data-kind="counterfactual"]').is_displayed()

    # the ledger: one row per category present, its counts open to links to the claims
    ledger = browser.find_element("id", "ledger")
    assert ledger.is_displayed()
    categories = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.ledger tr[data-category]')).map(r => r.dataset.category);")
    assert {"no counterfactual run", "finding", "uninformative bound", "exploratory tolerance"} <= set(categories)
    link = browser.find_element("css selector", 'table.ledger tr[data-category="finding"] details')
    link.find_element("css selector", "summary").click()
    assert link.find_element("css selector", "a").get_attribute("href").endswith("#claim-selftest-finding--final-loss")

    shot = out / "report" / "screenshot.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
