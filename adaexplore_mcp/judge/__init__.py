"""The judge: runs candidate kernels in sandboxed children, checks them and times them.

Candidate code never runs in the calling process; importing this package does not import torch.
"""

from adaexplore_mcp.judge.baselines import Baseline
from adaexplore_mcp.judge.lane import JudgeUnavailable, QueueFull
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
    "JudgeError",
    "JudgeUnavailable",
    "LintFinding",
    "LintReport",
    "LocalJudge",
    "Mismatch",
    "Phase",
    "PhaseTimes",
    "ProgressCallback",
    "QueueFull",
    "RuntimeStats",
    "Status",
]
