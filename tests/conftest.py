"""Shared fixtures. Tests run the judge on the CPU, in Triton's interpreter."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from adaexplore_mcp.judge import LocalJudge
from adaexplore_mcp.judge.settings import IntegritySettings, JudgeSettings
from adaexplore_mcp.store import Store

T = TypeVar("T")


class LoopThread:
    """An event loop in a background thread, so sync tests can share one async judge."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 600) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


class SyncJudge:
    def __init__(self, loop: LoopThread, judge: LocalJudge) -> None:
        self.loop = loop
        self.judge = judge

    def evaluate(self, task, code, **kwargs):
        return self.loop.run(self.judge.evaluate(task, code, **kwargs))

    def lint(self, task, **kwargs):
        return self.loop.run(self.judge.lint(task, **kwargs))


def run_cli(
    *args: str,
    home: Path,
    stdin: str | None = None,
    timeout: float = 300,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """``adaexplore-mcp ARGS`` in a subprocess, with ADAEXPLORE_HOME=home, ``env`` and no other
    ADAEXPLORE_* setting inherited."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env = inherited | (env or {}) | {"ADAEXPLORE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "adaexplore_mcp.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        input=stdin,
        timeout=timeout,
    )


def cpu_settings(**overrides: Any) -> JudgeSettings:
    values: dict[str, Any] = {"device": "cpu", "workers_per_device": 2, "timeout_s": 60}
    return JudgeSettings(**(values | overrides))


@pytest.fixture(scope="session")
def loop_thread() -> Iterator[LoopThread]:
    loop = LoopThread()
    yield loop
    loop.close()


@pytest.fixture(scope="session")
def judge_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="session")
def cpu_judge(loop_thread: LoopThread, judge_home: Path) -> Iterator[SyncJudge]:
    judge = LocalJudge(cpu_settings(), home=judge_home, store=Store(judge_home / "db.sqlite3"))
    loop_thread.run(judge.start())
    yield SyncJudge(loop_thread, judge)
    loop_thread.run(judge.close())


@pytest.fixture(scope="session")
def unguarded_judge(loop_thread: LoopThread, judge_home: Path) -> Iterator[SyncJudge]:
    """The runtime integrity checks off: for tests of what lies beneath them (the verdicts'
    mechanics and the operating-system sandbox), with kernels that are plain torch."""
    settings = cpu_settings(integrity=IntegritySettings(enabled=False))
    judge = LocalJudge(settings, home=judge_home / "unguarded")
    loop_thread.run(judge.start())
    yield SyncJudge(loop_thread, judge)
    loop_thread.run(judge.close())


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """ADAEXPLORE_HOME in a temporary directory, for commands that read Settings()."""
    home = tmp_path / "home"
    monkeypatch.setenv("ADAEXPLORE_HOME", str(home))
    for key in list(os.environ):
        if key.startswith("ADAEXPLORE_JUDGE"):
            monkeypatch.delenv(key)
    return home
