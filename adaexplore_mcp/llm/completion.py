"""What goes into a model and what comes back, the same for every provider."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# The providers' words for "stopped at max_tokens".
_TRUNCATED = frozenset({"max_tokens", "length"})


class Message(BaseModel, frozen=True):
    """One turn of the conversation; the system prompt is passed separately."""

    role: Literal["user", "assistant"]
    content: str


class TokenUsage(BaseModel, frozen=True):
    """Tokens one call used, as the provider reported them (0 when it reported none)."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = Field(
        default=None, description="None when the model's price is unknown or usage unreported."
    )


class Completion(BaseModel, frozen=True):
    text: str
    model: str = Field(description="The model that answered, as the provider named it.")
    stop_reason: str | None = Field(
        description="The provider's own word: end_turn, max_tokens, stop, length, …"
    )
    usage: TokenUsage
    provider: str
    attempts: int = Field(default=1, ge=1, description="1 plus the retries this call needed.")
    latency_s: float = Field(default=0.0, ge=0, description="From the first attempt to the end.")

    @property
    def truncated(self) -> bool:
        """The answer was cut off at max_tokens."""
        return self.stop_reason in _TRUNCATED


class UsageTotals(BaseModel):
    """Everything one ``LLM`` instance (one run) has used so far."""

    calls: int = Field(default=0, description="Calls that returned a completion.")
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = Field(
        default=None, description="None until a call with a known price has returned."
    )
    failed_calls: int = Field(default=0, description="Calls that raised, after any retries.")
    retries: int = Field(default=0, description="Attempts beyond the first, over all calls.")

    def record(self, completion: Completion) -> None:
        self.calls += 1
        self.input_tokens += completion.usage.input_tokens
        self.output_tokens += completion.usage.output_tokens
        if completion.usage.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + completion.usage.cost_usd
