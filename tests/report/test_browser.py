"""The HTML report in a real browser (headless Chromium through chromedriver).

Skipped when Chromium, chromedriver or selenium is missing; `.ci/run` installs Debian's
`chromium` and `chromium-driver`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from twolayer.experiments import registered, reproduce
from twolayer.experiments._selftest import flagged, tiny
from twolayer.report import write_report

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
CHROMEDRIVER = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,1600"]


@pytest.fixture
def browser(tmp_path):
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("chromium and chromedriver are not installed")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def test_report_renders_in_chromium(browser, tmp_path):
    out = tmp_path / "out"
    exps = (tiny("selftest/pass", bound=10.0), tiny("selftest/fail", bound=1e-9), flagged("selftest/flags"),
            tiny("selftest/broken", bound=1e-9, breaks="a bound below any loss"))
    with registered(*exps):
        rep = reproduce(["selftest"], out=out)
        index = write_report(rep)
    claims = json.loads((out / "report" / "claims.json").read_text())
    assert len(claims) == 5

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
        "return Array.from(document.querySelectorAll('table.claims tbody tr')).map(r => r.dataset.claim);")
    assert sorted(rows) == sorted(c["id"] for c in claims)
    assert browser.find_element("id", "verdict").text == "3 / 4 claims passed"
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

    shot = out / "report" / "screenshot.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
