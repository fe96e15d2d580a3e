"""Language models behind one async interface: Anthropic, OpenAI, OpenAI-compatible servers
(vLLM, proxies) and Azure OpenAI, through the providers' official clients.

    async with open_llm(settings.llm) as llm:
        completion = await llm.complete(system="…", messages=[Message(role="user", content="…")])
        completion.text, completion.usage.cost_usd, llm.totals

Calls are retried with backoff on rate limits, 5xx, timeouts and lost connections; each
instance adds up the tokens, cost, failures and retries of its calls (``LLM.totals``).
Importing this package does not import the providers' clients; ``open_llm`` does, for the one
it needs.
"""

from typing import TYPE_CHECKING, Any

from adaexplore_mcp.llm.base import LLM
from adaexplore_mcp.llm.completion import Completion, Message, TokenUsage, UsageTotals
from adaexplore_mcp.llm.errors import (
    LLMAuthError,
    LLMError,
    LLMNotConfigured,
    LLMRequestError,
    LLMUnavailable,
)
from adaexplore_mcp.llm.factory import open_llm
from adaexplore_mcp.llm.prices import PRICES, price_of

if TYPE_CHECKING:
    from adaexplore_mcp.llm.anthropic_llm import AnthropicLLM
    from adaexplore_mcp.llm.openai_llm import AzureOpenAILLM, OpenAILLM

_BACKENDS = {
    "AnthropicLLM": "adaexplore_mcp.llm.anthropic_llm",
    "OpenAILLM": "adaexplore_mcp.llm.openai_llm",
    "AzureOpenAILLM": "adaexplore_mcp.llm.openai_llm",
}


def __getattr__(name: str) -> Any:
    # The clients take a second to import; only code that names a backend pays for it.
    if name in _BACKENDS:
        import importlib

        return getattr(importlib.import_module(_BACKENDS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LLM",
    "PRICES",
    "AnthropicLLM",
    "AzureOpenAILLM",
    "Completion",
    "LLMAuthError",
    "LLMError",
    "LLMNotConfigured",
    "LLMRequestError",
    "LLMUnavailable",
    "Message",
    "OpenAILLM",
    "TokenUsage",
    "UsageTotals",
    "open_llm",
    "price_of",
]
