"""Fixtures for the paper-experiment tests: the headless Chromium of the report's browser test
(``tests/test_report_browser.py``, importable because pytest puts ``tests/`` on the path)."""

from test_report_browser import browser  # noqa: F401  (a fixture: skipped when Chromium is not installed)
