"""`adaexplore-mcp eval`: judge one kernel."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from adaexplore_mcp.cli.common import (
    DeviceOption,
    JudgeTokenOption,
    JudgeUrlOption,
    err,
    fail,
    load_task,
    out,
    settings_with,
)
from adaexplore_mcp.cli.eval_set import FastPOption, JobsOption, OutOption, eval_set
from adaexplore_mcp.cli.judging import request_device, with_judge
from adaexplore_mcp.judge import EvalResult, Judge, Phase, Status
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.service.api import MAX_SOURCE_CHARS
from adaexplore_mcp.tasks import (
    Task,
    bundled_solution,
    solution_names,
)
from adaexplore_mcp.tasks.loader import read_source


def eval_command(
    task: Annotated[
        str,
        typer.Argument(
            help="A bundled task name, the path of a task file, or a directory of problems "
            "(KernelBench's layout) to judge a whole set."
        ),
    ],
    kernel: Annotated[
        Path | None,
        typer.Argument(
            help="The candidate file (defines ModelNew); '-' reads standard input; a directory "
            "of kernels, one per problem, when TASK is a directory."
        ),
    ] = None,
    solution: Annotated[
        bool, typer.Option("--solution", help="Evaluate the task's bundled Triton solution.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the EvalResult as JSON.")] = False,
    timeout: Annotated[
        float | None,
        typer.Option(min=1, max=86_400, help="Wall-clock limit in seconds (at most a day)."),
    ] = None,
    device: DeviceOption = None,
    precision: Annotated[
        Precision | None,
        typer.Option(
            help="strict: float32 at 1e-4, TF32 off; tf32: TF32-sized tolerance and TF32 "
            "baselines; legacy: atol=rtol=5e-2 (to reproduce published numbers). Default: "
            "ADAEXPLORE_JUDGE__PRECISION or strict."
        ),
    ] = None,
    ops: Annotated[
        Ops | None,
        typer.Option(
            help="triton: every computation in Triton kernels; mixed: torch's library operators "
            "(cuBLAS, cuDNN) may stay beside Triton kernels that do real work, the Triton share "
            "reported. Default: ADAEXPLORE_JUDGE__OPS or triton."
        ),
    ] = None,
    judge_url: JudgeUrlOption = None,
    judge_token: JudgeTokenOption = None,
    results: OutOption = None,
    fast_p: FastPOption = None,
    jobs: JobsOption = None,
) -> None:
    """Judge one candidate kernel: correctness on every shape variant, then timing on a GPU.
    Given two directories, judge every kernel against its problem and summarize the set.

    Exits 0 for any verdict (see the status); non-zero only when the judge could not run (3)
    or, for a set, a problem or kernel file could not be used (2).
    """
    if kernel is not None and kernel.is_dir():
        if not Path(task).is_dir() or solution:
            raise fail(f"{kernel} is a directory: give a directory of problems before it")
        return eval_set(
            Path(task),
            kernel,
            results=results,
            fast_p=fast_p,
            jobs=jobs,
            as_json=as_json,
            timeout=timeout,
            device=device,
            precision=precision,
            ops=ops,
            judge_url=judge_url,
            judge_token=judge_token,
        )
    if results is not None or fast_p or jobs is not None:
        raise fail(
            "--out, --fast-p and --jobs apply to a problem set: eval PROBLEMS_DIR KERNELS_DIR"
        )
    resolved = load_task(task)
    code = _read_kernel(resolved, kernel, solution)
    settings = settings_with(device, timeout, judge_url, judge_token)
    target = request_device(settings, device)

    async def work(judge: Judge) -> EvalResult:
        with err.status(f"{resolved.name}: queued") as status:

            def progress(phase: Phase, elapsed: float) -> None:
                status.update(f"{resolved.name}: {phase.value} ({elapsed:.1f}s)")

            return await judge.evaluate(
                resolved,
                code,
                device=target,
                timeout_s=timeout,
                on_progress=progress,
                precision=precision,
                ops=ops,
            )

    result = with_judge(settings, work)
    if as_json:
        sys.stdout.write(result.model_dump_json() + "\n")
    else:
        _print_result(result)


def _read_kernel(task: Task, kernel: Path | None, solution: bool) -> str:
    if solution == (kernel is not None):
        raise fail("give a KERNEL file or --solution (not both)")
    if solution:
        code = bundled_solution(task.name)
        if code is None:
            names = ", ".join(solution_names())
            raise fail(f"task {task.name!r} has no bundled solution; these do: {names}")
        return code
    assert kernel is not None
    if str(kernel) == "-":
        code = sys.stdin.read(MAX_SOURCE_CHARS + 1)
        if len(code) > MAX_SOURCE_CHARS:
            raise fail(f"the kernel on standard input is longer than {MAX_SOURCE_CHARS} characters")
        return code
    if "\0" in str(kernel):
        raise fail("a kernel path cannot contain a NUL character")
    try:
        return read_source(kernel, MAX_SOURCE_CHARS)
    except OSError as exc:
        raise fail(f"cannot read the kernel file {kernel}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise fail(f"cannot read the kernel file {kernel}: {exc}") from None


_STATUS_STYLE = {
    Status.CORRECT: "bold green",
    Status.INCORRECT: "bold yellow",
    Status.REJECTED: "bold magenta",
}


def printable(text: str) -> str:
    """``text`` with its control characters written out (``\\x1b``), line breaks and tabs
    kept: what a kernel printed (or raised) may not clear the terminal or draw over the
    verdict."""
    return "".join(
        char
        if char in "\n\t" or not (ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0)
        else f"\\x{ord(char):02x}"
        for char in text
    )


def _print_result(result: EvalResult) -> None:
    style = _STATUS_STYLE.get(result.status, "bold red")
    out.print(
        f"[{style}]{result.status.value}[/{style}]  {result.task}  kernel {result.kernel_hash}"
        f"  precision {result.precision.value}  ops {result.ops.value}"
    )
    out.print(printable(result.message), markup=False)
    if result.error and result.error.traceback:
        out.print(printable(result.error.traceback), markup=False)
    if result.runtime is not None:
        table = Table(box=None, pad_edge=False)
        for column in ("", "median ms", "mean ms", "std ms", "min ms", "n", "speedup"):
            table.add_column(column, justify="right" if column else "left")
        rows = [
            ("kernel", result.runtime, None),
            ("eager", result.eager, result.speedup_eager),
            ("torch.compile", result.compiled, result.speedup_compile),
        ]
        for label, stats, speedup in rows:
            if stats is None:
                continue
            table.add_row(
                label,
                f"{stats.median_ms:.4f}",
                f"{stats.mean_ms:.4f}",
                f"{stats.std_ms:.4f}",
                f"{stats.min_ms:.4f}",
                str(stats.n),
                f"{speedup:.2f}x" if speedup else "",
            )
        out.print(table)
    if result.output_tail:
        out.print("[dim]kernel output (tail):[/dim]")
        out.print(printable(result.output_tail.rstrip()[-1000:]), markup=False)
    env = result.environment
    if env is not None:
        phases = result.phases
        waited = f" (waiting for the GPU {phases.gpu_wait_s:.2f}s)" if phases.gpu_wait_s else ""
        out.print(
            f"[dim]{env.device_name}, torch {env.torch}, triton {env.triton} · compile "
            f"{phases.compile_s:.2f}s · check {phases.check_s:.2f}s · timing "
            f"{phases.timing_s:.2f}s · total {phases.total_s:.2f}s{waited}[/dim]"
        )
