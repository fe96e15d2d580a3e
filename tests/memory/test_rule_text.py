import pytest

from adaexplore_mcp.memory import RuleTextError, parse_rule
from adaexplore_mcp.memory.rule_text import (
    clean,
    kernel_specific,
    key_terms,
    prohibition,
    similarity,
)


def test_clean_accepts_one_sentence_with_code_and_adds_the_period():
    text = clean("  You cannot  call `tl.dot` with BLOCK_K < 16; use 16 or more  ")
    assert text == "You cannot call `tl.dot` with BLOCK_K < 16; use 16 or more."
    assert clean("You cannot pass input_precision=None to tl.dot.").endswith("tl.dot.")


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("Never use globals.", "starting exactly 'You cannot'"),
        ("you cannot use globals.", "starting exactly 'You cannot'"),
        ("You cannot use globals. Use constexpr.", "exactly one sentence"),
        ("You cannot " + "really " * 70 + "do it.", "under 60 words"),
    ],
)
def test_clean_says_what_is_wrong(text, words):
    with pytest.raises(RuleTextError, match=words):
        clean(text)


@pytest.mark.parametrize(
    "reply, rule",
    [
        (
            "You cannot call torch.exp inside a @triton.jit kernel.",
            "You cannot call torch.exp inside a @triton.jit kernel.",
        ),
        (
            'Rule:\n> "You cannot call torch.exp inside a kernel"\n',
            "You cannot call torch.exp inside a kernel.",
        ),
        ("```\nYou cannot read globals in a kernel.\n```", "You cannot read globals in a kernel."),
        ("NONE", None),
        ("The harness was flaky.", None),
        ("You cannot do A. You cannot do B.", None),
        ('Rule: "You cannot read globals in a kernel."', "You cannot read globals in a kernel."),
        ("**You cannot read globals in a kernel.**", "You cannot read globals in a kernel."),
    ],
)
def test_a_model_reply_yields_one_rule_or_none(reply, rule):
    assert parse_rule(reply) == rule


@pytest.mark.parametrize(
    "text, code, reason",
    [
        ("You cannot read offs_m2 twice.", None, "offs_m2"),
        ("You cannot omit the mask on line 12.", None, "line 12"),
        ("You cannot pass `scale` unscaled to the kernel.", "scale = 3", "'scale'"),
        (
            "You cannot forget to multiply row_stride by the row index.",
            "row_stride = x.stride(0)",
            "row_stride",
        ),
    ],
)
def test_rules_tied_to_one_kernel_are_recognised(text, code, reason):
    assert reason in kernel_specific(text, code)


@pytest.mark.parametrize(
    "text",
    [
        "You cannot give tl.arange a range that is not a power of two; use triton.next_power_of_2.",
        "You cannot annotate BLOCK_SIZE without tl.constexpr when it bounds tl.arange.",
        "You cannot compute offsets without a mask when the size is not a multiple of the block.",
        "You cannot call tl.dot with input_precision left at its default on fp32 inputs.",
    ],
)
def test_general_rules_are_not_kernel_specific(text):
    code = "offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\nmask = offsets < n"
    assert kernel_specific(text, code) is None


def test_similarity_ignores_stopwords_case_and_plurals():
    a = key_terms("You cannot call torch functions inside a Triton kernel.")
    b = key_terms("You cannot call a torch function inside Triton kernels!")
    assert similarity(a, b) == 1.0
    assert similarity(a, key_terms("You cannot use tl.dot on small blocks.")) == 0.0


def test_a_rules_prohibition_ends_at_the_first_semicolon_outside_code():
    assert prohibition("You cannot use `a; b` here; do c.") == "You cannot use `a; b` here"
    assert prohibition("You cannot do it.") == "You cannot do it."


def test_dimensions_are_key_terms():
    assert {"1d"} <= key_terms("You cannot call tl.dot on 1-D blocks.")
    assert "3d" in key_terms("batched 3D operands")
