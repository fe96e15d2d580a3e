"""The one place that turns ``LLMSettings`` and the environment's API keys into an ``LLM``."""

from __future__ import annotations

import os
from collections.abc import Mapping

from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.llm.base import LLM
from adaexplore_mcp.llm.errors import LLMNotConfigured

KEY_VARIABLES = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "azure": "AZURE_OPENAI_API_KEY",
}
# Sent to an OpenAI-compatible server when no key is set: a local vLLM started without
# --api-key ignores it, and the client refuses to start without one.
NO_KEY = "no-key"


def open_llm(settings: LLMSettings, *, environ: Mapping[str, str] | None = None) -> LLM:
    """The configured model, its key read from ``environ`` (default: the process environment).

    Raises ``LLMNotConfigured`` (nothing is sent) when the provider, the model, the key or, for
    Azure, the endpoint or api-version is missing. Use ``async with`` to close it.
    """
    env = os.environ if environ is None else environ
    provider = settings.provider
    if provider is None:
        raise LLMNotConfigured(
            "no language model is configured: set ADAEXPLORE_LLM__PROVIDER (anthropic, openai "
            "or azure) and ADAEXPLORE_LLM__MODEL, and the provider's API key"
        )
    if not settings.model:
        raise LLMNotConfigured(
            f"the {provider} provider is set but no model: set ADAEXPLORE_LLM__MODEL",
            provider=provider,
        )
    variable = KEY_VARIABLES[provider]
    key = env.get(variable) or None
    if key is None and provider == "openai" and settings.base_url:
        key = NO_KEY
    if key is None:
        raise LLMNotConfigured(
            f"no API key for {provider}: set {variable} in the environment (keys are never "
            "read from settings files)",
            provider=provider,
        )
    if provider == "anthropic":
        from adaexplore_mcp.llm.anthropic_llm import AnthropicLLM

        return AnthropicLLM(settings, api_key=key)
    from adaexplore_mcp.llm.openai_llm import AzureOpenAILLM, OpenAILLM

    if provider == "openai":
        return OpenAILLM(settings, api_key=key)
    missing = [
        name
        for name, value in (
            ("ADAEXPLORE_LLM__BASE_URL (https://RESOURCE.openai.azure.com)", settings.base_url),
            ("ADAEXPLORE_LLM__API_VERSION (e.g. 2024-10-21)", settings.api_version),
        )
        if not value
    ]
    if missing:
        raise LLMNotConfigured(
            f"Azure OpenAI needs {' and '.join(missing)}; ADAEXPLORE_LLM__MODEL is the "
            "deployment's name",
            provider=provider,
        )
    return AzureOpenAILLM(settings, api_key=key)
