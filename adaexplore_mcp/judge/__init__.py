"""The judge: runs candidate kernels in sandboxed children, checks them and times them.

Candidate code never runs in the calling process; importing this package does not import torch.
"""

from adaexplore_mcp.judge.baselines import Baseline
from adaexplore_mcp.judge.client import RemoteJudge
from adaexplore_mcp.judge.interface import Judge, open_judge
from adaexplore_mcp.judge.lane import JudgeUnavailable, LaneStatus, QueueFull
from adaexplore_mcp.judge.outcomes import JudgeError
from adaexplore_mcp.judge.pool import LocalJudge, ProgressCallback
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
    Status,
)

__all__ = [
    "Baseline",
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
    "Status",
    "open_judge",
]
