"""A step to take (a kernel to evaluate under a parent) and the node its verdict becomes."""

from __future__ import annotations

from typing import TypedDict

from pydantic import BaseModel, field_validator

from adaexplore_mcp.judge.result import EvalResult
from adaexplore_mcp.search_engine.models import Action, Edit
from adaexplore_mcp.search_engine.repository import NewNode
from adaexplore_mcp.search_engine.reward import runtime_of, speedup_of
from adaexplore_mcp.search_engine.settings import SearchSettings


def normalized_kernel(code: str) -> str:
    """The kernel as the search keeps it: line ends unified, trailing whitespace dropped from
    every line and the end. Kernels that differ only so are one kernel, evaluated once."""
    lines = code.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n") + "\n"


class StepAuthorship(TypedDict, total=False):
    """Who took a step and what it cost, passed through every layer as ``**authorship``."""

    author: str | None
    note: str | None
    tokens: int


class StepRequest(BaseModel):
    parent: int
    action: Action
    code: str
    edits: list[Edit] | None = None
    author: str | None = None
    note: str | None = None
    tokens: int = 0

    @field_validator("code")
    @classmethod
    def _normalized(cls, code: str) -> str:
        return normalized_kernel(code)

    def judged(self, result: EvalResult, settings: SearchSettings) -> NewNode:
        """The node to record: the verdict and the measured numbers (its reward is derived)."""
        return NewNode(
            parent_id=self.parent,
            action=self.action,
            code=self.code,
            edits=self.edits,
            result_json=result.model_dump_json(),
            status=result.status.value,
            speedup=speedup_of(result, settings),
            runtime_ms=runtime_of(result),
            author=self.author,
            note=self.note,
            tokens=self.tokens,
        )
