"""The fake provider server, and LLMs pointed at it with short timeouts and backoff."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.llm import LLM, open_llm

from .fake_providers import FakeProviders

T = TypeVar("T")

KEYS = {
    "anthropic": "sk-ant-test-0123",
    "openai": "sk-test-4567",
    "azure": "azure-test-89ab",
}
# Models in the price table, so that cost is computed.
MODELS = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-4o"}


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def fast_settings(**values: Any) -> LLMSettings:
    defaults: dict[str, Any] = {
        "timeout_s": 5.0,
        "max_retries": 2,
        "backoff_s": 0.01,
        "max_wait_s": 0.5,
        "max_tokens": 300,
    }
    return LLMSettings(**(defaults | values))


def llm_for(fake: FakeProviders, provider: str, **values: Any) -> LLM:
    """``open_llm`` for ``provider`` against the fake server, keys from a private environment."""
    base_url = fake.url if provider in ("anthropic", "azure") else fake.openai_url
    values = {"provider": provider, "model": MODELS.get(provider), "base_url": base_url} | values
    return open_llm(fast_settings(**values), environ=KEYS_ENV)


KEYS_ENV = {
    "ANTHROPIC_API_KEY": KEYS["anthropic"],
    "OPENAI_API_KEY": KEYS["openai"],
    "AZURE_OPENAI_API_KEY": KEYS["azure"],
}


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeProviders]:
    with FakeProviders() as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeProviders) -> Iterator[FakeProviders]:
    """The shared server with an empty script and no requests recorded."""
    fake_server.reset()
    yield fake_server
    fake_server.reset()


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> str:
    return request.param
