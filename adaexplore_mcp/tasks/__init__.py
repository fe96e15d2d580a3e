"""Tasks: the KernelBench-format task model, its loader and the bundled suite."""

from adaexplore_mcp.tasks.loader import TaskError, load_task_file, parse_task
from adaexplore_mcp.tasks.model import ShapeVariant, Task, VariantRole
from adaexplore_mcp.tasks.suite import (
    bundled_solution,
    bundled_task_names,
    bundled_tasks,
    get_bundled_task,
    resolve_task,
    solution_names,
    task_from_source,
)

__all__ = [
    "ShapeVariant",
    "Task",
    "TaskError",
    "VariantRole",
    "bundled_solution",
    "bundled_task_names",
    "bundled_tasks",
    "get_bundled_task",
    "load_task_file",
    "parse_task",
    "resolve_task",
    "solution_names",
    "task_from_source",
]
