"""Messages between the pool, its workers and their sandboxed children.

Frames are a 4-byte big-endian length followed by UTF-8 JSON, on pipes the processes share
privately; nothing travels over stdout, which belongs to the candidate (and, for a stdio MCP
server, to the protocol).
"""

from __future__ import annotations

import os
import struct
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from adaexplore_mcp.config import (
    IntegritySettings,
    Precision,
    SandboxSettings,
    TimingSettings,
    Tolerance,
)
from adaexplore_mcp.judge.result import Phase
from adaexplore_mcp.tasks import Task

MAX_FRAME = 64 * 1024 * 1024
_HEADER = struct.Struct(">I")


class ChildJob(BaseModel):
    """Everything the sandboxed child needs. It is in the child's memory at fork time and is
    never written to disk, argv or the environment (the seed must stay out of the candidate's
    sight)."""

    kind: Literal["eval", "baseline", "lint", "probe"]
    task: Task | None = None
    code: str | None = None
    device: str = Field(description="'cpu', or 'cuda:N' as the caller names the GPU.")
    seed: int = 0
    trials: int = 3
    odd_trials: int = 1
    tolerances: dict[str, Tolerance] = Field(default_factory=dict)
    precision: Precision = Precision.STRICT
    timing: TimingSettings = Field(default_factory=TimingSettings)
    integrity: IntegritySettings = Field(default_factory=IntegritySettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    gpu_lock: str | None = Field(default=None, description="Lock file base path for this GPU.")
    output_limit_bytes: int = 16 * 1024 * 1024
    cache_dir: str | None = Field(
        default=None, description="Persistent compiler cache (trusted baseline jobs only)."
    )


class JobMessage(BaseModel):
    type: Literal["job"] = "job"
    id: str
    timeout_s: float
    child: ChildJob


class CancelMessage(BaseModel):
    type: Literal["cancel"] = "cancel"
    id: str


class ShutdownMessage(BaseModel):
    type: Literal["shutdown"] = "shutdown"


ToWorker = Annotated[JobMessage | CancelMessage | ShutdownMessage, Field(discriminator="type")]


class ReadyMessage(BaseModel):
    type: Literal["ready"] = "ready"
    pid: int
    torch: str
    triton: str
    python: str
    import_s: float


class PhaseMessage(BaseModel):
    type: Literal["phase"] = "phase"
    id: str = ""
    phase: Phase
    elapsed_s: float = 0.0


class ChildOutcome(BaseModel):
    """How a child ended, as its worker saw it."""

    end: Literal["reported", "crashed", "timeout", "cancelled"]
    report: dict[str, Any] | None = None
    last_phase: Phase = Phase.COMPILING
    exit_code: int | None = None
    signal: str | None = None
    elapsed_s: float = 0.0
    startup_s: float = 0.0
    output_tail: str | None = None
    note: str | None = Field(default=None, description="What the pool saw, when no worker could.")


class DoneMessage(BaseModel):
    type: Literal["done"] = "done"
    id: str
    outcome: ChildOutcome


class ReportMessage(BaseModel):
    """Sent once by the child: the job's result."""

    type: Literal["report"] = "report"
    report: dict[str, Any]


FromWorker = Annotated[
    ReadyMessage | PhaseMessage | DoneMessage | ReportMessage, Field(discriminator="type")
]

to_worker = TypeAdapter(ToWorker)
from_worker = TypeAdapter(FromWorker)


def frame(message: BaseModel) -> bytes:
    body = message.model_dump_json().encode()
    return _HEADER.pack(len(body)) + body


def write_frame(fd: int, message: BaseModel) -> None:
    data = memoryview(frame(message))
    while data:
        written = os.write(fd, data)
        data = data[written:]


def read_exact(fd: int, size: int) -> bytes | None:
    """Blocking read of exactly ``size`` bytes; None at end of file."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = os.read(fd, size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def read_frame(fd: int) -> bytes | None:
    header = read_exact(fd, _HEADER.size)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME:
        raise ValueError(f"frame of {length} bytes exceeds the {MAX_FRAME}-byte limit")
    return read_exact(fd, length)


class FrameBuffer:
    """Splits a byte stream read in arbitrary chunks into frames."""

    def __init__(self) -> None:
        self._data = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        self._data += chunk
        frames = []
        while len(self._data) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._data)
            if length > MAX_FRAME:
                raise ValueError(f"frame of {length} bytes exceeds the {MAX_FRAME}-byte limit")
            end = _HEADER.size + length
            if len(self._data) < end:
                break
            frames.append(bytes(self._data[_HEADER.size : end]))
            del self._data[:end]
        return frames
