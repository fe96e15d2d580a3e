"""The distiller through the official clients, against a server speaking the providers' formats."""

import asyncio

import pytest

from adaexplore_mcp.app import open_app
from adaexplore_mcp.config import Settings
from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.memory import FailureReport, Provenance, RuleStatus
from adaexplore_mcp.memory.settings import MemorySettings
from tests.llm.conftest import KEYS_ENV, MODELS
from tests.llm.fake_providers import FakeProviders, Reply

from .conftest import GLOBAL_RULE, global_read_failure


@pytest.fixture(scope="module")
def fake():
    with FakeProviders() as server:
        yield server


def memory_for(fake, tmp_path, provider):
    base_url = fake.url if provider == "anthropic" else fake.openai_url
    settings = Settings(
        home=tmp_path,
        memory=MemorySettings(starter=False),
        llm=LLMSettings(
            provider=provider,
            model=MODELS[provider],
            base_url=base_url,
            backoff_s=0.01,
            max_wait_s=0.1,
            max_retries=2,
            timeout_s=5,
        ),
    )
    return open_app(settings, environ=KEYS_ENV).memory


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_failure_becomes_a_rule_distilled_by_the_model(fake, tmp_path, provider):
    fake.reset()
    # A rate limit first: the distiller's call is retried, not lost.
    fake.script(Reply.rate_limited("0"), Reply(text=f'Rule: "{GLOBAL_RULE}"'))
    memory = memory_for(fake, tmp_path, provider)
    result = asyncio.run(memory.add_failure(global_read_failure("gelu", "SCALE", 3)))
    assert result.outcome == "new_rule"
    assert result.rule.text == GLOBAL_RULE and result.rule.provenance is Provenance.LLM
    prompt = str(fake.requests[-1].body)
    assert "Cannot access global variable" in prompt and "You cannot" in prompt
    assert len(fake.requests) == 2


def test_the_model_judges_a_near_duplicate_and_an_unusable_reply_is_no_rule(fake, tmp_path):
    fake.reset()
    memory = memory_for(fake, tmp_path, "openai")
    existing = "You cannot use tl.arange with a range that is not a power of two."
    asyncio.run(
        memory.add_failure(FailureReport(task="a", code="", error="ValueError: a b c"), existing)
    )
    near = "You cannot give tl.arange a length that is not a power of 2; round up and mask."
    fake.script(Reply(text=near), Reply(text="SAME"))
    merged = asyncio.run(
        memory.add_failure(FailureReport(task="b", code="", error="ValueError: d e f"))
    )
    assert merged.outcome == "merged" and merged.rule.support_tasks == 2
    assert "SAME or DIFFERENT" in str(fake.requests[-1].body)

    fake.script(Reply(text="Here are some thoughts. Always be careful."))
    unusable = asyncio.run(
        memory.add_failure(FailureReport(task="c", code="", error="KeyError: g h i"))
    )
    assert unusable.outcome == "no_rule"


def test_an_unreachable_model_keeps_the_failure(fake, tmp_path):
    fake.reset()
    fake.script(*[Reply.error(500)] * 3)
    memory = memory_for(fake, tmp_path, "anthropic")
    result = asyncio.run(memory.add_failure(global_read_failure("gelu", "SCALE", 3)))
    assert result.outcome == "no_rule"
    assert [f.task for f in memory.failures()] == ["gelu"]
    assert memory.rules([RuleStatus.ACTIVE, RuleStatus.CANDIDATE]) == []


def test_without_a_key_the_memory_takes_rules_from_agents(tmp_path):
    settings = Settings(
        home=tmp_path,
        memory=MemorySettings(starter=False),
        llm=LLMSettings(provider="anthropic", model="claude-x"),
    )
    memory = open_app(settings, environ={}).memory
    result = asyncio.run(memory.add_failure(global_read_failure("gelu", "SCALE", 3)))
    assert result.outcome == "no_rule" and "rule='You cannot" in result.message
