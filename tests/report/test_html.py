"""The HTML report's structure, read back with html.parser: one self-contained page with the
tree, the chart, the best kernel's diff and the rules, everything escaped."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from adaexplore_mcp.report import (
    layout,
    load_run,
    render_report,
    report_for_run,
    report_for_search,
    unified_diff,
)
from adaexplore_mcp.report.chart import chart, nice_ticks
from adaexplore_mcp.store import Store
from tests.conftest import run_cli
from tests.report.conftest import (
    HOSTILE,
    SearchFixture,
    add_rules,
    make_run,
    make_search,
    run_for_search,
)


class Page(HTMLParser):
    """Every element with its attributes, the text inside each, and script bodies."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.text: list[str] = []
        self._script: dict[str, str | None] | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag == "script":
            self._script = dict(attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts.append((self._script, data))
        else:
            self.text.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [
            a
            for t, a in self.elements
            if t == tag and all(a.get(k.rstrip("_")) == v for k, v in attrs.items())
        ]

    def classes(self, tag: str, name: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.elements if t == tag and name in (a.get("class") or "").split()]


@pytest.fixture
def searched(tmp_path: Path) -> SearchFixture:
    store = Store(tmp_path / "db.sqlite3")
    fixture = make_search(store)
    add_rules(store)
    return fixture


def test_run_report_structure(searched: SearchFixture, tmp_path: Path) -> None:
    run = load_run(run_for_search(tmp_path / "run", searched))
    html = render_report(report_for_run(run, searched.store))
    page = Page(html)
    trees = page.classes("svg", "tree")
    assert len(trees) == 1  # the missing task has no tree
    nodes = page.classes("g", "node")
    assert sorted(int(a["data-id"]) for a in nodes) == [0, 1, 2, 3, 4, 5]
    assert [a["data-id"] for a in page.classes("g", "best")] == ["5"]
    # large steps solid, small steps dashed: 2 large (1, 4) and 3 small (2, 3, 5)
    assert len(page.classes("path", "large")) == 2
    assert len(page.classes("path", "small")) == 3
    colours = {a.get("fill") for t, a in page.elements if t == "circle" and a.get("r") == "8"}
    assert {"#16a34a", "#dc2626", "#f59e0b", "#64748b"} <= colours
    assert "2.50×" in page.text and "1.20×" in page.text
    # the chart: a best-so-far line and a dot per correct step
    assert len(page.classes("polyline", "best-line")) == 1
    assert len(page.classes("circle", "dot")) == 3
    # the best kernel's diff to its parent, node 2
    assert len(page.classes("span", "add")) == 2 and len(page.classes("span", "del")) == 1
    assert "--- node 2" in page.text and "+++ node 5" in page.text
    # metadata, statistics and rules
    text = " ".join(" ".join(page.text).split())
    assert "Precision policy: strict" in text
    assert "Missing (unfinished): never_ran" in text
    assert "fast_1.2" in text
    assert "You cannot call tl.arange with a length that is not a power of two." in text
    assert len(page.classes("li", "rule")) == 2


def test_everything_is_escaped(searched: SearchFixture, tmp_path: Path) -> None:
    run = load_run(run_for_search(tmp_path / "run", searched))
    html = render_report(report_for_run(run, searched.store))
    page = Page(html)
    # the hostile text appears only as text (in the kernel, the diff and a rule), never as markup
    assert "".join(page.text).count(HOSTILE) >= 3
    assert not page.find("marquee")
    assert len([s for s in page.scripts if s[0].get("type") is None]) == 1  # our own script
    assert "alert" not in "".join(body for attrs, body in page.scripts if not attrs.get("type"))
    assert html.count("<script") == 2  # the node data and the page's script
    # the nodes' data is JSON with no literal '<' or '&', and it round-trips
    (data,) = [body for attrs, body in page.scripts if attrs.get("type") == "application/json"]
    assert "<" not in data and "&" not in data
    nodes = json.loads(data)
    assert HOSTILE in nodes["5"]["code"]
    assert nodes["3"]["status"] == "compile_error" and nodes["0"]["code"] is None


def test_self_contained(searched: SearchFixture, tmp_path: Path) -> None:
    run = load_run(run_for_search(tmp_path / "run", searched))
    html = render_report(report_for_run(run, searched.store))
    page = Page(html)
    for _, attrs in page.elements:
        for name in ("src", "href", "xlink:href", "action", "data", "poster"):
            value = attrs.get(name)
            assert value is None or value.startswith("#"), (name, value)
    assert not page.find("link") and not page.find("img") and not page.find("iframe")
    assert "url(" not in html and "@import" not in html
    assert not [s for s in page.scripts if s[0].get("src")]
    # no address outside the escaped kernels and rules
    assert not re.search(r"(?<![\w])(https?:)?//[\w.-]+\.[a-z]{2,}", _markup_only(html))


def _markup_only(html: str) -> str:
    return re.sub(r"<pre[^>]*>.*?</pre>", "", html, flags=re.S)


def test_search_report_and_events_fallback(searched: SearchFixture, tmp_path: Path) -> None:
    page = Page(render_report(report_for_search(searched.search_id, searched.store)))
    assert sorted(int(a["data-id"]) for a in page.classes("g", "node")) == [0, 1, 2, 3, 4, 5]
    assert [a["data-id"] for a in page.classes("g", "best")] == ["5"]
    # without the store, the tree comes from events.jsonl and the steps' kernels
    run = load_run(run_for_search(tmp_path / "run", searched))
    page = Page(render_report(report_for_run(run, None)))
    assert sorted(int(a["data-id"]) for a in page.classes("g", "node")) == [0, 1, 2, 3, 4, 5]
    assert len(page.classes("span", "add")) == 2
    text = " ".join(" ".join(page.text).split())
    assert "tree is drawn from events.jsonl" in text and "no rules could be read" in text


def test_legacy_runs_are_labelled_prominently(tmp_path: Path) -> None:
    fixture = make_search(Store(tmp_path / "db.sqlite3"))
    run = load_run(run_for_search(tmp_path / "run", fixture, precision="legacy"))
    page = Page(render_report(report_for_run(run, fixture.store)))
    assert page.find("div", id="legacy-banner")


def test_mixed_operator_runs_are_labelled_prominently(tmp_path: Path) -> None:
    fixture = make_search(Store(tmp_path / "db.sqlite3"))
    mixed = load_run(run_for_search(tmp_path / "mixed", fixture, ops="mixed"))
    assert Page(render_report(report_for_run(mixed, fixture.store))).find(
        "div", id="mixed-ops-banner"
    )
    plain = load_run(run_for_search(tmp_path / "plain", fixture))
    assert not Page(render_report(report_for_run(plain, fixture.store))).find(
        "div", id="mixed-ops-banner"
    )


def test_cpu_run_charts_correct_kernels(tmp_path: Path) -> None:
    from tests.report.conftest import StepSpec, TaskSpec

    run = make_run(
        tmp_path / "cpu",
        [
            TaskSpec(
                "t",
                True,
                timing=False,
                steps=[StepSpec("compile_error", None, 1), StepSpec("correct", None, 2)],
            )
        ],
    )
    page = Page(render_report(report_for_run(load_run(run), None)))
    text = " ".join(" ".join(page.text).split())
    assert "Correct kernels over steps" in text and "speedups are unavailable" in text
    assert "ok" in page.text  # a correct node without a speedup


def test_layout_centres_parents_and_survives_deep_chains() -> None:
    slots, depths = layout([(0, None), (1, 0), (2, 0), (3, 1), (4, 1)])
    assert slots[3] == 0 and slots[4] == 1 and slots[2] == 2
    assert slots[1] == 0.5 and slots[0] == (0.5 + 2) / 2
    assert depths == {0: 0, 1: 1, 2: 1, 3: 2, 4: 2}
    chain = [(0, None)] + [(i, i - 1) for i in range(1, 5000)]
    slots, depths = layout(chain)
    assert depths[4999] == 4999 and slots[0] == 0


def test_chart_and_diff_helpers() -> None:
    drawn = chart([(False, None), (True, 1.5), (True, 1.2), (True, 3.0)])
    assert drawn.kind == "speedup" and drawn.final == 3.0 and len(drawn.dots) == 3
    assert [t.label for t in drawn.y_ticks] == ["0", "1", "2", "3"]
    assert nice_ticks(7.3) == [0, 2, 4, 6, 8]
    lines = unified_diff("a\nb\n", "a\nc\n", "x", "y")
    assert [line.kind for line in lines] == ["meta", "meta", "hunk", "ctx", "del", "add"]


def test_cli(searched: SearchFixture, tmp_path: Path) -> None:
    home = tmp_path  # the fixture's store is tmp_path/db.sqlite3; the CLI reads HOME's database
    (home / "db.sqlite3").rename(home / "adaexplore.sqlite3")
    for suffix in ("-wal", "-shm"):
        old = home / f"db.sqlite3{suffix}"
        if old.exists():
            old.rename(home / f"adaexplore.sqlite3{suffix}")
    run = run_for_search(tmp_path / "run", searched)
    done = run_cli("report", str(run), home=home)
    assert done.returncode == 0, done.stderr
    assert (run / "report.html").is_file()
    assert "nodes-task-0" in (run / "report.html").read_text()
    target = tmp_path / "search.html"
    done = run_cli("report", searched.search_id, "--out", str(target), home=home)
    assert done.returncode == 0, done.stderr
    assert "Search " + searched.search_id in target.read_text()
    unknown = run_cli("report", "nosuchsearch", home=home)
    assert unknown.returncode == 2 and "no search with id" in unknown.stderr


def test_a_run_is_reported_from_its_own_home_wherever_adaexplore_home_points(
    searched: SearchFixture, tmp_path: Path
) -> None:
    home = tmp_path / "run-home"
    home.mkdir()
    (tmp_path / "db.sqlite3").rename(home / "adaexplore.sqlite3")
    for suffix in ("-wal", "-shm"):
        old = tmp_path / f"db.sqlite3{suffix}"
        if old.exists():
            old.rename(home / f"adaexplore.sqlite3{suffix}")
    run = run_for_search(tmp_path / "run", searched)
    config = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps(config | {"home": str(home)}))
    done = run_cli("report", str(run), home=tmp_path / "another-home")
    assert done.returncode == 0, done.stderr
    html = (run / "report.html").read_text()
    assert "is not in the store" not in html and "nodes-task-0" in html
