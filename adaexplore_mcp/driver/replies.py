"""Reading a model's reply: a whole kernel (large step) or old_str/new_str edits (small step).

Models wrap code in fences with or without a language, forget closing tags, put the plan after
the edits, or answer with prose only. Parsing is lenient about form and strict about content:
what comes back is either usable (a kernel that defines ModelNew, at least one edit) or an
``UnusableReply`` whose reason is recorded as the step's failure.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:\n```|\Z)", re.S)
_EDIT = re.compile(r"<edit>(.*?)(?:</edit>|(?=<edit>)|\Z)", re.S)
_OLD = re.compile(r"<old_str>\n?(.*?)\n?</old_str>", re.S)
_NEW = re.compile(r"<new_str>\n?(.*?)\n?(?:</new_str>|(?=<old_str>)|(?=</edit>)|\Z)", re.S)
_PLAN = re.compile(r"<plan>(.*?)(?:</plan>|(?=<edit>)|\Z)", re.S)
_MODEL_NEW = re.compile(r"^class\s+ModelNew\b", re.M)


class UnusableReply(ValueError):
    """A reply with nothing the step can use; the message is the recorded reason."""


class ParsedEdit(BaseModel):
    old_str: str
    new_str: str


class PatchReply(BaseModel):
    plan: str | None
    edits: list[ParsedEdit]


def kernel_from_reply(reply: str) -> str:
    """The whole kernel module in a reply: the fenced block defining ModelNew (the last one if
    several do), else an unfenced reply that is itself the module."""
    blocks = [body for _, body in _FENCE.findall(reply)]
    defining = [b for b in blocks if _MODEL_NEW.search(b)]
    if defining:
        return defining[-1].strip("\n") + "\n"
    if blocks:
        raise UnusableReply(
            "the reply's code block does not define `class ModelNew`; a large step must send "
            "the whole module"
        )
    if _MODEL_NEW.search(reply) and "import" in reply:
        # No fence at all: take the reply from its first import, if it is the module.
        start = min(m.start() for m in re.finditer(r"^(?:import|from)\s", reply, re.M))
        return reply[start:].strip("\n") + "\n"
    raise UnusableReply("the reply holds no code block with the kernel (```python … ```)")


def patch_from_reply(reply: str) -> PatchReply:
    """The plan and the edits of a small-step reply (``<edit><old_str>…</old_str>
    <new_str>…</new_str></edit>``, closing tags optional where the next block begins)."""
    plan = _PLAN.search(reply)
    edits: list[ParsedEdit] = []
    bodies = [m.group(1) for m in _EDIT.finditer(reply)] or [reply]
    for body in bodies:
        for old in _OLD.finditer(body):
            new = _NEW.search(body, old.end())
            if new is None:
                raise UnusableReply(
                    f"an <old_str> without its <new_str> (old_str begins {old.group(1)[:40]!r})"
                )
            edits.append(ParsedEdit(old_str=_unfence(old.group(1)), new_str=_unfence(new.group(1))))
    if not edits:
        raise UnusableReply(
            "the reply holds no <edit> with <old_str> and <new_str>; a small step must answer "
            "with exact replacements"
        )
    empty = [i for i, e in enumerate(edits, 1) if not e.old_str.strip()]
    if empty:
        raise UnusableReply(f"edit {empty[0]} has an empty old_str")
    return PatchReply(plan=plan.group(1).strip() if plan else None, edits=edits)


def _unfence(text: str) -> str:
    # Some models fence the text inside the tags; the fence is not part of the kernel.
    match = re.fullmatch(r"\s*```[\w+-]*\n(.*?)\n```\s*", text, re.S)
    return match.group(1) if match else text


def plan_from_reply(reply: str) -> str:
    """The improvements a reviser proposed: the ``<plan>`` block, else the whole reply as prose
    (code blocks dropped: the reviser is asked for none, and a tuner needs the ideas, not them).
    """
    plan = _PLAN.search(reply)
    text = plan.group(1) if plan else _FENCE.sub("", reply)
    text = re.sub(r"</?(?:plan|edit|old_str|new_str)>", "", text).strip()
    if not text:
        raise UnusableReply("the reviser's reply proposes no improvement (no <plan> or prose)")
    return text


def reasoning_from_reply(reply: str) -> str | None:
    """What a writer said about its kernel: the reply without its code blocks (None when it
    said nothing else), to keep as the step's note."""
    text = _FENCE.sub("", reply).strip()
    return text or None
