"""Verdicts and their detail, on the CPU interpreter, for kernels that are wrong in known ways."""

from __future__ import annotations

import pytest

from adaexplore_mcp.judge import Status
from adaexplore_mcp.tasks import get_bundled_task

from .kernels import edited_solution, module, softmax_solution

SOFTMAX = get_bundled_task("softmax")
STORE = "tl.store(y_row + cols, y, mask=mask)"


def test_the_softmax_solution_is_correct(cpu_judge):
    result = cpu_judge.evaluate(SOFTMAX, softmax_solution())
    assert result.status is Status.CORRECT, result.message
    # 3 input sets on the main shape, 1 on each odd one, and one profiled call per shape
    assert result.correctness.trials_passed == result.correctness.trials_run == 3 + 2 + 3
    assert len(result.correctness.variants_checked) == 3
    assert result.timing_meaningful is False and result.runtime is None
    assert result.environment.interpreter is True
    assert result.correctness.max_abs_error < 1e-6


def test_wrong_values_report_error_sizes_and_first_bad_index(cpu_judge):
    code = edited_solution(
        "softmax",
        "y = numerator / tl.sum(numerator, axis=0)",
        "y = numerator / tl.sum(numerator, axis=0) * 1.01",
    )
    result = cpu_judge.evaluate(SOFTMAX, code)
    assert result.status is Status.INCORRECT
    mismatch = result.correctness.mismatch
    assert mismatch.kind == "values" and mismatch.variant.startswith("small")
    assert mismatch.trial == 0 and mismatch.output_index == 0
    assert mismatch.numel == 8 * 256 and 0 < mismatch.mismatch_count <= mismatch.numel
    assert mismatch.max_rel_error == pytest.approx(0.01, rel=0.05)
    assert mismatch.max_abs_error > 1e-4
    assert len(mismatch.first_bad_index) == 2
    assert mismatch.expected_value * 1.01 == pytest.approx(mismatch.actual_value, rel=1e-5)
    assert "first at index" in result.message and "atol=0.0001" in result.message


def test_a_tail_bug_passes_the_main_shape_but_fails_the_odd_one(cpu_judge):
    # Padding lanes loaded as 0 instead of -inf add exp(-max) to the sum when dim is not a
    # power of two: the 256-wide main shape passes, the 1000-wide odd shape does not.
    code = edited_solution(
        "softmax",
        'x = tl.load(x_row + cols, mask=mask, other=float("-inf"))',
        "x = tl.load(x_row + cols, mask=mask, other=0.0)",
    )
    result = cpu_judge.evaluate(SOFTMAX, code)
    assert result.status is Status.INCORRECT
    assert result.correctness.mismatch.variant.startswith("odd-1")
    assert result.correctness.trials_passed == 3 + 1  # and the main shape's profiled call
    assert "odd size" in result.message


def test_unwritten_output_fails_even_where_memory_was_reused(unguarded_judge):
    result = unguarded_judge.evaluate(SOFTMAX, module("return torch.empty_like(x)"))
    assert result.status is Status.INCORRECT
    assert result.correctness.mismatch.kind in ("nonfinite", "values")


def test_partially_written_output_is_caught(cpu_judge):
    code = edited_solution("softmax", STORE, "tl.store(y_row + cols, y, mask=mask & (cols < 128))")
    result = cpu_judge.evaluate(SOFTMAX, code)
    assert result.status is Status.INCORRECT
    mismatch = result.correctness.mismatch
    assert mismatch.first_bad_index[-1] == 128


def test_results_cached_across_trials_fail_on_fresh_inputs(unguarded_judge):
    code = module(
        """
        if self.cached is None:
            self.cached = torch.softmax(x, -1)
        return self.cached.clone()
        """,
        init="self.cached = None",
    )
    result = unguarded_judge.evaluate(SOFTMAX, code)
    # the trusted process recognises the earlier answer, even with the first signals off
    assert result.status is Status.REJECTED, result.message
    assert result.integrity[0].check == "result_reuse"
    assert "input set 2" in result.message


def test_a_kernel_writing_its_input_fails(cpu_judge):
    code = edited_solution(
        "softmax", STORE, STORE + "\n        tl.store(x_row + cols, y, mask=mask)"
    )
    result = cpu_judge.evaluate(SOFTMAX, code)
    assert result.status is Status.INCORRECT
    assert result.correctness.mismatch.kind == "input_modified"
    assert "must not write to their inputs" in result.message


@pytest.mark.parametrize(
    ("forward", "kind", "words"),
    [
        ("return torch.softmax(x, -1)[:, :-1]", "shape", "has shape"),
        ("return torch.softmax(x, -1).double()", "dtype", "has dtype float64"),
        ("return torch.softmax(x, -1), x", "count", "returned 2 outputs"),
        ("return torch.softmax(x, -1).tolist()", "count", "outputs"),
        ("return torch.softmax(x, -1) / 0.0", "nonfinite", "NaN/Inf"),
    ],
)
def test_structural_mismatches(unguarded_judge, forward, kind, words):
    result = unguarded_judge.evaluate(SOFTMAX, module(forward))
    assert result.status is Status.INCORRECT, result.message
    assert result.correctness.mismatch.kind == kind
    assert words in result.message


def test_a_non_tensor_output_is_incorrect(unguarded_judge):
    task = get_bundled_task("sum_rows")
    result = unguarded_judge.evaluate(task, module("return 3.0"))
    assert result.status is Status.INCORRECT
    assert result.correctness.mismatch.kind == "type"


