"""Tools on tasks, the judge and the rule memory: ``list_tasks``, ``get_task``,
``evaluate_kernel``, ``get_rules``, ``add_failure``. The search tools are in search_tools.py."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from adaexplore_mcp.judge.profile import ProfileReport
from adaexplore_mcp.judge.profile.models import MAX_KERNELS
from adaexplore_mcp.mcp_server.arguments import Code, OpsArg, PrecisionArg, TaskRef, tool
from adaexplore_mcp.mcp_server.models import Evaluation, RulesPage, TaskDetail, TaskList
from adaexplore_mcp.mcp_server.progress import with_progress
from adaexplore_mcp.mcp_server.workbench import Workbench
from adaexplore_mcp.memory import AddFailureResult

Level = Annotated[
    int | None, Field(ge=1, le=3, description="Only this level (1, 2 or 3); all when omitted.")
]
TimeoutS = Annotated[
    float | None,
    Field(
        ge=1,
        le=3600,
        description="Wall-clock limit in seconds, at least one; the server's configured limit "
        "when omitted.",
    ),
]
Query = Annotated[
    str | None,
    Field(
        max_length=200_000,
        description="Words, or a whole kernel: rules relevant to it come first.",
    ),
]
RuleTask = Annotated[
    str | None,
    Field(
        max_length=4096,
        description="A task's name or file path: rules seen failing on it get a bonus.",
    ),
]
Limit = Annotated[int, Field(ge=1, le=100, description="Most rules in one page.")]
TopKernels = Annotated[
    int, Field(ge=1, le=MAX_KERNELS, description="How many of the longest kernels to describe.")
]
TaskLimit = Annotated[int, Field(ge=1, le=200, description="Most tasks in one page.")]
Cursor = Annotated[
    str | None,
    Field(max_length=200, description="The next_cursor of the previous page; omit for the first."),
]
ErrorText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200_000,
        description="The error as the judge or the compiler reported it (message or traceback).",
    ),
]
RuleText = Annotated[
    str | None,
    Field(
        max_length=1000,
        description="Optional: the lesson as one sentence starting 'You cannot' that names the "
        "Triton or PyTorch construct, not this kernel's variables or lines.",
    ),
]
ErrorType = Annotated[
    str | None,
    Field(max_length=200, description="The exception type, e.g. CompilationError, if known."),
]


def register_tools(server: MCPServer, bench: Workbench) -> None:
    @tool(server, "List tasks", read_only=True, idempotent=True)
    async def list_tasks(
        level: Level = None, limit: TaskLimit = 50, cursor: Cursor = None
    ) -> TaskList:
        """List the bundled kernel-optimization tasks: name, level (1 single operators, 2
        fusions, 3 small blocks), a one-line summary and whether a bundled solution exists,
        in pages (next_cursor). Use it to pick a task; get_task gives the reference source.
        Wherever a tool asks for a task, the path of any KernelBench-format task file works
        too."""
        return bench.list_tasks(level, limit=limit, cursor=cursor)

    @tool(server, "Get a task", read_only=True, idempotent=True)
    async def get_task(task: TaskRef) -> TaskDetail:
        """A task's reference: the whole PyTorch source (class Model, get_inputs,
        get_init_inputs), its description, the shapes the judge checks (benchmark on a GPU,
        small on the CPU interpreter, odd sizes always) and its content hash. Read it before
        writing a kernel: ModelNew must take Model's __init__ arguments and give forward's
        outputs with the same shapes and dtypes. The judge builds ModelNew with Model's seed and
        copies no weights: create the same parameters in the same order and shapes."""
        return bench.get_task(task)

    @tool(server, "Evaluate a kernel", read_only=False, idempotent=False)
    async def evaluate_kernel(
        task: TaskRef,
        code: Code,
        ctx: Context,
        timeout_s: TimeoutS = None,
        precision: PrecisionArg = None,
        ops: OpsArg = None,
    ) -> Evaluation:
        """Judge one Triton kernel outside any search. The judge runs it in a sandbox, checks
        it against the reference on fresh random inputs (odd shapes too), runs integrity checks
        (it must launch Triton kernels and compute in them; no torch fallback or tricks; under
        ops=mixed torch's library operators may stay beside Triton kernels that do work) and,
        on a GPU, times it against eager PyTorch and torch.compile (on the CPU interpreter
        timing is not meaningful). Returns the full result: status (correct, incorrect,
        compile_error, runtime_error, timeout, rejected), message (one paragraph to act on),
        correctness (the first mismatch), runtime and speedups, error (type, location, trimmed
        traceback) and memory: compile and runtime errors are recorded in the rule memory
        automatically. Takes seconds to minutes and reports progress at least every 5 s. The
        evaluation does not stop when the request is cancelled or times out: sending the same
        kernel again joins it. Inside a search use apply_patch or regenerate instead, so the
        kernel becomes a node of the tree."""
        return await with_progress(
            ctx,
            lambda on_progress: bench.evaluate(
                task,
                code,
                timeout_s=timeout_s,
                on_progress=on_progress,
                precision=precision,
                ops=ops,
            ),
            interval_s=bench.settings.mcp.progress_interval_s,
        )

    @tool(server, "Profile a kernel", read_only=True, idempotent=True)
    async def profile_kernel(task: TaskRef, code: Code, top: TopKernels = 5) -> ProfileReport:
        """Where a kernel's GPU time goes, from Nsight Compute (ncu), on servers whose GPU host
        has it. Runs ModelNew.forward on the task's benchmark inputs a few times in the judge's
        sandbox and returns, for the longest kernels (top, default 5): calls, total and mean
        time, compute (SM) and memory throughput as % of peak, DRAM bandwidth %, achieved
        occupancy, L2 hit rate, registers per thread, shared memory per block, grid and block
        size, and whether it is bound by memory, compute or latency with a one-line hint.
        Informational, never a verdict: outputs are not checked and nothing is recorded;
        evaluate_kernel decides correctness and speed, so profile a kernel it found correct.
        Takes tens of seconds (ncu replays each launch). Fails with judge_unavailable where ncu
        or a GPU is missing."""
        return await bench.profile(task, code, top=top)

    @tool(server, "Get rules", read_only=True, idempotent=True)
    async def get_rules(
        query: Query = None, task: RuleTask = None, limit: Limit = 10, cursor: Cursor = None
    ) -> RulesPage:
        """The active "You cannot ..." rules of the memory, distilled from real compile and
        runtime failures on several tasks; a kernel that breaks one fails. With a query (words
        or a whole kernel) the most relevant rules come first; with a task, rules seen failing
        on it get a bonus. In pages (next_cursor). Read them before writing a kernel.
        select_node already includes the rules most relevant to the node it returns."""
        return bench.get_rules(query=query, task=task, limit=limit, cursor=cursor)

    @tool(server, "Record a failure", read_only=False, idempotent=True)
    async def add_failure(
        task: TaskRef,
        code: Code,
        error: ErrorText,
        rule: RuleText = None,
        error_type: ErrorType = None,
    ) -> AddFailureResult:
        """Record a kernel failure in the rule memory, optionally with the lesson as a rule.
        The failure is stored with a signature (the error with names, lines and sizes removed),
        so repeats of one mistake cluster; the rule is your text, else the rule its signature
        already has, else one the server's model distils. A rule that repeats an existing one
        merges into it; a rule becomes active (and goes into every prompt) once failures on 3
        distinct tasks support it. Failures of evaluate_kernel, apply_patch and regenerate are
        recorded automatically: call this for failures seen elsewhere, or to give a rule for
        one. Recording the same kernel's same failure twice adds nothing, unless the rule you
        give is one it does not stand under yet. A slip of the kernel's own text (a syntax
        error, a name it never defines, a misspelt tl./torch. attribute, a module that does not
        exist) is recorded but makes and supports no rule: the result's slip says why. Returns
        the outcome (new_rule; merged: your text restates a rule in other words; existing_rule:
        its very words; clustered: by signature; no_rule; duplicate: nothing changed), the
        rule and a message."""
        return await bench.add_failure(task, code, error, rule=rule, error_type=error_type)
