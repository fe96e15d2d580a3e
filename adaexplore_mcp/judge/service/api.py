"""The bodies of the judge service's HTTP API (``docs/judge-service.md``).

Shared by the service and its client, so both validate the same shapes; nothing here imports
torch or starlette.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from adaexplore_mcp.judge.pool.lane import LaneStatus
from adaexplore_mcp.judge.request import WireEvalOptions
from adaexplore_mcp.judge.result import EvalResult, Phase

API_PREFIX = "/v1"
NDJSON = "application/x-ndjson"
MAX_SOURCE_CHARS = 1_000_000
MAX_TIMEOUT_S = 3600.0


class _Body(BaseModel):
    # A misspelled field is a mistake worth reporting, not something to ignore silently.
    model_config = ConfigDict(extra="forbid")


class TaskPayload(_Body):
    """A task travels as its source; the service rebuilds it (variants, tolerance) from that."""

    name: str = Field(min_length=1, max_length=200)
    source: str = Field(min_length=1, max_length=MAX_SOURCE_CHARS)


class EvaluateRequest(WireEvalOptions, _Body):
    """The task, the candidate and the evaluation's options (``WireEvalOptions``)."""

    task: TaskPayload
    code: str = Field(max_length=MAX_SOURCE_CHARS, description="The candidate (defines ModelNew).")

    @field_validator("timeout_s")
    @classmethod
    def _within_service_limit(cls, timeout_s: float | None) -> float | None:
        # the service holds a worker for that long; the local judge allows up to a day
        if timeout_s is not None and timeout_s > MAX_TIMEOUT_S:
            raise ValueError(f"Input should be less than or equal to {MAX_TIMEOUT_S:g}")
        return timeout_s


class LintRequest(_Body):
    task: TaskPayload
    device: str | None = None


class Versions(BaseModel):
    package: str = Field(description="adaexplore-mcp's own version.")
    torch: str | None = None
    triton: str | None = None
    python: str | None = None


class HealthResponse(BaseModel):
    status: Literal["ok"] = "ok"
    versions: Versions
    uptime_s: float
    timeout_s: float = Field(description="Wall-clock limit of an evaluation that names none.")
    devices: list[LaneStatus]


class QueueResponse(BaseModel):
    devices: list[LaneStatus]


class ServiceErrorCode(StrEnum):
    UNAUTHORIZED = "unauthorized"
    INVALID_REQUEST = "invalid_request"
    BODY_TOO_LARGE = "body_too_large"
    REQUEST_TIMEOUT = "request_timeout"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    UNTRUSTED_HOST = "untrusted_host"
    TASK_ERROR = "task_error"
    QUEUE_FULL = "queue_full"
    TOO_MANY_REQUESTS = "too_many_requests"
    JUDGE_UNAVAILABLE = "judge_unavailable"
    JUDGE_ERROR = "judge_error"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    INTERNAL = "internal_error"


class ErrorResponse(_Body):
    error: ServiceErrorCode
    message: str = Field(description="What went wrong and what to do about it.")


class ProgressEvent(_Body):
    """One line of a streamed evaluation: the phase it entered, seconds since it was queued."""

    phase: Phase
    elapsed_s: float


class ResultEvent(_Body):
    """The last line of a streamed evaluation that produced a verdict."""

    result: EvalResult


# A streamed evaluation is progress lines, then one result line or one error line.
StreamLine = ProgressEvent | ResultEvent | ErrorResponse
stream_line = TypeAdapter(StreamLine)
