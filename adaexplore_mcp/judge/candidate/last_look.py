"""The server's last look before each answer leaves the candidate's process.

Everything the judge observes in the candidate's process runs on objects a kernel can reach
and replace: ``type.__subclasses__`` leads to every class of the judge's, a method's
``__globals__`` to its module, and neither raises an audit event. The watch
(``candidate.watch``) notes what the recorders, the harness and the answer's way out run on,
and reports a replacement as an event in the call's signals; but a replacement on the way out
(pydantic's ``model_dump_json``, the channel's ``send``) could take that event out of the
answer it was put in. So the server makes one more look after the answer is made and before
it is sent (``subject.server``), on nothing but what this function was given before the kernel
was imported: the watch's bound ``replaced``, the socket, the bytes of a prepared
answer, and C functions. On a replacement it sends that answer (an error with a
``harness_tampering`` event naming what was replaced) straight to the socket and ends the
process: the trusted process rejects the kernel.

What this does not see: a replacement that puts itself back before the look and returns after
it (a finalizer), where none of the judge's code looks (docs/integrity.md, "What stays out of
reach").
"""

from __future__ import annotations

import _socket
import os
from collections.abc import Callable
from typing import Any

from adaexplore_mcp.judge.candidate.sealing import sealed
from adaexplore_mcp.judge.own_builtins import own_builtins
from adaexplore_mcp.judge.wire.frames import HEADER, body_of
from adaexplore_mcp.judge.wire.subject import AuditEvent, ErrorAnswer, Signals, SubjectError

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

_MARK = "@@REPLACED@@"
# what a replaced name may show of itself in the answer (the watch's labels are dotted names)
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._<>")


def last_look(replaced: Callable[[], str | None], sock: Any, kept: list[Any]) -> Callable[[], None]:
    """A sealed function for the server to call before each answer: lets go of ``kept`` (what
    the judge held back from a call, so that no finalizer of the kernel's runs between its
    looks: it runs now, before this one), then returns when nothing is replaced; otherwise
    sends the prepared answer on ``sock`` and ends the process."""
    detail = f"{_MARK} was replaced: the judge's recorders and harness run on it"
    answer = ErrorAnswer(
        error=SubjectError(type="HarnessTampering", message=detail),
        signals=Signals(audit=[AuditEvent(check="harness_tampering", detail=detail)]),
    )
    return sealed(
        _look,
        defaults=(
            replaced,
            kept,
            sock,
            body_of(answer),
            _MARK.encode(),
            _SAFE,
            HEADER.pack,
            _socket.socket.sendall,
            os._exit,
        ),
    )


def _look(
    replaced: Any = None,
    kept: Any = None,
    sock: Any = None,
    body: bytes = b"",
    mark: bytes = b"",
    safe: frozenset[int] = frozenset(),
    pack: Any = None,
    sendall: Any = None,
    end: Any = None,
) -> None:
    kept.clear()
    name = replaced()
    if name is None:
        return
    shown = bytes([byte for byte in name.encode("ascii", "replace")[:200] if byte in safe])
    told = body.replace(mark, shown)
    sendall(sock, pack(len(told), 0) + told)
    end(0)
