"""The code that runs inside the sandboxed child: loads the task and the candidate and builds
their models and inputs for each shape variant. The jobs themselves live in ``evaluation``,
``baseline_job`` and ``lint``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from adaexplore_mcp.judge.errors import REFERENCE_FILE, TaskRuntimeError, describe
from adaexplore_mcp.judge.gpulock import GpuLock
from adaexplore_mcp.judge.protocol import ChildJob, PhaseMessage, ReportMessage, write_frame
from adaexplore_mcp.judge.result import Environment, Phase
from adaexplore_mcp.tasks import ShapeVariant, Task


class Channel:
    """The child's end of the result pipe."""

    def __init__(self, fd: int, *, network_isolated: bool = False) -> None:
        self.fd = fd
        self.started = time.perf_counter()
        self.network_isolated = network_isolated

    def phase(self, phase: Phase) -> None:
        write_frame(self.fd, PhaseMessage(phase=phase))

    def report(self, kind: str, body: BaseModel | dict) -> None:
        for stream in (sys.stdout, sys.stderr):  # the output tail is read once this arrives
            with contextlib.suppress(Exception):
                stream.flush()
        payload = body.model_dump(mode="json") if isinstance(body, BaseModel) else body
        write_frame(self.fd, ReportMessage(report={"kind": kind, "body": payload}))


class TaskFailure(BaseModel):
    """The task's own code could not run; the judge cannot give a verdict on a candidate."""

    message: str


def run_child_job(job: ChildJob, channel: Channel) -> None:
    if job.kind == "probe":
        from adaexplore_mcp.judge.probe import probe

        channel.report("probe", probe())
        return
    if job.device != "cpu":
        import torch

        torch.cuda.init()  # the CUDA context is part of start-up, not of compiling
    use_full_float32()
    try:
        if job.kind == "eval":
            from adaexplore_mcp.judge.evaluation import Evaluation

            channel.report("eval", Evaluation(job, channel).run())
        elif job.kind == "baseline":
            from adaexplore_mcp.judge.baseline_job import run_baseline

            channel.report("baseline", run_baseline(job, channel))
        elif job.kind == "lint":
            from adaexplore_mcp.judge.lint import run_lint

            channel.report("lint", run_lint(job, channel))
    except TaskRuntimeError as exc:
        channel.report("task_error", TaskFailure(message=str(exc)))


def use_full_float32() -> None:
    """References and baselines compute float32 in float32: PyTorch lets cuDNN convolutions use
    TF32 by default, which would make an exact float32 kernel look wrong."""
    set_tf32(False)


def set_tf32(enabled: bool) -> None:
    """TF32 for float32 matmuls and convolutions in PyTorch, on or off."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


def timing_seed(task: Task) -> int:
    """Timing inputs are the same for every evaluation of a task and for its baselines, so a
    speedup compares equal work even where the work depends on the data (e.g. sequence
    lengths). Correctness never uses this seed."""
    return int(task.hash, 16) % 2**62


def device_of(job: ChildJob):  # -> torch.device
    import torch

    # A GPU worker sees exactly one GPU (CUDA_VISIBLE_DEVICES), whatever the caller calls it.
    return torch.device("cpu") if job.device == "cpu" else torch.device("cuda", 0)


def environment(job: ChildJob, channel: Channel) -> Environment:
    import torch
    import triton

    if job.device == "cpu":
        name, capability = "cpu (Triton interpreter)", None
    else:
        name = torch.cuda.get_device_name(0)
        major, minor = torch.cuda.get_device_capability(0)
        capability = f"{major}.{minor}"
    return Environment(
        device=job.device,
        device_name=name,
        capability=capability,
        interpreter=os.environ.get("TRITON_INTERPRET") == "1",
        torch=torch.__version__,
        triton=triton.__version__,
        python=sys.version.split()[0],
        network_isolated=channel.network_isolated,
    )


def gpu_lock(job: ChildJob) -> tuple[Any, Any]:
    """(shared, exclusive) context-manager factories; no-ops on the CPU."""
    if job.device == "cpu" or not job.gpu_lock:
        return nullcontext, nullcontext
    lock = GpuLock(job.gpu_lock)
    return lock.shared, lock.exclusive


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


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


class TaskRuntime:
    """The task's module in this process and what it builds for each shape variant."""

    def __init__(self, task: Task, device) -> None:
        self.task = task
        self.device = device
        path = os.path.abspath(REFERENCE_FILE)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(task.source)
        with self._task_code("importing the task"):
            self.module = load_module(path, "adaexplore_reference")
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if not callable(getattr(self.module, name, None)):
                raise TaskRuntimeError(f"task {task.name!r}: `{name}` is missing or not callable")
        keys = {key for variant in task.variants for key in variant.overrides}
        self._originals = {key: getattr(self.module, key) for key in keys}

    @contextmanager
    def _task_code(self, doing: str) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            detail = describe(exc, Phase.COMPILING, REFERENCE_FILE)
            shown = str(self.task.path) if self.task.path else f"task {self.task.name!r}"
            where = (
                f" at {detail.location.replace(REFERENCE_FILE, shown)}" if detail.location else ""
            )
            raise TaskRuntimeError(
                f"task {self.task.name!r} failed while {doing}{where}: "
                f"{detail.type}: {detail.message}"
            ) from exc

    def apply(self, variant: ShapeVariant) -> None:
        for key, value in self._originals.items():
            setattr(self.module, key, value)
        for key, value in variant.overrides.items():
            setattr(self.module, key, value)

    def init_inputs(self, variant: ShapeVariant) -> list[Any]:

        self.apply(variant)
        with self._task_code(f"calling get_init_inputs() for {variant.name}"), self.device_scope():
            return list(self.module.get_init_inputs())

    def build(self, cls: type, init_inputs: list[Any], seed: int):
        """Instantiate ``cls`` after seeding, on the device (raises what the constructor raises)."""
        import torch

        torch.manual_seed(seed)
        with self.device_scope():
            model = cls(*init_inputs)
        if isinstance(model, torch.nn.Module):
            model = model.to(self.device)
        return model

    def build_reference(self, init_inputs: list[Any], seed: int):
        with self._task_code("building Model"):
            return self.build(self.module.Model, init_inputs, seed)

    def inputs(self, variant: ShapeVariant, seed: int) -> list[Any]:
        import torch

        self.apply(variant)
        torch.manual_seed(seed)
        with self._task_code(f"calling get_inputs() for {variant.name}"), self.device_scope():
            values = list(self.module.get_inputs())
        return [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in values]

    def run_reference(self, model, inputs: list[Any]) -> Any:
        import torch

        with self._task_code("running Model.forward"), torch.no_grad():
            output = model(*inputs)
            synchronize(self.device)
        return output

    @contextmanager
    def device_scope(self) -> Iterator[None]:
        import torch

        with torch.device(self.device):
            yield


def clone_args(values: list[Any]) -> list[Any]:
    import torch

    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]
