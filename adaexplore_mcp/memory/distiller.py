"""Turning failures into one "You cannot …" sentence, and telling whether two rules forbid the
same thing, with the configured language model."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel

from adaexplore_mcp.memory.rule_text import PREFIX, RuleTextError, clean
from adaexplore_mcp.prompts import render

if TYPE_CHECKING:
    from adaexplore_mcp.llm import LLM

log = logging.getLogger(__name__)

_SYSTEM = "You distil GPU kernel failures into short, general rules. Answer tersely."
# Long kernels are cut: the rule is about the mistake, which the error already points at.
_CODE_CHARS = 6000
_ERROR_CHARS = 3000


class FailureExample(BaseModel):
    task: str
    error_type: str
    error: str
    code: str
    environment: str | None = None


class Distiller(Protocol):
    async def extract_rule(self, failures: list[FailureExample]) -> str | None:
        """One valid rule text, or None when the failures imply no prohibited action."""
        ...

    async def same_prohibition(self, new: str, existing: str) -> bool: ...


class LLMDistiller:
    """A ``Distiller`` backed by an ``adaexplore_mcp.llm.LLM``; prompts from ``prompts/``."""

    def __init__(self, llm: LLM, *, max_tokens: int = 200) -> None:
        self._llm = llm
        self._max_tokens = max_tokens

    async def extract_rule(self, failures: list[FailureExample]) -> str | None:
        shown = [
            f.model_copy(
                update={"code": _cut(f.code, _CODE_CHARS), "error": _cut(f.error, _ERROR_CHARS)}
            )
            for f in failures
        ]
        reply = await self._ask(render("extract_rule", failures=shown))
        return parse_rule(reply)

    async def same_prohibition(self, new: str, existing: str) -> bool:
        reply = await self._ask(render("same_rule", new=new, existing=existing))
        return bool(re.search(r"\bSAME\b", reply.upper())) and "DIFFERENT" not in reply.upper()

    async def _ask(self, prompt: str) -> str:
        from adaexplore_mcp.llm import Message

        completion = await self._llm.complete(
            system=_SYSTEM,
            messages=[Message(role="user", content=prompt)],
            max_tokens=self._max_tokens,
            temperature=0.0,
        )
        return completion.text


def parse_rule(reply: str) -> str | None:
    """The rule in a model's reply: the first line starting 'You cannot', unwrapped from quotes,
    bullets or code fences. None for NONE, or for a reply without a usable rule."""
    for raw in reply.splitlines():
        start = raw.find(PREFIX)
        if start < 0:
            continue
        # "Rule: \"You cannot …\"", "**You cannot …**", "> You cannot …" all carry the rule.
        line = raw[start:].strip().rstrip("`*\"'”").strip()
        try:
            return clean(line)
        except RuleTextError as error:
            log.info("the model's rule was unusable (%s): %r", error, line)
            return None
    if "NONE" not in reply.upper():
        log.info("the model answered without a rule: %r", reply[:200])
    return None


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… ({len(text) - limit} characters cut) …\n{text[-half:]}"
