"""Candidate kernels for the judge tests, built from the bundled solutions or from scratch."""

from __future__ import annotations

import textwrap

from adaexplore_mcp.tasks import bundled_solution

HEADER = "import os, sys, time\nimport torch\nimport torch.nn as nn\n"


def module(forward: str, *, prelude: str = "", init: str = "") -> str:
    """A ModelNew for a one-input task (softmax) whose forward body is ``forward``."""
    return (
        HEADER
        + textwrap.dedent(prelude)
        + "\n\nclass ModelNew(nn.Module):\n"
        + "    def __init__(self):\n        super().__init__()\n"
        + textwrap.indent(textwrap.dedent(init), " " * 8)
        + "\n    def forward(self, x):\n"
        + textwrap.indent(textwrap.dedent(forward), " " * 8)
        + "\n"
    )


def softmax_solution() -> str:
    code = bundled_solution("softmax")
    assert code is not None
    return code


def edited_solution(name: str, old: str, new: str) -> str:
    code = bundled_solution(name)
    assert code is not None and old in code, f"{old!r} not in the {name} solution"
    return code.replace(old, new, 1)
