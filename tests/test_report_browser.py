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
from twolayer.experiments._selftest import tiny
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
    with registered(tiny("selftest/pass", bound=10.0), tiny("selftest/fail", bound=1e-9)):
        rep = reproduce(["selftest"], out=out)
        index = write_report(rep)
    claims = json.loads((out / "report" / "claims.json").read_text())
    assert len(claims) == 2

    browser.get(index.resolve().as_uri())
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Promise.all(Array.from(document.images).map(i => i.complete ? null :"
        " new Promise(r => { i.onload = r; i.onerror = r; }))).then(() => done(true));")

    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]);")
    assert len(images) == 2, images  # one loss figure per experiment
    assert all(complete and width > 0 for _, complete, width in images), images
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.claims tbody tr')).map(r => r.dataset.claim);")
    assert sorted(rows) == sorted(c["id"] for c in claims)
    assert browser.find_element("id", "verdict").text == "1 / 2 claims passed"
    failed = browser.execute_script("return document.querySelectorAll('table.claims tr.failed').length;")
    assert failed == 1

    shot = out / "report" / "screenshot.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
