"""Arguments and results as they cross between the judge's processes.

A value is described in JSON (``Value``); a tensor's bytes travel beside it: in the frame's
payload on the CPU, or as a CUDA IPC handle of the allocation that holds them on a GPU. The
receiving side checks every description against what it actually received (sizes, strides,
the real extent of a mapped allocation) before it builds a view, so a description sent by a
candidate cannot make the trusted process read outside what the candidate shared.
"""

from __future__ import annotations

import ctypes
import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

MAX_DEPTH = 4
MAX_ITEMS = 4096
_ALLOWED_DTYPES = (
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
    "float8_e4m3fn",
    "float8_e5m2",
)


class DecodeError(ValueError):
    """A description that does not fit what was sent."""


class _Value(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class TensorValue(_Value):
    kind: Literal["tensor"] = "tensor"
    dtype: str = Field(max_length=32)  # a name of torch's (``dtype_of``)
    shape: list[int]
    stride: list[int]
    offset: int = Field(ge=0, description="Storage offset, in elements.")
    storage_bytes: int = Field(ge=0)
    device: Literal["cpu", "cuda"]
    at: int | None = Field(
        default=None, ge=0, description="CPU: where the storage starts in the payload."
    )
    ipc: str | None = Field(
        default=None, max_length=2 * 64, description="CUDA: the allocation's IPC handle, hex."
    )
    alloc_offset: int | None = Field(
        default=None, ge=0, description="CUDA: where the storage starts in that allocation."
    )


class IntValue(_Value):
    kind: Literal["int"] = "int"
    value: int


class FloatValue(_Value):
    kind: Literal["float"] = "float"
    value: float


class BoolValue(_Value):
    kind: Literal["bool"] = "bool"
    value: bool


class StrValue(_Value):
    kind: Literal["str"] = "str"
    value: str = Field(max_length=10_000)


class NoneValue(_Value):
    kind: Literal["none"] = "none"


class SequenceValue(_Value):
    kind: Literal["list", "tuple"]
    items: list[Value]


class OpaqueValue(_Value):
    """Something that cannot travel: only its type's name does."""

    kind: Literal["opaque"] = "opaque"
    type: str = Field(max_length=200)


Value = Annotated[
    TensorValue
    | IntValue
    | FloatValue
    | BoolValue
    | StrValue
    | NoneValue
    | SequenceValue
    | OpaqueValue,
    Field(discriminator="kind"),
]
SequenceValue.model_rebuild()


def dtype_of(name: str):  # -> torch.dtype
    import torch

    if name not in _ALLOWED_DTYPES or not hasattr(torch, name):
        raise DecodeError(f"unsupported dtype {name!r}")
    return getattr(torch, name)


def dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def describe(tensor, device: Literal["cpu", "cuda"], **location: Any) -> TensorValue:
    storage = tensor.untyped_storage()
    return TensorValue(
        dtype=dtype_name(tensor.dtype),
        shape=list(tensor.shape),
        stride=list(tensor.stride()),
        offset=tensor.storage_offset(),
        storage_bytes=storage.nbytes(),
        device=device,
        **location,
    )


_INDEX_LIMIT = 2**62  # under torch's int64 indices, with room for a size times a stride


def check_view(spec: TensorValue) -> int:
    """The element size, after checking that the view lies inside its storage."""
    import torch

    dtype = dtype_of(spec.dtype)
    itemsize = torch.empty((), dtype=dtype).element_size()
    if len(spec.shape) != len(spec.stride) or len(spec.shape) > 16:
        raise DecodeError("a tensor's shape and strides disagree")
    if any(size < 0 for size in spec.shape) or any(step < 0 for step in spec.stride):
        raise DecodeError("negative sizes or strides")
    if max(*spec.shape, *spec.stride, spec.offset, math.prod(spec.shape), 0) >= _INDEX_LIMIT:
        raise DecodeError("a tensor's sizes, strides or offset are too large to index")
    if spec.storage_bytes % itemsize:
        raise DecodeError("the storage is not a whole number of elements")
    if math.prod(spec.shape) == 0:
        return itemsize
    last = spec.offset + sum(
        (size - 1) * step for size, step in zip(spec.shape, spec.stride, strict=True)
    )
    if (last + 1) * itemsize > spec.storage_bytes:
        raise DecodeError("a tensor view reaches past the end of its storage")
    return itemsize


def view_of(storage_bytes, spec: TensorValue):  # -> torch.Tensor
    """The tensor ``spec`` describes, over a uint8 tensor holding its storage (no copy)."""
    check_view(spec)
    if storage_bytes.numel() != spec.storage_bytes:
        raise DecodeError("the storage sent is not the size described")
    dtype = dtype_of(spec.dtype)
    if not spec.storage_bytes:
        return storage_bytes.new_empty(0, dtype=dtype).as_strided(spec.shape, spec.stride, 0)
    flat = storage_bytes.view(dtype)
    # as_strided counts from the start of the whole storage, and ``storage_bytes`` may be a slice
    return flat.as_strided(spec.shape, spec.stride, flat.storage_offset() + spec.offset)


class Encoder:
    """Turns Python values into ``Value`` descriptions; ``tensor`` places a tensor's storage
    (in a payload, or in shared device memory) and returns its description."""

    def tensor(self, tensor) -> TensorValue:  # pragma: no cover - interface
        raise NotImplementedError

    def encode(self, value: Any, depth: int = 0) -> Value:
        import torch

        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, bool):
            return BoolValue(value=value)
        if isinstance(value, int):
            return IntValue(value=value)
        if isinstance(value, float):
            return FloatValue(value=value)
        if isinstance(value, str):
            return StrValue(value=value[:10_000])
        if value is None:
            return NoneValue()
        if isinstance(value, list | tuple) and depth < MAX_DEPTH and len(value) <= MAX_ITEMS:
            kind: Literal["list", "tuple"] = "tuple" if isinstance(value, tuple) else "list"
            return SequenceValue(kind=kind, items=[self.encode(v, depth + 1) for v in value])
        return OpaqueValue(type=type(value).__name__)

    def encode_all(self, values: list[Any]) -> list[Value]:
        return [self.encode(value) for value in values]


