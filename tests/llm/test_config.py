"""From settings and the environment to an LLM: what is refused before anything is sent, keys,
OpenAI-compatible servers, Azure, and clients passed in."""

from __future__ import annotations

import json

import openai
import pytest

from adaexplore_mcp.config import Settings
from adaexplore_mcp.config.llm import LLMSettings, ModelPrice
from adaexplore_mcp.llm import LLM, AnthropicLLM, LLMNotConfigured, Message, OpenAILLM, open_llm

from .conftest import KEYS, KEYS_ENV, fast_settings, llm_for, run
from .fake_providers import Reply

ASK = [Message(role="user", content="Say ok.")]


def test_no_provider():
    with pytest.raises(LLMNotConfigured, match="ADAEXPLORE_LLM__PROVIDER"):
        open_llm(LLMSettings(), environ=KEYS_ENV)


@pytest.mark.parametrize("provider", ["anthropic", "openai", "azure"])
def test_no_model(provider):
    with pytest.raises(LLMNotConfigured, match="ADAEXPLORE_LLM__MODEL") as caught:
        open_llm(LLMSettings(provider=provider), environ=KEYS_ENV)
    assert caught.value.provider == provider


@pytest.mark.parametrize(
    ("provider", "variable"),
    [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
        ("azure", "AZURE_OPENAI_API_KEY"),
    ],
)
def test_no_key(provider, variable):
    settings = LLMSettings(provider=provider, model="m", base_url=None, api_version="2024-10-21")
    with pytest.raises(LLMNotConfigured, match=f"set {variable}"):
        open_llm(settings, environ={"SOME_OTHER_KEY": "x", variable: ""})


@pytest.mark.parametrize(
    ("values", "missing"),
    [
        ({"api_version": "2024-10-21"}, "ADAEXPLORE_LLM__BASE_URL"),
        ({"base_url": "https://example.invalid"}, "ADAEXPLORE_LLM__API_VERSION"),
    ],
)
def test_azure_needs_an_endpoint_and_an_api_version(values, missing):
    with pytest.raises(LLMNotConfigured, match=missing):
        open_llm(LLMSettings(provider="azure", model="deployment", **values), environ=KEYS_ENV)


def test_keys_come_from_the_process_environment(fake, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
    settings = fast_settings(provider="anthropic", model="claude-opus-5", base_url=fake.url)

    async def scenario():
        async with open_llm(settings) as llm:
            assert isinstance(llm, AnthropicLLM)
            await llm.complete(messages=ASK)

    run(scenario())
    assert fake.requests[0].api_key == "sk-ant-from-the-environment"


def test_settings_from_the_environment_hold_no_key(monkeypatch):
    monkeypatch.setenv("ADAEXPLORE_LLM__PROVIDER", "openai")
    monkeypatch.setenv("ADAEXPLORE_LLM__MODEL", "gpt-5.4-mini")
    monkeypatch.setenv("ADAEXPLORE_LLM__BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("ADAEXPLORE_LLM__TIMEOUT_S", "30")
    monkeypatch.setenv(
        "ADAEXPLORE_LLM__PRICES",
        json.dumps({"my-model": {"input_per_mtok": 1, "output_per_mtok": 2}}),
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-never-dumped")
    llm = Settings().llm
    assert (llm.provider, llm.model, llm.base_url, llm.timeout_s) == (
        "openai",
        "gpt-5.4-mini",
        "http://127.0.0.1:8000/v1",
        30.0,
    )
    assert llm.prices == {"my-model": ModelPrice(input_per_mtok=1, output_per_mtok=2)}
    assert "sk-secret-never-dumped" not in Settings().model_dump_json()


def test_an_openai_compatible_server_without_a_key(fake):
    """vLLM as it is usually started: its own model names, no --api-key."""
    fake.script(Reply(text="ok", input_tokens=20, output_tokens=2))
    settings = fast_settings(
        provider="openai", model="Qwen/Qwen2.5-Coder-32B-Instruct", base_url=fake.openai_url
    )

    async def scenario():
        async with open_llm(settings, environ={}) as llm:
            assert isinstance(llm, OpenAILLM)
            return await llm.complete(messages=ASK, max_tokens=16, stream=True), llm.totals

    completion, totals = run(scenario())
    assert completion.model == "Qwen/Qwen2.5-Coder-32B-Instruct"
    assert completion.usage.cost_usd is None and totals.input_tokens == 20
    (request,) = fake.requests
    assert request.path == "/v1/chat/completions"
    assert request.api_key == "no-key"
    assert request.body["max_tokens"] == 16 and "max_completion_tokens" not in request.body


def test_azure_routes_to_the_deployment(fake):
    fake.script(Reply(model="gpt-4o-2024-11-20", input_tokens=1_000_000, output_tokens=0))

    async def scenario():
        async with llm_for(fake, "azure", model="kernels-gpt4o", api_version="2024-10-21") as llm:
            return await llm.complete(messages=ASK, max_tokens=40)

    completion = run(scenario())
    assert completion.provider == "azure"
    # priced by the model that answered, not the deployment's name
    assert completion.usage.cost_usd == pytest.approx(2.5)
    (request,) = fake.requests
    assert request.path == "/openai/deployments/kernels-gpt4o/chat/completions"
    assert request.query["api-version"] == "2024-10-21"
    assert request.headers["api-key"] == KEYS["azure"]
    assert request.body["max_completion_tokens"] == 40


def test_an_injected_client_is_used_with_its_retries_off_and_left_open(fake):
    fake.script(Reply.error(500), Reply(text="second"))
    settings = LLMSettings(provider="openai", model="gpt-4.1", max_retries=1, backoff_s=0.01)

    async def scenario():
        client = openai.AsyncOpenAI(api_key="sk-injected", base_url=fake.openai_url, max_retries=5)
        llm = OpenAILLM(settings, client=client)
        completion = await llm.complete(messages=ASK, max_tokens=8)
        await llm.close()
        assert not client.is_closed()
        await client.close()
        return completion, llm.totals

    completion, totals = run(scenario())
    assert completion.text == "second" and totals.retries == 1
    assert len(fake.requests) == 2
    # no base URL in the settings: OpenAI itself, whose reasoning models need this field
    assert fake.requests[0].body["max_completion_tokens"] == 8
    assert fake.requests[0].api_key == "sk-injected"


def test_an_owned_client_is_closed(fake):
    async def scenario():
        llm = llm_for(fake, "anthropic")
        await llm.complete(messages=ASK)
        await llm.close()
        return llm._client.is_closed()

    assert run(scenario())


def test_every_backend_is_an_llm(fake):
    for provider in ("anthropic", "openai"):
        assert isinstance(llm_for(fake, provider), LLM)


def test_the_fake_answers_by_a_function_once_the_script_is_spent(fake):
    fake.script(Reply(text="scripted"))
    fake.respond_with(lambda request: Reply(text=f"echo {request.body['max_tokens']}"))

    async def scenario():
        async with llm_for(fake, "anthropic") as llm:
            return [(await llm.complete(messages=ASK, max_tokens=n)).text for n in (5, 6)]

    assert run(scenario()) == ["scripted", "echo 6"]
    assert fake.pending == 0
