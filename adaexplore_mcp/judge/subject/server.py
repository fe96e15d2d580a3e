"""The loop every user-code process runs: answer the trusted process's requests until it quits.

What differs between the candidate's process and the task's (which module, which requests) is
in their ``Handlers``; this module holds what they share: decoding arguments, encoding outputs,
turning an exception into an error answer, and the gated calls the trusted process times.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from adaexplore_mcp.judge.own_builtins import own_builtins
from adaexplore_mcp.judge.wire import cuda
from adaexplore_mcp.judge.wire.frames import Channel, ChannelClosed
from adaexplore_mcp.judge.wire.ipc import ArenaDecoder, SharingEncoder
from adaexplore_mcp.judge.wire.subject import (
    Answer,
    ArmedAnswer,
    ArmRequest,
    ErrorAnswer,
    LendRequest,
    LentAnswer,
    OkAnswer,
    QuitRequest,
    ReleaseRequest,
    Request,
    Signals,
    SubjectError,
    request_adapter,
)
from adaexplore_mcp.judge.wire.values import (
    Decoder,
    Encoder,
    PayloadDecoder,
    PayloadEncoder,
    Value,
)

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

_GC_DISABLE, _GC_ENABLE = gc.disable, gc.enable

Handler = Callable[[Any, bytes], tuple[Answer, bytes]]


class UserCodeError(Exception):
    """User code raised: the answer is an error, with ``signals`` when forward was running."""

    def __init__(self, error: SubjectError, signals: Signals | None = None, task: bool = False):
        super().__init__(error.message)
        self.error, self.signals, self.task = error, signals or Signals(), task


class Codec:
    """How tensors cross for this process's device."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._arenas = ArenaDecoder() if device.type == "cuda" else None

    def decoder(self, payload: bytes) -> Decoder:
        if self._arenas is not None:
            return self._arenas.with_payload(payload)
        return PayloadDecoder(payload)

    def lend(self, nbytes: int) -> str:
        if self._arenas is None:
            raise UserCodeError(
                SubjectError(type="Unsupported", message="only a GPU process lends memory")
            )
        try:
            return self._arenas.lend(nbytes)
        except cuda.CudaError as exc:
            raise UserCodeError(SubjectError(type="CudaError", message=str(exc))) from None

    def forget(self) -> None:
        """Unmap the arenas of the job that ended (a process that serves many)."""
        if self._arenas is not None:
            self._arenas.forget()

    def encoder(self) -> Encoder:
        return SharingEncoder() if self.device.type == "cuda" else PayloadEncoder()

    def decode(self, values: list[Value], payload: bytes) -> list[Any]:
        return self.decoder(payload).decode_all(values)

    def encode(self, values: list[Any]) -> tuple[list[Value], bytes]:
        encoder = self.encoder()
        specs = encoder.encode_all(values)
        return specs, payload_of(encoder)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def payload_of(encoder: Encoder) -> bytes:
    inner = getattr(encoder, "payload", None)
    if isinstance(inner, PayloadEncoder):
        return inner.payload()
    if isinstance(encoder, PayloadEncoder):
        return encoder.payload()
    return b""


def aliased(outputs: list[Any], inputs: list[Any]) -> int | None:
    """The first output that shares memory with an input, or None."""
    storages = {
        value.untyped_storage().data_ptr()
        for value in inputs
        if isinstance(value, torch.Tensor) and value.numel()
    }
    for index, output in enumerate(outputs):
        if (
            isinstance(output, torch.Tensor)
            and output.numel()
            and output.untyped_storage().data_ptr() in storages
        ):
            return index
    return None


def flatten(output: Any) -> list[Any]:
    """forward's outputs as a list: a tensor is one output, a tuple or list is many. A subclass's
    items are read as the base type's, so none of its own code runs here, after forward (its
    ``__iter__`` had computed a result out of every recorder's sight)."""
    if isinstance(output, tuple):
        return list(tuple.__iter__(output))
    if isinstance(output, list):
        return list(list.__iter__(output))
    return [output]


