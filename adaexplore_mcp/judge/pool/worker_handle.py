"""The pool's side of one warm worker process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable

from adaexplore_mcp.judge.wire.frames import HEADER, encode
from adaexplore_mcp.judge.wire.jobs import (
    CancelMessage,
    ChildOutcome,
    DoneMessage,
    JobMessage,
    PhaseMessage,
    ReadyMessage,
    ShutdownMessage,
    from_worker,
)

log = logging.getLogger(__name__)

PhaseCallback = Callable[[PhaseMessage], None]


class WorkerDied(RuntimeError):
    pass


class WorkerHandle:
    def __init__(self, name: str, env: dict[str, str], *, start_timeout_s: float = 300.0) -> None:
        self.name = name
        self.env = env
        self.start_timeout_s = start_timeout_s
        self.ready: ReadyMessage | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.StreamReader | None = None
        self._control_fd: int | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._write_lock = asyncio.Lock()

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    async def start(self) -> ReadyMessage:
        started = time.perf_counter()
        control_read, control_write = os.pipe()
        events_read, events_write = os.pipe()
        try:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-P",  # the caller's working directory (an agent's project) stays off its path
                "-m",
                "adaexplore_mcp.judge.worker.main",
                "--control-fd",
                str(control_read),
                "--events-fd",
                str(events_write),
                pass_fds=(control_read, events_write),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
            )
        finally:
            os.close(control_read)
            os.close(events_write)
        self._control_fd = control_write
        loop = asyncio.get_running_loop()
        self._reader = asyncio.StreamReader(limit=2**26)
        protocol = asyncio.StreamReaderProtocol(self._reader)
        self._transport, _ = await loop.connect_read_pipe(
            lambda: protocol, os.fdopen(events_read, "rb", buffering=0)
        )
        try:
            message = await asyncio.wait_for(self._read(), self.start_timeout_s)
        except (TimeoutError, WorkerDied) as exc:
            await self.stop()
            raise WorkerDied(
                f"worker {self.name} did not start within {self.start_timeout_s:g} s ({exc}); "
                "is torch importable by this Python?"
            ) from exc
        if not isinstance(message, ReadyMessage):
            await self.stop()
            raise WorkerDied(f"worker {self.name} sent {message.type!r} before 'ready'")
        self.ready = message
        log.debug(
            "worker %s ready in %.2fs (pid %s)",
            self.name,
            time.perf_counter() - started,
            message.pid,
        )
        return message

    async def _read(self):
        assert self._reader is not None
        try:
            header = await self._reader.readexactly(HEADER.size)
            body_size, payload_size = HEADER.unpack(header)
            body = await self._reader.readexactly(body_size)
            if payload_size:
                await self._reader.readexactly(payload_size)
        except asyncio.IncompleteReadError as exc:
            code = await self._exit_code()
            raise WorkerDied(f"worker {self.name} exited (code {code})") from exc
        return from_worker.validate_json(body)

    async def _exit_code(self) -> int | None:
        if self._process is None:
            return None
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(self._process.wait(), 5)
        return None

    async def _send(self, data: bytes) -> None:
        fd = self._control_fd
        if fd is None:
            raise WorkerDied(f"worker {self.name} is not running")
        async with self._write_lock:
            try:
                await asyncio.to_thread(_write_all, fd, data)
            except OSError as exc:
                raise WorkerDied(f"worker {self.name} is gone: {exc}") from exc

    async def run(
        self, job: JobMessage, on_phase: PhaseCallback | None, cancelled: asyncio.Event
    ) -> ChildOutcome:
        """Run one job. Setting ``cancelled`` asks the worker to kill the child; the outcome is
        then ``end='cancelled'``."""
        await self._send(encode(job))
        watcher = asyncio.create_task(self._cancel_when_set(job.id, cancelled))
        try:
            while True:
                message = await self._read()
                if isinstance(message, PhaseMessage) and message.id == job.id:
                    if on_phase is not None:
                        on_phase(message)
                elif isinstance(message, DoneMessage) and message.id == job.id:
                    return message.outcome
        finally:
            watcher.cancel()

    async def _cancel_when_set(self, job_id: str, cancelled: asyncio.Event) -> None:
        await cancelled.wait()
        with contextlib.suppress(WorkerDied):
            await self._send(encode(CancelMessage(id=job_id)))

    async def stop(self, grace_s: float = 5.0) -> None:
        process, self._process = self._process, None
        if self._control_fd is not None:
            if process is not None and process.returncode is None:
                with contextlib.suppress(OSError):
                    _write_all(self._control_fd, encode(ShutdownMessage()))
            with contextlib.suppress(OSError):
                os.close(self._control_fd)
            self._control_fd = None
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        if process is None:
            return
        try:
            await asyncio.wait_for(process.wait(), grace_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 9)
            await process.wait()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
