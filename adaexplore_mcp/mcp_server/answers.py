"""What the step tools answer, sized for a model's context.

A step answer never carries the kernel the agent just sent: a node is its numbers, the kernel's
hash and size, and the URI that reads it. The judge's verdict comes condensed (``Verdict``:
what to act on); ``get_node`` has the whole record. Every answer names the call to make next.
Sizes are estimated at ``CHARS_PER_TOKEN`` characters a token of the JSON the client reads.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from adaexplore_mcp.judge import EvalResult, Status, speed_of_light_line
from adaexplore_mcp.judge.measurement import KernelTime, WorkSplit
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.result import Correctness, ErrorDetail, IntegrityFlag
from adaexplore_mcp.memory import AddFailureResult
from adaexplore_mcp.search_engine import Action, NodeView, StepResult, Usage

CHARS_PER_TOKEN = 4
_TRACEBACK_CHARS = 1500
_OUTPUT_CHARS = 800
_KERNELS = 3


def tokens_of(model: BaseModel | str) -> int:
    """The estimated tokens of an answer (or a piece of one) as the client reads it."""
    text = model if isinstance(model, str) else model.model_dump_json()
    return -(-len(text) // CHARS_PER_TOKEN)


def kernel_uri(search_id: str, node_id: int) -> str:
    return f"kernel://{search_id}/{node_id}"


class NextCall(BaseModel):
    """The call to make next. ``arguments`` holds what the server knows; what only you can
    write (code, patches) is named in ``why``."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    why: str


class Verdict(BaseModel):
    """The judge's result, condensed to what an agent acts on: get_node has every field
    (environment, phase times, every timing statistic)."""

    status: Status
    precision: Precision
    ops: Ops
    message: str = Field(description="One short, actionable paragraph.")
    correctness: Correctness
    runtime_ms: float | None = Field(description="Median; None unless timing is meaningful.")
    eager_ms: float | None
    compile_ms: float | None
    speedup_eager: float | None
    speedup_compile: float | None
    timing_meaningful: bool
    speed_of_light: str | None = Field(
        default=None,
        description="The median against the GPU's measured bandwidth and matmul peak: the "
        "fraction of the limit that binds, and the task's FLOPs and bytes (on the CPU, the work "
        "alone); get_node has every figure (timing.speed_of_light, work).",
    )
    kernels: list[KernelTime] = Field(description="The longest launches, per call of forward.")
    work_split: WorkSplit | None = Field(
        default=None,
        description="Under ops=mixed: Triton's share of the profiled time against the "
        "library's, and the torch operators kept.",
    )
    integrity: list[IntegrityFlag]
    error: ErrorDetail | None = Field(description="Traceback trimmed to its last lines.")
    output_tail: str | None = Field(description="The end of what the kernel printed.")

    @classmethod
    def of(cls, result: EvalResult) -> Verdict:
        timed = result.timing_meaningful
        error = result.error
        if error is not None and error.traceback and len(error.traceback) > _TRACEBACK_CHARS:
            error = error.model_copy(
                update={"traceback": "…" + error.traceback[-_TRACEBACK_CHARS:]}
            )
        tail = result.output_tail
        if tail and len(tail) > _OUTPUT_CHARS:
            tail = "…" + tail[-_OUTPUT_CHARS:]
        return cls(
            status=result.status,
            precision=result.precision,
            ops=result.ops,
            message=result.message,
            correctness=result.correctness,
            runtime_ms=result.runtime.median_ms if timed and result.runtime else None,
            eager_ms=result.eager.median_ms if timed and result.eager else None,
            compile_ms=result.compiled.median_ms if timed and result.compiled else None,
            speedup_eager=result.speedup_eager,
            speedup_compile=result.speedup_compile,
            timing_meaningful=timed,
            speed_of_light=speed_of_light_line(result) if result.ok else None,
            kernels=(result.timing.kernels[:_KERNELS] if result.timing else []),
            work_split=result.work_split if result.ops is Ops.MIXED else None,
            integrity=result.integrity,
            error=error,
            output_tail=tail,
        )


class NodeBrief(BaseModel):
    """A node without its kernel: kernel_uri (or get_node) reads the code."""

    id: int
    parent_id: int | None
    action: Action
    depth: int
    status: Status | None = Field(description="None for the root.")
    speedup: float | None
    runtime_ms: float | None
    reward: float | None
    visits: int
    kernel_hash: str | None = Field(description="sha256 prefix of the kernel; None for the root.")
    code_chars: int
    kernel_uri: str | None

    @classmethod
    def of(cls, search_id: str, node: NodeView) -> NodeBrief:
        code = node.code
        return cls(
            id=node.id,
            parent_id=node.parent_id,
            action=node.action,
            depth=node.depth,
            status=node.status,
            speedup=node.speedup,
            runtime_ms=node.runtime_ms,
            reward=node.reward,
            visits=node.visits,
            kernel_hash=node.result.kernel_hash if node.result else None,
            code_chars=len(code) if code else 0,
            kernel_uri=kernel_uri(search_id, node.id) if code is not None else None,
        )


class Step(BaseModel):
    """``apply_patch`` and ``regenerate``: the node the step made (or found), the verdict on its
    kernel, where the search stands and what to call next. The kernel is not sent back."""

    search_id: str
    node: NodeBrief
    verdict: Verdict | None
    improved: bool = Field(description="The node is now the search's best kernel.")
    best_node_id: int | None = Field(
        description="The correct kernel with the lowest median runtime over its measurements: "
        "the one best_kernel chooses."
    )
    usage: Usage
    exhausted: str | None = Field(description="Which budget is now spent, if any.")
    reused: bool = Field(
        description="The search already held this exact kernel (under any parent; trailing "
        "whitespace aside): that node is returned, nothing was evaluated and no step was spent."
    )
    memory: AddFailureResult | None = Field(
        default=None,
        description="What the rule memory made of this failure (recorded automatically); None "
        "when the kernel did not fail that way.",
    )
    next_call: NextCall

    @classmethod
    def of(cls, step: StepResult, memory: AddFailureResult | None) -> Step:
        node = step.node
        return cls(
            search_id=step.search_id,
            node=NodeBrief.of(step.search_id, node),
            verdict=Verdict.of(node.result) if node.result else None,
            improved=step.improved,
            best_node_id=step.best_node_id,
            usage=step.usage,
            exhausted=step.exhausted,
            reused=step.reused,
            memory=memory,
            next_call=after_step(
                step.search_id, step.exhausted, reused=node.id if step.reused else None
            ),
        )


def after_step(search_id: str, exhausted: str | None, *, reused: int | None = None) -> NextCall:
    """Where a search goes after a step: on, or to its result once a budget is spent."""
    if exhausted is not None:
        return NextCall(
            tool="best_kernel",
            arguments={"search_id": search_id},
            why=f"the {exhausted} budget is spent: take the result (remeasure=true to confirm "
            "the winner), or fork a good node with a new budget",
        )
    why = "pick the next node to expand and the step to take there"
    if reused is not None:
        why = (
            f"this kernel is already node {reused}, so nothing was evaluated and no step spent "
            f"(the selection was given back): {why}, and send a kernel that differs"
        )
    return NextCall(tool="select_node", arguments={"search_id": search_id}, why=why)
