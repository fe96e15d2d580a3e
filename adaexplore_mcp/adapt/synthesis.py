"""Synthesizing training tasks: prompt the model with a few bundled tasks, read a new task file
out of its reply, and check it before it is kept: it parses as a task, it repeats no known task
(same name, or the same code once comments, docstrings and layout are set aside), and its
reference runs on random inputs and passes the lint (in the judge's sandbox)."""

from __future__ import annotations

import ast
import hashlib
import random
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from adaexplore_mcp.judge import Judge, JudgeError
from adaexplore_mcp.llm import LLM, LLMError, Message
from adaexplore_mcp.prompts import render
from adaexplore_mcp.tasks import Task, TaskError, task_from_source

SYSTEM = (
    "You are an expert in PyTorch and GPU kernels. You write benchmark tasks in the KernelBench "
    "format and follow the requested answer format exactly."
)
Mode = Literal["mutate", "recombine"]

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:\n```|\Z)", re.S)
_NAME = re.compile(r"^\s*\**name\**\s*[:=]\s*`?([A-Za-z][A-Za-z0-9_]{2,59})`?\s*$", re.M | re.I)
_MODEL = re.compile(r"^class\s+Model\s*\(", re.M)
_SNAKE = re.compile(r"[^a-z0-9]+")


class Rejected(ValueError):
    """A candidate that is not kept; the message is the recorded reason."""


class SynthesisAttempt(BaseModel):
    """One synthesized task, kept or not, and why."""

    attempt: int
    mode: Mode
    parents: list[str] = Field(description="The bundled tasks the prompt showed.")
    name: str | None = None
    accepted: bool = False
    reason: str | None = Field(default=None, description="Why it was dropped.")
    source_hash: str | None = Field(default=None, description="Of the normalized source.")
    path: str | None = Field(default=None, description="Where the kept task was written.")
    input_tokens: int = 0
    output_tokens: int = 0


class KnownTasks:
    """Names and normalized-source hashes a new task must not repeat."""

    def __init__(self, tasks: Sequence[Task] = ()) -> None:
        self.names: set[str] = set()
        self.hashes: dict[str, str] = {}
        for task in tasks:
            self.add(task.name, task.source)

    def add(self, name: str, source: str) -> None:
        self.names.add(name)
        self.hashes.setdefault(source_hash(source), name)

    def check(self, name: str, source: str) -> str:
        """The source's hash; ``Rejected`` when the name or the code is already known."""
        if name in self.names:
            raise Rejected(f"duplicate: a task named {name!r} exists")
        digest = source_hash(source)
        if digest in self.hashes:
            raise Rejected(f"duplicate: the same code as task {self.hashes[digest]!r}")
        return digest


def prompt_for(examples: Sequence[Task], mode: Mode, existing: Sequence[str]) -> str:
    return render(
        "synthesize_task",
        examples=[{"name": t.name, "source": t.source.strip()} for t in examples],
        mode=mode,
        existing=sorted(existing),
    )


def pick_examples(tasks: Sequence[Task], rng: random.Random, count: int = 3) -> list[Task]:
    """2 to ``count`` distinct tasks, drawn with the run's seed."""
    size = min(len(tasks), rng.randint(2, max(2, count)))
    return rng.sample(list(tasks), size)


def parse_reply(reply: str) -> tuple[str, str]:
    """The task's name and source in a reply; ``Rejected`` when there is none."""
    blocks = [body for _, body in _FENCE.findall(reply)]
    defining = [b for b in blocks if _MODEL.search(b)]
    if not defining:
        raise Rejected(
            "no task in the reply: no ```python block defining `class Model`"
            if blocks or "```" not in reply
            else "the reply's code block is not closed"
        )
    source = defining[-1].strip("\n") + "\n"
    match = _NAME.search(reply.split("```", 1)[0])
    name = match.group(1).lower() if match else _name_from_docstring(source)
    if not name:
        raise Rejected("the reply names no task (`name: NAME`) and the task has no docstring")
    return name, source


def source_hash(source: str) -> str:
    """A hash of the code with comments, docstrings and layout set aside; text that does not
    parse, or nests too deeply to be dumped, falls back to its whitespace-collapsed form."""
    try:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                body.pop(0)  # the docstring
        text = ast.dump(tree, annotate_fields=False)
    except (SyntaxError, MemoryError, RecursionError):
        text = " ".join(source.split())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


async def synthesize(
    llm: LLM, examples: Sequence[Task], mode: Mode, existing: Sequence[str], attempt: int
) -> tuple[SynthesisAttempt, str | None]:
    """Asks the model for one task; the candidate and the reply's source (None if unusable)."""
    candidate = SynthesisAttempt(attempt=attempt, mode=mode, parents=[t.name for t in examples])
    try:
        completion = await llm.complete(
            system=SYSTEM,
            messages=[Message(role="user", content=prompt_for(examples, mode, existing))],
        )
    except LLMError as exc:
        candidate.reason = f"the model failed: {exc}"
        return candidate, None
    candidate.input_tokens = completion.usage.input_tokens
    candidate.output_tokens = completion.usage.output_tokens
    try:
        candidate.name, source = parse_reply(completion.text)
    except Rejected as exc:
        candidate.reason = str(exc)
        return candidate, None
    return candidate, source


async def validate(
    candidate: SynthesisAttempt, source: str, known: KnownTasks, judge: Judge
) -> Task | None:
    """The task when it is kept (the candidate is updated either way)."""
    assert candidate.name is not None
    try:
        task = task_from_source(source, candidate.name)
        candidate.source_hash = known.check(candidate.name, source)
        report = await judge.lint(task)
    except (TaskError, Rejected) as exc:
        candidate.reason = f"not a usable task: {exc}" if isinstance(exc, TaskError) else str(exc)
        return None
    except JudgeError as exc:
        candidate.reason = f"the judge could not run its reference: {exc}"
        return None
    if report.error is not None:
        candidate.reason = f"the reference failed on random inputs: {_first_line(report.error)}"
        return None
    if report.findings:
        finding = report.findings[0]
        candidate.reason = f"lint ({finding.check}, {finding.variant}): {finding.detail}"
        return None
    candidate.accepted = True
    known.add(candidate.name, source)
    return task


def _name_from_docstring(source: str) -> str | None:
    try:
        doc = ast.get_docstring(ast.parse(source)) or ""
    except (SyntaxError, MemoryError, RecursionError):  # nested past the parser's limit
        return None
    words = _SNAKE.sub("_", doc.split("\n", 1)[0].lower()).strip("_")
    return words[:60].rstrip("_") or None


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else text[:300]
