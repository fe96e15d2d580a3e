import asyncio

import pytest

from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.llm import open_llm
from adaexplore_mcp.memory.reasoning_bank import ReasoningBank, TaskOutcome
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import resolve_task
from tests.llm.conftest import KEYS_ENV, MODELS
from tests.llm.fake_providers import FakeProviders, Reply

SOFTMAX_LESSON = "Row-wise softmax: keep the whole row in one program and use exp2."
GEMM_LESSON = "GEMMs: tile with BLOCK_K of 32 or more and accumulate in float32."
NORM_LESSON = "LayerNorm: one program per row, two passes fused into one with Welford."


@pytest.fixture
def bank(tmp_path):
    bank = ReasoningBank(Store(tmp_path / "db.sqlite3"))
    bank.add(resolve_task("softmax"), SOFTMAX_LESSON, solved=True, speedup=1.8, run="r1")
    bank.add(resolve_task("matmul_fp16"), GEMM_LESSON, solved=True, speedup=0.9, run="r1")
    bank.add(resolve_task("layernorm"), NORM_LESSON, solved=False, run="r1")
    return bank


@pytest.mark.parametrize(
    "task, first",
    [("log_softmax", SOFTMAX_LESSON), ("gemm_bias_relu", GEMM_LESSON), ("rmsnorm", NORM_LESSON)],
)
def test_the_most_similar_tasks_lessons_come_first(bank, task, first):
    found = bank.similar(resolve_task(task), k=2)
    assert found[0].text == first
    assert len(found) == 2 and found[0].score >= found[1].score


def test_a_lesson_of_the_same_run_replaces_the_earlier_one(bank):
    bank.add(resolve_task("softmax"), "Better lesson.", solved=True, run="r1")
    bank.add(resolve_task("softmax"), "Another run's lesson.", solved=True, run="r2")
    texts = [lesson.text for lesson in bank.lessons() if lesson.task == "softmax"]
    assert texts == ["Better lesson.", "Another run's lesson."]
    assert SOFTMAX_LESSON not in texts


def test_the_same_task_can_be_left_out(bank):
    found = bank.similar(resolve_task("softmax"), exclude_same_task=True)
    assert all(lesson.task != "softmax" for lesson in found)


def test_a_lesson_is_distilled_by_the_model_over_http(tmp_path):
    with FakeProviders() as fake:
        fake.script(Reply(text=f'  "{SOFTMAX_LESSON}"  '), Reply(text="   "))
        llm = open_llm(
            LLMSettings(
                provider="openai",
                model=MODELS["openai"],
                base_url=fake.openai_url,
                backoff_s=0.01,
                max_retries=1,
            ),
            environ=KEYS_ENV,
        )
        bank = ReasoningBank(Store(tmp_path / "db.sqlite3"), llm)
        outcome = TaskOutcome(
            steps=8,
            solved=True,
            best_speedup=1.7,
            failures=["ValueError: arange's range must be a power of 2"],
        )

        async def run():
            async with llm:
                first = await bank.distil(resolve_task("softmax"), outcome, run="r1")
                empty = await bank.distil(resolve_task("gelu"), outcome, run="r1")
            return first, empty

        lesson, empty = asyncio.run(run())
        assert lesson.text == SOFTMAX_LESSON and lesson.outcome == "solved"
        prompt = str(fake.requests[0].body)
        assert "1.70x eager PyTorch" in prompt and "arange's range" in prompt
        assert empty is None
        assert [lesson.task for lesson in bank.lessons()] == ["softmax"]


def test_without_a_model_nothing_is_distilled(tmp_path):
    bank = ReasoningBank(Store(tmp_path / "db.sqlite3"))
    assert (
        asyncio.run(bank.distil(resolve_task("softmax"), TaskOutcome(steps=1, solved=False)))
        is None
    )
