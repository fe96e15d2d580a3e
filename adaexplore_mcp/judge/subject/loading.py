"""Loading a user's file as a real module, and the device a user-code process computes on."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

import torch

from adaexplore_mcp.judge.own_builtins import own_builtins
from adaexplore_mcp.judge.wire.subject import ReadyAnswer

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``


def load_module(path: str, name: str) -> ModuleType:
    """Import a file as a real module: Triton's @jit reads kernel source with ``inspect``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def write_source(name: str, source: str) -> str:
    path = os.path.abspath(name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    return path


def start_device(device_name: str) -> torch.device:
    """This process's device, its CUDA context created now (start-up, not compile time), with
    float32 computed in float32: PyTorch lets cuDNN convolutions use TF32 by default."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if device_name == "cpu":
        return torch.device("cpu")
    device = torch.device("cuda", 0)  # a process sees exactly one GPU (CUDA_VISIBLE_DEVICES)
    torch.zeros(1, device=device)
    return device


def seed(value: int, device: torch.device) -> None:
    """What ``torch.manual_seed`` does for the generators this process draws from: the CPU's
    and its GPU's. ``torch.manual_seed`` also queues a seeding for every backend not started
    (XPU, MTIA), each with a formatted stack: 2 ms a call in the task's process on a GPU
    machine, which seeds ~80 times an evaluation."""
    torch.default_generator.manual_seed(value)
    if device.type == "cuda":
        torch.cuda.default_generators[device.index or 0].manual_seed(value)


def describe_platform(device: torch.device) -> ReadyAnswer:
    import triton

    if device.type == "cpu":
        name, capability = "cpu (Triton interpreter)", None
    else:
        name = torch.cuda.get_device_name(0)
        major, minor = torch.cuda.get_device_capability(0)
        capability = f"{major}.{minor}"
    return ReadyAnswer(
        device_name=name,
        capability=capability,
        torch=torch.__version__,
        triton=triton.__version__,
        python=sys.version.split()[0],
    )


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