class Decoder:
    """Builds Python values from descriptions; ``tensor`` rebuilds one tensor."""

    def tensor(self, spec: TensorValue):  # pragma: no cover - interface
        raise NotImplementedError

    def decode(self, value: Value, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise DecodeError("values nested too deep")
        if isinstance(value, TensorValue):
            return self.tensor(value)
        if isinstance(value, SequenceValue):
            if len(value.items) > MAX_ITEMS:
                raise DecodeError("too many items")
            items = [self.decode(item, depth + 1) for item in value.items]
            return tuple(items) if value.kind == "tuple" else items
        if isinstance(value, OpaqueValue):
            return Opaque(value.type)
        if isinstance(value, NoneValue):
            return None
        return value.value

    def decode_all(self, values: list[Value]) -> list[Any]:
        return [self.decode(value) for value in values]


class Opaque:
    """Stands for a value that could not travel (the judge reports its type)."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


# -- the CPU: storage bytes in the frame's payload ---------------------------------------------


def bytes_at(address: int, size: int, piece: int = 2**31 - 1) -> bytes:
    """``size`` bytes of memory at ``address``: ``ctypes.string_at`` takes a C int, so a
    storage of 2 GiB or more is read a ``piece`` at a time (it failed to encode at all)."""
    if size <= piece:
        return ctypes.string_at(address, size)
    return b"".join(
        ctypes.string_at(address + start, min(piece, size - start))
        for start in range(0, size, piece)
    )


class PayloadEncoder(Encoder):
    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0

    def tensor(self, tensor) -> TensorValue:
        tensor = tensor.detach().resolve_conj().resolve_neg()
        if tensor.device.type != "cpu":
            tensor = tensor.cpu()
        storage = tensor.untyped_storage()
        data = b""
        if storage.nbytes():
            if not storage.data_ptr():
                raise ValueError("the tensor's storage has no memory to read")
            # read without a torch operator: a candidate's outputs are encoded under the
            # recorders, where an operator of the judge's would count as the kernel's
            data = bytes_at(storage.data_ptr(), storage.nbytes())
        spec = describe(tensor, "cpu", at=self.size)
        self.chunks.append(data)
        self.size += len(data)
        return spec

    def payload(self) -> bytes:
        return b"".join(self.chunks)


class PayloadDecoder(Decoder):
    """Every tensor gets storage of its own, copied out of the payload. The encoder sends each
    tensor's bytes once, so the storages described may not add up to more than the payload:
    descriptions of the same bytes over and over would have this process copy them each time."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.copied = 0

    def tensor(self, spec: TensorValue):
        import torch

        if spec.device != "cpu" or spec.at is None:
            raise DecodeError("a CPU tensor without its bytes")
        end = spec.at + spec.storage_bytes
        if end > len(self.payload):
            raise DecodeError("a tensor's bytes reach past the payload")
        self.copied += spec.storage_bytes
        if self.copied > len(self.payload):
            raise DecodeError("the tensors described hold more bytes than were sent")
        raw = bytearray(memoryview(self.payload)[spec.at : end])  # one copy, not two
        storage = (
            torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
        )
        return view_of(storage, spec)
