"""What the step prompts say about the operator policy (docs/ops.md): the sentences the
driver's and the MCP server's prompt tests look for, on the prompt with its line breaks undone
(the templates wrap the same sentence at different words)."""

from __future__ import annotations

# the default policy, triton: nothing but allocation, views and copies may stay in torch
WHOLE_RESULT_IN_TRITON = (
    "compute the whole result in Triton (only allocation, views and copies may stay in torch)"
)
# the mixed policy: library operators may stay, Triton must still work, the share is reported
LIBRARY_OPERATORS_MAY_STAY = "library operators (matmul/GEMM, convolution) may stay in torch"
TRITON_MUST_WORK = "At least one Triton kernel must do real work on every call"
REJECTED_WITHOUT_WORK = "is rejected as no_triton_work"
TRITON_SHARE = "the Triton kernels' share of the GPU time"


def unwrapped(prompt: str) -> str:
    """The prompt on one line, its runs of whitespace made single spaces."""
    return " ".join(prompt.split())


def assert_whole_result_in_triton(prompt: str) -> None:
    text = unwrapped(prompt)
    assert WHOLE_RESULT_IN_TRITON in text
    assert LIBRARY_OPERATORS_MAY_STAY not in text and REJECTED_WITHOUT_WORK not in text


def assert_library_operators_allowed(prompt: str) -> None:
    text = unwrapped(prompt)
    assert LIBRARY_OPERATORS_MAY_STAY in text and TRITON_MUST_WORK in text
    assert REJECTED_WITHOUT_WORK in text and TRITON_SHARE in text
    assert WHOLE_RESULT_IN_TRITON not in text
