"""The trusted process's only way out: phases and the final report, on the pipe to its worker."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from pydantic import BaseModel

from adaexplore_mcp.judge.result import Phase
from adaexplore_mcp.judge.wire.frames import write_frame
from adaexplore_mcp.judge.wire.jobs import PhaseMessage, ReportMessage


class TaskFailed(Exception):
    """The task's own code failed: the judge cannot rule on a candidate."""


class Reporter:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.phase_now: Phase | None = None

    @contextlib.contextmanager
    def task_running(self) -> Iterator[None]:
        """Around a wait on the task's own code: a time limit reached then is the task's."""
        phase = self.phase_now or Phase.COMPILING
        write_frame(self.fd, PhaseMessage(phase=phase, task_running=True))
        try:
            yield
        finally:
            write_frame(self.fd, PhaseMessage(phase=self.phase_now or phase))

    def phase(self, phase: Phase) -> None:
        if phase is not self.phase_now:
            self.phase_now = phase
            write_frame(self.fd, PhaseMessage(phase=phase))

    def report(self, kind: str, body: BaseModel | dict) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        payload = body.model_dump(mode="json") if isinstance(body, BaseModel) else body
        write_frame(self.fd, ReportMessage(report={"kind": kind, "body": payload}))
