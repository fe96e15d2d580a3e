"""Plain and streamed completions for both providers, what is sent, and what is counted."""

from __future__ import annotations

import pytest

from adaexplore_mcp.config.llm import ModelPrice
from adaexplore_mcp.llm import Completion, Message

from .conftest import KEYS, MODELS, llm_for, run
from .fake_providers import FakeProviders, Reply

ASK = [Message(role="user", content="Name one Triton primitive.")]


async def _complete(fake: FakeProviders, provider: str, **kw) -> Completion:
    async with llm_for(fake, provider) as llm:
        return await llm.complete(messages=ASK, **kw)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_completion(fake, provider, stream):
    fake.script(Reply(text="tl.load masks out-of-range lanes", input_tokens=1200, output_tokens=80))
    completion = run(
        _complete(fake, provider, system="Be terse.", max_tokens=50, temperature=0.0, stream=stream)
    )

    assert completion.text == "tl.load masks out-of-range lanes"
    assert completion.model == MODELS[provider]
    assert completion.provider == provider
    assert completion.stop_reason == ("end_turn" if provider == "anthropic" else "stop")
    assert not completion.truncated
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (1200, 80)
    # claude-sonnet-5-5: $2 / $10; gpt-4o: $2.50 / $10 per million tokens
    expected = {"anthropic": 1200 * 2 + 80 * 10, "openai": 1200 * 2.5 + 80 * 10}[provider] / 1e6
    assert completion.usage.cost_usd == pytest.approx(expected)
    assert completion.attempts == 1

    (request,) = fake.requests
    assert request.api == provider
    assert request.api_key == KEYS[provider]
    assert request.body["model"] == MODELS[provider]
    assert request.streamed is stream
    assert request.body["temperature"] == 0.0
    if provider == "anthropic":
        assert request.path == "/v1/messages"
        assert request.body["system"] == "Be terse."
        assert request.body["messages"] == [{"role": "user", "content": ASK[0].content}]
        assert request.body["max_tokens"] == 50
    else:
        assert request.path == "/v1/chat/completions"
        assert request.body["messages"] == [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": ASK[0].content},
        ]
        # an OpenAI-compatible base URL: the field every such server knows
        assert request.body["max_tokens"] == 50
        if stream:
            assert request.body["stream_options"] == {"include_usage": True}


def test_streamed_text_arrives_in_pieces_and_is_joined(fake, provider):
    text = "for i in range(0, n, BLOCK):\n    acc += tl.load(x + i)\n"
    fake.script(Reply(text=text, chunks=7))
    completion = run(_complete(fake, provider, stream=True))
    assert completion.text == text


def test_defaults_come_from_the_settings(fake, provider):
    async def scenario():
        async with llm_for(fake, provider, max_tokens=123, temperature=None) as llm:
            await llm.complete(messages=ASK)

    run(scenario())
    (request,) = fake.requests
    assert request.body["max_tokens"] == 123
    assert "temperature" not in request.body
    assert "system" not in request.body
    assert all(m["role"] != "system" for m in request.body["messages"])


def test_stop_sequences_and_a_conversation(fake, provider):
    turns = [*ASK, Message(role="assistant", content="tl.load"), Message(role="user", content="+1")]
    fake.script(Reply(stop_reason="stop_sequence" if provider == "anthropic" else "stop"))

    async def scenario():
        async with llm_for(fake, provider) as llm:
            await llm.complete(messages=turns, stop=["```"])

    run(scenario())
    body = fake.requests[0].body
    key = "stop_sequences" if provider == "anthropic" else "stop"
    assert body[key] == ["```"]
    sent = [m for m in body["messages"] if m["role"] != "system"]
    assert sent == [m.model_dump() for m in turns]


def test_truncated_at_max_tokens(fake, provider):
    reason = "max_tokens" if provider == "anthropic" else "length"
    fake.script(Reply(text="def kernel(", stop_reason=reason))
    completion = run(_complete(fake, provider, max_tokens=3))
    assert completion.stop_reason == reason
    assert completion.truncated


def test_totals_add_up_over_calls(fake, provider):
    fake.script(
        Reply(input_tokens=100, output_tokens=10), Reply(input_tokens=300, output_tokens=30)
    )

    async def scenario():
        async with llm_for(fake, provider) as llm:
            first = await llm.complete(messages=ASK)
            second = await llm.complete(messages=ASK, stream=True)
            return first, second, llm.totals

    first, second, totals = run(scenario())
    assert (totals.calls, totals.failed_calls, totals.retries) == (2, 0, 0)
    assert (totals.input_tokens, totals.output_tokens) == (400, 40)
    assert totals.cost_usd == pytest.approx(first.usage.cost_usd + second.usage.cost_usd)


def test_totals_are_a_snapshot(fake, provider):
    async def scenario():
        async with llm_for(fake, provider) as llm:
            before = llm.totals
            await llm.complete(messages=ASK)
            return before, llm.totals

    before, after = run(scenario())
    assert before.calls == 0 and after.calls == 1


def test_unknown_model_counts_tokens_but_not_cost(fake, provider):
    fake.script(Reply(input_tokens=50, output_tokens=7))

    async def scenario():
        async with llm_for(fake, provider, model="house-model-7b") as llm:
            completion = await llm.complete(messages=ASK)
            return completion, llm.totals

    completion, totals = run(scenario())
    assert completion.usage.cost_usd is None
    assert (totals.input_tokens, totals.output_tokens, totals.cost_usd) == (50, 7, None)


def test_prices_from_the_settings_override_the_table(fake, provider):
    fake.script(Reply(input_tokens=1_000_000, output_tokens=500_000))
    prices = {
        MODELS[provider]: ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0),
        "house-model-7b": ModelPrice(input_per_mtok=0.5, output_per_mtok=0.5),
    }

    async def scenario():
        async with llm_for(fake, provider, prices=prices) as llm:
            return await llm.complete(messages=ASK)

    assert run(scenario()).usage.cost_usd == pytest.approx(2.0)


def test_the_answering_models_name_is_priced_first(fake, provider):
    # A dated snapshot answering for an alias, as the APIs do.
    answering = {"anthropic": "claude-haiku-4-5-20251001", "openai": "gpt-4o-mini-2024-07-18"}
    fake.script(Reply(model=answering[provider], input_tokens=1_000_000, output_tokens=0))
    completion = run(_complete(fake, provider))
    assert completion.model == answering[provider]
    assert completion.usage.cost_usd == pytest.approx({"anthropic": 1.0, "openai": 0.15}[provider])


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_unreported_usage_is_zero_tokens_and_no_cost(fake, provider, stream):
    fake.script(Reply(report_usage=False))
    completion = run(_complete(fake, provider, stream=stream))
    assert completion.text == "ok"
    assert completion.usage.input_tokens == completion.usage.output_tokens == 0
    assert completion.usage.cost_usd is None


def test_concurrent_calls_share_one_instance(fake, provider):
    import asyncio

    fake.respond_with(lambda request: Reply(text=request.body["messages"][-1]["content"]))

    async def scenario():
        async with llm_for(fake, provider) as llm:
            asks = [[Message(role="user", content=f"q{i}")] for i in range(8)]
            done = await asyncio.gather(*(llm.complete(messages=m) for m in asks))
            return [c.text for c in done], llm.totals

    texts, totals = run(scenario())
    assert texts == [f"q{i}" for i in range(8)]
    assert totals.calls == 8
