"""Slips: mistakes of one kernel's own text (a typo, a name it never defined, a module that does
not exist) are recorded, and never make or support a rule."""

import asyncio

import pytest

from adaexplore_mcp.memory import FailureReport, failure_signature
from adaexplore_mcp.memory.signature import unwrap
from adaexplore_mcp.memory.slips import find_slip
from adaexplore_mcp.memory.starter import load_starter

from .conftest import ScriptedDistiller, memory_in

KERNEL = """\
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if n > 0:
        scale = 2.0
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)
"""

RULE = "You cannot call tl.arange with a runtime bound inside a @triton.jit kernel."


def gpu(inner: str) -> str:
    """The GPU compiler's wrapping of an error raised while compiling line 3."""
    return f"at 3:11:\n    offs = tl.arang(0, BLOCK)\n           ^\n{inner}"


@pytest.mark.parametrize(
    "error_type, error, code, kind",
    [
        ("SyntaxError", "invalid syntax: def k(x_ptr", "def k(x_ptr\n", "syntax"),
        ("IndentationError", "unexpected indent", "  x = 1\n y = 2\n", "syntax"),
        ("SyntaxError", "expected ':'", "", "syntax"),
        ("InterpreterError", "NameError(\"name 'offz' is not defined\")", KERNEL, "undefined_name"),
        ("CompilationError", gpu("NameError('offz is not defined')"), KERNEL, "undefined_name"),
        (
            "NameError",
            "name 'tl' is not defined",
            "def f():\n    return tl.arange(0, 4)\n",
            "undefined_name",
        ),
        (
            "InterpreterError",
            "AttributeError(\"module 'triton.language' has no attribute 'arang'\")",
            KERNEL,
            "misspelt_attribute",
        ),
        (
            "CompilationError",
            gpu("AttributeError(\"module 'triton.language' has no attribute 'arang'\")"),
            KERNEL,
            "misspelt_attribute",
        ),
        ("AttributeError", "module 'torch' has no attribute 'zero'", KERNEL, "misspelt_attribute"),
        (
            "AttributeError",
            "'Tensor' object has no attribute 'sizee'",
            KERNEL,
            "misspelt_attribute",
        ),
        (
            "ImportError",
            "cannot import name 'arang' from 'triton.language' (/x/triton/language/__init__.py)",
            KERNEL,
            "misspelt_attribute",
        ),
        ("ModuleNotFoundError", "No module named 'tritn'", KERNEL, "missing_module"),
        ("ModuleNotFoundError", "No module named 'my_kernel_helpers'", KERNEL, "missing_module"),
    ],
)
def test_slips_of_the_kernels_own_text(error_type, error, code, kind):
    slip = failure_signature(
        FailureReport(task="t", code=code, error=error, error_type=error_type)
    ).slip
    assert slip is not None, error
    assert find_slip(*_inner(error_type, error), code).kind == kind


@pytest.mark.parametrize(
    "error_type, error, code",
    [
        # A real Triton or PyTorch lesson, even when it reads like a typo.
        ("InterpreterError", 'ValueError("arange\'s range must be a power of 2")', KERNEL),
        # The kernel does define it: where it is defined (one branch of an if) is the lesson.
        ("CompilationError", gpu("NameError('scale is not defined')"), KERNEL),
        # A Python builtin the GPU compiler does not know: use tl.abs.
        ("CompilationError", gpu("NameError('abs is not defined')"), KERNEL),
        (
            "CompilationError",
            'NameError("Cannot access global variable SCALE from within @jit\'ed function.")',
            KERNEL,
        ),
        # Not a misspelling of anything Triton has: the API does not exist (tl.tanh, tl.gelu).
        ("AttributeError", "module 'triton.language' has no attribute 'tanh'", KERNEL),
        ("AttributeError", "module 'triton.language' has no attribute 'gelu'", KERNEL),
        # It exists here: another version of Triton lacked it, which is a lesson.
        ("AttributeError", "module 'triton.language' has no attribute 'arange'", KERNEL),
        ("AttributeError", "'tensor' object has no attribute 'T'", KERNEL),
        # Triton exists, the submodule moved between versions.
        ("ModuleNotFoundError", "No module named 'triton.language.libdevice'", KERNEL),
        # A kernel that parses did not make the SyntaxError.
        ("SyntaxError", "invalid syntax", KERNEL),
        # A name not defined in a kernel given only as an excerpt that does not parse: unknown.
        ("NameError", "name 'offz' is not defined", "    tl.store(y, offz\n"),
    ],
)
def test_lessons_are_not_slips(error_type, error, code):
    assert find_slip(*_inner(error_type, error), code) is None
    assert (
        failure_signature(
            FailureReport(task="t", code=code, error=error, error_type=error_type)
        ).slip
        is None
    )


def _inner(error_type, error):
    return unwrap(error_type, error)


def typo(task: str, name: str = "offz") -> FailureReport:
    return FailureReport(
        task=task,
        code=KERNEL.replace("add_kernel", f"{task}_kernel"),
        error=f"NameError(\"name '{name}' is not defined\")",
        error_type="InterpreterError",
        verdict="compile_error",
    )


def add(memory, report, rule=None):
    return asyncio.run(memory.add_failure(report, rule=rule))


def test_a_slip_is_recorded_but_makes_no_rule_even_when_one_is_given(memory):
    result = add(memory, typo("gelu"), RULE)
    assert result.outcome == "no_rule" and result.rule is None
    assert result.slip and "offz" in result.slip
    assert "not a lesson" in result.message
    assert memory.rules() == []
    recorded = memory.failures()
    assert len(recorded) == 1 and recorded[0].rule_ids == []
    again = add(memory, typo("gelu"), RULE)
    assert again.outcome == "duplicate" and again.slip and again.rule is None


def test_a_slip_supports_no_existing_rule(tmp_path):
    distiller = ScriptedDistiller(rules={"": RULE})
    memory = memory_in(tmp_path, distiller)
    rule, _ = memory.add_rule(RULE)
    result = add(memory, typo("softmax"), RULE)
    assert result.outcome == "no_rule"
    assert memory.rule(rule.id).support_failures == 0
    # Without a rule given, the model is not asked about a slip either.
    add(memory, typo("layernorm"))
    assert distiller.extract_calls == []


def test_slips_never_join_a_rule_filed_later_for_a_lesson_with_the_same_message(memory):
    add(memory, typo("gelu", "offz"))
    add(memory, typo("softmax", "blk"))
    # 'scale' is defined in forward(), not in the kernel: the same message, a real lesson.
    code = KERNEL.replace("    if n > 0:\n        scale = 2.0\n", "") + (
        "\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        scale = 2.0\n"
    )
    lesson = FailureReport(
        task="layernorm",
        code=code,
        error="NameError(\"name 'scale' is not defined\")",
        error_type="InterpreterError",
    )
    filed = add(
        memory,
        lesson,
        "You cannot read a local variable of forward inside a @triton.jit kernel; pass it in.",
    )
    assert filed.outcome == "new_rule" and filed.slip is None
    assert filed.rule.support_failures == 1


def test_no_starter_mistake_is_a_slip():
    _, evidence = load_starter()
    records = [r for rs in evidence.values() for r in rs if r.is_failure]
    assert [r.id for r in records if failure_signature(r.report()).slip] == []


def test_a_kernel_past_the_parsers_nesting_limit_is_read_as_one_that_does_not_parse():
    code = KERNEL + "\n_deep = " + "-" * 100_000 + "1\n"
    assert find_slip("SyntaxError", "too many nested parentheses", code).kind == "syntax"
    assert find_slip("NameError", "name 'offz' is not defined", code) is None
