"""Integrity checks on the timed calls themselves. Runs inside the sandboxed child, on a GPU.

Timing inputs are the same for every evaluation (so a speedup compares equal work), which
makes them an easy target: a kernel could recognise them and return a stored answer. So
before each timed call one row (index along the first dimension) of every floating-point input
is overwritten with another of its rows: the values stay valid inputs for the task, the change
is undone after the call, and a whole row changes enough of the output to show through any
tolerance (a single element did not: one changed element of an 8192-wide softmax row moves the
outputs by less than float32's tolerance). A few calls, picked in secret, keep their inputs and
output to be checked against the reference afterwards.

Two physical limits are checked too: the GPU must be idle once the call's own stream has
finished (no work left on side streams), and no kernel can beat the time needed to read its
inputs once at the GPU's measured bandwidth.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from adaexplore_mcp.config import IntegritySettings
from adaexplore_mcp.judge.compare import Comparison
from adaexplore_mcp.judge.errors import Violation
from adaexplore_mcp.judge.output_checks import check_output_kinds


class TimedAudit:
    def __init__(
        self, inputs: list[Any], rng: random.Random, settings: IntegritySettings, min_runs: int
    ) -> None:
        self.inputs = inputs
        self.rng = rng
        self._perturbed = [
            value
            for value in inputs
            if isinstance(value, torch.Tensor)
            and value.dtype.is_floating_point
            and value.dim() >= 1
            and value.shape[0] > 1
        ]
        picks = min(settings.audited_timed_calls, min_runs)
        self.audited = set(rng.sample(range(min_runs), picks))
        self.captured: list[tuple[int, list[Any], Any]] = []
        self._undo: list[tuple[torch.Tensor, int, torch.Tensor]] = []

    def before(self, index: int) -> None:
        for tensor in self._perturbed:
            target, source = self.rng.sample(range(tensor.shape[0]), 2)
            self._undo.append((tensor, target, tensor[target].clone()))
            tensor[target] = tensor[source]

    def after(self, index: int, output: Any) -> None:
        if index in self.audited:
            kept_inputs = [v.clone() if isinstance(v, torch.Tensor) else v for v in self.inputs]
            kept_output = _clone_outputs(output)
            self.captured.append((index, kept_inputs, kept_output))
        for tensor, target, value in reversed(self._undo):
            tensor[target] = value
        self._undo.clear()

    def verify(self, run_reference, comparison: Comparison, variant: str) -> None:
        """Each captured call's output against the reference on that call's own inputs."""
        for index, inputs, output in self.captured:
            expected = run_reference(inputs)
            check_output_kinds(output, expected)
            mismatch = comparison.compare(output, expected, variant=variant, trial=-1)
            if mismatch is not None:
                raise Violation(
                    "timed_output",
                    f"timed call #{index + 1} returned a result that does not match its own "
                    f"inputs ({mismatch.kind}); a kernel must compute its result on every "
                    "call, not return one stored for inputs it has seen",
                )


def _clone_outputs(output: Any) -> Any:
    if isinstance(output, tuple | list):
        return type(output)(_clone_outputs(o) for o in output)
    if type(output) is torch.Tensor:
        return output.clone()
    return output


def check_side_streams(gap_ms: float, median_ms: float, settings: IntegritySettings) -> None:
    limit_ms = settings.hidden_work_us / 1e3 + 0.1 * median_ms
    if gap_ms > limit_ms:
        raise Violation(
            "hidden_work",
            f"the GPU was still busy {gap_ms * 1e3:.0f} µs after forward's stream finished "
            f"(limit {limit_ms * 1e3:.0f} µs): work left on another stream is not timed; "
            "launch on the current stream or make it wait for the side stream",
        )


def bytes_to_read(inputs: list[Any], model: Any) -> int:
    """Bytes of every distinct input tensor and reference parameter or buffer."""
    seen: dict[int, int] = {}
    tensors = [value for value in inputs if isinstance(value, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters()) + list(model.buffers())
    for tensor in tensors:
        if tensor.device.type == "cuda" and tensor.numel():
            storage = tensor.untyped_storage()
            seen[storage.data_ptr()] = max(seen.get(storage.data_ptr(), 0), storage.nbytes())
    return sum(seen.values())


def check_speed_of_light(
    median_ms: float, nbytes: int, bandwidth: float, settings: IntegritySettings
) -> None:
    floor_ms = nbytes / bandwidth * 1e3
    if median_ms < settings.speed_of_light_fraction * floor_ms:
        raise Violation(
            "impossible_speedup",
            f"the kernel took {median_ms * 1e3:.1f} µs, but reading the task's "
            f"{nbytes / 2**20:.1f} MiB of inputs and parameters once at this GPU's measured "
            f"{bandwidth / 1e9:.0f} GB/s takes {floor_ms * 1e3:.1f} µs; the work was skipped "
            "or done outside the timed call",
        )
