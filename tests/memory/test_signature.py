import pytest

from adaexplore_mcp.memory import FailureReport, failure_signature, signature
from adaexplore_mcp.memory.signature import kernel_names, unwrap
from adaexplore_mcp.tasks import bundled_solution, resolve_task

from .conftest import global_read_failure

ARANGE = 'ValueError("arange\'s range must be a power of 2")'


def test_the_interpreter_and_the_gpu_compiler_wrappings_unwrap_to_one_error():
    interpreter = signature("InterpreterError", ARANGE)
    compiler = signature(
        "CompilationError",
        "at 14:13:\ndef kernel(X, BLOCK: tl.constexpr):\n    offs = tl.arange(0, 100)\n"
        f"             ^\n{ARANGE}",
    )
    assert interpreter.key == compiler.key
    assert interpreter.error_type == "ValueError"
    assert interpreter.text == "arange's range must be a power of <n>"


def test_names_lines_and_addresses_of_one_kernel_do_not_change_the_signature():
    first = failure_signature(global_read_failure("gelu", "SQRT_2_OVER_PI", 12))
    second = failure_signature(global_read_failure("softmax", "LOG2E", 31))
    assert first.key == second.key
    assert "SQRT_2_OVER_PI" not in first.text and "<name>" in first.text
    assert first.distinctive


def test_addresses_shapes_and_paths_are_stripped():
    a = signature(
        "RuntimeError", "tensor at 0x7f3a2c00 of shape [128, 64] failed in /a/b/kernel.py:12"
    )
    b = signature("RuntimeError", "tensor at 0x55d1ee10 of shape [7, 1000] failed in kernel.py:99")
    assert a.key == b.key
    assert "0x" not in a.text


def test_different_mistakes_get_different_signatures():
    arange = signature("InterpreterError", ARANGE)
    global_read = failure_signature(global_read_failure("gelu", "SCALE", 3))
    assert arange.key != global_read.key


def test_dtype_names_survive_normalisation():
    fp16 = signature("TypeError", "cannot store float32 into a pointer to float16")
    bf16 = signature("TypeError", "cannot store float32 into a pointer to bfloat16")
    assert fp16.key != bf16.key


def test_wrong_results_are_never_distinctive():
    wrong = failure_signature(
        FailureReport(
            task="t", code="", error="max abs error 0.5 in 133 of 720 outputs", verdict="incorrect"
        )
    )
    assert not wrong.distinctive


def test_unwrap_keeps_an_unwrapped_error_as_it_is():
    assert unwrap("KeyError", "'BLOCK_SIZE'") == ("KeyError", "'BLOCK_SIZE'")


def test_kernel_names_are_what_the_kernel_defines_not_the_api_it_calls():
    names = kernel_names(bundled_solution("gelu"))
    assert {"SQRT_2_OVER_PI", "gelu_tanh_kernel", "x_ptr", "offsets"} <= names
    assert not names & {"tl", "triton", "arange", "load", "forward"}


@pytest.mark.parametrize("size_a, size_b", [(1000, 100)])
def test_the_same_mistake_in_two_real_kernels_has_one_signature(cpu_judge, size_a, size_b):
    """Two kernels, run for real in the judge, making one mistake with other names and sizes."""
    task = resolve_task("gelu")
    solution = bundled_solution(task.name)
    first = solution.replace("tl.arange(0, BLOCK_SIZE)", f"tl.arange(0, {size_a})")
    second = (
        solution.replace("gelu_tanh_kernel", "my_gelu")
        .replace("offsets", "idx")
        .replace("tl.arange(0, BLOCK_SIZE)", f"tl.arange(0, {size_b})")
    )
    reports = []
    for code in (first, second):
        result = cpu_judge.evaluate(task, code)
        assert result.status == "compile_error", result.message
        reports.append(
            FailureReport(
                task=task.name,
                code=code,
                error=result.error.message,
                error_type=result.error.type,
                verdict=result.status,
            )
        )
    one, two = (failure_signature(r) for r in reports)
    assert one.key == two.key
    assert one.error_type == "ValueError"


def test_a_kernel_past_the_parsers_nesting_limit_falls_back_to_its_assignments():
    code = bundled_solution("gelu") + "\n_deep = " + "-" * 100_000 + "1\n"
    assert {"SQRT_2_OVER_PI", "gelu_tanh_kernel", "_deep"} <= kernel_names(code)
    assert signature("SourceTooDeep", "kernel.py nests too deeply", code=code).slip is None


@pytest.mark.timeout(20)
def test_a_long_message_is_signed_by_its_beginning_in_little_time():
    """``add_failure`` took 86 s of CPU on an error text of 200,000 characters (its path
    pattern backtracks over a long run without a slash); the signature reads the first
    ``SIGNATURE_CHARS`` characters, so a text that differs only past them signs the same."""
    from adaexplore_mcp.memory.signature import SIGNATURE_CHARS

    head = "RuntimeError: the grid is empty " + "x" * 200_000
    assert signature("RuntimeError", head) == signature("RuntimeError", head + " tail")
    assert len(head) > 50 * SIGNATURE_CHARS
