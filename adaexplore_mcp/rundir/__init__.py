"""The run directory: what ``adaexplore-mcp drive`` writes (``RunDir``) and ``stats``,
``reeval`` and ``report`` read (``load_run``). ``layout`` is the one place its file names are
spelled; ``records`` holds the models of its JSON files. Every file is written atomically
(temporary file, then rename), so an interrupted run leaves no half-written record.

    run = RunDir.create(Path("runs/a"), config)      # the driver
    data = load_run("runs/a")                         # stats, reeval, report
"""

from adaexplore_mcp.rundir.errors import RunDirError
from adaexplore_mcp.rundir.files import append_event, read_events, write_json, write_text
from adaexplore_mcp.rundir.layout import (
    REEVAL_FILE,
    RunPaths,
    StepPaths,
    TaskPaths,
    runs_root,
    step_dir,
)
from adaexplore_mcp.rundir.reader import RunData, TaskRun, is_run_dir, load_run
from adaexplore_mcp.rundir.records import (
    FORMAT,
    MemoryMode,
    ModelUsage,
    RunConfig,
    StepOutcome,
    StepRecord,
    Strategy,
    TaskRecord,
    TaskRunSummary,
)
from adaexplore_mcp.rundir.writer import RunDir

__all__ = [
    "FORMAT",
    "REEVAL_FILE",
    "MemoryMode",
    "ModelUsage",
    "RunConfig",
    "RunData",
    "RunDir",
    "RunDirError",
    "RunPaths",
    "StepOutcome",
    "StepPaths",
    "StepRecord",
    "Strategy",
    "TaskPaths",
    "TaskRecord",
    "TaskRun",
    "TaskRunSummary",
    "append_event",
    "is_run_dir",
    "load_run",
    "read_events",
    "runs_root",
    "step_dir",
    "write_json",
    "write_text",
]
