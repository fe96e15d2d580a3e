"""Source checks that run before any worker: syntax, ModelNew, and GPU-only compile rules."""

import ast
import textwrap

import pytest

from adaexplore_mcp.judge import Status
from adaexplore_mcp.judge.static_checks import plain_globals_in_kernels, precheck
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task, solution_names


def reads(source: str) -> list[tuple[str, str]]:
    tree = ast.parse(textwrap.dedent(source))
    return [(r.kernel, r.name) for r in plain_globals_in_kernels(tree)]


def test_plain_globals_read_in_a_kernel_are_found():
    source = """
        import math
        import triton
        import triton.language as tl

        SCALE = 0.5
        ROOT = math.sqrt(2 / math.pi)
        OK = tl.constexpr(3)
        DTYPE = tl.float16
        BLOCK = 128  # used only on the host

        @triton.jit
        def kernel(x_ptr, n):
            shadow = 1
            SHADOWED = 2
            y = tl.load(x_ptr) * SCALE * ROOT * OK + SHADOWED + shadow
            tl.store(x_ptr, y.to(DTYPE))

        SHADOWED = 7.0

        def launch(x):
            kernel[(BLOCK,)](x, SCALE)
    """
    assert reads(source) == [("kernel", "SCALE"), ("kernel", "ROOT")]


def test_a_rebound_global_is_no_longer_plain():
    source = """
        import triton
        import triton.language as tl
        helper = 3.0
        @triton.jit
        def helper():
            pass
        @triton.jit
        def kernel(x):
            helper()
    """
    assert reads(source) == []


def test_no_bundled_solution_reads_a_plain_global():
    for name in solution_names():
        assert reads(bundled_solution(name)) == [], name


def test_the_judge_gives_the_gpu_compile_error_on_the_cpu(cpu_judge):
    # observed on an H200 with triton 3.6 while the CPU interpreter accepted it
    code = bundled_solution("gelu").replace(
        "SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)", "SQRT_2_OVER_PI = 0.7978845608028654"
    )
    result = cpu_judge.evaluate(get_bundled_task("gelu"), code)
    assert result.status is Status.COMPILE_ERROR
    assert "SQRT_2_OVER_PI = tl.constexpr(...)" in result.message
    line = code.splitlines().index("    u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)") + 1
    assert result.error.location == f"kernel.py:{line}"


# nested past Python's recursion limit (module level, read by the GPU-global check; in a
# function, read only by the source policy), and past the parser's own limit
DEEP_GLOBAL = "\n_deep = " + "-" * 2000 + "1\n"
DEEP_IN_FUNCTION = "\n\ndef _deep():\n    return " + "-" * 2000 + "1\n"
PAST_THE_PARSER = "\n_deep = " + "-" * 100_000 + "1\n"


@pytest.mark.parametrize("tail", [DEEP_GLOBAL, DEEP_IN_FUNCTION, PAST_THE_PARSER])
def test_source_nested_too_deeply_is_the_kernels_compile_error(tail):
    result = precheck(get_bundled_task("softmax"), bundled_solution("softmax") + tail)
    assert result is not None
    assert result.status is Status.COMPILE_ERROR
    assert result.error.type == "SourceTooDeep"
    assert "nests too deeply" in result.message and "split" in result.message


def test_the_judge_gives_a_verdict_on_source_nested_too_deeply(cpu_judge):
    result = cpu_judge.evaluate(
        get_bundled_task("softmax"), bundled_solution("softmax") + DEEP_GLOBAL
    )
    assert result.status is Status.COMPILE_ERROR
    assert "nests too deeply" in result.message