class Server:
    def __init__(
        self,
        channel: Channel,
        codec: Codec,
        handlers: dict[str, Handler],
        *,
        last_look: Callable[[], None] | None = None,
    ) -> None:
        """``last_look``: called after each answer is made and before it is sent
        (``candidate.last_look``). The candidate's process makes its server before the kernel
        is imported: the loop runs on what is bound here, whatever a kernel later puts on the
        classes (``serve`` itself is taken then too)."""
        self.channel = channel
        self.codec = codec
        self.handlers = handlers
        self._held: list[Any] = []  # the outputs of the last armed span, until released
        self._loop = (channel.receive, channel.send, self._answer, last_look)

    def serve(self) -> bool:
        """Answer requests until told to quit (True) or until the channel closes (False)."""
        receive, send, answer_to, last_look = vars(self)["_loop"]
        while True:
            try:
                request, payload = receive(request_adapter)
            except ChannelClosed:
                return False
            if isinstance(request, QuitRequest):
                self._held.clear()
                return True
            answer, answer_payload = answer_to(request, payload)
            _flush()  # what user code printed reaches the worker before the answer does
            _GC_DISABLE()  # no finalizer of the kernel's runs between the look and the send
            try:
                if last_look is not None:
                    last_look()
                send(answer, answer_payload)
            except ChannelClosed:
                return False
            finally:
                _GC_ENABLE()

    def _answer(self, request: Request, payload: bytes) -> tuple[Answer, bytes]:
        try:
            if isinstance(request, ReleaseRequest):
                self._held.clear()
                return OkAnswer(), b""
            if isinstance(request, LendRequest):
                return LentAnswer(ipc=self.codec.lend(request.nbytes)), b""
            handler = self.handlers.get(request.op)
            if handler is None:
                raise UserCodeError(
                    SubjectError(type="Unsupported", message=f"this process does not {request.op}")
                )
            answer = handler(request, payload)
            if self.codec.device.type == "cuda" and not isinstance(request, ArmRequest):
                # what the answer shares must be written before the other process reads it (an
                # armed span is the exception: its calls wait for the trusted process's gate)
                torch.cuda.synchronize(self.codec.device)
            return answer
        except UserCodeError as failure:
            return ErrorAnswer(
                error=failure.error, signals=failure.signals, task_error=failure.task
            ), b""

    def arm(
        self,
        request: ArmRequest,
        payload: bytes,
        forward: Callable[[list[Any]], Any],
        signals: Signals,
    ) -> tuple[Answer, bytes]:
        """Enqueue one forward per argument list, each behind the gate reaching its number and
        followed by that number written to the done word, and answer at once: the trusted
        process opens the gates once it has the answer, one call at a time. Nothing here waits
        for the GPU (a forward that does is timed with its host time)."""
        started = time.perf_counter()
        decoder = self.codec.decoder(payload)
        calls = [decoder.decode_all(args) for args in request.calls]
        assert isinstance(decoder, ArenaDecoder)
        # The gates and done words go on the legacy default stream whatever stream user code
        # made current: with a stream of its choosing for them, a kernel could leave its work
        # on another that shares their hardware queue, and have its done word written while
        # the work still ran (docs/integrity.md, "The handoff calibration")
        default = torch.cuda.default_stream(self.codec.device)
        stream = default.cuda_stream
        gate = decoder.address(request.gate.ipc) + request.gate.gate_offset
        done = decoder.address(request.gate.ipc) + request.gate.done_offset
        outputs = []
        with torch.cuda.stream(default):
            for number, args in enumerate(calls, start=request.value):
                cuda.wait_value(stream, gate, number)
                outputs.append(flatten(forward(args)))
                cuda.write_value(stream, done, number)
        host_s = time.perf_counter() - started
        self._held = outputs
        encoder = self.codec.encoder()
        specs = [encoder.encode_all(output) for output in outputs]
        return ArmedAnswer(outputs=specs, signals=signals, host_s=host_s), payload_of(encoder)
