"""Tensors on a GPU, shared between the judge's processes through CUDA IPC.

- ``Arena``: device memory the trusted process allocates *outside* torch's caching allocator,
  one allocation per arena, so that sharing it with a candidate shares nothing else (an IPC
  handle maps its whole allocation). Arenas are reused within a job, and freed once no process
  that could map them is left (``Arena.free``).
- ``SharingEncoder``: a candidate's or task's process describes its own tensors (CUDA ones by
  the IPC handle of their allocation, CPU ones in the payload).
- ``ArenaDecoder``: the candidate's process maps the trusted process's arenas (no copy: what it
  writes there, the trusted process sees).
- ``CopyingDecoder``: the trusted process maps what another process shared, checks the
  description against the allocation the driver actually mapped, and copies the tensor into
  memory of its own at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from adaexplore_mcp.judge.own_builtins import own_builtins
from adaexplore_mcp.judge.wire import cuda
from adaexplore_mcp.judge.wire.values import (
    DecodeError,
    Decoder,
    Encoder,
    PayloadDecoder,
    PayloadEncoder,
    TensorValue,
    Value,
    check_view,
    describe,
    view_of,
)

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

ALIGN = 256
L = TypeVar("L")


def aligned(nbytes: int) -> int:
    """``nbytes`` rounded up to where the next tensor in an arena may start."""
    return -(-nbytes // ALIGN) * ALIGN


def storage_bytes(tensor):  # -> torch.Tensor (uint8, the tensor's whole storage, no copy)
    import torch

    storage = tensor.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(storage)


class _Filled:
    """Device memory of ``size`` bytes filled tensor by tensor from the start, aligned."""

    size: int
    used: int

    def reset(self) -> None:
        self.used = 0

    def reserve(self, nbytes: int) -> int:
        start = aligned(self.used)
        if start + nbytes > self.size:
            raise MemoryError(f"arena of {self.size} bytes is full")
        self.used = start + nbytes
        return start


class Arena(_Filled):
    """A dedicated device allocation, shared as a whole and filled tensor by tensor."""

    def __init__(self, nbytes: int) -> None:
        self.size = max(int(nbytes), ALIGN)
        self.pointer = cuda.mem_alloc(self.size)
        self.handle = cuda.ipc_handle(self.pointer).hex()
        self.bytes = cuda.as_bytes(self.pointer, self.size)
        self.used = 0

    def free(self) -> None:
        """Give the allocation back. Only once no other process can map it any more: a process
        that mapped it keeps it alive, but its next use here would be another allocation."""
        if self.pointer:
            cuda.mem_free(self.pointer)
            self.pointer = 0

    def place(self, tensor) -> tuple[TensorValue, Any]:
        """Copy ``tensor``'s storage in; its description for the other side, and the view here."""
        source = storage_bytes(tensor)
        start = self.reserve(source.numel())
        target = self.bytes[start : start + source.numel()]
        target.copy_(source)
        spec = describe(tensor, "cuda", ipc=self.handle, alloc_offset=start)
        return spec, view_of(target, spec)


class LentArena(_Filled):
    """Device memory another process lent the trusted process (``LendRequest``), mapped here:
    filled and reset like an ``Arena``; ``free`` unmaps it (the lender frees it)."""

    def __init__(self, handle: str, nbytes: int) -> None:
        """Map the allocation shared as ``handle``; ``CudaError`` or ``ValueError`` when it is
        not one whole allocation of at least ``nbytes``."""
        self.pointer = cuda.ipc_open(bytes.fromhex(handle))
        base, size = cuda.address_range(self.pointer)
        if base != self.pointer or size < nbytes:
            cuda.ipc_close(self.pointer)
            raise ValueError(f"the memory lent holds {size} bytes, not the {nbytes} asked for")
        self.handle = handle
        self.size = nbytes
        self.bytes = cuda.as_bytes(self.pointer, nbytes)
        self.used = 0

    def free(self) -> None:
        if self.pointer:
            with contextlib.suppress(cuda.CudaError):
                cuda.ipc_close(self.pointer)
            self.pointer = 0


