"""A step to take (a kernel to evaluate under a parent) and the node its verdict becomes."""

from __future__ import annotations

from pydantic import BaseModel

from adaexplore_mcp.config import SearchSettings
from adaexplore_mcp.judge.result import EvalResult
from adaexplore_mcp.search_engine.models import Action, Edit
from adaexplore_mcp.search_engine.repository import NewNode
from adaexplore_mcp.search_engine.reward import reward_of, runtime_of, speedup_of


class StepRequest(BaseModel):
    parent: int
    action: Action
    code: str
    edits: list[Edit] | None = None
    author: str | None = None
    note: str | None = None
    tokens: int = 0

    def judged(self, result: EvalResult, settings: SearchSettings) -> NewNode:
        """The node to record, scored by the search's reward settings."""
        return NewNode(
            parent_id=self.parent,
            action=self.action,
            code=self.code,
            edits=self.edits,
            result_json=result.model_dump_json(),
            status=result.status.value,
            speedup=speedup_of(result, settings),
            runtime_ms=runtime_of(result),
            reward=reward_of(result, settings),
            author=self.author,
            note=self.note,
            tokens=self.tokens,
        )
