import pytest

from adaexplore_mcp.driver.replies import (
    UnusableReply,
    kernel_from_reply,
    patch_from_reply,
    plan_from_reply,
    reasoning_from_reply,
)

KERNEL = "import torch\nimport triton\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"


@pytest.mark.parametrize(
    "reply",
    [
        f"Plan: tile it.\n```python\n{KERNEL}```\n",
        f"```\n{KERNEL}```",
        f"```py\n{KERNEL}",  # the closing fence is missing
        f"Here:\n```python\nprint('helper')\n```\nand the kernel:\n```python\n{KERNEL}```",
        f"Sure.\n\n{KERNEL}",  # no fence at all
    ],
)
def test_the_kernel_is_found_in_every_usual_form(reply):
    assert kernel_from_reply(reply) == KERNEL


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("I would tile it by rows.", "no code block"),
        ("```python\nx = 1\n```", "does not define `class ModelNew`"),
        ("", "no code block"),
    ],
)
def test_a_reply_without_a_kernel_is_unusable_with_its_reason(reply, reason):
    with pytest.raises(UnusableReply, match=reason):
        kernel_from_reply(reply)


def test_edits_with_all_their_tags():
    reply = (
        "<plan>\n1. wider blocks\n</plan>\n<edit>\n<old_str>\nBLOCK = 128\n</old_str>\n"
        "<new_str>\nBLOCK = 1024\n</new_str>\n</edit>\n<edit>\n<old_str>\nnum_warps=4\n"
        "</old_str>\n<new_str>\nnum_warps=8\n</new_str>\n</edit>"
    )
    parsed = patch_from_reply(reply)
    assert parsed.plan == "1. wider blocks"
    assert [(e.old_str, e.new_str) for e in parsed.edits] == [
        ("BLOCK = 128", "BLOCK = 1024"),
        ("num_warps=4", "num_warps=8"),
    ]


def test_edits_with_missing_closing_tags_and_fences_inside():
    reply = (
        "<edit><old_str>\n```python\nBLOCK = 128\n```\n</old_str>\n<new_str>\nBLOCK = 256\n"
        "<edit><old_str>\nx = 1\n</old_str><new_str>\nx = 2\n"
    )
    parsed = patch_from_reply(reply)
    assert [(e.old_str, e.new_str) for e in parsed.edits] == [
        ("BLOCK = 128", "BLOCK = 256"),
        ("x = 1", "x = 2"),
    ]
    assert parsed.plan is None


def test_edits_without_edit_wrappers_are_read():
    parsed = patch_from_reply("<old_str>\na\n</old_str>\n<new_str>\nb\n</new_str>")
    assert [(e.old_str, e.new_str) for e in parsed.edits] == [("a", "b")]


def test_an_empty_deletion_is_allowed_but_an_empty_old_str_is_not():
    assert patch_from_reply("<old_str>\nx\n</old_str><new_str></new_str>").edits[0].new_str == ""
    with pytest.raises(UnusableReply, match="empty old_str"):
        patch_from_reply("<old_str>\n\n</old_str><new_str>\ny\n</new_str>")


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("Make the blocks bigger.", "no <edit>"),
        ("<edit><old_str>\nx\n</old_str>", "without its <new_str>"),
    ],
)
def test_an_unusable_small_step_reply_says_why(reply, reason):
    with pytest.raises(UnusableReply, match=reason):
        patch_from_reply(reply)


def test_a_revisers_plan_is_its_plan_block_or_its_prose():
    assert plan_from_reply("Thinking…\n<plan>\n1. wider blocks\n</plan>") == "1. wider blocks"
    assert plan_from_reply("1. fuse\n```python\nx = 1\n```\n2. mask") == "1. fuse\n\n2. mask"
    with pytest.raises(UnusableReply, match="proposes no improvement"):
        plan_from_reply("```python\nx = 1\n```")


def test_a_writers_words_around_its_kernel_are_its_reasoning():
    reply = f"Tile rows; one pass.\n```python\n{KERNEL}```\nBlocks of 1024 fit in registers.\n"
    assert reasoning_from_reply(reply) == "Tile rows; one pass.\n\nBlocks of 1024 fit in registers."
    assert reasoning_from_reply(f"```python\n{KERNEL}```\n") is None
