"""``ReplayLLM``: an ``LLM`` that answers from a transcript file instead of a model.

The demo ships one transcript per task under ``driver/demo/`` (``softmax.jsonl``). Its replies
were written by the adaexplore-mcp developers; no model produced them, and a run that uses
them says so (``RunConfig.provider == "replay"``, ``replay: true``). Every kernel they contain
is judged for real.

A transcript is JSON lines: a header ``{"transcript": TASK, "about": ...}`` and then one reply a
line, ``{"purpose": "writer"|"reviser"|"tuner"|"repair", "text": ..., "input_tokens": N,
"output_tokens": N, "requires": "...", "note": "..."}``. A call takes the first unused reply for
its purpose (which call of a step it is) whose ``requires`` text, if any, occurs in the prompt,
else the first unused reply for its purpose: which node a search selects can differ from one
machine to the next (on a GPU rewards follow speedups), and the edits must fit the kernel they
are applied to.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, Field

from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.driver.prompts import Purpose, purpose_of
from adaexplore_mcp.llm import LLM, Completion, LLMUnavailable, Message, TokenUsage

REPLAY_NOTICE = (
    "replaying a scripted transcript written by the adaexplore-mcp developers (no model is "
    "called; set ANTHROPIC_API_KEY or OPENAI_API_KEY and --provider/--model to use a live model)"
)


class TranscriptReply(BaseModel):
    purpose: Purpose
    text: str
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    requires: str | None = Field(
        default=None, description="Answer only a prompt that contains this text."
    )
    note: str | None = Field(default=None, description="What the reply shows, for readers.")


class Transcript(BaseModel):
    task: str
    about: str
    steps: int = Field(ge=1, description="Steps the replies were written for.")
    seed: int | None = Field(default=None, description="The search's seed the story follows.")
    replies: list[TranscriptReply]


def demo_transcripts() -> list[str]:
    """The tasks a transcript ships for."""
    folder = resources.files("adaexplore_mcp.driver") / "demo"
    names = [p.name for p in folder.iterdir()]
    return sorted(name.removesuffix(".jsonl") for name in names if name.endswith(".jsonl"))


def load_transcript(source: str | Path) -> Transcript:
    """A shipped transcript by task name, or a transcript file by path."""
    if isinstance(source, Path) or source.endswith(".jsonl"):
        text = Path(source).read_text(encoding="utf-8")
    else:
        file = resources.files("adaexplore_mcp.driver") / "demo" / f"{source}.jsonl"
        if not file.is_file():
            raise FileNotFoundError(
                f"no transcript ships for task {source!r}; the demo has: "
                f"{', '.join(demo_transcripts())}"
            )
        text = file.read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    header, replies = lines[0], lines[1:]
    return Transcript(
        task=header["transcript"],
        about=header["about"],
        steps=header["steps"],
        seed=header.get("seed"),
        replies=[TranscriptReply.model_validate(r) for r in replies],
    )


class ReplayLLM(LLM):
    """Answers each call with the transcript's next fitting reply; tokens from the file, cost 0."""

    provider = "replay"
    key_variable = ""
    replay = True

    def __init__(
        self,
        transcript: Transcript,
        *,
        classify: Callable[[str | None, Sequence[Message]], Purpose] = purpose_of,
    ) -> None:
        super().__init__(LLMSettings(model=f"transcript:{transcript.task}"))
        self.transcript = transcript
        self._classify = classify
        self._used: set[int] = set()

    @property
    def base_url(self) -> str:
        return f"replay:{self.transcript.task}"

    async def close(self) -> None:
        return None

    async def _attempt(self, request):  # complete() answers instead
        raise NotImplementedError

    async def complete(
        self,
        *,
        messages: Sequence[Message],
        system: str | None = None,
        **_: object,
    ) -> Completion:
        purpose = self._classify(system, messages)
        prompt = "\n".join(m.content for m in messages if m.role == "user")
        index = self._pick(purpose, prompt)
        if index is None:
            self._totals.failed_calls += 1
            raise LLMUnavailable(
                f"the replayed transcript has no reply left for a {purpose} call; it was written "
                f"for {self.transcript.steps} steps",
                provider=self.provider,
                status=None,
                attempts=1,
            )
        self._used.add(index)
        reply = self.transcript.replies[index]
        completion = Completion(
            text=reply.text,
            model=self.model,
            stop_reason="end_turn",
            usage=TokenUsage(
                input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, cost_usd=0.0
            ),
            provider=self.provider,
        )
        self._totals.record(completion)
        return completion

    def _pick(self, purpose: Purpose, prompt: str) -> int | None:
        open_ = [
            i
            for i, reply in enumerate(self.transcript.replies)
            if i not in self._used and reply.purpose == purpose
        ]
        for i in open_:
            requires = self.transcript.replies[i].requires
            if requires is None or requires in prompt:
                return i
        return open_[0] if open_ else None
