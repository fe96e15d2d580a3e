"""A KernelBench-style task (no ODD_SHAPES) is checked on shapes derived from its sizes; a
derived shape the task's own reference cannot run is skipped and reported, never held against
the kernel."""

from __future__ import annotations

from adaexplore_mcp.judge import Status
from adaexplore_mcp.tasks import parse_task

TASK = '''"""Doubles a batch of rows, KernelBench style: the sizes are module-level integers."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


batch_size = 16
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

# The same task, whose reference accepts only widths divisible by 4 and gives NaN on odd
# batches: derived-odd (9 x 33) raises, derived-batch (3 x 64) is NaN, derived-unaligned
# (16 x 24) runs.
PICKY_FORWARD = """    def forward(self, x):
        if x.shape[1] % 4:
            raise ValueError("dim must be a multiple of 4")
        return x * (2.0 if x.shape[0] % 2 == 0 else float("nan"))
"""

KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        double_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y
"""

# What agents write: the benchmark's sizes baked into forward (and so into the grid).
HARD_CODED = KERNEL.replace(
    """        y = torch.empty_like(x)
        n = x.numel()""",
    """        y = torch.empty(16, 64)
        n = 16 * 64""",
)


def test_an_honest_kernel_passes_every_derived_shape(cpu_judge):
    result = cpu_judge.evaluate(parse_task(TASK, name="double"), KERNEL)
    assert result.status is Status.CORRECT, result.message
    assert result.correctness.variants_checked == [
        "benchmark",
        "derived-odd (batch_size=9, dim=33)",
        "derived-unaligned (dim=24)",
        "derived-batch (batch_size=3)",
    ]
    assert result.correctness.variants_skipped == []
    assert "(benchmark, derived-odd, derived-unaligned, derived-batch;" in result.message


def test_a_kernel_that_hard_codes_the_benchmark_shape_fails_a_derived_one(cpu_judge):
    result = cpu_judge.evaluate(parse_task(TASK, name="double"), HARD_CODED)
    assert result.status is Status.INCORRECT, result.message
    # the benchmark shape passed: only the derived shape exposes it
    assert result.correctness.variants_checked == ["benchmark"]
    assert result.correctness.trials_passed >= 1
    mismatch = result.correctness.mismatch
    assert mismatch.variant == "derived-odd (batch_size=9, dim=33)" and mismatch.kind == "shape"
    assert "derived this shape from the task's sizes" in result.message


def test_derived_shapes_the_reference_rejects_are_skipped_and_reported(cpu_judge):
    picky = parse_task(
        TASK.replace("    def forward(self, x):\n        return x * 2.0\n", PICKY_FORWARD),
        name="picky",
    )
    result = cpu_judge.evaluate(picky, KERNEL)
    assert result.status is Status.CORRECT, result.message
    assert result.correctness.variants_checked == ["benchmark", "derived-unaligned (dim=24)"]
    skipped = {s.variant: s.reason for s in result.correctness.variants_skipped}
    assert skipped == {
        "derived-odd (batch_size=9, dim=33)": "the reference raised ValueError: failed while "
        "running Model.forward: dim must be a multiple of 4",
        "derived-batch (batch_size=3)": "the reference's output 0 holds NaN or Inf",
    }
    assert "Not checked on derived-odd (batch_size=9, dim=33): the reference raised" in (
        result.message
    )

    report = cpu_judge.lint(picky)
    assert report.error is None
    assert report.variants == ["benchmark", "derived-unaligned (dim=24)"]
    assert [s.variant for s in report.skipped] == [
        "derived-odd (batch_size=9, dim=33)",
        "derived-batch (batch_size=3)",
    ]