def test_syntax_error_names_the_line(cpu_judge):
    code = module("return x +")
    line = code.splitlines().index("        return x +") + 1
    result = cpu_judge.evaluate(SOFTMAX, code)
    assert result.status is Status.COMPILE_ERROR
    assert result.error.location == f"kernel.py:{line}"
    assert f"Syntax error at kernel.py:{line}" in result.message


def test_a_nul_byte_is_a_syntax_error_of_the_whole_file(cpu_judge):
    """Python refuses a source with a NUL byte as a whole: the message read "Syntax error at
    kernel.py:None" (a red team)."""
    result = cpu_judge.evaluate(SOFTMAX, module("return x") + "\x00\n")
    assert result.status is Status.COMPILE_ERROR, result.message
    assert result.error.location == "kernel.py" and "None" not in result.message, result.message
    assert "null bytes" in result.message


def test_missing_model_new(cpu_judge):
    result = cpu_judge.evaluate(SOFTMAX, "import torch\nclass Model2:\n    pass\n")
    assert result.status is Status.COMPILE_ERROR
    assert "defines no `class ModelNew`" in result.message


def test_model_new_that_is_not_a_class(cpu_judge):
    result = cpu_judge.evaluate(SOFTMAX, "ModelNew = 3\n")
    assert result.status is Status.COMPILE_ERROR
    assert "defines no `class ModelNew`" in result.message


def test_import_error_at_load_is_a_compile_error(cpu_judge):
    result = cpu_judge.evaluate(SOFTMAX, "import not_a_module_anywhere\n" + softmax_solution())
    assert result.status is Status.COMPILE_ERROR
    assert result.error.type == "ModuleNotFoundError"
    assert result.error.location == "kernel.py:1"


def test_triton_error_is_a_compile_error_pointing_at_the_kernels_line(cpu_judge):
    """The interpreter raises its error from the one its kernel's body raised: the location was
    the launch's line, and the traceback had no line of the kernel's body."""
    edit = "cols = tl.arange(0, 100)"
    code = edited_solution("softmax", "cols = tl.arange(0, BLOCK_SIZE)", edit)
    result = cpu_judge.evaluate(SOFTMAX, code)
    assert result.status is Status.COMPILE_ERROR
    assert "power of 2" in result.message
    line = next(n for n, text in enumerate(code.splitlines(), 1) if edit in text)
    assert result.error.location == f"kernel.py:{line}", result.error.traceback


def test_runtime_error_traceback_keeps_only_the_kernels_own_frames(cpu_judge):
    code = module(
        "return helper(x)",
        prelude="""
        def helper(x):
            return x @ torch.ones(3)
        """,
    )
    result = cpu_judge.evaluate(SOFTMAX, code)
    assert result.status is Status.RUNTIME_ERROR
    lines = result.error.traceback.splitlines()
    assert len(lines) == 2
    assert all(line.startswith("  kernel.py:") for line in lines)
    assert "in helper" in lines[-1]
    assert result.error.location == "kernel.py:" + lines[-1].split(":")[1].split()[0]
    assert "size mismatch" in result.message or "mat" in result.message


def test_exception_in_constructor_is_a_compile_error(cpu_judge):
    result = cpu_judge.evaluate(SOFTMAX, module("return x", init="raise ValueError('bad config')"))
    assert result.status is Status.COMPILE_ERROR
    assert "bad config" in result.message
    assert "in __init__" in result.error.traceback


def test_tolerances_are_configurable_per_dtype(loop_thread, tmp_path):
    from adaexplore_mcp.judge import LocalJudge
    from adaexplore_mcp.judge.policy import Tolerance

    from ..conftest import cpu_settings

    code = edited_solution(
        "softmax",
        "y = numerator / tl.sum(numerator, axis=0)",
        "y = numerator / tl.sum(numerator, axis=0) * 1.001",
    )
    loose = cpu_settings(
        workers_per_device=1, tolerances={"float32": Tolerance(atol=1e-2, rtol=1e-2)}
    )

    async def run():
        async with LocalJudge(loose, home=tmp_path) as judge:
            return await judge.evaluate(SOFTMAX, code)

    assert loop_thread.run(run()).status is Status.CORRECT


def test_starting_a_started_judge_keeps_its_workers(cpu_judge):
    """A judge lent to a component that starts it again (the MCP workbench, the driver) must
    not start a second pool that nobody closes."""
    judge = cpu_judge.judge
    before = [lane for lane in judge._lanes]
    workers = [status.workers for status in judge.lanes_status()]
    cpu_judge.loop.run(judge.start())
    assert judge._lanes == before
    assert [status.workers for status in judge.lanes_status()] == workers


def test_a_runtime_error_names_the_shape_it_happened_on(cpu_judge):
    """A kernel that fails on one shape only: the message said where in the code, not on
    which of the task's shapes, and a user could not tell which sizes to handle."""
    forward = "def forward(self, x: torch.Tensor) -> torch.Tensor:"
    code = edited_solution(
        "softmax", forward, forward + "\n        assert x.shape[-1] % 16 == 0, 'a multiple of 16'"
    )
    result = cpu_judge.evaluate(SOFTMAX, code)
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert result.error.variant is not None and result.error.variant.startswith("odd-")
    assert f"on shape {result.error.variant}" in result.message, result.message
