"""A faster step becomes a performance lesson that select_node shows on similar tasks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from adaexplore_mcp.app import open_app
from adaexplore_mcp.judge import EvalResult, Status
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.result import Environment
from adaexplore_mcp.mcp_server import Workbench
from adaexplore_mcp.mcp_server.answers import tokens_of
from adaexplore_mcp.search_engine import Edit
from adaexplore_mcp.tasks import Task

from .conftest import StubJudge, make_settings

H200 = Environment(
    device="cuda:0",
    device_name="NVIDIA H200",
    capability="9.0",
    interpreter=False,
    torch="2.11",
    triton="3.6",
    python="3.12",
)


class TimedJudge(StubJudge):
    """Every kernel is correct on an H200, at the speedup its '# speedup X' line claims."""

    async def evaluate(self, task: Task, code: str, **options: Any) -> EvalResult:
        speedup = float(re.search(r"# speedup (\S+)", code).group(1))
        return EvalResult(
            status=Status.CORRECT,
            precision=options.get("precision") or Precision.STRICT,
            ops=options.get("ops") or Ops.TRITON,
            message="correct",
            task=task.name,
            task_hash=task.hash,
            kernel_hash=str(hash(code)),
            speedup_eager=speedup,
            timing_meaningful=True,
            environment=H200,
        )


@pytest.fixture
def bench(tmp_path) -> Workbench:
    return Workbench(open_app(make_settings(tmp_path), judge=TimedJudge()))


def _kernel(speedup: float) -> str:
    return f"# speedup {speedup:.2f}\nBLOCK_K = 32\n"


async def _search_with_a_faster_step(bench: Workbench, gain: float) -> str:
    searches = bench.searches
    sid = searches.start_search("gemm_bias_relu", precision=Precision.TF32).id
    first = await searches.regenerate(sid, _kernel(1.0))
    patch = [
        Edit(old_str="# speedup 1.00", new_str=f"# speedup {gain:.2f}"),
        Edit(old_str="BLOCK_K = 32", new_str="BLOCK_K = 64"),
    ]
    await searches.apply_patch(sid, first.node.id, patch, note="BLOCK_K 32 -> 64 for the GEMM")
    return sid


@pytest.mark.anyio
async def test_a_faster_step_is_shown_to_a_similar_task_within_budget(bench: Workbench):
    await _search_with_a_faster_step(bench, 1.30)
    similar = bench.searches.start_search("gemm_scale_residual", precision=Precision.TF32).id
    selection = bench.searches.select_node(similar, context_tokens=20_000)
    [lesson] = selection.performance_lessons
    assert lesson.task == "gemm_bias_relu" and lesson.change == "BLOCK_K 32 -> 64 for the GEMM"
    assert (lesson.speedup_before, lesson.speedup_after) == (1.0, 1.3)
    assert lesson.device_name == "NVIDIA H200" and lesson.context.gpu_arch == "sm_90"
    bench.searches.release(similar, selection.node.id)

    # half the lesson's size short: the answer's other parts (a lease's expiry time, say) vary
    # by a token or two from one selection to the next
    tight = selection.context.used_tokens - tokens_of(lesson) // 2
    squeezed = bench.searches.select_node(similar, context_tokens=tight)
    assert squeezed.performance_lessons == []
    assert "1 less similar performance lessons" in squeezed.context.omitted

    unrelated = bench.searches.start_search("softmax", precision=Precision.TF32).id
    assert bench.searches.select_node(unrelated).performance_lessons == []
    strict = bench.searches.start_search("gemm_scale_residual", precision=Precision.STRICT).id
    assert bench.searches.select_node(strict).performance_lessons == []


@pytest.mark.anyio
async def test_a_step_within_the_margin_teaches_nothing(bench: Workbench):
    await _search_with_a_faster_step(bench, 1.02)
    similar = bench.searches.start_search("gemm_scale_residual", precision=Precision.TF32).id
    assert bench.searches.select_node(similar).performance_lessons == []


@pytest.mark.anyio
async def test_the_memory_context_is_the_searchs_policies_and_gpu(bench: Workbench):
    sid = await _search_with_a_faster_step(bench, 1.30)
    node = bench.searches.get_node(sid, 1)
    context = bench.searches.memory_context(sid, node.result)
    assert (context.precision, context.ops, context.gpu_arch) == (
        Precision.TF32,
        Ops.TRITON,
        "sm_90",
    )
    assert bench.searches.memory_context(sid, None).gpu_arch is None
