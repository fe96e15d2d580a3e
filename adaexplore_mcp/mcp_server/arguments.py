"""The tools' argument types, with the bounds and descriptions a client's model sees in the
input schemas, and the decorator that registers a tool with every annotation spelled out and
its errors coded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.mcp_server.errors import coded_errors

F = TypeVar("F", bound=Callable[..., Any])

PrecisionArg = Annotated[
    Precision | None,
    Field(
        description="How float32 work is judged: strict (float32 reference at 1e-4, TF32 off "
        "everywhere), tf32 (a TF32-sized tolerance; baselines timed with TF32 on, so speedups "
        "compare like with like) or legacy (atol=rtol=5e-2, only to reproduce published "
        "numbers; labelled). The server's default (normally strict) when omitted.",
    ),
]
OpsArg = Annotated[
    Ops | None,
    Field(
        description="Which operators may compute: triton (every computation in Triton kernels; "
        "torch only allocates, reshapes and copies) or mixed (torch's library operators such as "
        "a cuBLAS GEMM or a cuDNN convolution may stay, beside Triton kernels that must do real "
        "work; the Triton share of the time is reported; labelled). The server's default "
        "(normally triton) when omitted.",
    ),
]
TaskRef = Annotated[
    str,
    Field(
        min_length=1,
        max_length=4096,
        description="A bundled task's name (see list_tasks), or the path of a KernelBench-format "
        "task file on the server's machine.",
    ),
]
Code = Annotated[
    str,
    Field(
        min_length=1,
        max_length=500_000,
        description="A whole Python module: imports, the @triton.jit kernels and class "
        "ModelNew(nn.Module) with the reference Model's __init__ arguments and forward "
        "signature. ModelNew is built with Model's seed and no weights are copied: create "
        "the same parameters as Model, in the same order and shapes.",
    ),
]
SearchId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        description="A search's id, as start_search or list_searches gave it.",
    ),
]
NodeId = Annotated[
    int,
    Field(ge=0, le=1_000_000, description="A node's number in its search; 0 is the root."),
]
Author = Annotated[
    str | None,
    Field(
        max_length=100,
        description="Who takes the step (your name or a strategy's), recorded with the node.",
    ),
]
Note = Annotated[
    str | None,
    Field(
        max_length=4000,
        description="A short note recorded with the node: your intent, what you expect and "
        "why. Later small steps of the chain see it in their working memory.",
    ),
]
Tokens = Annotated[
    int,
    Field(
        ge=0,
        le=100_000_000,
        description="Model tokens you spent on this step; they count against the search's "
        "token budget (0 if you do not track them).",
    ),
]


def describe(fn: Callable[..., Any]) -> str:
    """A docstring as one paragraph: the client's model reads it, not a terminal."""
    return " ".join((fn.__doc__ or "").split())


def tool(
    server: MCPServer,
    title: str,
    *,
    read_only: bool,
    idempotent: bool,
    destructive: bool = False,
    open_world: bool = False,
) -> Callable[[F], F]:
    """Registers the decorated function as a tool. Every hint is set explicitly, because
    clients assume the worst of a hint left out: none of these tools deletes or overwrites
    anything, and none reaches beyond the server's own judge and store. The errors a caller
    can act on come back with their code (``errors.coded_errors``), so a tool's body just
    raises the domain's exceptions."""

    def register(fn: F) -> F:
        hints = ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=open_world,
        )
        server.add_tool(coded_errors(fn), title=title, description=describe(fn), annotations=hints)
        return fn

    return register
