"""What a run directory says: statistics (``stats``), re-measurement on the current GPU
(``reeval``) and a self-contained HTML report of the searches (``report``).

    run = load_run("runs/2026-11-21")
    stats = run_stats([run])                  # RunStats: rates, speedups, fast_p, intervals
    html = render_report(report_for_run(run, settings))
"""

from adaexplore_mcp.report.reeval import REEVAL_FILE, ReevalReport, TaskReeval, history, reeval_run
from adaexplore_mcp.report.run import RunData, RunDirError, TaskRun, is_run_dir, load_run
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

__all__ = [
    "FAST_P",
    "REEVAL_FILE",
    "Bootstrap",
    "Estimate",
    "Interval",
    "ReevalReport",
    "RunData",
    "RunDirError",
    "RunInfo",
    "RunStats",
    "SpeedupStats",
    "TaskReeval",
    "TaskRun",
    "TaskStats",
    "bootstrap_interval",
    "fast_p",
    "geomean",
    "history",
    "is_run_dir",
    "load_run",
    "reeval_run",
    "run_stats",
    "task_stats",
]
