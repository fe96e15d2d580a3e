"""The judge: checks and times candidate kernels, which it never lets decide anything.

Each evaluation runs in processes of its own: the candidate's and the task's, sandboxed, and a
trusted one that imports neither, draws the seeds, compares, keeps the clock and writes the
verdict (``docs/integrity.md``). Candidate code never runs in the calling process; importing
this package imports none of its modules (``adaexplore_mcp.lazy_exports``): ``EvalResult``
costs its models, ``open_judge`` the local pool, and nothing here imports torch.
"""

from typing import TYPE_CHECKING

from adaexplore_mcp.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from adaexplore_mcp.judge.checks import Check
    from adaexplore_mcp.judge.exceptions import JudgeError, JudgeUnavailable, QueueFull
    from adaexplore_mcp.judge.interface import Judge, open_judge
    from adaexplore_mcp.judge.lazy import LazyJudge
    from adaexplore_mcp.judge.measurement import (
        RuntimeStats,
        SpeedOfLight,
        TaskWork,
        TimingDetail,
    )
    from adaexplore_mcp.judge.pool.baselines import Baseline
    from adaexplore_mcp.judge.pool.lane import LaneStatus
    from adaexplore_mcp.judge.pool.local import LocalJudge
    from adaexplore_mcp.judge.request import EvalOptions, EvalParams, WireEvalOptions
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
        ProgressCallback,
        SandboxReport,
        Status,
    )
    from adaexplore_mcp.judge.roofline import speed_of_light_line
    from adaexplore_mcp.judge.service.client import RemoteJudge

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Baseline": "pool.baselines",
        "Check": "checks",
        "Correctness": "result",
        "Environment": "result",
        "ErrorDetail": "result",
        "EvalOptions": "request",
        "EvalParams": "request",
        "EvalResult": "result",
        "IntegrityFlag": "result",
        "Judge": "interface",
        "JudgeError": "exceptions",
        "JudgeUnavailable": "exceptions",
        "LaneStatus": "pool.lane",
        "LazyJudge": "lazy",
        "LintFinding": "result",
        "LintReport": "result",
        "LocalJudge": "pool.local",
        "Mismatch": "result",
        "Phase": "result",
        "PhaseTimes": "result",
        "ProgressCallback": "result",
        "QueueFull": "exceptions",
        "RemoteJudge": "service.client",
        "RuntimeStats": "measurement",
        "SandboxReport": "result",
        "SpeedOfLight": "measurement",
        "Status": "result",
        "TaskWork": "measurement",
        "TimingDetail": "measurement",
        "WireEvalOptions": "request",
        "open_judge": "interface",
        "speed_of_light_line": "roofline",
    },
)

__all__ = [
    "Baseline",
    "Check",
    "Correctness",
    "Environment",
    "ErrorDetail",
    "EvalOptions",
    "EvalParams",
    "EvalResult",
    "IntegrityFlag",
    "Judge",
    "JudgeError",
    "JudgeUnavailable",
    "LaneStatus",
    "LazyJudge",
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
    "WireEvalOptions",
    "open_judge",
    "speed_of_light_line",
]
