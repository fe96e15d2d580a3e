"""Autonomous runs: strategies that drive the MCP tools through an in-process MCP client.

    result = await drive(DriveSpec(strategy="adaexplore", steps=20, tasks=["softmax"],
                                   run_dir=Path("runs/a")), Settings(), llm)

``docs/driver.md`` describes the strategies, the memory modes, the run directory (the ``rundir``
package owns its format) and resuming.
"""

from adaexplore_mcp.driver.display import LiveDisplay, QuietObserver, progress_table
from adaexplore_mcp.driver.errors import (
    DriveError,
    JudgeUnreachable,
    ModelFailing,
    ModelRefused,
    RunMismatch,
)
from adaexplore_mcp.driver.progress import Observer, RunProgress, RunResult, TaskProgress
from adaexplore_mcp.driver.replay import (
    REPLAY_NOTICE,
    ReplayLLM,
    Transcript,
    demo_transcripts,
    load_transcript,
)
from adaexplore_mcp.driver.runner import Driver, DriveSpec, drive
from adaexplore_mcp.rundir import (
    ModelUsage,
    RunConfig,
    RunDir,
    RunDirError,
    StepRecord,
    TaskRecord,
    TaskRunSummary,
)

STRATEGIES = ("adaexplore", "one-shot", "best-of-n", "refine", "metr")
MEMORY_MODES = ("none", "rules", "reasoning-bank")

__all__ = [
    "MEMORY_MODES",
    "REPLAY_NOTICE",
    "STRATEGIES",
    "DriveError",
    "DriveSpec",
    "Driver",
    "JudgeUnreachable",
    "LiveDisplay",
    "ModelFailing",
    "ModelRefused",
    "ModelUsage",
    "Observer",
    "QuietObserver",
    "ReplayLLM",
    "RunConfig",
    "RunDir",
    "RunDirError",
    "RunMismatch",
    "RunProgress",
    "RunResult",
    "StepRecord",
    "TaskProgress",
    "TaskRecord",
    "TaskRunSummary",
    "Transcript",
    "demo_transcripts",
    "drive",
    "load_transcript",
    "progress_table",
]
