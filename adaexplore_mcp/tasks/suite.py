"""The bundled task suite and name-or-path resolution."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from adaexplore_mcp.tasks.loader import TaskError, load_task_file, parse_task
from adaexplore_mcp.tasks.model import Task

_PACKAGE = "adaexplore_mcp.tasks.bundled"
_LEVELS = (1, 2, 3)


def _bundled_root() -> Path:
    return Path(str(resources.files(_PACKAGE)))


def bundled_tasks() -> list[Task]:
    """Every bundled task, ordered by level then name."""
    tasks = []
    for level in _LEVELS:
        folder = _bundled_root() / f"level{level}"
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("_"):
                continue
            tasks.append(load_task_file(path, level=level))
    return tasks


def bundled_task_names() -> list[str]:
    return [path.stem for level in _LEVELS for path in sorted(_level_files(level))]


def _level_files(level: int) -> list[Path]:
    folder = _bundled_root() / f"level{level}"
    return [p for p in folder.glob("*.py") if not p.name.startswith("_")]


def get_bundled_task(name: str) -> Task:
    for level in _LEVELS:
        path = _bundled_root() / f"level{level}" / f"{name}.py"
        if path.is_file():
            return load_task_file(path, level=level)
    raise TaskError(
        f"no bundled task named {name!r}; `adaexplore-mcp tasks list` shows the "
        f"{len(bundled_task_names())} bundled tasks, or pass the path of a task file"
    )


def bundled_solution(name: str) -> str | None:
    """The Triton reference solution shipped for a bundled task, if there is one."""
    path = _bundled_root() / "solutions" / f"{name}.py"
    return path.read_text(encoding="utf-8") if path.is_file() else None


def solution_names() -> list[str]:
    return sorted(p.stem for p in (_bundled_root() / "solutions").glob("*.py") if p.stem[0] != "_")


def resolve_task(name_or_path: str | Path) -> Task:
    """A bundled task by name, or a task file by path (anything with a slash or ending in .py)."""
    text = str(name_or_path)
    if "\0" in text:
        raise TaskError("a task name or path cannot contain a NUL character", path=repr(text))
    if text.endswith(".py") or "/" in text or Path(text).is_file():
        return load_task_file(Path(text).expanduser())
    return get_bundled_task(text)


def task_from_source(source: str, name: str) -> Task:
    """A task sent as text (over MCP or HTTP) rather than as a file on this machine."""
    return parse_task(source, name=name)
