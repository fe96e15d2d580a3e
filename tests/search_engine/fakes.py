"""A deterministic stand-in for the judge: the verdict is read from marker comments in the code.

``# fails: compile`` (or runtime, incorrect, timeout, rejected) makes the kernel fail that way;
``# speed: 2.5`` makes it correct at 2.5x the eager baseline; ``# speeds: 3, 1.2`` gives the
successive evaluations of the same code those speedups (the last one repeats), like a kernel whose
first timing was lucky; ``# flaky`` makes every evaluation after the first incorrect;
``# prints: TEXT`` lines become what the kernel printed (``output_tail``). A correct
kernel without a marker runs at 1x. With ``timing=False`` it behaves like the CPU interpreter:
correct kernels get no speedup.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter

from adaexplore_mcp.judge.measurement import RuntimeStats
from adaexplore_mcp.judge.result import (
    Environment,
    ErrorDetail,
    EvalResult,
    Phase,
    Status,
    kernel_hash,
)
from adaexplore_mcp.tasks import ShapeVariant, Task, VariantRole

EAGER_MS = 10.0

_FAILURES = {
    "compile": Status.COMPILE_ERROR,
    "runtime": Status.RUNTIME_ERROR,
    "incorrect": Status.INCORRECT,
    "timeout": Status.TIMEOUT,
    "rejected": Status.REJECTED,
}


def toy_task(name: str = "toy_add") -> Task:
    source = (
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n    def forward(self, a, b):\n        return a + b\n\n"
        "N = 1024\n\ndef get_inputs():\n    return [torch.randn(N), torch.randn(N)]\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    variant = ShapeVariant(name="benchmark", role=VariantRole.BENCHMARK)
    return Task(name=name, source=source, variants=(variant,), globals={"N": 1024})


def kernel(body: str = "", *, speed: float | None = None, fails: str | None = None) -> str:
    """A stand-in kernel: some Triton-looking text plus the markers the fake judge reads."""
    lines = ["import triton", "import triton.language as tl", ""]
    if speed is not None:
        lines.append(f"# speed: {speed}")
    if fails is not None:
        lines.append(f"# fails: {fails}")
    lines.append(body or "class ModelNew:\n    pass")
    return "\n".join(lines) + "\n"


class FakeJudge:
    def __init__(self, *, timing: bool = True, delay_s: float = 0.0) -> None:
        self.timing = timing
        self.delay_s = delay_s
        self.evaluated: list[str] = []
        self.precisions: list = []
        self.ops: list = []
        self.tasks: list[Task] = []
        self._seen: Counter[str] = Counter()

    @property
    def devices(self) -> list[str]:
        return ["cuda:0" if self.timing else "cpu"]

    async def __aenter__(self) -> FakeJudge:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def lint(self, task, *, device=None):  # pragma: no cover - not used by the engine
        raise NotImplementedError

    def versions(self) -> dict[str, str]:
        return {"torch": "fake", "triton": "fake"}

    async def evaluate(
        self, task, code, *, device=None, timeout_s=None, on_progress=None, precision=None, ops=None
    ):
        self.precisions.append(precision)
        self.ops.append(ops)
        for phase in (Phase.QUEUED, Phase.COMPILING, Phase.CHECKING):
            if on_progress is not None:
                on_progress(phase, 0.0)
            if self.delay_s:
                await asyncio.sleep(self.delay_s / 3)
        self.evaluated.append(code)
        self.tasks.append(task)
        nth = self._seen[code]
        self._seen[code] += 1
        printed = "\n".join(re.findall(r"#\s*prints:\s?(.*)", code)) or None
        base = {
            "task": task.name,
            "task_hash": task.hash,
            "kernel_hash": kernel_hash(code),
            "output_tail": printed,
        }
        environment = Environment(
            device=self.devices[0], device_name="fake", interpreter=not self.timing,
            torch="fake", triton="fake", python="3",
        )  # fmt: skip
        failure = re.search(r"#\s*fails:\s*(\w+)", code)
        if failure or ("# flaky" in code and nth > 0):
            status = _FAILURES[failure.group(1)] if failure else Status.INCORRECT
            error = ErrorDetail(type="FakeError", message="marked to fail", phase=Phase.COMPILING)
            return EvalResult(
                status=status, message=f"fake {status.value}", error=error,
                environment=environment, **base,
            )  # fmt: skip
        speeds = re.search(r"#\s*speeds:\s*([\d., ]+)", code)
        if speeds:
            values = [float(v) for v in speeds.group(1).replace(" ", "").split(",") if v]
            speed = values[min(nth, len(values) - 1)]
        else:
            single = re.search(r"#\s*speed:\s*([\d.]+)", code)
            speed = float(single.group(1)) if single else 1.0
        if on_progress is not None and self.timing:
            on_progress(Phase.TIMING, 0.0)
        if not self.timing:
            return EvalResult(
                status=Status.CORRECT, message="correct", environment=environment, **base
            )
        ms = EAGER_MS / speed
        stats = RuntimeStats(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, max_ms=ms, n=30)
        eager = RuntimeStats(
            median_ms=EAGER_MS, mean_ms=EAGER_MS, std_ms=0.0, min_ms=EAGER_MS, max_ms=EAGER_MS,
            n=30,
        )  # fmt: skip
        return EvalResult(
            status=Status.CORRECT, message="correct", runtime=stats, eager=eager,
            speedup_eager=speed, timing_meaningful=True, environment=environment, **base,
        )  # fmt: skip
