"""What the task, judge and release tools return, where the domain packages' own models need a
little more: the memory's verdict on a failure next to an evaluation, the task listing. The step
answers are in answers.py and selection.py, the search listings in listing.py."""

from __future__ import annotations

from pydantic import BaseModel, Field

from adaexplore_mcp.judge import EvalResult
from adaexplore_mcp.mcp_server.answers import NextCall
from adaexplore_mcp.memory import AddFailureResult, RuleHit
from adaexplore_mcp.tasks import ShapeVariant

_MEMORY = (
    "What the rule memory made of this failure (recorded automatically for the verdicts the "
    "server is configured to record); None when the kernel did not fail that way."
)


class TaskSummary(BaseModel):
    name: str = Field(description="Pass it as the task argument of the other tools.")
    level: int | None = Field(description="1: single operators, 2: fusions, 3: small blocks.")
    summary: str
    has_solution: bool = Field(description="A bundled Triton solution exists for the task.")


class TaskList(BaseModel):
    tasks: list[TaskSummary]
    next_cursor: str | None = Field(
        description="More tasks exist: pass this as cursor for the next page."
    )
    note: str = Field(
        default="Any KernelBench-format task file works too: pass its path as the task argument.",
    )


class TaskDetail(BaseModel):
    name: str
    level: int | None
    summary: str
    description: str
    source: str = Field(description="The reference: a KernelBench-format PyTorch module.")
    path: str | None = Field(description="The file it was read from (None for bundled text).")
    hash: str = Field(description="Content hash; results are cached per hash.")
    variants: list[ShapeVariant] = Field(
        description="Shapes checked: benchmark (GPU), small (CPU interpreter), odd (always)."
    )
    globals: dict[str, int | float | bool | str] = Field(
        description="The module's literal globals: the benchmark shape."
    )
    has_solution: bool


class Evaluation(EvalResult):
    """``evaluate_kernel``: the judge's full result, and the memory's verdict on a failure."""

    memory: AddFailureResult | None = Field(default=None, description=_MEMORY)


class RulesPage(BaseModel):
    """``get_rules``: a page of active rules, the most relevant first."""

    rules: list[RuleHit]
    active_total: int = Field(description="Active rules in the memory.")
    next_cursor: str | None = Field(
        description="More rules exist: pass this as cursor for the next page."
    )


class Released(BaseModel):
    search_id: str
    node_id: int
    released: bool = Field(description="False when the node held no selection to give back.")
    next_call: NextCall


class Health(BaseModel):
    status: str = "ok"
    version: str
    judge: list[str] | str = Field(
        description="The judge's devices, or 'not started' before the first evaluation."
    )
    judge_url: str | None = Field(description="The remote judge service, if one is used.")
    store: str = Field(description="The SQLite database holding searches and rules.")
