"""The report in a real headless Chromium: it renders with no console or page errors, the
screenshot is a real picture, and clicking a node shows its kernel. Skipped where no Chromium
is installed (docs/report.md says how to get one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore_mcp.report import load_run, report_for_run, write_report
from adaexplore_mcp.store import Store
from tests.report.browser import Chromium, find_chromium, png_colours
from tests.report.conftest import HOSTILE, add_rules, make_search, run_for_search

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium: install one (Debian: apt-get install chromium) or set "
    "ADAEXPLORE_CHROMIUM to its executable",
)


def test_report_renders_cleanly_in_chromium(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite3")
    fixture = make_search(store)
    add_rules(store)
    run = load_run(run_for_search(tmp_path / "run", fixture, precision="legacy"))
    page = write_report(report_for_run(run, store), tmp_path / "report.html")
    assert CHROMIUM is not None
    with Chromium(CHROMIUM) as browser:
        browser.open(page.as_uri())
        assert browser.evaluate("document.querySelectorAll('svg.tree g.node').length") == 6
        assert browser.evaluate("document.querySelectorAll('svg.chart polyline').length") == 1
        assert browser.evaluate("!!document.getElementById('legacy-banner')")
        # the hostile kernel text is shown as text: no alert, no extra element
        assert browser.evaluate("document.querySelectorAll('marquee').length") == 0
        # a click on node 5 fills the panel with its verdict and its code
        browser.evaluate(
            "document.querySelector('g.node[data-id=\"5\"]')"
            ".dispatchEvent(new MouseEvent('click', {bubbles: true}))"
        )
        heading = browser.evaluate(
            "document.querySelector('#panel-task-0 [data-field=heading]').textContent"
        )
        code = browser.evaluate("document.querySelector('#panel-task-0 pre').textContent")
        assert heading.startswith("node 5, small, correct, parent 2, 2.50× baseline")
        assert HOSTILE in code
        shot = browser.screenshot()
        problems = browser.problems()
        dialogs = [e for e in browser.events if e.get("method") == "Page.javascriptDialogOpening"]
    assert problems.all == [], problems
    assert not dialogs
    (tmp_path / "report.png").write_bytes(shot)
    assert len(shot) > 1024
    assert png_colours(shot) > 8  # a page with a tree, a chart and text, not a blank frame
