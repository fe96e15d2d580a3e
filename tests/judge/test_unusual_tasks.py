"""Tasks whose outputs or inputs are not plain float tensors: complex and float8 outputs are
compared for what they are, Python numbers as numbers, and what a task's process cannot send
is the task's error, never the kernel's or the judge's (each found by a red team)."""

from __future__ import annotations

import textwrap

import pytest

from adaexplore_mcp.judge import Status
from adaexplore_mcp.tasks import TaskError, parse_task


def _task(forward: str, inputs: str, name: str, *, init: str = "[]", extra: str = "") -> object:
    return parse_task(
        textwrap.dedent(
            f"""
            import torch
            import torch.nn as nn


            class Model(nn.Module):
                def __init__(self, *args):
                    super().__init__()

                def forward(self, x, *rest):
                    return {forward}


            n = 4096


            def get_inputs():
                return {inputs}


            def get_init_inputs():
                return {init}


            SMALL_SHAPES = {{"n": 256}}
            ODD_SHAPES = [{{"n": 1000}}]
            {extra}
            """
        ),
        name=name,
    )


def _kernel(store: str, returns: str, *, dtype: str = "torch.float32", width: int = 1) -> str:
    """A Triton kernel that stores ``store`` (of ``x``, loaded as float32) at each position,
    ``width`` values a position, and a forward that returns ``returns`` of ``buf``."""
    store = store.replace("\n", "\n" + " " * 12)
    return textwrap.dedent(
        f"""
        import torch
        import torch.nn as nn
        import triton
        import triton.language as tl


        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
            {store}


        class ModelNew(nn.Module):
            def __init__(self, *args):
                super().__init__()

            def forward(self, x, *rest):
                x = x.contiguous()
                buf = torch.empty(x.numel(), {width}, dtype={dtype}, device=x.device)
                kernel[(triton.cdiv(x.numel(), 1024),)](x, buf, x.numel(), BLOCK=1024)
                return {returns}
        """
    )


COMPLEX = _task("torch.polar(torch.ones_like(x), x)", "[torch.randn(n)]", "complex_exp")
INTERLEAVED = (
    "tl.store(out_ptr + 2 * offsets, tl.cos(x), mask=mask)\n"
    "tl.store(out_ptr + 2 * offsets + 1, {imaginary}, mask=mask)"
)


def test_a_complex_outputs_imaginary_part_is_compared(cpu_judge):
    task = _task(
        "torch.polar(torch.ones_like(x), x)",
        "[torch.randn(n)]",
        "complex_exp_tolerant",
        extra='TOLERANCE = {"atol": 1e-5, "rtol": 1e-5}',
    )
    wrong = _kernel(INTERLEAVED.format(imaginary="x * 0.0"), "torch.view_as_complex(buf)", width=2)
    result = cpu_judge.evaluate(task, wrong)
    assert result.status is Status.INCORRECT, result.message


def test_an_honest_complex_kernel_is_compared_with_its_parts_tolerance(cpu_judge):
    honest = _kernel(
        INTERLEAVED.format(imaginary="tl.sin(x)"), "torch.view_as_complex(buf)", width=2
    )
    result = cpu_judge.evaluate(COMPLEX, honest)
    assert result.status is Status.CORRECT, result.message


@pytest.mark.parametrize(
    ("forward", "inputs", "returns"),
    [
        # float8 inputs: the judge checks the kernel left them as they were
        ("x.to(torch.float32) * 0.5", "[torch.randn(n).to(torch.float8_e4m3fn)]", "buf.view(-1)"),
        # float8 outputs (converted as the reference converts: Triton's interpreter rounds
        # float8 its own way), compared within their rounding
        (
            "(x * 0.5).to(torch.float8_e4m3fn)",
            "[torch.randn(n)]",
            "buf.view(-1).to(torch.float8_e4m3fn)",
        ),
    ],
    ids=["inputs", "outputs"],
)
def test_float8_tasks_are_judged(cpu_judge, forward, inputs, returns):
    task = _task(forward, inputs, "float8")
    result = cpu_judge.evaluate(
        task, _kernel("tl.store(out_ptr + offsets, x * 0.5, mask=mask)", returns)
    )
    assert result.status is Status.CORRECT, result.message


