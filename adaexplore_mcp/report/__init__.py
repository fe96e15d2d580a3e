"""What a run directory says: statistics (``stats``), re-measurement on the current GPU
(``reeval``) and a self-contained HTML report of the searches (``report``).

    run = load_run("runs/2026-11-21")
    stats = run_stats([run])                  # RunStats: rates, speedups, fast_p, intervals
    store = open_existing_store(settings.database_path)   # adaexplore_mcp.app; None: no store
    html = render_report(report_for_run(run, store))
"""

from adaexplore_mcp.report.chart import Chart, chart
from adaexplore_mcp.report.html import (
    BestView,
    Report,
    RuleView,
    TaskSection,
    render_report,
    report_for_run,
    report_for_search,
    unified_diff,
    write_report,
)
from adaexplore_mcp.report.reeval import ReevalReport, TaskReeval, history, reeval_run
from adaexplore_mcp.report.stats import (
    FAST_P,
    Bootstrap,
    Estimate,
    Interval,
    RunInfo,
    RunStats,
    SpeedupStats,
    TaskStats,
    bootstrap_interval,
    fast_p,
    geomean,
    run_stats,
    task_stats,
)
from adaexplore_mcp.report.tree import ReportNode, TreeDrawing, layout
from adaexplore_mcp.rundir import REEVAL_FILE, RunData, RunDirError, TaskRun, is_run_dir, load_run

__all__ = [
    "FAST_P",
    "REEVAL_FILE",
    "BestView",
    "Bootstrap",
    "Chart",
    "Estimate",
    "Interval",
    "ReevalReport",
    "Report",
    "ReportNode",
    "RuleView",
    "RunData",
    "RunDirError",
    "RunInfo",
    "RunStats",
    "SpeedupStats",
    "TaskReeval",
    "TaskRun",
    "TaskSection",
    "TaskStats",
    "TreeDrawing",
    "bootstrap_interval",
    "chart",
    "fast_p",
    "geomean",
    "history",
    "is_run_dir",
    "layout",
    "load_run",
    "reeval_run",
    "render_report",
    "report_for_run",
    "report_for_search",
    "run_stats",
    "task_stats",
    "unified_diff",
    "write_report",
]
