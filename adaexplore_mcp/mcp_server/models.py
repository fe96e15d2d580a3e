"""What the MCP tools return, where the domain packages' own models need a little more: the
memory's verdict on a failure next to an evaluation, the active rules next to a selection, the
task listing."""

from __future__ import annotations

from pydantic import BaseModel, Field

from adaexplore_mcp.judge import EvalResult
from adaexplore_mcp.memory import AddFailureResult, RuleHit
from adaexplore_mcp.search_engine import SearchInfo, Selection, StepResult, TreeView
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


class SearchList(BaseModel):
    searches: list[SearchInfo] = Field(description="Newest first.")


class Evaluation(EvalResult):
    """``evaluate_kernel``: the judge's full result, and the memory's verdict on a failure."""

    memory: AddFailureResult | None = Field(default=None, description=_MEMORY)


class Step(StepResult):
    """``apply_patch`` and ``regenerate``: the new node, and the memory's verdict on a failure."""

    memory: AddFailureResult | None = Field(default=None, description=_MEMORY)


class NodeSelection(Selection):
    """``select_node``: the node, the step to take, its context and the active rules."""

    rules: list[RuleHit] = Field(
        description="Active rules of the memory, the most relevant to this node's kernel and "
        "task first; a kernel that breaks one fails."
    )
    next_call: str = Field(description="The tool to call next, with its arguments.")


class Released(BaseModel):
    search_id: str
    node_id: int
    released: bool = Field(description="False when the node held no selection to give back.")


class Health(BaseModel):
    status: str = "ok"
    version: str
    judge: list[str] | str = Field(
        description="The judge's devices, or 'not started' before the first evaluation."
    )
    judge_url: str | None = Field(description="The remote judge service, if one is used.")
    store: str = Field(description="The SQLite database holding searches and rules.")


class TreeRow(BaseModel):
    """One node of a tree listing; get_node has everything else (code, result, edits)."""

    id: int
    parent_id: int | None = Field(description="None for the root.")
    action: str = Field(description="root | small | large")
    status: str | None = Field(description="The judge's verdict; None for the root.")
    speedup: float | None
    reward: float | None
    visits: int


class TreeListing(BaseModel):
    """A search's tree, compact: a row per node in creation order, and where the search stands.
    Kept small on purpose, so that clients validating results stay fast on large trees."""

    search_id: str
    task: str
    node_count: int
    correct_count: int
    best_node_id: int | None = Field(description="Highest reward (single measurement).")
    steps: int = Field(description="Evaluated nodes so far.")
    in_flight: int = Field(description="Selections and evaluations still outstanding.")
    max_steps: int
    exhausted: str | None = Field(description="steps | wall_clock | tokens, or None.")
    offset: int = Field(description="The id of the first node listed.")
    more: bool = Field(description="Nodes after these exist: ask again with a larger offset.")
    nodes: list[TreeRow]

    @classmethod
    def of(cls, view: TreeView, *, offset: int = 0, limit: int | None = None) -> TreeListing:
        info = view.search
        return cls(
            search_id=info.id,
            task=info.task,
            node_count=info.node_count,
            correct_count=info.correct_count,
            best_node_id=info.best.id if info.best else None,
            steps=info.usage.steps,
            in_flight=info.usage.in_flight,
            max_steps=info.budget.max_steps,
            exhausted=info.exhausted,
            offset=offset,
            more=limit is not None and offset + limit < len(view.nodes),
            nodes=[
                TreeRow(
                    id=n.id,
                    parent_id=n.parent_id,
                    action=n.action.value,
                    status=n.status.value if n.status else None,
                    speedup=n.speedup,
                    reward=n.reward,
                    visits=n.visits,
                )
                for n in view.nodes[offset : None if limit is None else offset + limit]
            ],
        )
