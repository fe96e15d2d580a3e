"""The Ray cluster's head as the judge reaches it, and whether it still answers.

When every actor an evaluation tried was lost, the head tells a cluster that went away (a
restart, a crashed head, the end of a Slurm allocation) from actors lost in a cluster that is
still there: the first is not fixed by waiting or retrying, the cluster has to be started again.
A TCP connection to the head's port is asked rather than Ray itself, since Ray's own calls to a
head that is gone wait out its reconnection timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

from adaexplore_mcp.judge.exceptions import JudgeUnavailable

_ANSWER_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Head:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    async def answers(self, timeout_s: float = _ANSWER_TIMEOUT_S) -> bool:
        """Whether the head accepts a connection on its port within ``timeout_s``."""
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), timeout_s
            )
        except (OSError, TimeoutError):
            return False
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return True

    async def gone(self, every_s: float, misses: int = 2) -> None:
        """Returns once the head has missed ``misses`` checks in a row, ``every_s`` apart (one
        missed check may be a busy head)."""
        missed = 0
        while missed < misses:
            await asyncio.sleep(every_s)
            missed = 0 if await self.answers() else missed + 1


def head_of(address: str, ray: Any) -> Head | None:
    """The head this process joined: the Ray Client server a 'ray://HOST:PORT' address names,
    else the GCS of the cluster ``ray`` is connected to. None when it cannot be told."""
    if address.startswith("ray://"):
        return parse_head(address.removeprefix("ray://"))
    with contextlib.suppress(Exception):  # a Ray without the runtime context's address
        return parse_head(ray.get_runtime_context().gcs_address)
    return None


def parse_head(host_port: str) -> Head | None:
    host, _, port = host_port.rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        return None
    return Head(host=host.strip("[]"), port=int(port))


def cluster_gone(head: Head, in_flight: str | None = None) -> JudgeUnavailable:
    """The error for a judge whose cluster went away, with ``in_flight`` (the evaluation of a
    task, …) when one was cut off."""
    cut_off = f", with {in_flight} in flight" if in_flight else ""
    return JudgeUnavailable(
        f"the Ray cluster went away: its head at {head} does not answer and every judge actor "
        f"is lost{cut_off}. No verdict was recorded. Start the cluster again (`ray start "
        "--head`, or the launcher that started it) and run the command again (with --resume "
        "for a `drive` run: it continues where it stopped)"
    )
