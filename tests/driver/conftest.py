"""Fixtures for the driver: one CPU judge for the whole directory, the fake provider server
with a scripted model that answers the driver's calls by their role, and runs on a shared loop.

The scripted model writes the bundled Triton solutions (or the kernels a test queues), proposes
and makes real edits (toggling ``num_warps``), and can be told to answer one call of a role
with something else: prose instead of a kernel, edits that do not apply, an error status.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections import defaultdict, deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adaexplore_mcp.config import Settings
from adaexplore_mcp.config.driver import DriverSettings
from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.driver import DriveSpec, Observer, RunProgress, RunResult, drive
from adaexplore_mcp.driver.prompts import SYSTEM
from adaexplore_mcp.judge import LocalJudge
from adaexplore_mcp.judge.settings import RemoteJudgeSettings
from adaexplore_mcp.llm import LLM, open_llm
from adaexplore_mcp.mcp_server.settings import McpSettings
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import bundled_solution
from tests.conftest import LoopThread, cpu_settings
from tests.llm.conftest import KEYS_ENV, MODELS
from tests.llm.fake_providers import FakeProviders, Recorded, Reply

GELU = bundled_solution("gelu") or ""
SOFTMAX = bundled_solution("softmax") or ""
# tl.arange needs a power-of-two range: a compile error on the interpreter and on a GPU
GELU_COMPILE_ERROR = GELU.replace("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 1000)")
# no Triton kernel at all: the judge rejects it (no_triton_kernel)
GELU_TORCH = (
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n"
    '        return F.gelu(x, approximate="tanh")\n'
)
assert GELU and SOFTMAX and GELU_COMPILE_ERROR != GELU

_KERNEL = re.compile(r"## The current kernel \(node \d+\)\n```python\n(.*?)\n```", re.S)
_TASK = re.compile(r"## The task: (\w+)")


def fenced(code: str, words: str = "A row-parallel kernel that masks the tail.") -> str:
    return f"{words}\n\n```python\n{code.rstrip()}\n```\n"


def edit(old: str, new: str) -> str:
    return f"<edit>\n<old_str>\n{old}\n</old_str>\n<new_str>\n{new}\n</new_str>\n</edit>"


class ScriptedModel:
    """The model behind the fake server: a reply for each call, chosen by the call's role."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kernels: dict[str, deque[str]] = defaultdict(deque)
        self.special: dict[str, deque[Reply]] = defaultdict(deque)
        self.calls: list[tuple[str, str]] = []  # (role, first user message)
        self.delay_s = 0.0  # how long each scripted answer takes

    def queue_kernels(self, task: str, *codes: str) -> None:
        with self.lock:
            self.kernels[task].extend(codes)

    def queue(self, role: str, *replies: Reply | str) -> None:
        """The next calls of ``role`` get these replies (text or a whole Reply)."""
        with self.lock:
            self.special[role].extend(r if isinstance(r, Reply) else Reply(text=r) for r in replies)

    def __call__(self, request: Recorded) -> Reply:
        system, turns = _conversation(request)
        role = next((name for name, text in SYSTEM.items() if text == system), "other")
        if role == "tuner" and len(turns) > 1:
            role = "repair"
        prompt = turns[0] if turns else ""
        with self.lock:
            self.calls.append((role, prompt))
            if self.special[role]:
                reply = self.special[role].popleft()
                return (
                    Reply(
                        text=reply.text,
                        input_tokens=120,
                        output_tokens=60,
                        delay_s=reply.delay_s,
                    )
                    if (reply.status == 200 and reply.body is None)
                    else reply
                )
        text = self._answer(role, prompt)
        return Reply(
            text=text,
            input_tokens=len(prompt) // 4,
            output_tokens=len(text) // 4,
            delay_s=self.delay_s,
        )

    def _answer(self, role: str, prompt: str) -> str:
        if role == "writer":
            task = (_TASK.search(prompt) or [None, "gelu"])[1]
            with self.lock:
                queued = self.kernels[task].popleft() if self.kernels[task] else None
            return fenced(queued or bundled_solution(task) or GELU)
        if role == "reviser":
            return "<plan>\n1. Change num_warps: the block is small for 8 warps.\n</plan>"
        if role in ("tuner", "repair"):
            kernel = (_KERNEL.search(prompt) or [None, ""])[1]
            if "num_warps=8" in kernel:
                return "<plan>\n1. fewer warps\n</plan>\n" + edit("num_warps=8", "num_warps=4")
            if "num_warps=4" in kernel:
                return "<plan>\n1. more warps\n</plan>\n" + edit("num_warps=4", "num_warps=8")
            return edit("BLOCK_SIZE = 4096", "BLOCK_SIZE = 2048")
        if "lesson" in (prompt[:300] + role).lower():
            return "Elementwise kernels: stream wide contiguous blocks and mask the tail."
        return "NONE"  # the memory's distiller: no rule