def arena_bytes(values: list[Any]) -> int:
    """Room an arena needs for every tensor in ``values`` (nested lists included)."""
    import torch

    total = 0
    for value in values:
        if isinstance(value, torch.Tensor):
            total += aligned(value.untyped_storage().nbytes())
        elif isinstance(value, list | tuple):
            total += arena_bytes(list(value))
    return total


class ArenaEncoder(Encoder):
    """The trusted side offering tensors to another process through an arena."""

    def __init__(self, arena: Arena, payload: PayloadEncoder | None = None) -> None:
        self.arena = arena
        self.views: dict[int, Any] = {}  # id of a tensor offered -> its copy in the arena
        self.payload = payload or PayloadEncoder()

    def tensor(self, tensor) -> TensorValue:
        if tensor.device.type != "cuda":
            return self.payload.tensor(tensor)
        spec, view = self.arena.place(tensor)
        self.views[id(tensor)] = view
        return spec


class SharingEncoder(Encoder):
    """A user-code process describing its own tensors for the trusted process."""

    def __init__(self) -> None:
        self.payload = PayloadEncoder()

    def tensor(self, tensor) -> TensorValue:
        if tensor.device.type != "cuda":
            return self.payload.tensor(tensor)
        tensor = tensor.detach()
        storage = tensor.untyped_storage()
        if storage.nbytes() == 0:
            return describe(tensor, "cuda", ipc="", alloc_offset=0)
        base, _ = cuda.address_range(storage.data_ptr())
        handle = cuda.ipc_handle(base).hex()
        return describe(tensor, "cuda", ipc=handle, alloc_offset=storage.data_ptr() - base)


class ArenaDecoder(Decoder):
    """A user-code process mapping the trusted process's arenas (no copy), and the memory it
    lent the trusted process itself (``lend``)."""

    def __init__(self, payload: bytes = b"") -> None:
        self._mapped: dict[str, int] = {}
        self._lent: dict[str, int] = {}
        self._payload = PayloadDecoder(payload)

    def lend(self, nbytes: int) -> str:
        """An allocation of this process's for the trusted process to write into: its IPC
        handle, which tensors the trusted process describes in it name."""
        pointer = cuda.mem_alloc(nbytes)
        handle = cuda.ipc_handle(pointer).hex()
        self._lent[handle] = pointer
        return handle

    def with_payload(self, payload: bytes) -> ArenaDecoder:
        self._payload = PayloadDecoder(payload)
        return self

    def address(self, handle: str) -> int:
        """Where the arena shared as ``handle`` is mapped in this process."""
        if handle in self._lent:
            return self._lent[handle]
        if handle not in self._mapped:
            self._mapped[handle] = cuda.ipc_open(bytes.fromhex(handle))
        return self._mapped[handle]

    def forget(self) -> None:
        """Unmap every arena, and free what was lent (a process that serves many jobs, after
        each)."""
        mapped, self._mapped = self._mapped, {}
        for pointer in mapped.values():
            with contextlib.suppress(cuda.CudaError):
                cuda.ipc_close(pointer)
        lent, self._lent = self._lent, {}
        for pointer in lent.values():
            with contextlib.suppress(cuda.CudaError):
                cuda.mem_free(pointer)

    def tensor(self, spec: TensorValue):
        import torch

        if spec.device == "cpu":
            return self._payload.tensor(spec)
        if not spec.ipc:
            return view_of(torch.empty(0, dtype=torch.uint8, device="cuda"), spec)
        # a storage of its own, as the tensor had where it was made: slices of one view of the
        # arena would all report the arena as their storage, at an offset that moves from set
        # to set, and user code (a kernel, the task's torch.compile) sees that
        pointer = self.address(spec.ipc) + (spec.alloc_offset or 0)
        return view_of(cuda.as_bytes(pointer, spec.storage_bytes), spec)


_WIDEST = 16  # bytes of the widest element (complex128)


