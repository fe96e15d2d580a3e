"""`adaexplore-mcp judge serve` under load, as a real process: 200 evaluations from 20 clients at
once, a fifth of them crashing, hanging or exhausting memory. Every request gets exactly one
verdict, intruders get nothing run, the service stays up and leaves no process behind."""

from __future__ import annotations

import asyncio
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from adaexplore_mcp.judge import RemoteJudge
from adaexplore_mcp.judge.settings import RemoteJudgeSettings
from adaexplore_mcp.tasks import Task

from .servers import (
    GELU,
    SOFTMAX,
    descendants,
    gelu_exiting,
    gelu_hanging,
    gelu_hogging_memory,
    gelu_solution,
    gelu_wrong,
    payload,
    softmax_segfaulting,
    softmax_solution,
)

pytestmark = pytest.mark.slow

TOKEN = "reliability-token-42"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CLIENTS = 20
REMOTE_JUDGE_CLIENTS = 5  # the others speak plain httpx, a third of their requests streamed


@dataclass(frozen=True)
class Case:
    kind: str
    task: Task
    code: str
    expected: str


def _cases() -> list[Case]:
    kinds = [
        (64, Case("correct", GELU, gelu_solution(), "correct")),
        (40, Case("correct-softmax", SOFTMAX, softmax_solution(), "correct")),
        (40, Case("incorrect", GELU, gelu_wrong(), "incorrect")),
        (16, Case("exit", GELU, gelu_exiting(), "runtime_error")),
        (12, Case("segfault", SOFTMAX, softmax_segfaulting(), "runtime_error")),
        (16, Case("memory", GELU, gelu_hogging_memory(), "runtime_error")),
        (12, Case("hang", GELU, gelu_hanging(), "timeout")),
    ]
    cases = [case for count, case in kinds for _ in range(count)]
    assert len(cases) == 200
    random.Random(7).shuffle(cases)
    return cases


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env |= {
        "ADAEXPLORE_HOME": str(tmp_path / "home"),
        "ADAEXPLORE_SERVICE__TOKEN": TOKEN,
        "ADAEXPLORE_JUDGE__WORKERS_PER_DEVICE": "4",
        "ADAEXPLORE_JUDGE__TIMEOUT_S": "4",
        "ADAEXPLORE_JUDGE__SANDBOX__MEMORY_LIMIT_MB": "2048",
    }
    log = (tmp_path / "serve.log").open("w")
    command = ["judge", "serve", "--port", "0", "--device", "cpu"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "adaexplore_mcp.cli", *command],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=env,
    )
    try:
        yield proc, _listening_url(proc, tmp_path / "serve.log")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def _listening_url(proc: subprocess.Popen, log: Path) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if line.startswith("listening on "):
                return line.split()[2]
        assert proc.poll() is None, f"judge serve exited: {log.read_text()}"
    raise AssertionError(f"judge serve did not start within 60 s: {log.read_text()}")


async def _one(client: httpx.AsyncClient, case: Case, streaming: bool) -> str:
    body = payload(case.task, case.code)
    if not streaming:
        response = await client.post("/v1/evaluate", json=body)
        assert response.status_code == 200, response.text
        return response.json()["status"]
    headers = {"Accept": "application/x-ndjson"}
    async with client.stream("POST", "/v1/evaluate", json=body, headers=headers) as response:
        assert response.status_code == 200
        lines = [json.loads(line) async for line in response.aiter_lines() if line]
    assert lines[0] == {"phase": "queued", "elapsed_s": 0.0}
    assert all("phase" in line for line in lines[:-1])
    return lines[-1]["result"]["status"]


async def _storm(url: str, cases: list[Case]) -> tuple[dict[int, list[str]], Counter]:
    verdicts: dict[int, list[str]] = {i: [] for i in range(len(cases))}
    refusals: Counter = Counter()

    async def plain_client(mine: list[int]) -> None:
        async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=120) as client:
            for n, i in enumerate(mine):
                verdicts[i].append(await _one(client, cases[i], streaming=n % 3 == 0))

    async def remote_client(mine: list[int]) -> None:
        settings = RemoteJudgeSettings(url=url, token=TOKEN, retries=0)
        async with RemoteJudge(settings) as judge:
            for i in mine:
                result = await judge.evaluate(cases[i].task, cases[i].code)
                verdicts[i].append(result.status.value)

    async def intruder() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            for n in range(10):
                response = await client.post("/v1/evaluate", json=payload(GELU, gelu_solution()))
                refusals[response.status_code] += 1
                bad = b'{"task": {"name": "gelu"}, "code": 1}' if n % 2 else b"{"
                malformed = AUTH | {"Content-Type": "application/json"}
                response = await client.post("/v1/evaluate", content=bad, headers=malformed)
                refusals[response.status_code] += 1
                await asyncio.sleep(0.2)

    shares = [list(range(c, len(cases), CLIENTS)) for c in range(CLIENTS)]
    await asyncio.gather(
        *(remote_client(s) for s in shares[:REMOTE_JUDGE_CLIENTS]),
        *(plain_client(s) for s in shares[REMOTE_JUDGE_CLIENTS:]),
        intruder(),
    )
    return verdicts, refusals


def _settle(pid: int, count: int, within_s: float) -> set[int]:
    deadline = time.monotonic() + within_s
    while len(found := descendants(pid)) != count and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def _leftovers(workers: set[int], within_s: float) -> dict[int, list[int]]:
    """Per worker, what it has beyond what it keeps between jobs: at most four processes (the
    trusted one, a kept task process, a spare candidate's and a task's set aside), each with at
    most its sandbox's two (a PID namespace's init and the process that runs user code)."""
    deadline = time.monotonic() + within_s
    while True:
        extra = {}
        for worker in workers:
            children = _children(worker)
            below = [len(descendants(child)) for child in children]
            if len(children) > 4 or any(count > 2 for count in below):
                extra[worker] = children
        if not extra or time.monotonic() >= deadline:
            return extra
        time.sleep(0.1)


def _children(pid: int) -> list[int]:
    return [p for p in descendants(pid) if _parent(p) == pid]


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def test_two_hundred_concurrent_evaluations_each_get_one_verdict(service):
    proc, url = service
    baseline = _settle(proc.pid, 4, within_s=10)  # the four warm workers
    assert len(baseline) == 4
    cases = _cases()

    started = time.monotonic()
    verdicts, refusals = asyncio.run(_storm(url, cases))
    elapsed = time.monotonic() - started

    wrong = {
        (i, cases[i].kind, tuple(v))
        for i, v in verdicts.items()
        if v != [cases[i].expected]  # exactly one verdict, the expected one
    }
    assert not wrong, sorted(wrong)[:10]
    assert refusals == {401: 10, 422: 10}

    health = httpx.get(f"{url}/v1/health", headers=AUTH, timeout=10)
    assert health.status_code == 200
    [cpu] = health.json()["devices"]
    assert cpu["served"] == len(cases)  # the intruders' requests never reached a worker
    assert cpu["queued"] == cpu["running"] == 0
    assert not _leftovers(baseline, within_s=10)

    tree = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    time.sleep(0.5)
    assert not [pid for pid in tree if Path(f"/proc/{pid}").exists()]
    print(f"200 evaluations in {elapsed:.1f} s")