def _conversation(request: Recorded) -> tuple[str | None, list[str]]:
    body = request.body
    if request.api == "anthropic":
        system = body.get("system")
        messages = body.get("messages", [])
    else:
        messages = [m for m in body.get("messages", []) if m.get("role") != "system"]
        system = next(
            (m["content"] for m in body.get("messages", []) if m.get("role") == "system"), None
        )
    texts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(block.get("text", "") for block in content)
        texts.append(content or "")
    return system, texts


@pytest.fixture(scope="session")
def driver_loop() -> Iterator[LoopThread]:
    loop = LoopThread()
    yield loop
    loop.close()


@pytest.fixture(scope="session")
def shared_judge(
    driver_loop: LoopThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalJudge]:
    home = tmp_path_factory.mktemp("driver-judge")
    judge = LocalJudge(cpu_settings(), home=home, store=Store(home / "db.sqlite3"))
    driver_loop.run(judge.start())
    # Lent to every run: the driver neither starts a second pool nor closes a judge it is lent.
    yield judge
    driver_loop.run(judge.close())


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeProviders]:
    with FakeProviders() as server:
        yield server


@pytest.fixture
def model(fake_server: FakeProviders) -> Iterator[ScriptedModel]:
    fake_server.reset()
    scripted = ScriptedModel()
    fake_server.respond_with(scripted)
    yield scripted
    fake_server.reset()


def run_settings(home: Path, **driver: Any) -> Settings:
    """Everything explicit, so no ADAEXPLORE_* variable of the machine leaks in."""
    return Settings(
        home=home,
        judge=cpu_settings(),
        remote=RemoteJudgeSettings(),
        llm=LLMSettings(),
        memory=MemorySettings(),
        search=SearchSettings(seed=5, p_large=0.0, max_steps=50),
        mcp=McpSettings(),
        driver=DriverSettings(**driver),
    )


def llm_for(fake: FakeProviders, provider: str, **values: Any) -> LLM:
    base_url = fake.url if provider == "anthropic" else fake.openai_url
    settings = LLMSettings(
        provider=provider,  # type: ignore[arg-type]
        model=MODELS[provider],
        base_url=base_url,
        timeout_s=10,
        max_retries=2,
        backoff_s=0.01,
        max_wait_s=0.1,
        max_tokens=2000,
        **values,
    )
    return open_llm(settings, environ=KEYS_ENV)


class Runner:
    """Runs the driver on the shared loop and judge."""

    def __init__(self, loop: LoopThread, judge: LocalJudge, fake: FakeProviders) -> None:
        self.loop = loop
        self.judge = judge
        self.fake = fake

    def __call__(
        self,
        settings: Settings,
        provider: str,
        observer: Observer | None = None,
        **spec: Any,
    ) -> RunResult:
        async def main() -> RunResult:
            async with llm_for(self.fake, provider) as llm:
                return await drive(
                    DriveSpec(**spec), settings, llm, judge=self.judge, observer=observer
                )

        return self.loop.run(main(), timeout=300)


@pytest.fixture
def run_driver(
    driver_loop: LoopThread, shared_judge: LocalJudge, fake_server: FakeProviders
) -> Runner:
    return Runner(driver_loop, shared_judge, fake_server)


class Recorder:
    """An observer that keeps every progress it is shown."""

    def __init__(self) -> None:
        self.seen: list[RunProgress] = []

    def update(self, progress: RunProgress) -> None:
        self.seen.append(progress)


def cli_environment(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a CLI subprocess: ADAEXPLORE_HOME=home, then ``extra``; no provider
    key, base URL or other ADAEXPLORE_* setting of this machine."""
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ADAEXPLORE_") and k not in KEYS_ENV and not k.endswith("_BASE_URL")
    }
    return keep | {"ADAEXPLORE_HOME": str(home)} | (extra or {})


def cli(*args: str, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess:
    """``adaexplore-mcp ARGS`` in a subprocess with ``env`` (see ``cli_environment``)."""
    return subprocess.run(
        [sys.executable, "-m", "adaexplore_mcp.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
