"""Device specifications ('auto', 'cpu', 'cuda', 'cuda:0,2') and what a probe found on them."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from pydantic import BaseModel


@dataclass(frozen=True)
class DeviceSpec:
    kind: str  # "auto" | "cpu" | "cuda"
    indices: tuple[int, ...] | None = None  # None: every visible GPU


def parse_device_spec(text: str) -> DeviceSpec:
    value = text.strip().lower()
    if value in ("auto", "cpu", "cuda"):
        return DeviceSpec(kind=value)
    if value.startswith("cuda:"):
        parts = value.removeprefix("cuda:").split(",")
        try:
            indices = tuple(int(p) for p in parts)
        except ValueError:
            indices = ()
        if indices and all(i >= 0 for i in indices) and len(set(indices)) == len(indices):
            return DeviceSpec(kind="cuda", indices=indices)
    raise ValueError(
        f"unknown device {text!r}: use 'auto', 'cpu', 'cuda' (every GPU), 'cuda:N' or 'cuda:0,1'"
    )


def nvidia_driver_present() -> bool:
    """A cheap look for an NVIDIA driver, so 'auto' on a machine without one skips the probe."""
    return os.path.exists("/proc/driver/nvidia/version") or bool(glob.glob("/dev/nvidia[0-9]*"))


class GpuInfo(BaseModel):
    index: int
    name: str
    uuid: str
    capability: str
    memory_gb: float
    l2_bytes: int
    sm_count: int


class ProbeReport(BaseModel):
    torch: str
    triton: str
    python: str
    cuda_available: bool
    gpus: list[GpuInfo]
