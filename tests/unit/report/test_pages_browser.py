"""The HTML pages as a browser shows them: headless Chromium loads each page from a file and
every picture decodes, nothing is fetched or run, the verdict's sentence is on the first
screen, and the page fits a laptop-wide window.

Needs Debian's chromium and chromium-driver and the selenium package (`.ci/run` installs
them); skipped where they are missing, except under CI, where a missing browser fails.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaudit.canary.service import result_of
from kaudit.probe.faults.registry import parse_fault
from kaudit.probe.matrix import MatrixCell, MatrixRow
from kaudit.probe.prove import judge
from kaudit.report.base import render
from kaudit.report.canary import CANARY
from kaudit.report.matrix import MATRIX
from kaudit.report.probe import PROBE
from kaudit.report.prove import PROVE, Proof
from kaudit.report.share import SHARE
from tests.unit.canary.sample import a_canary
from tests.unit.probe.reports import probe_report
from tests.unit.report.probe_sample import lag_then_kill_report
from tests.unit.report.test_share_page import share_sample

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WINDOW = (1280, 900)


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (dev extra)"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs the browser: {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # This machine's network is closed: without these Chromium keeps trying Google's hosts.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
                 f"--window-size={WINDOW[0]},{WINDOW[1]}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _pages() -> dict[str, str]:
    cell = MatrixCell("1", False, 2, False, parse_fault("lag-then-kill-leader"))
    reports = {"acks1": probe_report(acked=30, lost=4, read_then_lost=0),
               "acksall": probe_report(acked=30)}
    return {
        "probe": render(PROBE, probe_report(acked=50, lost=5, duplicated=2), "html"),
        "incident": render(PROBE, lag_then_kill_report(), "html"),
        "matrix": render(MATRIX, [MatrixRow(cell, (probe_report(acked=20, lost=3),
                                                   probe_report(acked=20)))], "html"),
        "prove": render(PROVE, Proof(judge(reports), reports, 5.0), "html"),
        "canary": render(CANARY, result_of(a_canary()), "html"),
        "share": render(SHARE, share_sample(), "html"),
    }


_SEEN = """
const images = Array.from(document.images);
return {
  images: images.length,
  decoded: images.filter(i => i.complete && i.naturalWidth > 0).length,
  widest: Math.max(0, ...images.map(i => i.getBoundingClientRect().right)),
  fetched: performance.getEntriesByType('resource').map(e => e.name),
  overflow: document.documentElement.scrollWidth - window.innerWidth,
  title: document.title,
  text: document.body.innerText,
  opening: document.querySelector('h1').nextElementSibling.className,
  openingBottom: document.querySelector('h1').nextElementSibling.getBoundingClientRect().bottom,
  pre: document.querySelectorAll('pre').length,
  scripts: document.scripts.length,
  tables: document.querySelectorAll('table').length,
};
"""


@pytest.mark.parametrize("name", ["probe", "incident", "matrix", "prove", "canary", "share"])
def test_a_browser_shows_every_picture_of_the_page_and_fetches_nothing(
        browser: Any, tmp_path: Path, name: str) -> None:
    page = tmp_path / f"{name}.html"
    page.write_text(_pages()[name], encoding="utf-8")
    browser.get(page.as_uri())
    seen = browser.execute_script(_SEEN)
    expected_images = {"probe": 1, "incident": 1, "matrix": 2, "prove": 2, "canary": 1,
                       "share": 1}[name]
    assert seen["images"] == expected_images
    assert seen["decoded"] == expected_images  # every PNG decoded by the browser itself
    assert seen["fetched"] == []  # self-contained: no script, style or picture from elsewhere
    assert seen["title"].startswith("kaudit")
    assert {"probe": "lost: 5 acknowledged message(s)", "matrix": "lag-then-kill-leader",
            "incident": "gone when broker 3 became leader of partition 0 at 14.1 s",
            "prove": "NOT CONFIRMED",
            "canary": "lost: 1 acknowledged record(s) (1 deleted)",
            "share": "2 of 100 records broke exactly-once"}[name] in seen["text"]
    # The verdict sentence comes right under the title, on the first screen; the rows are
    # tables, not a monospace dump; nothing runs.
    assert seen["opening"].startswith("verdict verdict-")
    assert seen["openingBottom"] <= WINDOW[1] / 3
    assert seen["pre"] == 0 and seen["scripts"] == 0 and seen["tables"] >= 2
    assert seen["overflow"] <= 0  # no sideways scrolling in a 1280-pixel window
    assert seen["widest"] <= WINDOW[0]
    if os.environ.get("KAUDIT_BROWSER_SCREENSHOTS"):  # to look at the pages by eye
        browser.save_screenshot(str(Path(os.environ["KAUDIT_BROWSER_SCREENSHOTS"]) / f"{name}.png"))