class CopyingDecoder(Decoder):
    """The trusted process reading what another process shared: every tensor is checked against
    the allocation the driver mapped and copied into the trusted process's own memory."""

    def __init__(self, payload: bytes, *, own_handles: set[str]) -> None:
        self._payload = PayloadDecoder(payload)
        self._own = own_handles
        # handle -> where it is mapped, and one uint8 tensor over the whole of it: a tensor over
        # raw device memory costs ~0.1 ms to make (torch asks the driver about the pointer), a
        # slice of one ~µs, and a span's outputs are tens of tensors in a few allocations
        self._mapped: dict[str, tuple[int, Any]] = {}
        self._viewing = False

    def with_payload(self, payload: bytes) -> CopyingDecoder:
        self._payload = PayloadDecoder(payload)
        return self

    def _open(self, handle: str):  # -> torch.Tensor (uint8, the whole allocation)
        if handle in self._own:
            raise DecodeError("the memory shared back is the judge's own, or holds its inputs")
        if handle not in self._mapped:
            try:
                pointer = cuda.ipc_open(bytes.fromhex(handle))
            except (ValueError, cuda.CudaError) as exc:
                raise DecodeError(f"cannot map the shared memory: {exc}") from None
            base, size = cuda.address_range(pointer)
            self._mapped[handle] = (pointer, cuda.as_bytes(pointer, size - (pointer - base)))
        return self._mapped[handle][1]

    def close(self) -> None:
        """Unmap what the other process shared (every tensor taken from it was copied)."""
        mapped, self._mapped = self._mapped, {}
        for pointer, _ in mapped.values():
            with contextlib.suppress(cuda.CudaError):
                cuda.ipc_close(pointer)

    def view_all(self, values: list[Value]) -> list[Any]:
        """``values`` checked and mapped as ``decode_all`` does, but not copied: every tensor
        in the memory the other process shared a ``Shared``, to copy at the moment it must be
        read (``copied``, or byte for byte: ``trusted.landing``). Checking and mapping wait on
        the host, which a timed span cannot do between its calls."""
        self._viewing = True
        try:
            return self.decode_all(values)
        finally:
            self._viewing = False

    def tensor(self, spec: TensorValue):
        import torch

        if spec.device == "cpu":
            return self._payload.tensor(spec)
        check_view(spec)
        if not spec.ipc:
            if spec.storage_bytes:
                raise DecodeError("a GPU tensor with bytes but no IPC handle")
            return view_of(torch.empty(0, dtype=torch.uint8, device="cuda"), spec).clone()
        whole = self._open(spec.ipc)
        start = spec.alloc_offset or 0
        if start < 0 or start + spec.storage_bytes > whole.numel():
            raise DecodeError("a tensor reaches past the end of the memory it was shared in")
        if start % _WIDEST:  # no view of another dtype may start there: a tensor of its own
            storage = cuda.as_bytes(whole.data_ptr() + start, spec.storage_bytes)
        else:  # a slice shares the allocation's storage: copied at once, as every tensor here
            storage = whole[start : start + spec.storage_bytes]
        shared = Shared(storage, spec)
        return shared if self._viewing else shared.tensor()


@dataclass(frozen=True)
class Shared:
    """A tensor in memory another process shared, checked and mapped but not copied: its
    storage's bytes (a uint8 view of that memory) and how the tensor lies in them."""

    storage: Any  # torch.Tensor, uint8
    spec: TensorValue

    def __post_init__(self) -> None:
        view_of(self.storage, self.spec)  # checked now, not when it is copied

    def tensor(self, storage: Any = None):
        """The tensor in this process's own memory, made from ``storage`` (a copy of these
        bytes) or else from the shared memory itself (enqueued on the current stream)."""
        import torch

        view = view_of(self.storage if storage is None else storage, self.spec)
        return view.clone(memory_format=torch.contiguous_format)


def copied(value: Any) -> Any:
    """A value from ``CopyingDecoder.view_all`` with every shared tensor copied into this
    process's memory, as ``decode_all`` would have returned it."""
    return mapped(value, Shared, Shared.tensor)


def mapped(value: Any, leaf: type[L], change: Callable[[L], Any]) -> Any:
    """``value`` with every ``leaf`` in it (nested lists and tuples too, in order) changed by
    ``change``; everything else as it was. A tuple keeps its type (a named one its fields)."""
    if isinstance(value, leaf):
        return change(value)
    if isinstance(value, list):
        return [mapped(item, leaf, change) for item in value]
    if isinstance(value, tuple):
        items = [mapped(item, leaf, change) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value
