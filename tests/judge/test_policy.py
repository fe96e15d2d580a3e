"""``judge/policy.py`` is the one place that decides a tolerance."""

from __future__ import annotations

import ast
from pathlib import Path

import torch

import adaexplore_mcp
from adaexplore_mcp.judge.policy import Tolerance, tolerance_for
from adaexplore_mcp.judge.trusted.compare import dtype_name

LOOSE = Tolerance(atol=1.0, rtol=1.0)


def test_a_dtype_compares_exactly_where_torch_says_it_is_neither_floating_nor_complex() -> None:
    dtypes = [value for value in vars(torch).values() if isinstance(value, torch.dtype)]
    assert torch.bfloat16 in dtypes and torch.complex64 in dtypes and torch.bool in dtypes
    for dtype in dtypes:
        inexact = dtype.is_floating_point or dtype.is_complex
        decided = tolerance_for(dtype_name(dtype), {}, LOOSE)
        assert (decided == LOOSE) is inexact, dtype


def test_no_other_module_makes_or_picks_a_tolerance() -> None:
    """A ``Tolerance(...)`` built, or a function deciding one defined, anywhere but in the policy
    module would be a second decider."""
    package = Path(adaexplore_mcp.__file__).parent
    policy = package / "judge" / "policy.py"
    elsewhere = []
    for path in package.rglob("*.py"):
        if path == policy or "bundled" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            built = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Tolerance"
            )
            where = str(path.relative_to(package))
            if built:
                elsewhere.append(f"{where}: Tolerance(...)")
            elif isinstance(node, ast.FunctionDef) and "tolerance" in node.name:
                elsewhere.append(f"{where}: def {node.name}")
    # compare.py's tolerance_for only names a torch dtype for the policy's
    assert elsewhere == ["judge/trusted/compare.py: def tolerance_for"]
