"""The skill memory's settings (``Settings().memory``): how failures become active rules, and
how rules and performance lessons are served."""

from __future__ import annotations

from pydantic import BaseModel, Field


class MemorySettings(BaseModel):
    """The skill memory: how failures become active "You cannot …" rules."""

    threshold: int = Field(
        default=3,
        ge=1,
        description="Distinct tasks whose failures must support a rule before it is active.",
    )
    merge_similarity: float = Field(
        default=0.75,
        gt=0,
        le=1,
        description="Word overlap (Jaccard, after normalisation) at which a new rule merges into "
        "an existing one without asking the model.",
    )
    judge_similarity: float = Field(
        default=0.25,
        gt=0,
        le=1,
        description="Word overlap from which the model (when one is configured) is asked whether "
        "two rules state the same prohibition.",
    )
    distill_with_llm: bool = Field(
        default=True,
        description="Distil rules from failures with the configured model when the agent gave "
        "no rule text.",
    )
    token_budget: int = Field(
        default=800, ge=16, description="Most tokens of rules get_rules returns for a prompt."
    )
    max_rules: int = Field(default=20, ge=1, le=500, description="get_rules' default limit.")
    starter: bool = Field(
        default=True, description="Load the starter memory shipped with the package."
    )
    lesson_margin: float = Field(
        default=0.1,
        ge=0,
        description="A step is a performance lesson when its speedup beats its parent's by this "
        "fraction (0.1: 10% faster), on the same device and policies.",
    )
    lesson_similarity: float = Field(
        default=0.3,
        gt=0,
        le=1,
        description="Operator overlap (Jaccard of the reference's torch operators) from which a "
        "task's performance lessons are shown for another task.",
    )
    max_lessons: int = Field(
        default=3, ge=0, le=50, description="Performance lessons select_node shows at most."
    )
