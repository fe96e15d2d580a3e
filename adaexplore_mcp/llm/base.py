"""The part of every backend that is not about a provider: retries, waits, errors, accounting.

A backend sends one attempt (``_attempt``) and says what an exception from its client means
(``_failure``); ``LLM.complete`` decides whether to try again, how long to wait, what to raise
and what to add to the run's totals.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Literal, Self

from pydantic import BaseModel, Field

from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.llm.completion import Completion, Message, TokenUsage, UsageTotals
from adaexplore_mcp.llm.errors import (
    LLMAuthError,
    LLMError,
    LLMNotConfigured,
    LLMRequestError,
    LLMUnavailable,
)
from adaexplore_mcp.llm.prices import cost_usd, price_of

log = logging.getLogger(__name__)

# What the providers' own clients retry: request timeout, lock conflict, rate limit, server side.
_RETRYABLE_STATUS = frozenset({408, 409, 429})


class Request(BaseModel, frozen=True):
    """One call, with the settings' defaults already filled in."""

    system: str | None
    messages: tuple[Message, ...] = Field(min_length=1)
    max_tokens: int = Field(ge=1)
    temperature: float | None
    stop: tuple[str, ...] = ()
    stream: bool = False


@dataclass(frozen=True)
class Answer:
    """What one successful attempt returned, before pricing."""

    text: str
    model: str
    stop_reason: str | None
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class AttemptFailure:
    """What went wrong in one attempt, in the provider's terms."""

    kind: Literal["status", "timeout", "connection", "malformed"]
    what: str  # "429 rate limited: …", "no answer within 30 s", …
    retryable: bool
    status: int | None = None
    retry_after_s: float | None = None


class MalformedAnswer(Exception):
    """An answer that parsed but is not what the API promises (no choices, no content)."""


def transport_failure(
    exc: Exception,
    *,
    timeout_error: type[Exception],
    connection_error: type[Exception],
    timeout_s: float,
) -> AttemptFailure | None:
    """A timeout or a lost connection, as both official clients raise them (their classes
    differ, their meaning does not); None for any other error. Both are retried."""
    if isinstance(exc, timeout_error):  # a subclass of the connection error: test it first
        return AttemptFailure(
            kind="timeout", what=f"no answer within {timeout_s:g} s", retryable=True
        )
    if isinstance(exc, connection_error):
        cause = type(exc.__cause__).__name__ if exc.__cause__ else "lost"
        return AttemptFailure(kind="connection", what=f"no connection ({cause})", retryable=True)
    return None


