"""Anthropic's Messages API through the official client (``anthropic.AsyncAnthropic``)."""

from __future__ import annotations

from typing import Any

import anthropic

from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.llm.base import (
    Answer,
    AttemptFailure,
    ClientLLM,
    MalformedAnswer,
    Request,
    status_failure,
    transport_failure,
)

# Errors Anthropic sends as an event in a stream that had already started with 200, and the
# status each would have had before it.
_STREAM_ERROR_STATUS = {
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
}


class AnthropicLLM(ClientLLM):
    provider = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"

    def _new_client(self, settings: LLMSettings, api_key: str | None) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=api_key, base_url=settings.base_url, timeout=settings.timeout_s, max_retries=0
        )

    async def _attempt(self, request: Request) -> Answer:
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [m.model_dump() for m in request.messages],
        }
        if request.system:
            params["system"] = request.system
        if request.stop:
            params["stop_sequences"] = list(request.stop)
        if request.temperature is not None:
            # The client no longer takes sampling parameters; the API still does, for the
            # models that accept them.
            params["extra_body"] = {"temperature": request.temperature}
        if request.stream:
            async with self._client.messages.stream(**params) as stream:
                message = await stream.get_final_message()
        else:
            message = await self._client.messages.create(**params)
        content = getattr(message, "content", None)
        if not isinstance(content, list):
            raise MalformedAnswer("a message without content")
        usage = getattr(message, "usage", None)
        return Answer(
            text="".join(block.text for block in content if block.type == "text"),
            model=getattr(message, "model", None) or self.model,
            stop_reason=getattr(message, "stop_reason", None),
            input_tokens=getattr(usage, "input_tokens", None) or 0,
            output_tokens=getattr(usage, "output_tokens", None) or 0,
        )

    def _failure(self, exc: Exception) -> AttemptFailure | None:
        transport = transport_failure(
            exc,
            timeout_error=anthropic.APITimeoutError,
            connection_error=anthropic.APIConnectionError,
            timeout_s=self.settings.timeout_s,
        )
        if transport is not None:
            return transport
        if isinstance(exc, anthropic.APIStatusError):
            detail = exc.api_message or exc.type or ""
            if exc.status_code < 400:  # an error event inside a stream
                status = _STREAM_ERROR_STATUS.get(exc.type or "")
                return AttemptFailure(
                    kind="status",
                    what=f"{exc.type} in the stream: {detail}",
                    retryable=status is not None,
                    status=status,
                )
            return status_failure(exc.status_code, detail, exc.response.headers)
        if isinstance(exc, anthropic.APIResponseValidationError):
            return AttemptFailure(
                kind="malformed", what=f"a malformed answer ({exc})", retryable=True
            )
        return super()._failure(exc)
