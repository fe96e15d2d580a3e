"""The trusted process's end of its link to a user-code process (the candidate's or the task's).

Requests go out; answers come back validated; tensors that come back are copied into the
trusted process's own memory before anything looks at them (``wire.ipc.CopyingDecoder``). A
process that dies, closes its socket or answers out of turn is ``SubjectLost``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Literal

import torch

from adaexplore_mcp.judge.trusted.span_result import NullOffset
from adaexplore_mcp.judge.wire.cuda import CudaError
from adaexplore_mcp.judge.wire.frames import Channel, ChannelClosed, FrameError, PayloadTooLarge
from adaexplore_mcp.judge.wire.ipc import (
    Arena,
    ArenaEncoder,
    CopyingDecoder,
    LentArena,
    arena_bytes,
)
from adaexplore_mcp.judge.wire.subject import (
    Answer,
    CompileNote,
    ErrorAnswer,
    LendRequest,
    LentAnswer,
    ReadyAnswer,
    answer_adapter,
)
from adaexplore_mcp.judge.wire.values import (
    DecodeError,
    Decoder,
    PayloadDecoder,
    PayloadEncoder,
    Value,
)

Role = Literal["candidate", "task", "calibrator"]


# What describing values another process sent can raise: all of it the sender's doing (a size
# torch cannot index, a type where a tensor was due), none of it the judge's
_UNDECODABLE = (DecodeError, ValueError, TypeError, OverflowError, RuntimeError)


class SubjectLost(Exception):
    """The process ended, or broke the protocol (``garbled``), while the trusted process
    waited on it."""

    def __init__(
        self, role: Role, why: str, *, garbled: bool = False, oversized: bool = False
    ) -> None:
        """``oversized``: it sent more than one answer may carry (``answer_limit_mb``)."""
        super().__init__(f"the {role}'s process {why}")
        self.role = role
        self.why = why
        self.garbled = garbled
        self.oversized = oversized


class SubjectFailed(Exception):
    """The process answered with an error (user code raised)."""

    def __init__(self, role: Role, answer: ErrorAnswer) -> None:
        super().__init__(answer.error.message)
        self.role = role
        self.answer = answer


class Link:
    def __init__(
        self,
        role: Role,
        channel: Channel,
        device: torch.device,
        own_handles: set[str],
        *,
        ready: ReadyAnswer | None = None,
        group: int | None = None,
        null_offset: NullOffset | None = None,
    ) -> None:
        """``null_offset``: the null subject's only, where new contexts' handoffs read against
        its own (``trusted.null_panel``; None: not measured)."""
        self.role = role
        self.group = group  # its process group, which the judge may stop (a user-code process)
        self.null_offset = null_offset
        self._ready = ready  # read already (a process that serves many jobs)
        self.channel = channel
        self.device = device
        self.own_handles = own_handles  # every arena this process shared, with any process
        self._arenas: list[Arena | LentArena] = []
        self._trial_arena: Arena | None = None
        self._copier: CopyingDecoder | None = None

    # -- talking -------------------------------------------------------------------------------

    def ready(self, timeout_s: float | None = None) -> ReadyAnswer:
        if self._ready is not None:
            ready, self._ready = self._ready, None
            return ready
        answer, _ = self._receive(timeout_s)
        if not isinstance(answer, ReadyAnswer):
            raise SubjectLost(self.role, "answered out of turn", garbled=True)
        return answer

    def ask(
        self,
        request: Any,
        payload: bytes = b"",
        *,
        expect: type,
        timeout_s: float | None = None,
        on_note: Callable[[CompileNote], None] | None = None,
    ) -> tuple[Any, bytes]:
        """Send ``request``; its answer of type ``expect`` (``SubjectFailed`` for an error).
        ``on_note``: for a request that lets the process send ``CompileNote`` before its
        answer; any other note is out of turn."""
        self.send(request, payload)
        return self.answer(expect=expect, timeout_s=timeout_s, on_note=on_note)

    def send(self, request: Any, payload: bytes = b"") -> None:
        try:
            self.channel.send(request, payload)
        except ChannelClosed as exc:
            raise SubjectLost(self.role, f"is gone ({exc})") from None

    def answer(
        self,
        *,
        expect: type,
        timeout_s: float | None = None,
        on_note: Callable[[CompileNote], None] | None = None,
    ) -> tuple[Any, bytes]:
        answer, payload = self._receive(timeout_s)
        while isinstance(answer, CompileNote) and on_note is not None:
            on_note(answer)
            answer, payload = self._receive(timeout_s)
        if isinstance(answer, ErrorAnswer):
            raise SubjectFailed(self.role, answer)
        if not isinstance(answer, expect):
            raise SubjectLost(
                self.role, f"answered {answer.kind!r} where {expect.__name__} was due", garbled=True
            )
        return answer, payload

    def _receive(self, timeout_s: float | None) -> tuple[Answer, bytes]:
        try:
            return self.channel.receive(answer_adapter, timeout_s=timeout_s)
        except ChannelClosed as exc:
            raise SubjectLost(self.role, f"ended ({exc})") from None
        except PayloadTooLarge as exc:
            why = f"sent an answer too large ({exc})"
            raise SubjectLost(self.role, why, oversized=True) from None
        except FrameError as exc:
            raise SubjectLost(self.role, f"sent a malformed answer ({exc})", garbled=True) from None

    def quit(self) -> None:
        from adaexplore_mcp.judge.wire.subject import QuitRequest

        with contextlib.suppress(ChannelClosed):
            self.channel.send(QuitRequest())

    # -- tensors -------------------------------------------------------------------------------

    def offer(self, values: list[Any]) -> tuple[list[Value], bytes, list[Any]]:
        """Describe ``values`` for the other process: on a GPU their bytes go into an arena of
        this process's, and the values as the other side sees them are returned (each GPU
        tensor's copy in the arena), to check afterwards what it did with them; on the CPU they
        travel in the payload (and nothing is returned: the other side sends them back)."""
        if self.device.type != "cuda":
            encoder = PayloadEncoder()
            specs = encoder.encode_all(values)
            return specs, encoder.payload(), []
        needed = arena_bytes(values)
        if self._trial_arena is None or self._trial_arena.size < needed:
            self._trial_arena = self.new_arena(needed)
        self._trial_arena.reset()
        gpu = ArenaEncoder(self._trial_arena)
        specs = gpu.encode_all(values)
        seen = [gpu.views.get(id(value), value) for value in values]
        torch.cuda.current_stream().synchronize()  # in the arena before the other side looks
        return specs, gpu.payload.payload(), seen

    def new_arena(self, nbytes: int) -> Arena:
        """A dedicated arena of at least ``nbytes``. Arenas are never freed while the job runs:
        the other process may still map one."""
        arena = Arena(max(nbytes, 1 << 20))
        self._arenas.append(arena)
        self.own_handles.add(arena.handle)
        return arena

    def borrow_arena(self, nbytes: int) -> LentArena:
        """An allocation of the other process's own, of ``nbytes`` at least, mapped here to
        write its inputs into: it reads its own memory faster than this process's arenas.
        Outputs shared back in it are refused, as in an arena of this process's."""
        nbytes = max(nbytes, 1 << 20)
        answer, _ = self.ask(LendRequest(nbytes=nbytes), expect=LentAnswer)
        if answer.ipc in self.own_handles:
            raise SubjectLost(self.role, "lent memory the judge shared with it", garbled=True)
        try:
            arena = LentArena(answer.ipc, nbytes)
        except (ValueError, CudaError) as exc:
            raise SubjectLost(
                self.role, f"lent memory that cannot be used ({exc})", garbled=True
            ) from None
        self._arenas.append(arena)
        self.own_handles.add(arena.handle)
        return arena

    def unmap(self) -> None:
        """Unmap what the other process shared (taken values were copied: nothing refers to
        it)."""
        if self._copier is not None:
            self._copier.close()
            self._copier = None

    def arenas(self) -> list[Arena | LentArena]:
        """This link's arenas, to free once the other process is gone (``Arena.free``)."""
        arenas, self._arenas, self._trial_arena = self._arenas, [], None
        return arenas

    def decoder(self, payload: bytes) -> Decoder:
        if self.device.type != "cuda":
            return PayloadDecoder(payload)
        if self._copier is None:  # one for the link: it keeps what it mapped
            self._copier = CopyingDecoder(payload, own_handles=self.own_handles)
        return self._copier.with_payload(payload)

    def take(
        self, values: list[Value], payload: bytes, own_handles: set[str] | None = None
    ) -> list[Any]:
        """The values the other process sent, in this process's memory (``SubjectLost`` when the
        descriptions do not fit what was sent). Memory the trusted process shared itself is
        never accepted back."""
        return self.take_sets([values], payload)[0]

    def take_sets(self, sets: list[list[Value]], payload: bytes) -> list[list[Any]]:
        """Several lists of values in one payload, taken with one wait for the GPU."""
        with self._decoding():
            decoder = self.decoder(payload)
            taken = [decoder.decode_all(values) for values in sets]
            if self.device.type == "cuda":  # copied before the other side may reuse the memory
                torch.cuda.current_stream().synchronize()
            return taken

    def views(self, sets: list[list[Value]], payload: bytes) -> list[list[Any]]:
        """Several lists of values the other process sent, checked and mapped as ``take_sets``
        does but not copied yet: on a GPU each tensor is a view of the other process's memory,
        for ``wire.ipc.copied`` to copy the moment it must be read, without waiting."""
        with self._decoding():
            decoder = self.decoder(payload)
            if isinstance(decoder, CopyingDecoder):
                return [decoder.view_all(values) for values in sets]
            return [decoder.decode_all(values) for values in sets]

    @contextlib.contextmanager
    def _decoding(self) -> Iterator[None]:
        """What the other process sent that does not decode is its fault: it is lost."""
        try:
            yield
        except _UNDECODABLE as exc:
            raise SubjectLost(
                self.role, f"sent values that do not decode ({exc})", garbled=True
            ) from None
