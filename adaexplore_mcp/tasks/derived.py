"""Correctness-only shapes for a task that declares no ``ODD_SHAPES``, derived from its sizes.

A KernelBench file sets its sizes as module-level integers (``batch_size = 128``,
``N = 2048 * 2``, ``hidden = 4 * dim``) and ``get_inputs()`` reads them. Checked on that one
shape, a kernel that hard-codes it, or that needs sizes divisible by its tile or 16-byte-aligned
strides, passes. These variants change the sizes and nothing else:

- ``derived-odd``: every size about halved to an odd number (a batch of any size, other sizes
  from 16 up);
- ``derived-unaligned``: sizes from 32 up about halved to a multiple of 8 that is not one of 16
  (a fallback for tasks that need even sizes);
- ``derived-batch``: the batch alone, down to at most 3.

Names that count parts rather than measure an extent (heads, groups) and structural parameters
(kernel size, stride, padding, dilation, axis, seed) keep their values. Sizes computed from
other sizes are computed again from the new values, as the module would. No value ever exceeds
the benchmark's, so a variant never costs more than the benchmark shape. Some tasks cannot run
at other sizes (a width that must split into heads): the judge asks the task's own process and
skips a variant whose reference raises or returns NaN/Inf.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from adaexplore_mcp.tasks.model import ShapeValue, ShapeVariant, VariantRole

MIN_EXTENT = 16  # below this an integer is more often a structural choice than a size
MIN_UNALIGNED = 32
MAX_BATCH_VARIANT = 3
KEPT_NAME_PARTS = ("head", "group", "kernel", "stride", "pad", "dilation", "axis", "seed")
_LIMIT = 1 << 62  # folding stops here, so an expression such as 10**10**10 costs nothing


@dataclass(frozen=True)
class SizeGlobal:
    """A module-level integer: a literal or constant arithmetic (``free``), or computed from
    earlier integers (``depends``, recomputed when they change)."""

    name: str
    value: int
    expression: ast.expr
    depends: bool


def integer_globals(tree: ast.Module) -> list[SizeGlobal]:
    """The module's integer globals in assignment order; the last assignment of a name wins,
    and a name last bound to anything else is not a size."""
    known: dict[str, SizeGlobal] = {}
    # known's values, kept beside it: rebuilt for every statement, they made reading quadratic
    # (a source of 20,000 integers took 12.9 s)
    values: dict[str, int] = {}
    for node in tree.body:
        for target, expression in _bindings(node):
            known.pop(target, None)
            values.pop(target, None)
            if expression is None:
                continue
            value = _fold(expression, values)
            if value is not None:
                depends = any(isinstance(sub, ast.Name) for sub in ast.walk(expression))
                known[target] = SizeGlobal(target, value, expression, depends)
                values[target] = value
    return list(known.values())


def derive_variants(sizes: list[SizeGlobal], base: dict[str, ShapeValue]) -> list[ShapeVariant]:
    """The derived variants, each starting from ``base`` (the overrides of the main CPU shape,
    if any) so they are never larger than the shape the task itself runs; none that changes
    nothing, repeats another or would grow a size."""
    start = {
        size.name: _as_int(base.get(size.name), size.value) for size in sizes if not size.depends
    }
    variants: list[ShapeVariant] = []
    seen: list[dict[str, ShapeValue]] = [dict(base)]
    for name, rule in _RULES:
        values = _recompute(sizes, {key: rule(key, value) for key, value in start.items()})
        if values is None:
            continue
        overrides: dict[str, ShapeValue] = dict(base)
        grown = False
        for size in sizes:
            value = values[size.name]
            if value != _as_int(base.get(size.name), size.value):
                overrides[size.name] = value
                grown = grown or not 1 <= value <= size.value
        if grown or any(overrides == other for other in seen):
            continue
        seen.append(overrides)
        variants.append(ShapeVariant(name=name, role=VariantRole.DERIVED, overrides=overrides))
    return variants


def _is_batch(name: str) -> bool:
    return "batch" in name.lower()


def _is_extent(name: str, value: int, minimum: int) -> bool:
    lowered = name.lower()
    return (
        value >= minimum
        and not _is_batch(name)
        and not any(part in lowered for part in KEPT_NAME_PARTS)
    )


def _odd(name: str, value: int) -> int:
    if (_is_batch(name) and value >= 2) or _is_extent(name, value, MIN_EXTENT):
        return (value // 2) | 1
    return value


def _unaligned(name: str, value: int) -> int:
    if not _is_extent(name, value, MIN_UNALIGNED):
        return value
    aligned = value // 2 // 8 * 8
    return aligned - 8 if aligned % 16 == 0 else aligned


def _small_batch(name: str, value: int) -> int:
    if _is_batch(name) and value >= 2:
        return min(MAX_BATCH_VARIANT, value - 1)
    return value


_RULES: tuple[tuple[str, Callable[[str, int], int]], ...] = (
    ("derived-odd", _odd),
    ("derived-unaligned", _unaligned),
    ("derived-batch", _small_batch),
)


def _recompute(sizes: list[SizeGlobal], free: dict[str, int]) -> dict[str, int] | None:
    values: dict[str, int] = {}
    for size in sizes:
        if not size.depends:
            values[size.name] = free[size.name]
            continue
        value = _fold(size.expression, values)
        if value is None:  # e.g. a division by a size that became zero
            return None
        values[size.name] = value
    return values


def _as_int(value: ShapeValue | None, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _bindings(node: ast.stmt) -> list[tuple[str, ast.expr | None]]:
    """(name, expression) for each name a top-level statement binds; the expression is None
    where the statement binds the name to something that is not read here."""
    if isinstance(node, ast.Assign):
        found: list[tuple[str, ast.expr | None]] = []
        for target in node.targets:
            if isinstance(target, ast.Name):
                found.append((target.id, node.value))
            elif isinstance(target, ast.Tuple | ast.List):
                values = node.value.elts if isinstance(node.value, ast.Tuple | ast.List) else None
                if values is not None and len(values) != len(target.elts):
                    values = None  # unpacked from something else: no value per name
                for index, element in enumerate(target.elts):
                    if isinstance(element, ast.Name):
                        found.append((element.id, values[index] if values is not None else None))
        return found
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [(node.target.id, node.value)]
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return [(node.target.id, None)]
    bound = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            bound.add(sub.id)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        bound.add(node.name)
    elif isinstance(node, ast.Import | ast.ImportFrom):
        bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return [(name, None) for name in sorted(bound)]


_OPERATORS: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.LShift: lambda a, b: a << b,
}


def _fold(node: ast.expr, names: dict[str, int]) -> int | None:
    """The integer an expression of integer literals, known names and + - * // % ** << has;
    None for anything else."""
    value: int | None = None
    if isinstance(node, ast.Constant):
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            value = node.value
    elif isinstance(node, ast.Name):
        value = names.get(node.id)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _fold(node.operand, names)
        if operand is not None:
            value = -operand if isinstance(node.op, ast.USub) else operand
    elif isinstance(node, ast.BinOp):
        left, right = _fold(node.left, names), _fold(node.right, names)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Pow):
            if 0 <= right <= 64 and abs(left) < _LIMIT:
                value = left**right
        elif isinstance(node.op, ast.LShift):
            if 0 <= right <= 64:
                value = left << right
        elif type(node.op) in _OPERATORS and not (
            isinstance(node.op, ast.FloorDiv | ast.Mod) and right == 0
        ):
            value = _OPERATORS[type(node.op)](left, right)
    if value is None or abs(value) >= _LIMIT:
        return None
    return value