def test_a_python_number_the_reference_returns_may_be_returned(cpu_judge):
    task = _task("(x * 2.0, float(x.shape[-1]))", "[torch.randn(n)]", "with_a_number")
    code = _kernel(
        "tl.store(out_ptr + offsets, x * 2.0, mask=mask)", "buf.view(-1), float(x.shape[-1])"
    )
    result = cpu_judge.evaluate(task, code)
    assert result.status is Status.CORRECT, result.message


def test_a_python_float_past_float32s_range_is_not_matched_by_any_output(cpu_judge):
    """The reference's float of about 1e173 became float32's inf, and a kernel that returned a
    0-d tensor of 42.0 whatever its input was judged correct (a red team)."""
    task = _task("torch.exp(x.double() * 100).sum().item()", "[torch.randn(n)]", "huge_float")
    constant = _kernel("tl.store(out_ptr + offsets, x * 0.0 + 42.0, mask=mask)", "buf[0, 0]")
    result = cpu_judge.evaluate(task, constant)
    assert result.status is Status.INCORRECT, result.message


@pytest.mark.parametrize(
    ("forward", "inputs", "init", "error"),
    [
        ("(x * 2.0, 2**70)", "[torch.randn(n)]", "[]", "outside int64"),
        ("x * rest[0]['scale']", "[torch.randn(n), {'scale': 0.5}]", "[]", "get_inputs"),
        ("x * 2.0", "[torch.randn(n)]", "[torch.float32]", "get_init_inputs"),
    ],
    ids=["int_beyond_int64", "dict_input", "dtype_init_input"],
)
def test_what_a_task_cannot_send_is_the_tasks_error(cpu_judge, forward, inputs, init, error):
    task = _task(forward, inputs, "unsendable", init=init)
    code = _kernel("tl.store(out_ptr + offsets, x * 2.0, mask=mask)", "buf.view(-1)")
    with pytest.raises(TaskError, match=error):
        cpu_judge.evaluate(task, code)


@pytest.mark.parametrize(
    ("forward", "says"),
    [("x.mul_(2.0)", "the task's reference modifies it too"), ("x * 2.0", "must not write")],
    ids=["reference_in_place", "reference_out_of_place"],
)
def test_a_kernel_that_writes_its_input_is_told_whether_the_task_does_too(cpu_judge, forward, says):
    """A task whose reference works in place fails an honest kernel that does the same: the
    message said only "Kernels must not write to their inputs", blaming the kernel for the
    task's design; now it says what to change in the task."""
    task = _task(forward, "[torch.randn(n)]", "doubled")
    in_place = _kernel("tl.store(out_ptr + offsets, x * 2.0, mask=mask)", "x.copy_(buf.view(-1))")
    result = cpu_judge.evaluate(task, in_place)
    assert result.status is Status.INCORRECT, result.message
    assert result.correctness.mismatch.kind == "input_modified"
    assert says in result.message, result.message


# its odd shape has a zero in it (the later ODD_SHAPES is the one the task keeps)
EMPTY_ODD_SHAPE = _task("x * 2", "[torch.randn(n)]", "doubled", extra='ODD_SHAPES = [{"n": 0}]')
EARLY_RETURN = "        if x.numel() == 0:\n            return torch.empty_like(x)\n"


@pytest.mark.parametrize("on_empty", ["", EARLY_RETURN], ids=["launched", "returned_early"])
def test_a_shape_with_nothing_to_compute_asks_for_no_launch(cpu_judge, on_empty):
    """On a shape with a zero in it any output is right: the no-op call rejected an honest
    kernel as no_triton_work, and one that returned early as no_triton_kernel, naming no
    shape."""
    code = _kernel("tl.store(out_ptr + offsets, x * 2.0, mask=mask)", "buf.view(-1)")
    code = code.replace("        x = x.contiguous()\n", "        x = x.contiguous()\n" + on_empty)
    assert on_empty in code
    result = cpu_judge.evaluate(EMPTY_ODD_SHAPE, code)
    assert result.status is Status.CORRECT, result.message
