"""Frames: the one format every judge process speaks on its pipes and sockets.

A frame is a 12-byte header (the JSON body's length, then the binary payload's length, both
big-endian), the UTF-8 JSON body, then the payload. Control messages have no payload; tensors
on the CPU travel in it. Lengths are checked against limits before anything is allocated, and
memory for a frame is taken as its bytes arrive, not as its header announces, since the other end
of a socket may be a candidate's process.
"""

from __future__ import annotations

import _socket
import os
import select
import socket
import struct
import time
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

HEADER = struct.Struct(">IQ")
MAX_BODY = 64 * 2**20
MAX_PAYLOAD = 8 * 2**30
CHUNK = 4 * 2**20  # the most a Channel allocates ahead of the bytes it has received

M = TypeVar("M")


class FrameError(Exception):
    """A malformed frame, or one over its limits."""


class PayloadTooLarge(FrameError):
    """A frame's payload over the limit its channel was given (``Channel.limit_name``)."""


class ChannelClosed(Exception):
    """The other end went away (end of file, reset, or a timeout while waiting for it)."""


# bound now, for the candidate's process: a kernel's replacement of the socket class's methods,
# or of pydantic's, read each call's inputs or emptied the signals as they were sent
_SENDALL = _socket.socket.sendall
_RECV_INTO = _socket.socket.recv_into
_WRITE = os.write
_SERIALIZERS: dict[type, Any] = {}


def register(*classes: type[BaseModel]) -> None:
    """Encode ``classes``' messages with their serializers as they are now, not as a kernel may
    later put them on the class (``body_of``)."""
    for cls in classes:
        _SERIALIZERS[cls] = cls.__pydantic_serializer__


def body_of(message: BaseModel) -> bytes:
    serializer = _SERIALIZERS.get(type(message))
    if serializer is None:
        return message.model_dump_json().encode()
    return bytes(serializer.to_json(message))


def encode(message: BaseModel, payload: bytes | memoryview = b"") -> bytes:
    body = body_of(message)
    return HEADER.pack(len(body), len(payload)) + body + bytes(payload)


def write_frame(fd: int, message: BaseModel, payload: bytes = b"") -> None:
    data = memoryview(encode(message, payload))
    while data:
        written = _WRITE(fd, data)
        data = data[written:]


def read_exact(fd: int, size: int) -> bytes | None:
    """Blocking read of exactly ``size`` bytes; None at end of file."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = os.read(fd, min(size - len(chunks), 1 << 20))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def read_frame(fd: int, *, max_payload: int = MAX_PAYLOAD) -> tuple[bytes, bytes] | None:
    """(body, payload) of the next frame on a blocking descriptor; None at end of file."""
    header = read_exact(fd, HEADER.size)
    if header is None:
        return None
    body_size, payload_size = _checked(header, max_payload)
    body = read_exact(fd, body_size)
    payload = read_exact(fd, payload_size) if payload_size else b""
    if body is None or payload is None:
        return None
    return body, payload


def _checked(header: bytes, max_payload: int, limit_name: str = "") -> tuple[int, int]:
    body_size, payload_size = HEADER.unpack(header)
    if body_size > MAX_BODY:
        raise FrameError(f"a message of {body_size} bytes exceeds the {MAX_BODY}-byte limit")
    if payload_size > max_payload:
        named = f" ({limit_name})" if limit_name else ""
        raise PayloadTooLarge(
            f"a payload of {payload_size} bytes exceeds the {max_payload}-byte limit{named}"
        )
    return body_size, payload_size


class FrameBuffer:
    """Splits a byte stream read in arbitrary chunks into (body, payload) frames."""

    def __init__(self, max_payload: int = MAX_PAYLOAD) -> None:
        self._data = bytearray()
        self._max_payload = max_payload

    def feed(self, chunk: bytes) -> list[tuple[bytes, bytes]]:
        self._data += chunk
        frames = []
        while len(self._data) >= HEADER.size:
            body_size, payload_size = _checked(bytes(self._data[: HEADER.size]), self._max_payload)
            end = HEADER.size + body_size + payload_size
            if len(self._data) < end:
                break
            body = bytes(self._data[HEADER.size : HEADER.size + body_size])
            frames.append((body, bytes(self._data[HEADER.size + body_size : end])))
            del self._data[:end]
        return frames


class Channel:
    """One end of a socket that carries frames, with validated messages and optional
    deadlines. Used between the trusted judge process and the processes it drives."""

    def __init__(
        self, sock: socket.socket, *, max_payload: int = MAX_PAYLOAD, limit_name: str = ""
    ) -> None:
        """``max_payload``: the largest payload received (``limit_name``: the setting that
        sets it, for the error)."""
        sock.setblocking(True)
        self.sock = sock
        self.max_payload = max_payload
        self.limit_name = limit_name

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, message: BaseModel, payload: bytes | memoryview = b"") -> None:
        try:
            _SENDALL(vars(self)["sock"], encode(message, payload))
        except OSError as exc:
            raise ChannelClosed(f"the other process is gone ({exc})") from None

    def readable(self, timeout_s: float) -> bool:
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout_s))
        return bool(ready)

    def receive(
        self, adapter: TypeAdapter[M], *, timeout_s: float | None = None
    ) -> tuple[M, bytes]:
        """The next message, validated by ``adapter``, and its payload. Raises ``ChannelClosed``
        at end of file or when ``timeout_s`` passes first, ``FrameError`` for a malformed one."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        header = self._exact(HEADER.size, deadline)
        body_size, payload_size = _checked(header, self.max_payload, self.limit_name)
        body = self._exact(body_size, deadline)
        payload = self._exact(payload_size, deadline) if payload_size else b""
        try:
            return adapter.validate_json(body), payload
        except ValidationError as exc:
            raise FrameError(f"an unexpected message: {exc.errors()[0]['msg']}") from None

    def _exact(self, size: int, deadline: float | None) -> bytes:
        """Exactly ``size`` bytes. Memory is taken as they arrive, a chunk of at most ``CHUNK``
        bytes at a time, never on the header's word alone: a candidate that announces gigabytes
        and then sleeps or leaves makes this process hold one chunk, not what it announced. The
        chunks are joined once, the one copy a single buffer turned into ``bytes`` took too."""
        chunks: list[bytearray] = []
        remaining = size
        while remaining:
            chunk = bytearray(min(remaining, CHUNK))
            view = memoryview(chunk)
            filled = 0
            while filled < len(chunk):
                if deadline is not None and not self.readable(deadline - time.monotonic()):
                    raise ChannelClosed("no answer in time")
                try:
                    count = _RECV_INTO(self.sock, view[filled:])
                except OSError as exc:
                    raise ChannelClosed(f"the other process is gone ({exc})") from None
                if count == 0:
                    raise ChannelClosed("the other process closed its end")
                filled += count
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()
