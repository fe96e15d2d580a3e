"""The fake provider server answering the Adapt stage's calls: scripted task replies for the
synthesis, then kernels for the driver's steps and a rule for the memory's distiller."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from adaexplore_mcp.config import Settings
from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.llm import LLM, open_llm
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task
from tests.llm.conftest import KEYS_ENV
from tests.llm.fake_providers import FakeProviders, Recorded, Reply

RULE = "You cannot call tl.arange over a length that is not a power of two; round it up and mask."

_TASK_TAIL = """

batch_size = 256
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


SMALL_SHAPES = {"batch_size": 4, "dim": 256}
ODD_SHAPES = [{"batch_size": 3, "dim": 1000}]
"""


def task_file(doc: str, forward: str) -> str:
    return (
        f'"""{doc}"""\n\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n'
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        f"    def forward(self, x):\n        return {forward}\n" + _TASK_TAIL
    )


def reply(name: str, source: str) -> Reply:
    return Reply(text=f"name: {name}\n\nA new task.\n\n```python\n{source}```\n")


SCALED_GELU = task_file("Twice the tanh GELU.", 'F.gelu(x, approximate="tanh") * 2.0')
RELU_SQUARED = task_file("Squared ReLU.", "torch.relu(x) * torch.relu(x)")
GELU_COPY = get_bundled_task("gelu").source.replace(
    "GELU with the tanh approximation, float32.", "A copy of GELU with another docstring."
)
CRASHING = task_file("A matmul with the wrong shape.", "x @ torch.ones(3, 5)")
LINT_FAILING = task_file("A mean that is always near zero.", "x.mean(dim=-1).mean() * 1e-6")
BROKEN = "class Model(nn.Module)\n    def forward(self, x) return x\n"

# the bundled GELU kernel, doubled; and a kernel whose tl.arange range is not a power of two
GELU = bundled_solution("gelu") or ""
SCALED_GELU_KERNEL = GELU.replace(
    "tl.store(y_ptr + offsets, y,", "tl.store(y_ptr + offsets, 2.0 * y,"
)
RELU_SQUARED_BROKEN = (
    "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n"
    "@triton.jit\ndef relu_sq(x_ptr, y_ptr, n):\n"
    "    offs = tl.program_id(0) * 1000 + tl.arange(0, 1000)\n"
    "    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n"
    "    r = tl.maximum(x, 0.0)\n"
    "    tl.store(y_ptr + offs, r * r, mask=offs < n)\n\n\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n"
    "        y = torch.empty_like(x)\n        n = x.numel()\n"
    "        relu_sq[(triton.cdiv(n, 1000),)](x, y, n)\n        return y\n"
)
assert SCALED_GELU_KERNEL != GELU

_TASK = re.compile(r"## The task: (\w+)")


def _text(request: Recorded) -> str:
    parts = [json.dumps(request.body.get("system", ""))]
    for message in request.body.get("messages", []):
        content = message.get("content")
        parts.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(parts)


def driver_responder(request: Recorded) -> Reply:
    """Kernels for the driver's steps, a rule for the distiller, NONE for anything else."""
    text = _text(request)
    if "You maintain a memory of mistakes" in text:
        return Reply(text=RULE)
    task = _TASK.search(text)
    if task and task.group(1) == "scaled_gelu":
        return Reply(text=f"Doubled GELU.\n\n```python\n{SCALED_GELU_KERNEL}```\n")
    if task and task.group(1) == "relu_squared":
        return Reply(text=f"One pass.\n\n```python\n{RELU_SQUARED_BROKEN}```\n")
    return Reply(text="NONE")


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeProviders]:
    with FakeProviders() as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeProviders) -> Iterator[FakeProviders]:
    fake_server.reset()
    fake_server.respond_with(driver_responder)
    yield fake_server
    fake_server.reset()


def llm_settings(fake: FakeProviders) -> LLMSettings:
    return LLMSettings(
        provider="openai",
        model="gpt-4o",
        base_url=fake.openai_url,
        timeout_s=10,
        max_retries=0,
        max_tokens=2000,
    )


def llm_for(fake: FakeProviders) -> LLM:
    return open_llm(llm_settings(fake), environ=KEYS_ENV)


def settings_for(home: Path, fake: FakeProviders) -> Settings:
    return Settings(home=home, llm=llm_settings(fake), memory=MemorySettings(starter=False))
