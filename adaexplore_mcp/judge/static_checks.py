"""Checks of a candidate's source that need no process: run before a worker is spent on it.

Besides syntax and the ``ModelNew`` class, this catches what Triton's CPU interpreter accepts but
the GPU compiler rejects, so a kernel judged correct on the CPU also compiles on a GPU.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from adaexplore_mcp.judge import messages
from adaexplore_mcp.judge.result import (
    ErrorDetail,
    EvalResult,
    IntegrityFlag,
    Phase,
    Status,
    kernel_hash,
)
from adaexplore_mcp.judge.source_policy import review
from adaexplore_mcp.tasks import Task


@dataclass(frozen=True)
class GlobalRead:
    kernel: str
    name: str
    line: int
    column: int


_TOO_DEEP = (
    "kernel.py nests too deeply to be checked (an expression past the limit of Python's "
    "parser or of its recursion): split deep expressions into several statements."
)


def precheck(task: Task, code: str) -> EvalResult | None:
    """A compile_error verdict for source that cannot work, or None to go on and run it."""
    try:
        return _precheck(task, code)
    except (MemoryError, RecursionError):  # the parser's limit, or recursion here or in review()
        detail = ErrorDetail(type="SourceTooDeep", message=_TOO_DEEP, phase=Phase.COMPILING)
        return _compile_error(task, code, _TOO_DEEP, detail)


def _precheck(task: Task, code: str) -> EvalResult | None:
    try:
        tree = ast.parse(code, filename="kernel.py")
    except SyntaxError as exc:
        text = exc.msg + (f": {exc.text.strip()}" if exc.text else "")
        # a NUL byte has no line: Python refuses the whole source
        where = f"kernel.py:{exc.lineno}" if exc.lineno is not None else "kernel.py"
        detail = ErrorDetail(
            type="SyntaxError", message=text, phase=Phase.COMPILING, location=where
        )
        return _compile_error(task, code, f"Syntax error at {where}: {text}", detail)

    if not _defines(tree, "ModelNew"):
        detail = ErrorDetail(
            type="MissingModelNew", message=messages.MISSING_MODEL_NEW, phase=Phase.COMPILING
        )
        return _compile_error(task, code, messages.MISSING_MODEL_NEW, detail)

    reads = plain_globals_in_kernels(tree)
    if reads:
        first = reads[0]
        text = (
            f"`{first.name}` is a plain Python global read inside the @triton.jit function "
            f"`{first.kernel}`; Triton's GPU compiler rejects that (the CPU interpreter does "
            f"not). Define it as `{first.name} = tl.constexpr(...)` or pass it as an argument."
        )
        detail = ErrorDetail(
            type="CompilationError",
            message=text,
            phase=Phase.COMPILING,
            location=f"kernel.py:{first.line}",
        )
        return _compile_error(
            task, code, f"Compile error at kernel.py:{first.line}: {text}", detail
        )

    findings = review(tree)
    if findings:
        finding = findings[0]
        more = f" ({len(findings) - 1} more finding(s) in `integrity`)" if len(findings) > 1 else ""
        return EvalResult(
            status=Status.REJECTED,
            message=f"Rejected by the {finding.check} check: {finding.message()}.{more}",
            task=task.name,
            task_hash=task.hash,
            kernel_hash=kernel_hash(code),
            integrity=[IntegrityFlag(check=f.check, detail=f.message()) for f in findings],
        )
    return None


def _compile_error(task: Task, code: str, message: str, detail: ErrorDetail) -> EvalResult:
    return EvalResult(
        status=Status.COMPILE_ERROR,
        message=message,
        task=task.name,
        task_hash=task.hash,
        kernel_hash=kernel_hash(code),
        error=detail,
    )


def _defines(tree: ast.Module, name: str) -> bool:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return True
        if isinstance(node, ast.ImportFrom) and any(
            (alias.asname or alias.name) == name for alias in node.names
        ):
            return True
    return False


def plain_globals_in_kernels(tree: ast.Module) -> list[GlobalRead]:
    """Module-level numbers, strings and tuples (not ``tl.constexpr``) read inside a
    ``@triton.jit`` function."""
    plain: set[str] = set()
    for node in tree.body:
        targets, value = _assignment(node)
        for target in targets:
            if _is_plain_value(value, plain):
                plain.add(target)
            else:
                plain.discard(target)
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
            for bound in _bound_names(node):
                plain.discard(bound)

    reads = []
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and _is_jit(node)):
            continue
        local = {arg.arg for arg in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                local.add(sub.id)
        for sub in ast.walk(node):
            if (
                isinstance(sub, ast.Name)
                and isinstance(sub.ctx, ast.Load)
                and sub.id in plain
                and sub.id not in local
            ):
                reads.append(GlobalRead(node.name, sub.id, sub.lineno, sub.col_offset))
    return sorted(reads, key=lambda read: (read.line, read.column))


def _assignment(node: ast.stmt) -> tuple[list[str], ast.expr | None]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)], node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id], node.value
    return [], None


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    return []


def _is_plain_value(value: ast.expr | None, plain: set[str]) -> bool:
    """Numbers, strings, tuples of them, arithmetic on them and ``math`` calls: values that are
    neither ``tl.constexpr`` nor anything else Triton accepts as a global."""
    if value is None:
        return False
    if isinstance(value, ast.Constant):
        return isinstance(value.value, int | float | str | bool) or value.value is None
    if isinstance(value, ast.Tuple | ast.List):
        return all(_is_plain_value(element, plain) for element in value.elts)
    if isinstance(value, ast.UnaryOp):
        return _is_plain_value(value.operand, plain)
    if isinstance(value, ast.BinOp):
        return _is_plain_value(value.left, plain) and _is_plain_value(value.right, plain)
    if isinstance(value, ast.Name):
        return value.id in plain
    if isinstance(value, ast.Attribute):  # math.pi, math.e
        return isinstance(value.value, ast.Name) and value.value.id == "math"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):  # math.sqrt(2)
        func = value.func
        return (
            isinstance(func.value, ast.Name)
            and func.value.id == "math"
            and all(_is_plain_value(arg, plain) for arg in value.args)
        )
    return False


def _is_jit(node: ast.FunctionDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "jit":
            return True
    return False
