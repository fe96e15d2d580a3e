"""Load a KernelBench-format task file without running it.

The file is only parsed here (``ast``): listing and describing tasks needs neither torch nor the
right to execute user code. What the code does when it runs is the judge's business, in its
sandbox. Every problem found is a ``TaskError`` naming the file, the line and what to change.
"""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from adaexplore_mcp.judge.policy import Tolerance
from adaexplore_mcp.tasks.derived import derive_variants, integer_globals
from adaexplore_mcp.tasks.model import ShapeValue, ShapeVariant, Task, VariantRole

REQUIRED = {
    "Model": "class Model(nn.Module)",
    "get_inputs": "def get_inputs()",
    "get_init_inputs": "def get_init_inputs()",
}
FORMAT_HINT = "see docs/task-format.md"


class TaskError(ValueError):
    """A task file that cannot be used, with the place and the fix in the message."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        where = str(path) if path else ""
        if where and line:
            where += f":{line}"
        super().__init__(f"{where}: {message}" if where else message)
        self.path = path
        self.line = line


MAX_TASK_BYTES = 1_000_000  # what the judge service accepts for a task's source, too


def load_task_file(path: str | Path, *, name: str | None = None, level: int | None = None) -> Task:
    if "\0" in str(path):
        raise TaskError("a path cannot contain a NUL character", path=repr(str(path)))
    path = Path(path)
    try:
        source = read_source(path, MAX_TASK_BYTES)
    except FileNotFoundError:
        raise TaskError("no such file", path=path) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TaskError(f"cannot read the file: {exc}", path=path) from None
    return parse_task(source, name=name or path.stem, path=path, level=level)


def read_source(path: Path, limit: int) -> str:
    """A regular file's text, refused past ``limit`` bytes (a device such as /dev/zero, or a
    huge file, would otherwise be read forever)."""
    # non-blocking: opening a FIFO for reading would otherwise wait for a writer
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)  # a directory opens, and ``open`` would refuse it with the fd left open
        raise ValueError("not a regular file")
    with open(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data.decode("utf-8")


# module-level names that tell the judge about the task, not sizes of its benchmark shape
HINTS = ("SMALL_SHAPES", "ODD_SHAPES", "TOLERANCE", "READ_FRACTION")


def parse_task(
    source: str, *, name: str, path: Path | None = None, level: int | None = None
) -> Task:
    """Validate a task's source and build its ``Task`` (shape variants, tolerance, metadata)."""
    display = path or f"<task {name!r}>"  # repr: a name may hold a NUL, no filename can
    try:
        tree = ast.parse(source, filename=str(display))
    except SyntaxError as exc:
        raise TaskError(f"syntax error: {exc.msg}", path=display, line=exc.lineno) from None
    except (MemoryError, RecursionError):  # the parser's limit on nesting
        raise _too_deep(display) from None

    defined = _top_level_definitions(tree)
    missing = [sig for key, sig in REQUIRED.items() if key not in defined]
    if missing:
        raise TaskError(
            f"the task defines no {', '.join(f'`{m}`' for m in missing)}; a task needs "
            f"`class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()` ({FORMAT_HINT})",
            path=display,
        )

    literals = _literal_globals(tree)
    benchmark_globals = {
        key: value
        for key, (value, _) in literals.items()
        if isinstance(value, ShapeValue) and key not in HINTS
    }
    variants = [ShapeVariant(name="benchmark", role=VariantRole.BENCHMARK)]
    small: dict[str, ShapeValue] = {}

    if "SMALL_SHAPES" in literals:
        value, line = literals["SMALL_SHAPES"]
        small = _overrides(value, "SMALL_SHAPES", defined, display, line)
        variants.append(ShapeVariant(name="small", role=VariantRole.SMALL, overrides=small))
    elif "SMALL_SHAPES" in defined:
        raise _not_literal("SMALL_SHAPES", defined["SMALL_SHAPES"], display)

    if "ODD_SHAPES" in literals:
        value, line = literals["ODD_SHAPES"]
        if not isinstance(value, list | tuple):
            raise TaskError("ODD_SHAPES must be a list of dicts", path=display, line=line)
        for index, entry in enumerate(value, start=1):
            overrides = _overrides(entry, f"ODD_SHAPES[{index - 1}]", defined, display, line)
            variants.append(
                ShapeVariant(name=f"odd-{index}", role=VariantRole.ODD, overrides=overrides)
            )
    elif "ODD_SHAPES" in defined:
        raise _not_literal("ODD_SHAPES", defined["ODD_SHAPES"], display)
    else:
        try:
            variants += derive_variants(integer_globals(tree), small)
        except RecursionError:  # a size computed by an expression nested past the limit
            raise _too_deep(display) from None

    tolerance = None
    if "TOLERANCE" in literals:
        value, line = literals["TOLERANCE"]
        try:
            tolerance = Tolerance.model_validate(value)
        except ValidationError as exc:
            raise TaskError(
                f'TOLERANCE must be {{"atol": float, "rtol": float}}: {_first_error(exc)}',
                path=display,
                line=line,
            ) from None
    elif "TOLERANCE" in defined:
        raise _not_literal("TOLERANCE", defined["TOLERANCE"], display)

    read_fraction = 1.0
    if "READ_FRACTION" in literals:
        value, line = literals["READ_FRACTION"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
            raise TaskError(
                "READ_FRACTION must be a number in (0, 1]: the least fraction of the inputs' "
                f"bytes a correct kernel reads, got {value!r}",
                path=display,
                line=line,
            )
        read_fraction = float(value)
    elif "READ_FRACTION" in defined:
        raise _not_literal("READ_FRACTION", defined["READ_FRACTION"], display)

    docstring = ast.get_docstring(tree) or ""
    summary, _, description = docstring.partition("\n")
    return Task(
        name=name,
        level=level,
        summary=summary.strip(),
        description=description.strip(),
        source=source,
        path=path,
        variants=tuple(variants),
        tolerance=tolerance,
        globals=benchmark_globals,
        read_fraction=read_fraction,
    )


def _top_level_definitions(tree: ast.Module) -> dict[str, int]:
    """Names bound at module level (classes, functions, assignments, imports) and their lines."""
    names: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.setdefault(node.name, node.lineno)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        names.setdefault(sub.id, node.lineno)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.setdefault(node.target.id, node.lineno)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names.setdefault((alias.asname or alias.name).split(".")[0], node.lineno)
    return names


def _literal_globals(tree: ast.Module) -> dict[str, tuple[Any, int]]:
    """Module-level ``NAME = <literal>`` assignments (the last one wins, as at run time)."""
    found: dict[str, tuple[Any, int]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        try:
            literal = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            for target in targets:
                if isinstance(target, ast.Name):
                    found.pop(target.id, None)
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                found[target.id] = (literal, node.lineno)
    return found


def _overrides(
    value: Any, label: str, defined: dict[str, int], path: Any, line: int
) -> dict[str, ShapeValue]:
    if not isinstance(value, dict) or not value:
        raise TaskError(
            f"{label} must be a non-empty dict of global names to sizes", path=path, line=line
        )
    for key, size in value.items():
        if not isinstance(key, str) or key not in defined:
            raise TaskError(
                f"{label} overrides `{key}`, which the task does not define at module level",
                path=path,
                line=line,
            )
        if not isinstance(size, ShapeValue):
            raise TaskError(
                f"{label}[{key!r}] must be a number, bool or string, not {type(size).__name__}",
                path=path,
                line=line,
            )
    return dict(value)


def _not_literal(name: str, line: int, path: Any) -> TaskError:
    return TaskError(
        f"{name} must be a plain literal (numbers, strings, dicts, lists) so it can be read "
        "without running the task",
        path=path,
        line=line,
    )


def _too_deep(path: Any) -> TaskError:
    return TaskError(
        "the source nests too deeply to be read (an expression past the limit of Python's "
        "parser or of its recursion): split deep expressions into several statements",
        path=path,
    )


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    location = ".".join(str(part) for part in error["loc"])
    return f"{location}: {error['msg']}" if location else error["msg"]
