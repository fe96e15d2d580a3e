"""The HTML report of a judged problem set: its results file (``eval PROBLEMS_DIR KERNELS_DIR
--out results.jsonl``) drawn as one self-contained page, a section per policy set, with fast_p
at the thresholds the run reports use (0, 1, 1.2 and 2).

A results file may hold several verdicts for one kernel file (a rerun under another policy, an
edited kernel): each section keeps the latest verdict of each kernel file under its policies.
Every value on the page is escaped by Jinja's autoescape.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from adaexplore_mcp.problem_set import SetRecord, SetSummary, read_records, summarize
from adaexplore_mcp.report.html import _environment, _version
from adaexplore_mcp.report.stats import FAST_P
from adaexplore_mcp.report.tree import STATUS_COLOURS
from adaexplore_mcp.rundir import write_text


class SetReport(BaseModel):
    title: str
    source: str
    generated_at: float
    version: str
    sections: list[SetSummary]
    colours: dict[str, str]


class SetReportError(ValueError):
    """A results file with nothing to report; the message says what to do."""


def report_for_results(path: Path, fast_p: Sequence[float] = FAST_P) -> SetReport:
    records = read_records(path)
    if not records:
        raise SetReportError(
            f"{path} holds no problem-set records; write one with "
            "`adaexplore-mcp eval PROBLEMS_DIR KERNELS_DIR --out FILE`"
        )
    groups: dict[tuple[tuple[str, str], ...], dict[str, SetRecord]] = {}
    for record in records:
        # the latest verdict of each kernel file under each policy set
        groups.setdefault(tuple(sorted(record.policies.items())), {})[record.kernel] = record
    return SetReport(
        title=f"Problem set {path.name}",
        source=str(path),
        generated_at=time.time(),
        version=_version(),
        sections=[summarize(list(group.values()), fast_p) for group in groups.values()],
        colours=dict(STATUS_COLOURS),
    )


def render_set_report(report: SetReport) -> str:
    return _environment().get_template("problem_set.html.j2").render(report=report)


def write_set_report(report: SetReport, path: Path) -> Path:
    write_text(path, render_set_report(report))
    path.chmod(0o644)  # a page to share, not a private temporary file
    return path
