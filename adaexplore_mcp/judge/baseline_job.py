"""Timing a task's baselines (eager PyTorch and torch.compile), inside a sandboxed child."""

from __future__ import annotations

import random
import time

import torch
from pydantic import BaseModel

from adaexplore_mcp.judge.harness import (
    Channel,
    TaskRuntime,
    device_of,
    environment,
    gpu_lock,
    set_tf32,
    synchronize,
    timing_seed,
)
from adaexplore_mcp.judge.precision import baselines_use_tf32
from adaexplore_mcp.judge.protocol import ChildJob
from adaexplore_mcp.judge.result import Environment, Phase, RuntimeStats
from adaexplore_mcp.judge.timing import L2Flusher, measure


class BaselineReport(BaseModel):
    eager: RuntimeStats
    compiled: RuntimeStats | None = None
    compile_error: str | None = None
    compile_s: float | None = None
    environment: Environment


def run_baseline(job: ChildJob, channel: Channel) -> BaselineReport:
    assert job.task is not None
    device = device_of(job)
    if device.type != "cuda":
        raise ValueError("baselines are only timed on a GPU")
    shared, exclusive = gpu_lock(job)
    # Under the tf32 policy both baselines may use TF32, as the candidate may: like with like.
    set_tf32(baselines_use_tf32(job.precision))
    rng = random.Random(job.seed)
    variant = job.task.main_variant("cuda")

    channel.phase(Phase.COMPILING)
    with shared():
        runtime = TaskRuntime(job.task, device)
        model = runtime.build_reference(runtime.init_inputs(variant), rng.getrandbits(62))
        inputs = runtime.inputs(variant, timing_seed(job.task))
        runtime.run_reference(model, inputs)
        flush = L2Flusher(device, job.timing)

    def timed(module: torch.nn.Module) -> RuntimeStats:
        def call() -> None:
            with torch.no_grad():
                module(*inputs)

        channel.phase(Phase.TIMING)
        with exclusive():
            return measure(call, job.timing, flush).events

    eager_stats = timed(model)
    compiled_stats = compile_error = compile_s = None
    channel.phase(Phase.COMPILING)
    with shared():
        try:
            compiled_model = torch.compile(model)
            started = time.perf_counter()
            with torch.no_grad():
                compiled_model(*inputs)
            synchronize(device)
            compile_s = time.perf_counter() - started
        except Exception as exc:
            compile_error = f"{type(exc).__name__}: {str(exc)[:500]}"
    if compile_error is None:
        compiled_stats = timed(compiled_model)

    return BaselineReport(
        eager=eager_stats,
        compiled=compiled_stats,
        compile_error=compile_error,
        compile_s=compile_s,
        environment=environment(job, channel),
    )
