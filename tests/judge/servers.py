"""The judge service for tests: started over loopback, and the candidates the tests send it."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path

import uvicorn

from adaexplore_mcp.judge import LocalJudge
from adaexplore_mcp.judge.service.app import create_app
from adaexplore_mcp.judge.service.server import uvicorn_config
from adaexplore_mcp.judge.settings import ServiceSettings
from adaexplore_mcp.listening import url_of
from adaexplore_mcp.tasks import Task, bundled_solution, get_bundled_task

from ..conftest import LoopThread

GELU = get_bundled_task("gelu")
SOFTMAX = get_bundled_task("softmax")


class RunningService:
    """``create_app`` served by uvicorn on a free loopback port, in the tests' event loop."""

    def __init__(
        self, loop: LoopThread, judge: LocalJudge, settings: ServiceSettings | None = None
    ) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = url_of(sock)
        self.judge = judge
        settings = settings or ServiceSettings()
        config = uvicorn_config(create_app(judge, settings), timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self._done = asyncio.run_coroutine_threadsafe(self.server.serve(sockets=[sock]), loop.loop)
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline and not self._done.done(), "uvicorn did not start"
            time.sleep(0.01)

    def served(self) -> int:
        return sum(lane.served for lane in self.judge.lanes_status())

    def stop(self) -> None:
        self.server.should_exit = True
        self._done.result(15)


def payload(task: Task, code: str, **extra: object) -> dict:
    return {"task": {"name": task.name, "source": task.source}, "code": code, **extra}


def _gelu() -> str:
    code = bundled_solution("gelu")
    assert code is not None
    return code


def gelu_solution() -> str:
    return _gelu()


def gelu_wrong() -> str:
    code = _gelu().replace("tl.exp(-2.0 * u)", "tl.exp(-1.0 * u)", 1)
    assert code != _gelu()
    return code


def gelu_doing_first(statement: str) -> str:
    """The gelu solution with ``statement`` run first in ``forward``."""
    first = "        x = x.contiguous()\n"
    assert first in _gelu()
    return "import os\n" + _gelu().replace(first, f"        {statement}\n{first}", 1)


def gelu_exiting() -> str:
    return gelu_doing_first("os._exit(3)")


def gelu_hanging() -> str:
    return gelu_doing_first("while True: pass")


def gelu_hogging_memory() -> str:
    # 64 GiB, touched: more than the child's memory limit (and than the test machine has)
    return gelu_doing_first("torch.ones(64 * 2**30 // 4).sum()")


def softmax_solution() -> str:
    code = bundled_solution("softmax")
    assert code is not None
    return code


def softmax_segfaulting() -> str:
    # An unmasked out-of-bounds store segfaults Triton's interpreter.
    code = softmax_solution()
    old = "tl.store(y_row + cols, y, mask=mask)"
    assert old in code
    return code.replace(old, "tl.store(y_row + cols + 100000000, y)", 1)


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc, so sessions and groups do not hide any)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses; the fields follow the last ')'
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found
