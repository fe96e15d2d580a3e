"""OpenAI chat completions through the official client: OpenAI itself, any OpenAI-compatible
server (vLLM, a proxy) at ``base_url``, and Azure OpenAI (``AsyncAzureOpenAI``)."""

from __future__ import annotations

from typing import Any

import openai

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


class OpenAILLM(ClientLLM):
    provider = "openai"
    key_variable = "OPENAI_API_KEY"

    def _new_client(self, settings: LLMSettings, api_key: str | None) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=api_key, base_url=settings.base_url, timeout=settings.timeout_s, max_retries=0
        )

    @property
    def _tokens_field(self) -> str:
        # OpenAI's reasoning models refuse max_tokens; servers that only mimic the API (older
        # vLLM, llama.cpp, proxies) may not know max_completion_tokens.
        return "max_tokens" if self.settings.base_url else "max_completion_tokens"

    async def _attempt(self, request: Request) -> Answer:
        messages = [m.model_dump() for m in request.messages]
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            self._tokens_field: request.max_tokens,
        }
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.stop:
            params["stop"] = list(request.stop)
        if request.stream:
            return await self._streamed(params)
        response = await self._client.chat.completions.create(**params)
        choices = getattr(response, "choices", None)
        if not choices:
            raise MalformedAnswer("a completion without choices")
        usage = getattr(response, "usage", None)
        return Answer(
            text=choices[0].message.content or "",
            model=getattr(response, "model", None) or self.model,
            stop_reason=choices[0].finish_reason,
            input_tokens=getattr(usage, "prompt_tokens", None) or 0,
            output_tokens=getattr(usage, "completion_tokens", None) or 0,
        )

    async def _streamed(self, params: dict[str, Any]) -> Answer:
        stream = await self._client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        parts: list[str] = []
        model, stop_reason, usage = self.model, None, None
        async for chunk in stream:
            model = chunk.model or model
            # The usage chunk comes last, with no choices.
            usage = chunk.usage or usage
            for choice in chunk.choices:
                if choice.index != 0:
                    continue
                if choice.delta is not None and choice.delta.content:
                    parts.append(choice.delta.content)
                stop_reason = choice.finish_reason or stop_reason
        if stop_reason is None:
            raise MalformedAnswer("a stream that ended before the answer did")
        return Answer(
            text="".join(parts),
            model=model,
            stop_reason=stop_reason,
            input_tokens=getattr(usage, "prompt_tokens", None) or 0,
            output_tokens=getattr(usage, "completion_tokens", None) or 0,
        )

    def _failure(self, exc: Exception) -> AttemptFailure | None:
        transport = transport_failure(
            exc,
            timeout_error=openai.APITimeoutError,
            connection_error=openai.APIConnectionError,
            timeout_s=self.settings.timeout_s,
        )
        if transport is not None:
            return transport
        if isinstance(exc, openai.APIStatusError):
            body = exc.body if isinstance(exc.body, dict) else {}
            detail = str(body.get("message") or exc.type or "")
            return status_failure(exc.status_code, detail, exc.response.headers)
        if isinstance(exc, openai.APIResponseValidationError):
            return AttemptFailure(
                kind="malformed", what=f"a malformed answer ({exc})", retryable=True
            )
        if isinstance(exc, openai.APIError):
            # An error event inside a stream that had started with 200: the server gave up
            # half-way, as it would with a 5xx.
            return AttemptFailure(
                kind="status", what=f"an error in the stream: {exc.message}", retryable=True
            )
        return super()._failure(exc)


class AzureOpenAILLM(OpenAILLM):
    """Azure OpenAI: ``base_url`` is the resource's endpoint and ``model`` the deployment."""

    provider = "azure"
    key_variable = "AZURE_OPENAI_API_KEY"

    def _new_client(self, settings: LLMSettings, api_key: str | None) -> openai.AsyncOpenAI:
        return openai.AsyncAzureOpenAI(
            api_key=api_key,
            azure_endpoint=settings.base_url or "",
            api_version=settings.api_version,
            timeout=settings.timeout_s,
            max_retries=0,
        )

    @property
    def _tokens_field(self) -> str:
        return "max_completion_tokens"
