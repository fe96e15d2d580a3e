"""A task's operator signature: the torch operators its reference ``Model`` computes with, the
measure of which tasks a performance lesson carries over to.

Two GEMM-plus-epilogue tasks share ``Linear``; a softmax and a convolution share nothing, so a
lesson from one never reaches the other. The signature is read from the source with ``ast``,
never by running it.
"""

from __future__ import annotations

import ast

# Calls that move or describe data rather than compute: they say nothing about the task's work.
_NOT_OPERATORS = frozenset(
    """size shape view reshape contiguous permute transpose t unsqueeze squeeze expand flatten
    to float half double type dim numel item clone detach empty empty_like zeros zeros_like ones
    ones_like randn rand tensor Parameter Module super __init__ cuda cpu stride
    new_empty new_zeros arange randint no_grad copy_ add_ fill_ zero_ normal_ uniform_""".split()
)


def task_operators(source: str) -> frozenset[str]:
    """The operators ``class Model`` calls (module constructors in ``__init__``, functions and
    tensor methods in ``forward``), lower-cased without underscores so that ``nn.LayerNorm``
    and ``F.layer_norm`` are one operator; empty when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, MemoryError, RecursionError):  # nested past the parser's limit
        return frozenset()
    model = next(
        (node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Model"),
        None,
    )
    if model is None:
        return frozenset()
    found = set()
    for node in ast.walk(model):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node.func)
        if name and name not in _NOT_OPERATORS:
            found.add(name.lower().replace("_", ""))
    return frozenset(found)


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        base = func.value
        if isinstance(base, ast.Name) and base.id == "self":
            return None  # self.linear(x): the module was counted where it was built
        return func.attr
    if isinstance(func, ast.Name) and func.id not in {"super", "len", "range", "int", "float"}:
        return func.id
    return None


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two signatures; 0 when either is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
