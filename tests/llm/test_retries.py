"""Retries with backoff on 429, 5xx, timeouts, lost connections and broken bodies; no retry
on the errors that would only repeat; what each failure is counted as."""

from __future__ import annotations

import socket
import time

import pytest

from adaexplore_mcp.llm import (
    LLMAuthError,
    LLMError,
    LLMRequestError,
    LLMUnavailable,
    Message,
    UsageTotals,
)

from .conftest import llm_for, run
from .fake_providers import FakeProviders, Reply

ASK = [Message(role="user", content="Fuse these two kernels.")]


async def _outcome(fake: FakeProviders, provider: str, *, stream: bool = False, **values):
    """(the completion or the exception raised, the totals after it)."""
    async with llm_for(fake, provider, **values) as llm:
        try:
            result = await llm.complete(messages=ASK, temperature=0.2, stream=stream)
        except LLMError as exc:
            result = exc
        return result, llm.totals


def _overloaded(provider: str) -> Reply:
    return Reply.error(529 if provider == "anthropic" else 503, "overloaded")


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_rate_limit_and_server_errors_are_retried(fake, provider, stream):
    fake.script(Reply.rate_limited(), Reply.error(500), _overloaded(provider), Reply(text="fused"))
    completion, totals = run(_outcome(fake, provider, stream=stream, max_retries=3))
    assert completion.text == "fused"
    assert completion.attempts == 4
    assert totals == UsageTotals(
        calls=1,
        input_tokens=10,
        output_tokens=5,
        cost_usd=completion.usage.cost_usd,
        failed_calls=0,
        retries=3,
    )
    assert len(fake.requests) == 4
    # the same request each time
    assert len({str(r.body) for r in fake.requests}) == 1


def test_exhausted_retries_raise_unavailable(fake, provider):
    fake.script(Reply.error(500, "boom"), Reply.rate_limited(), Reply.error(502, "bad gateway"))
    error, totals = run(_outcome(fake, provider, max_retries=2))
    assert isinstance(error, LLMUnavailable)
    assert error.provider == provider and error.status == 502 and error.attempts == 3
    message = str(error)
    assert "failed 3 time(s)" in message and "502" in message and fake.url in message
    assert "try again later" in message
    assert (totals.calls, totals.failed_calls, totals.retries) == (0, 1, 2)
    assert totals.input_tokens == 0 and totals.cost_usd is None
    assert len(fake.requests) == 3


def test_exhausted_on_rate_limits_says_what_to_do(fake, provider):
    fake.script(*[Reply.rate_limited()] * 2)
    error, _ = run(_outcome(fake, provider, max_retries=1))
    assert isinstance(error, LLMUnavailable) and error.status == 429
    assert "ADAEXPLORE_LLM__MAX_RETRIES" in str(error)


def test_no_retries_configured(fake, provider):
    fake.script(Reply.error(500))
    error, totals = run(_outcome(fake, provider, max_retries=0))
    assert isinstance(error, LLMUnavailable) and error.attempts == 1
    assert (totals.failed_calls, totals.retries) == (1, 0)


def test_a_refused_key_is_not_retried(fake, provider):
    fake.script(Reply.error(401, "invalid x-api-key"))
    error, totals = run(_outcome(fake, provider))
    assert isinstance(error, LLMAuthError) and not isinstance(error, LLMUnavailable)
    assert error.status == 401
    variable = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
    assert f"set {variable}" in str(error) and "invalid x-api-key" in str(error)
    assert len(fake.requests) == 1
    assert (totals.failed_calls, totals.retries) == (1, 0)


@pytest.mark.parametrize(
    ("status", "error_class", "words"),
    [
        (400, LLMRequestError, "rejected the request"),
        (403, LLMAuthError, "no permission"),
        (404, LLMRequestError, "ADAEXPLORE_LLM__MODEL"),
        (422, LLMRequestError, "rejected the request"),
    ],
)
def test_requests_that_would_fail_again_are_not_retried(fake, provider, status, error_class, words):
    fake.script(Reply.error(status, "scripted refusal"))
    error, _ = run(_outcome(fake, provider))
    assert type(error) is error_class
    assert words in str(error) and "scripted refusal" in str(error)
    assert len(fake.requests) == 1


def test_the_servers_word_on_retrying_wins(fake, provider):
    fake.script(Reply.error(500, headers={"x-should-retry": "false"}))
    error, _ = run(_outcome(fake, provider))
    assert isinstance(error, LLMRequestError)
    assert len(fake.requests) == 1


