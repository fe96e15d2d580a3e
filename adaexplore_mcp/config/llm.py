"""The language model's settings (``Settings().llm``) and prices.

Defined here rather than in ``adaexplore_mcp.llm``: the root ``Settings`` holds them, and
``adaexplore-mcp serve`` answers ``initialize`` without importing the ``llm`` package
(``tests/mcp_server/test_startup_imports.py``), which importing any module of it would."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ModelPrice(BaseModel, frozen=True):
    """What a model costs, in US dollars per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class LLMSettings(BaseModel):
    """The language model used to distil rules and to drive searches (``adaexplore_mcp.llm``).

    API keys are read from the provider's usual variable (``ANTHROPIC_API_KEY``,
    ``OPENAI_API_KEY``, ``AZURE_OPENAI_API_KEY``), never from this model's dump.
    """

    provider: Literal["anthropic", "openai", "azure"] | None = Field(
        default=None,
        description="None: no model is configured (rules come from the agent). 'openai' also "
        "covers OpenAI-compatible servers (vLLM, a proxy) through base_url; 'azure' is Azure "
        "OpenAI, where model is the deployment's name.",
    )
    model: str | None = Field(default=None, description="The provider's model name.")
    base_url: str | None = Field(
        default=None,
        description="An OpenAI-compatible server (vLLM: http://host:8000/v1), a gateway, or "
        "the Azure resource's endpoint (https://NAME.openai.azure.com).",
    )
    api_version: str | None = Field(
        default=None, description="Azure OpenAI's api-version, e.g. 2024-10-21 (azure only)."
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Per attempt.")
    max_retries: int = Field(
        default=4, ge=0, description="On rate limits (429), 5xx, timeouts and lost connections."
    )
    backoff_s: float = Field(default=1.0, gt=0, description="First retry delay; doubles.")
    max_wait_s: float = Field(
        default=60.0,
        gt=0,
        description="Longest single wait between attempts, a server's Retry-After included.",
    )
    max_tokens: int = Field(default=4096, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Prices by model name, over the built-in table (adaexplore_mcp.llm.prices); "
        'e.g. {"my-model": {"input_per_mtok": 1.0, "output_per_mtok": 3.0}}.',
    )
