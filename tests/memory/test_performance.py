"""Performance lessons: recorded from a measurably faster step, retrieved for similar tasks."""

from __future__ import annotations

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.memory import Measured, PerformanceMemory
from adaexplore_mcp.memory.context import MemoryContext
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.memory.task_operators import task_operators
from adaexplore_mcp.store import Store

H200 = MemoryContext(precision=Precision.TF32, ops=Ops.TRITON, gpu_arch="sm_90")


def reference(forward: str, init: str = "") -> str:
    return (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
        "class Model(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
        f"        {init or 'pass'}\n\n    def forward(self, x):\n        return {forward}\n\n"
        "def get_inputs():\n    return [torch.randn(8, 8)]\n"
    )


LINEAR = "self.linear = nn.Linear(n, n)"
GEMM_RELU = reference("torch.relu(self.linear(x))", LINEAR)
GEMM_RELU_ADD = reference("torch.add(torch.relu(self.linear(x)), x)", LINEAR)
SOFTMAX = reference("torch.softmax(x, dim=-1)")


def lessons_in(tmp_path, **settings) -> PerformanceMemory:
    return PerformanceMemory(Store(tmp_path / "db.sqlite3"), MemorySettings(**settings))


def at(speedup: float, context: MemoryContext = H200, device: str = "NVIDIA H200") -> Measured:
    return Measured(speedup=speedup, device_name=device, context=context)


def observe(lessons, node_id, before, after, *, task="gemm_relu", source=GEMM_RELU, change=None):
    return lessons.observe(
        search_id="s1",
        node_id=node_id,
        parent_id=node_id - 1,
        task=task,
        task_source=source,
        change=change or "BLOCK_K 32 -> 64 and num_stages=4",
        before=before,
        after=after,
    )


def test_the_operator_signature_reads_modules_and_functions():
    assert task_operators(GEMM_RELU) == {"linear", "relu"}
    assert task_operators(SOFTMAX) == {"softmax"}  # get_inputs' randn is not the task's work
    assert task_operators("not python (") == frozenset()
    assert task_operators(SOFTMAX + "\n_deep = " + "-" * 100_000 + "1\n") == frozenset()


def test_only_a_step_faster_by_the_margin_is_a_lesson(tmp_path):
    lessons = lessons_in(tmp_path, lesson_margin=0.1)
    assert observe(lessons, 2, at(1.00), at(1.05)) is None
    assert observe(lessons, 3, at(1.00), at(1.30), change="  ") is None  # nothing to say
    other_gpu = at(1.5, MemoryContext(precision=Precision.TF32, ops=Ops.TRITON, gpu_arch="sm_80"))
    assert observe(lessons, 4, at(1.00), other_gpu) is None
    assert observe(lessons, 5, at(1.00), at(1.5, device="NVIDIA H100")) is None
    lesson = observe(lessons, 6, at(0.88), at(1.08))
    assert lesson is not None
    assert (lesson.speedup_before, lesson.speedup_after) == (0.88, 1.08)
    assert lesson.context == H200 and lesson.device_name == "NVIDIA H200"
    assert "0.88x -> 1.08x" in lesson.line() and "BLOCK_K 32 -> 64" in lesson.line()
    assert observe(lessons, 6, at(0.88), at(1.08)).id == lesson.id  # kept once


def test_lessons_reach_similar_tasks_and_not_unrelated_ones(tmp_path):
    lessons = lessons_in(tmp_path)
    small = observe(lessons, 2, at(1.0), at(1.2), change="fused the bias into the epilogue")
    large = observe(lessons, 3, at(1.0), at(2.0), change="tiles of 128x128 with 8 warps")
    found = lessons.similar(GEMM_RELU_ADD, H200)
    assert [lesson.id for lesson in found] == [large.id, small.id]  # the larger gain first
    assert found[0].similarity == round(2 / 3, 4)
    assert lessons.similar(SOFTMAX, H200) == []


def test_lessons_under_another_policy_are_left_out(tmp_path):
    lessons = lessons_in(tmp_path)
    observe(lessons, 2, at(1.0), at(10.0), change="dropped input_precision='ieee' from tl.dot")
    strict = H200.model_copy(update={"precision": Precision.STRICT})
    assert lessons.similar(GEMM_RELU, strict) == []
    assert len(lessons.similar(GEMM_RELU, H200)) == 1
    assert len(lessons.similar(GEMM_RELU, None)) == 1