def test_backoff_doubles_from_the_settings(fake, provider):
    fake.script(Reply.error(500), Reply.error(500), Reply())
    started = time.monotonic()
    completion, _ = run(_outcome(fake, provider, backoff_s=0.1, max_retries=2))
    elapsed = time.monotonic() - started
    assert completion.attempts == 3
    # waits of 0.1 and 0.2 s, less at most a quarter of jitter
    assert elapsed >= 0.75 * 0.3


def test_retry_after_is_honoured(fake):
    fake.script(Reply.rate_limited("1"), Reply())
    started = time.monotonic()
    completion, _ = run(_outcome(fake, "anthropic", max_wait_s=5.0))
    assert completion.attempts == 2
    assert time.monotonic() - started >= 1.0


def test_retry_after_ms_is_honoured(fake, provider):
    fake.script(Reply(status=429, headers={"retry-after-ms": "400"}), Reply())
    started = time.monotonic()
    completion, _ = run(_outcome(fake, provider))
    assert completion.attempts == 2
    assert time.monotonic() - started >= 0.4


def test_a_long_retry_after_is_capped(fake, provider):
    fake.script(Reply.rate_limited("3600"), Reply())
    started = time.monotonic()
    completion, _ = run(_outcome(fake, provider, max_wait_s=0.05))
    assert completion.attempts == 2
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_timeouts_are_retried_then_unavailable(fake, provider, stream):
    fake.script(*[Reply.slow(1.5)] * 3)
    error, totals = run(_outcome(fake, provider, stream=stream, timeout_s=0.2, max_retries=2))
    assert isinstance(error, LLMUnavailable) and error.status is None
    assert "no answer within 0.2 s" in str(error) and "ADAEXPLORE_LLM__TIMEOUT_S" in str(error)
    assert (totals.failed_calls, totals.retries) == (1, 2)
    assert len(fake.requests) == 3


def test_a_slow_attempt_then_a_quick_one(fake, provider):
    fake.script(Reply.slow(1.5), Reply(text="in time"))
    completion, totals = run(_outcome(fake, provider, timeout_s=0.2))
    assert completion.text == "in time" and totals.retries == 1


def test_malformed_bodies_are_retried(fake, provider):
    fake.script(Reply.malformed(), Reply.malformed("<html>gateway</html>"), Reply(text="whole"))
    completion, totals = run(_outcome(fake, provider))
    assert completion.text == "whole" and totals.retries == 2


def test_malformed_bodies_exhaust_to_unavailable(fake, provider):
    fake.script(*[Reply.malformed()] * 3)
    error, _ = run(_outcome(fake, provider))
    assert isinstance(error, LLMUnavailable)
    assert "not JSON" in str(error) and "ADAEXPLORE_LLM__BASE_URL" in str(error)


def test_an_answer_without_choices_or_content_is_malformed(fake, provider):
    fake.script(Reply.malformed('{"id": "x"}'), Reply())
    completion, totals = run(_outcome(fake, provider))
    assert completion.text == "ok" and totals.retries == 1


def test_an_error_in_the_middle_of_a_stream_is_retried(fake, provider):
    kind = "overloaded_error" if provider == "anthropic" else "server_error"
    fake.script(Reply(text="half an answer", stream_error=kind), Reply(text="a whole answer"))
    completion, totals = run(_outcome(fake, provider, stream=True))
    assert completion.text == "a whole answer"
    assert totals.retries == 1


def test_no_server_there(fake, provider):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()
    base_url = closed if provider == "anthropic" else closed + "/v1"
    error, totals = run(_outcome(fake, provider, base_url=base_url, max_retries=1))
    assert isinstance(error, LLMUnavailable)
    assert "no connection" in str(error) and closed in str(error)
    assert totals.retries == 1


def test_a_refused_temperature_is_dropped_for_the_rest_of_the_run(fake, provider):
    fake.script(Reply.error(400, "temperature is deprecated for this model"), Reply(text="first"))

    async def scenario():
        async with llm_for(fake, provider, max_retries=0) as llm:
            first = await llm.complete(messages=ASK, temperature=0.0)
            second = await llm.complete(messages=ASK, temperature=0.0)
            return first, second, llm.totals

    first, second, totals = run(scenario())
    assert (first.text, second.text) == ("first", "ok")
    assert first.attempts == 2
    assert [r.body.get("temperature") for r in fake.requests] == [0.0, None, None]
    assert (totals.calls, totals.retries, totals.failed_calls) == (2, 1, 0)


def test_other_bad_requests_keep_the_temperature(fake, provider):
    fake.script(Reply.error(400, "max_tokens: too large"))
    error, _ = run(_outcome(fake, provider))
    assert isinstance(error, LLMRequestError)
    assert len(fake.requests) == 1
