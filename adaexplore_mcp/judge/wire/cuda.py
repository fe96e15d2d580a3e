"""The few CUDA driver calls the judge makes itself (through ctypes; torch has no Python API for
them): legacy IPC of device memory, allocations outside torch's caching allocator, and the
stream memory operations that gate a subject's work on the trusted process's clock.

Every call checks its result and raises ``CudaError`` with the driver's name for it.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

IPC_HANDLE_BYTES = 64
_LAZY_ENABLE_PEER_ACCESS = 1
_WAIT_GEQ = 0x0
_WRITE_DEFAULT = 0x0


class CudaError(RuntimeError):
    pass


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * IPC_HANDLE_BYTES)]


@functools.cache
def _lib() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


def _function(*names: str) -> Any:
    for name in names:
        try:
            return getattr(_lib(), name)
        except AttributeError:
            continue
    raise CudaError(f"the CUDA driver has none of {', '.join(names)}")


def _check(result: int, what: str) -> None:
    if result != 0:
        name = ctypes.c_char_p()
        _function("cuGetErrorName")(result, ctypes.byref(name))
        text = name.value.decode() if name.value else f"error {result}"
        raise CudaError(f"{what} failed: {text}")


def address_range(pointer: int) -> tuple[int, int]:
    """The base and size of the allocation that contains ``pointer``."""
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _check(
        _function("cuMemGetAddressRange_v2")(
            ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(pointer)
        ),
        "cuMemGetAddressRange",
    )
    return base.value, size.value


def ipc_handle(base: int) -> bytes:
    handle = _Handle()
    _check(
        _function("cuIpcGetMemHandle")(ctypes.byref(handle), ctypes.c_uint64(base)),
        "cuIpcGetMemHandle",
    )
    return ctypes.string_at(ctypes.addressof(handle), IPC_HANDLE_BYTES)


def ipc_open(handle: bytes) -> int:
    if len(handle) != IPC_HANDLE_BYTES:
        raise CudaError(f"an IPC handle has {IPC_HANDLE_BYTES} bytes, not {len(handle)}")
    raw = _Handle()
    ctypes.memmove(ctypes.addressof(raw), handle, IPC_HANDLE_BYTES)
    pointer = ctypes.c_uint64()
    _check(
        _function("cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle")(
            ctypes.byref(pointer), raw, ctypes.c_uint(_LAZY_ENABLE_PEER_ACCESS)
        ),
        "cuIpcOpenMemHandle",
    )
    return pointer.value


def ipc_close(pointer: int) -> None:
    """Unmap memory another process shared (``ipc_open``)."""
    _check(_function("cuIpcCloseMemHandle")(ctypes.c_uint64(pointer)), "cuIpcCloseMemHandle")


def mem_free(pointer: int) -> None:
    _check(_function("cuMemFree_v2")(ctypes.c_uint64(pointer)), "cuMemFree")


def mem_alloc(nbytes: int) -> int:
    pointer = ctypes.c_uint64()
    _check(
        _function("cuMemAlloc_v2")(ctypes.byref(pointer), ctypes.c_size_t(max(nbytes, 1))),
        "cuMemAlloc",
    )
    return pointer.value


def wait_value(stream: int, address: int, value: int) -> None:
    """Make ``stream`` wait until the 32-bit word at ``address`` is at least ``value``."""
    _check(
        _function("cuStreamWaitValue32_v2", "cuStreamWaitValue32")(
            ctypes.c_void_p(stream),
            ctypes.c_uint64(address),
            ctypes.c_uint32(value),
            ctypes.c_uint(_WAIT_GEQ),
        ),
        "cuStreamWaitValue32",
    )


def write_value(stream: int, address: int, value: int) -> None:
    """Make ``stream`` write ``value`` to the 32-bit word at ``address`` once its earlier work is
    done."""
    _check(
        _function("cuStreamWriteValue32_v2", "cuStreamWriteValue32")(
            ctypes.c_void_p(stream),
            ctypes.c_uint64(address),
            ctypes.c_uint32(value),
            ctypes.c_uint(_WRITE_DEFAULT),
        ),
        "cuStreamWriteValue32",
    )


def set_word(stream: int, address: int, value: int) -> None:
    """Write a 32-bit word on ``stream`` (a stream of its own, to unblock a stuck wait)."""
    _check(
        _function("cuMemsetD32Async")(
            ctypes.c_uint64(address),
            ctypes.c_uint(value),
            ctypes.c_size_t(1),
            ctypes.c_void_p(stream),
        ),
        "cuMemsetD32Async",
    )


def as_bytes(pointer: int, nbytes: int):  # -> torch.Tensor
    """A uint8 tensor over device memory this process can address (no copy, no ownership)."""
    import torch

    class _Array:
        def __init__(self) -> None:
            self.__cuda_array_interface__ = {
                "shape": (nbytes,),
                "typestr": "|u1",
                "data": (pointer, False),
                "version": 3,
                "strides": None,
            }

    return torch.as_tensor(_Array(), device="cuda")
