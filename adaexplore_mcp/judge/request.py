"""The options of one evaluation, written once for every judge and every layer above one.

``EvalOptions`` is what a caller may pass beside the task and the code; each judge takes it as
``**options: Unpack[EvalOptions]``, so ``judge.evaluate(task, code, timeout_s=30)`` reads the
same everywhere. ``EvalParams`` is its plain-data part (the progress callback cannot leave the
process); ``WireEvalOptions`` is that part as a model: the judge service's request and a Ray
actor's argument are built from it.
"""

from __future__ import annotations

from typing import Self, TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.result import ProgressCallback
from adaexplore_mcp.judge.settings import MAX_TIMEOUT_S


class EvalParams(TypedDict, total=False):
    """What an evaluation is asked to do, as plain data; every key may be left out, and None
    means the judge's own setting."""

    device: str | None
    timeout_s: float | None
    precision: Precision | None
    ops: Ops | None


class EvalOptions(EvalParams, total=False):
    """Everything ``Judge.evaluate`` takes beside the task and the code."""

    on_progress: ProgressCallback | None


class WireEvalOptions(BaseModel):
    """``EvalParams`` as they cross to another process or host (where progress comes back as
    messages of its own)."""

    # A misspelled option is a mistake worth reporting, not something to ignore silently.
    model_config = ConfigDict(extra="forbid")

    device: str | None = Field(default=None, description="'cpu' or 'cuda:N'; None: least busy.")
    timeout_s: float | None = Field(
        default=None,
        ge=1,  # as the command line: 1e-300 s timed out every kernel, blamed as an endless loop
        le=MAX_TIMEOUT_S,
        description="At least a second; None: the judge's default.",
    )
    precision: Precision | None = Field(
        default=None, description="strict, tf32 or legacy; None: the judge's default."
    )
    ops: Ops | None = Field(default=None, description="triton or mixed; None: the judge's default.")

    @classmethod
    def of(cls, options: EvalOptions, **fields: object) -> Self:
        """The model of ``options`` (the callback left behind) with a subclass's own
        ``fields``."""
        sent = {key: value for key, value in options.items() if key != "on_progress"}
        return cls.model_validate({**sent, **fields})

    def params(self) -> EvalParams:
        """The options again, to pass on as ``**params``."""
        return cast(EvalParams, self.model_dump(include=set(WireEvalOptions.model_fields)))
