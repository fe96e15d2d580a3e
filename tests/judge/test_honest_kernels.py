"""Honest softmax kernels, written in ways the bundled solution is not, that must keep passing
with every integrity check on: a check that rejects one of them rejects real work."""

from __future__ import annotations

import textwrap

import pytest

from adaexplore_mcp.judge import Status
from adaexplore_mcp.tasks import get_bundled_task

SOFTMAX = get_bundled_task("softmax")

HEADER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
"""

# One program per row, its block size computed by a heuristic from the row length.
HEURISTIC_KERNEL = """

@triton.heuristics({"BLOCK_SIZE": lambda args: triton.next_power_of_2(args["n_cols"])})
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)
"""


def heuristic_softmax(then: str = "", *, imports: str = "") -> str:
    """The heuristic kernel launched once a row, and forward's lines ``then`` after it."""
    return (
        HEADER
        + HEURISTIC_KERNEL
        + imports
        + """

class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0))
"""
        + textwrap.indent(textwrap.dedent(then).lstrip("\n"), " " * 8)
        + """        return y
"""
    )


HEURISTICS = heuristic_softmax()

# Three kernels, three launches: the row maxima, the sums of exponentials, the quotients.
SEVERAL_LAUNCHES = (
    HEADER
    + """

@triton.jit
def row_max_kernel(x_ptr, max_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
    tl.store(max_ptr + row, tl.max(x, axis=0))


@triton.jit
def row_sum_kernel(x_ptr, max_ptr, sum_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
    tl.store(sum_ptr + row, tl.sum(tl.exp(x - tl.load(max_ptr + row)), axis=0))


@triton.jit
def normalise_kernel(x_ptr, max_ptr, sum_ptr, y_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    y = tl.exp(x - tl.load(max_ptr + row)) / tl.load(sum_ptr + row)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, n_cols = x.shape
        block = triton.next_power_of_2(n_cols)
        maxima = torch.empty(rows, device=x.device, dtype=x.dtype)
        sums = torch.empty(rows, device=x.device, dtype=x.dtype)
        y = torch.empty_like(x)
        row_max_kernel[(rows,)](x, maxima, n_cols, BLOCK_SIZE=block)
        row_sum_kernel[(rows,)](x, maxima, sums, n_cols, BLOCK_SIZE=block)
        normalise_kernel[(rows,)](x, maxima, sums, y, n_cols, BLOCK_SIZE=block)
        return y
"""
)

# The output buffer worked on in place: exp(x - max) written into y, then y divided by the
# row sums where it lies.
IN_PLACE = (
    HEADER
    + """

@triton.jit
def exp_kernel(x_ptr, y_ptr, sum_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, e, mask=mask)
    tl.store(sum_ptr + row, tl.sum(e, axis=0))


@triton.jit
def divide_in_place_kernel(y_ptr, sum_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * n_cols + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, y / tl.load(sum_ptr + row), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, n_cols = x.shape
        block = triton.next_power_of_2(n_cols)
        y = torch.empty_like(x)
        sums = torch.empty(rows, device=x.device, dtype=x.dtype)
        exp_kernel[(rows,)](x, y, sums, n_cols, BLOCK_SIZE=block)
        divide_in_place_kernel[(rows,)](y, sums, n_cols, BLOCK_SIZE=block)
        return y
"""
)

# The result computed into a (dim, batch) buffer and returned transposed: the reference's shape,
# with its strides swapped.
TRANSPOSED_OUTPUT = (
    HEADER
    + """

@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + cols * n_rows + row, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, n_cols = x.shape
        out = torch.empty(n_cols, rows, device=x.device, dtype=x.dtype)
        softmax_kernel[(rows,)](x, out, rows, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        y = out.t()
        assert y.shape == x.shape and not y.is_contiguous()
        return y
"""
)

# Notes written to, and read back from, a file in the kernel's working directory.
SCRATCH_FILE = heuristic_softmax(
    """
    with open("scratch.txt", "w") as f:
        f.write(f"rows={x.shape[0]}")
    with open("scratch.txt") as f:
        assert f.read() == f"rows={x.shape[0]}"
    """
)

# Scratch kept the ways Python offers: a temporary file where tempfile puts it (the process's
# TMPDIR), a folder made and removed, a file written through pathlib and deleted. Each was
# rejected as file_write (a fourth-round review of the verdicts).
SCRATCH_KEPT_EVERY_WAY = heuristic_softmax(
    """
    with tempfile.NamedTemporaryFile("w") as note:
        note.write(f"rows={x.shape[0]}")
    os.makedirs("notes", exist_ok=True)
    path = pathlib.Path("notes") / "shape.txt"
    path.write_text(f"rows={x.shape[0]}")
    os.remove(path)
    os.rmdir("notes")
    """,
    imports="\nimport os\nimport pathlib\nimport tempfile\n",
)

# Glue written with torch's composite helpers, which the profiler names as called.
COMPOSITE_GLUE = (
    HEADER
    + HEURISTIC_KERNEL
    + """

class ModelNew(nn.Module):
    def forward(self, x):
        rows = int(torch.tensor(x.shape[0]).item())
        x = torch.nn.functional.pad(x.type_as(x), (0, 0)).reshape_as(x).expand_as(x)
        x = x.contiguous()
        y = torch.empty_like(x).view_as(x)
        softmax_kernel[(rows,)](x, y, x.shape[1], x.stride(0))
        return torch.movedim(y.unsqueeze(0), 0, -1).squeeze(-1)
"""
)


@pytest.mark.parametrize(
    "code",
    [
        HEURISTICS,
        SEVERAL_LAUNCHES,
        IN_PLACE,
        TRANSPOSED_OUTPUT,
        SCRATCH_FILE,
        SCRATCH_KEPT_EVERY_WAY,
        COMPOSITE_GLUE,
    ],
    ids=[
        "heuristics",
        "several-launches",
        "in-place",
        "transposed-output",
        "scratch-file",
        "scratch-kept-every-way",
        "composite-glue",
    ],
)
def test_an_honest_kernel_passes_every_check(cpu_judge, code):
    """Heuristics, several launches, in-place work, a strided output, scratch files and
    torch's composite glue are ways to write real kernels, not tricks: none may trip a check."""
    result = cpu_judge.evaluate(SOFTMAX, code, timeout_s=60)
    assert result.status is Status.CORRECT, result.message
