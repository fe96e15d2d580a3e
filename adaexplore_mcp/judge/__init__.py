"""The judge: checks and times candidate kernels, which it never lets decide anything.

Each evaluation runs in processes of its own: the candidate's and the task's, sandboxed, and a
trusted one that imports neither, draws the seeds, compares, keeps the clock and writes the
verdict (``docs/integrity.md``). Candidate code never runs in the calling process; importing
this package does not import torch.
"""

from typing import TYPE_CHECKING, Any

from adaexplore_mcp.judge.checks import Check
from adaexplore_mcp.judge.interface import Judge, open_judge
from adaexplore_mcp.judge.outcomes import JudgeError
from adaexplore_mcp.judge.pool.baselines import Baseline
from adaexplore_mcp.judge.pool.lane import JudgeUnavailable, LaneStatus, QueueFull
from adaexplore_mcp.judge.pool.local import LocalJudge, ProgressCallback
from adaexplore_mcp.judge.result import (
    Correctness,
    Environment,
    ErrorDetail,
    EvalResult,
    IntegrityFlag,
    LintFinding,
    LintReport,
    Mismatch,
    Phase,
    PhaseTimes,
    RuntimeStats,
    SandboxReport,
    SpeedOfLight,
    Status,
    TaskWork,
    TimingDetail,
)
from adaexplore_mcp.judge.roofline import speed_of_light_line

if TYPE_CHECKING:
    from adaexplore_mcp.judge.service.client import RemoteJudge


def __getattr__(name: str) -> Any:
    # the judge service's client (httpx) is imported by who talks to a judge service
    if name == "RemoteJudge":
        from adaexplore_mcp.judge.service.client import RemoteJudge

        return RemoteJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Baseline",
    "Check",
    "Correctness",
    "Environment",
    "ErrorDetail",
    "EvalResult",
    "IntegrityFlag",
    "Judge",
    "JudgeError",
    "JudgeUnavailable",
    "LaneStatus",
    "LintFinding",
    "LintReport",
    "LocalJudge",
    "Mismatch",
    "Phase",
    "PhaseTimes",
    "ProgressCallback",
    "QueueFull",
    "RemoteJudge",
    "RuntimeStats",
    "SandboxReport",
    "SpeedOfLight",
    "Status",
    "TaskWork",
    "TimingDetail",
    "open_judge",
    "speed_of_light_line",
]