def status_failure(status: int, detail: str, headers: Mapping[str, str]) -> AttemptFailure:
    """A failure from an HTTP status, honouring the server's x-should-retry and Retry-After."""
    should = headers.get("x-should-retry")
    retryable = status in _RETRYABLE_STATUS or status >= 500
    if should in ("true", "false"):
        retryable = should == "true"
    return AttemptFailure(
        kind="status",
        what=f"{status} {detail}".strip(),
        retryable=retryable,
        status=status,
        retry_after_s=retry_after_s(headers),
    )


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait: retry-after-ms (OpenAI), else Retry-After as
    seconds or as an HTTP date; None when absent or unreadable."""
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(float(ms) / 1000, 0.0)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


class LLM(ABC):
    """One model of one provider, with retries and per-run accounting.

    Use ``open_llm(settings.llm)`` to get one; ``async with`` closes its connections.
    """

    provider: str  # "anthropic", "openai", "azure"
    key_variable: str  # where the API key comes from

    def __init__(self, settings: LLMSettings) -> None:
        if not settings.model:
            raise LLMNotConfigured(
                "no model is configured: set ADAEXPLORE_LLM__MODEL (e.g. the provider's model "
                "name, or the Azure deployment's)",
                provider=self.provider,
            )
        self.settings = settings
        self.model: str = settings.model
        self._totals = UsageTotals()
        # Jitter keeps concurrent callers that were rate-limited together from retrying
        # together; a private generator, so nothing global is touched.
        self._random = random.Random()
        self._refuses_temperature = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @abstractmethod
    async def close(self) -> None:
        """Release the client's connections (not when the client was passed in)."""

    @property
    def totals(self) -> UsageTotals:
        """A snapshot of what this instance has used so far."""
        return self._totals.model_copy()

    @property
    @abstractmethod
    def base_url(self) -> str:
        """Where requests go, for messages."""

    async def complete(
        self,
        *,
        messages: Sequence[Message],
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] = (),
        stream: bool = False,
    ) -> Completion:
        """The model's answer to ``messages``.

        ``max_tokens`` and ``temperature`` default to the settings' (a temperature of None is
        not sent: the provider's default applies, and newer models accept no other). With
        ``stream`` the provider's streaming API is used; the result is the same.

        Raises ``LLMUnavailable`` once retries are spent, ``LLMAuthError`` for a refused key,
        ``LLMRequestError`` for a request the provider will never accept.
        """
        if temperature is None:
            temperature = self.settings.temperature
        request = Request(
            system=system,
            messages=tuple(messages),
            max_tokens=max_tokens or self.settings.max_tokens,
            temperature=None if self._refuses_temperature else temperature,
            stop=tuple(stop),
            stream=stream,
        )
        started = time.monotonic()
        retries = self.settings.max_retries
        attempts = failed = 0  # sent; failed for a reason worth retrying
        while True:
            attempts += 1
            try:
                answer = await self._attempt(request)
            except Exception as exc:
                failure = self._failure(exc)
                if failure is None:
                    self._totals.failed_calls += 1
                    raise
                if self._temperature_refused(request, failure):
                    request = request.model_copy(update={"temperature": None})
                    self._totals.retries += 1
                    continue
                if not failure.retryable:
                    self._totals.failed_calls += 1
                    raise self._fatal(failure) from exc
                if failed == retries:
                    self._totals.failed_calls += 1
                    raise self._unavailable(failure, attempts) from exc
                wait = self._wait_s(failed, failure.retry_after_s)
                failed += 1
                self._totals.retries += 1
                log.info(
                    "%s: %s; retry %d of %d in %.2f s",
                    self.provider,
                    failure.what,
                    failed,
                    retries,
                    wait,
                )
                await asyncio.sleep(wait)
                continue
            completion = self._completion(answer, attempts, time.monotonic() - started)
            self._totals.record(completion)
            return completion

    def _temperature_refused(self, request: Request, failure: AttemptFailure) -> bool:
        """Newer models (Claude after Opus 4.6, OpenAI's reasoning models) answer 400 to any
        temperature but their default. Callers that ask for one (0 for a terse rule) still get
        an answer: the request goes again without it, and so does every later one."""
        if request.temperature is None or failure.status != 400:
            return False
        if "temperature" not in failure.what.lower():
            return False
        log.warning(
            "%s model %r refuses a temperature (%s); sending none from now on",
            self.provider,
            self.model,
            failure.what,
        )
        self._refuses_temperature = True
        return True

    @abstractmethod
    async def _attempt(self, request: Request) -> Answer:
        """Send the request once, with the client's own retries off."""

    def _failure(self, exc: Exception) -> AttemptFailure | None:
        """What ``exc`` from ``_attempt`` means; None for an exception that is not the
        provider's (a bug), which is raised as it is. Backends add their client's errors."""
        # A body cut off by a proxy or a restarting server: the next attempt may well be whole.
        if isinstance(exc, json.JSONDecodeError):
            return AttemptFailure(
                kind="malformed", what=f"a body that is not JSON ({exc})", retryable=True
            )
        if isinstance(exc, MalformedAnswer):
            return AttemptFailure(
                kind="malformed", what=f"a malformed answer ({exc})", retryable=True
            )
        return None

    def _completion(self, answer: Answer, attempts: int, latency_s: float) -> Completion:
        overrides = self.settings.prices
        # The answering model's name first: on Azure the configured name is a deployment's.
        price = price_of(answer.model, overrides) or price_of(self.model, overrides)
        reported = answer.input_tokens or answer.output_tokens
        usage = TokenUsage(
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            cost_usd=cost_usd(price, answer.input_tokens, answer.output_tokens)
            if reported
            else None,
        )
        return Completion(
            text=answer.text,
            model=answer.model or self.model,
            stop_reason=answer.stop_reason,
            usage=usage,
            provider=self.provider,
            attempts=attempts,
            latency_s=latency_s,
        )

    def _wait_s(self, attempt: int, retry_after: float | None) -> float:
        cap = self.settings.max_wait_s
        if retry_after is not None:
            return min(retry_after, cap)
        backoff = self.settings.backoff_s * 2**attempt
        return min(backoff * self._random.uniform(0.75, 1.0), cap)

    @property
    def _name(self) -> str:
        return {"anthropic": "Anthropic", "openai": "OpenAI", "azure": "Azure OpenAI"}.get(
            self.provider, self.provider
        )

    def _fatal(self, failure: AttemptFailure) -> LLMError:
        status, name = failure.status, self._name
        where = f"{name} at {self.base_url}"
        if status == 401:
            return LLMAuthError(
                f"{where} refused the API key ({failure.what}): set {self.key_variable} to a "
                "valid key",
                provider=self.provider,
                status=status,
            )
        if status == 403:
            return LLMAuthError(
                f"{where} refused access ({failure.what}): the key has no permission for model "
                f"{self.model!r}; use a key that has, or another ADAEXPLORE_LLM__MODEL",
                provider=self.provider,
                status=status,
            )
        if status == 404:
            hint = "ADAEXPLORE_LLM__MODEL"
            if self.settings.base_url:
                hint += " and ADAEXPLORE_LLM__BASE_URL"
            return LLMRequestError(
                f"{where} has no model {self.model!r} or no such endpoint ({failure.what}): "
                f"check {hint}",
                provider=self.provider,
                status=status,
            )
        return LLMRequestError(
            f"{where} rejected the request ({failure.what}); not retried. Check "
            "ADAEXPLORE_LLM__MODEL, ADAEXPLORE_LLM__MAX_TOKENS and ADAEXPLORE_LLM__TEMPERATURE "
            "(newer models refuse a temperature)",
            provider=self.provider,
            status=status,
        )

    def _unavailable(self, failure: AttemptFailure, attempts: int) -> LLMUnavailable:
        status = failure.status
        if status == 429:
            advice = (
                "the rate limit or quota is exhausted: wait, run fewer searches at once, or "
                "raise ADAEXPLORE_LLM__MAX_RETRIES"
            )
        elif failure.kind == "timeout":
            advice = "raise ADAEXPLORE_LLM__TIMEOUT_S, or ask for fewer tokens"
        elif failure.kind == "connection":
            advice = "check that the server is running and ADAEXPLORE_LLM__BASE_URL is right"
        elif failure.kind == "malformed":
            advice = "check that ADAEXPLORE_LLM__BASE_URL is the API's address, not a web page"
        else:
            advice = "the service is failing or overloaded: try again later"
        return LLMUnavailable(
            f"{self._name} at {self.base_url} failed {attempts} time(s), the last with "
            f"{failure.what}; {advice}",
            provider=self.provider,
            status=status,
            attempts=attempts,
        )


class ClientLLM(LLM):
    """An ``LLM`` over one of the official clients. Their retries are turned off: this class
    retries, so that it can count them."""

    def __init__(
        self, settings: LLMSettings, *, api_key: str | None = None, client: Any = None
    ) -> None:
        """``client`` replaces the one built from the settings; ``close`` leaves it open."""
        super().__init__(settings)
        self._owns_client = client is None
        if client is None:
            client = self._new_client(settings, api_key)
        self._client = client.with_options(max_retries=0)

    @abstractmethod
    def _new_client(self, settings: LLMSettings, api_key: str | None) -> Any:
        """The provider's async client for these settings."""

    @property
    def base_url(self) -> str:
        return str(self._client.base_url).rstrip("/")

    async def close(self) -> None:
        if self._owns_client:
            await self._client.close()
