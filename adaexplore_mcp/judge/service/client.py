"""A judge service (``adaexplore-mcp judge serve``) behind the same interface as ``LocalJudge``.

    async with RemoteJudge(settings.remote) as judge:
        result = await judge.evaluate(task, code)

It raises what the local judge raises: ``QueueFull`` once its retries are spent,
``JudgeUnavailable`` when the service cannot be reached or refuses the token, ``TaskError`` for
a broken task, ``JudgeError`` when the service failed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Unpack

import httpx
from pydantic import BaseModel, ValidationError

from adaexplore_mcp.judge.exceptions import JudgeError, JudgeUnavailable, QueueFull
from adaexplore_mcp.judge.request import EvalOptions
from adaexplore_mcp.judge.result import EvalResult, LintReport, ProgressCallback
from adaexplore_mcp.judge.service.api import (
    API_PREFIX,
    NDJSON,
    ErrorResponse,
    EvaluateRequest,
    HealthResponse,
    LintRequest,
    ProgressEvent,
    ResultEvent,
    ServiceErrorCode,
    TaskPayload,
    stream_line,
)
from adaexplore_mcp.judge.settings import RemoteJudgeSettings
from adaexplore_mcp.tasks import Task, TaskError

log = logging.getLogger(__name__)

# Beyond the evaluation's own limit: the queue, the worker's watchdog and the transfer.
READ_SLACK_S = 120.0
MAX_RETRY_AFTER_S = 60.0
# Errors before the request reached the service, or a connection it dropped before answering
# (a restart); evaluating is a pure function of task and code, so sending it again is safe.
_RETRYABLE = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)
# The service's answers that it is busy: raised as a full queue, retried after a while
_BUSY = (ServiceErrorCode.QUEUE_FULL, ServiceErrorCode.TOO_MANY_REQUESTS)


class _Retry(Exception):
    def __init__(self, error: Exception, after_s: float | None = None) -> None:
        super().__init__(str(error))
        self.error, self.after_s = error, after_s


class RemoteJudge:
    def __init__(
        self, settings: RemoteJudgeSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        if not settings.url:
            raise ValueError("RemoteJudge needs a URL (--judge or ADAEXPLORE_REMOTE__URL)")
        self.settings = settings
        self.url = settings.url.rstrip("/").removesuffix(API_PREFIX)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._health: HealthResponse | None = None

    async def __aenter__(self) -> RemoteJudge:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def devices(self) -> list[str]:
        return [d.device for d in self._health.devices] if self._health else []

    def versions(self) -> dict[str, str]:
        if self._health is None:
            return {}
        found = self._health.versions.model_dump(exclude={"package"}, exclude_none=True)
        return found if len(found) == 3 else {}

    async def start(self) -> None:
        """Connect and check the token; raises ``JudgeUnavailable`` if either fails. A client
        already connected stays as it is."""
        if self._client is not None:
            return
        headers = {"User-Agent": "adaexplore-mcp"}
        if self.settings.token:
            headers["Authorization"] = f"Bearer {self.settings.token}"
        self._client = httpx.AsyncClient(
            base_url=self.url + API_PREFIX,
            headers=headers,
            timeout=httpx.Timeout(self.settings.connect_timeout_s, read=READ_SLACK_S),
            transport=self._transport,
        )
        try:
            self._health = await self.health()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def health(self) -> HealthResponse:
        body = await self._call(
            "GET", "/health", None, read_timeout_s=self.settings.connect_timeout_s
        )
        return HealthResponse.model_validate(body)

    async def evaluate(
        self,
        task: Task,
        code: str,
        **options: Unpack[EvalOptions],
    ) -> EvalResult:
        """Judge one candidate on the service; the same verdict as the local judge gives."""
        request = EvaluateRequest.of(options, task=_payload(task), code=code)
        limit = request.timeout_s or (self._health.timeout_s if self._health else 0.0)
        body = await self._call(
            "POST",
            "/evaluate",
            request,
            read_timeout_s=limit + READ_SLACK_S,
            on_progress=options.get("on_progress"),
        )
        return EvalResult.model_validate(body)

    async def lint(self, task: Task, *, device: str | None = None) -> LintReport:
        limit = self._health.timeout_s if self._health else 0.0
        request = LintRequest(task=_payload(task), device=device)
        body = await self._call("POST", "/lint", request, read_timeout_s=limit + READ_SLACK_S)
        return LintReport.model_validate(body)

    async def _call(
        self,
        method: str,
        path: str,
        request: BaseModel | None,
        *,
        read_timeout_s: float,
        on_progress: ProgressCallback | None = None,
    ) -> dict:
        if self._client is None:
            raise JudgeUnavailable("the remote judge is not started (use `async with RemoteJudge`)")
        content = request.model_dump_json(exclude_none=True) if request is not None else None
        delay = self.settings.backoff_s
        for attempt in range(self.settings.retries + 1):
            try:
                return await self._once(method, path, content, read_timeout_s, on_progress)
            except _Retry as retry:
                if attempt == self.settings.retries:
                    raise retry.error from None
                wait = max(delay, min(retry.after_s or 0.0, MAX_RETRY_AFTER_S))
                log.info("%s; retrying in %.1f s", retry.error, wait)
                await asyncio.sleep(wait)
                delay = min(delay * 2, MAX_RETRY_AFTER_S)  # doubling for days helps no one
        raise AssertionError("unreachable")

    async def _once(
        self,
        method: str,
        path: str,
        content: str | None,
        read_timeout_s: float,
        on_progress: ProgressCallback | None,
    ) -> dict:
        assert self._client is not None
        timeout = httpx.Timeout(self.settings.connect_timeout_s, read=read_timeout_s)
        headers = {"Content-Type": "application/json"} if content is not None else {}
        if on_progress is not None:
            headers["Accept"] = NDJSON
        try:
            async with self._client.stream(
                method, path, content=content, headers=headers, timeout=timeout
            ) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise self._error(response)
                if on_progress is not None:
                    return await self._read_stream(response, on_progress)
                await response.aread()
                return response.json()
        except _RETRYABLE as exc:
            raise _Retry(self._unreachable(exc)) from None
        except httpx.TimeoutException as exc:
            raise JudgeUnavailable(
                f"the judge service at {self.url} sent no answer within {read_timeout_s:g} s "
                f"({type(exc).__name__}); is it overloaded?"
            ) from None

    async def _read_stream(self, response: httpx.Response, on_progress: ProgressCallback) -> dict:
        try:
            async for line in response.aiter_lines():
                if not line.strip():
                    continue
                event = stream_line.validate_json(line)
                if isinstance(event, ProgressEvent):
                    on_progress(event.phase, event.elapsed_s)
                elif isinstance(event, ResultEvent):
                    return event.result.model_dump()
                else:
                    raise _exception(event, self.url)
        except (httpx.TransportError, ValidationError) as exc:
            # Not retried: the evaluation was under way and may have been cut short.
            raise JudgeUnavailable(
                f"the judge service at {self.url} broke off the evaluation's stream ({exc})"
            ) from None
        raise JudgeUnavailable(f"the judge service at {self.url} ended the stream without a result")

    def _unreachable(self, exc: Exception) -> JudgeUnavailable:
        return JudgeUnavailable(
            f"cannot reach the judge service at {self.url} ({type(exc).__name__}: {exc}); "
            "is `adaexplore-mcp judge serve` running there, and is --judge right?"
        )

    def _error(self, response: httpx.Response) -> Exception:
        try:
            error = ErrorResponse.model_validate_json(response.content)
        except ValidationError:
            error = None
        status = response.status_code
        if error is None:
            text = response.text[:200]
            if status in (502, 503, 504):
                return _Retry(JudgeUnavailable(f"the judge service at {self.url}: {status} {text}"))
            return JudgeError(
                f"{self.url} answered {status} {text!r}; is --judge the URL of an "
                "`adaexplore-mcp judge serve`?"
            )
        exc = _exception(error, self.url)
        if error.error in _BUSY:
            after = response.headers.get("Retry-After", "")
            return _Retry(exc, float(after) if after.isdigit() else None)
        return exc


def _payload(task: Task) -> TaskPayload:
    return TaskPayload(name=task.name, source=task.source)


def _exception(error: ErrorResponse, url: str) -> Exception:
    """The exception the local judge raises for the same failure."""
    code, message = error.error, error.message
    if code in _BUSY:
        return QueueFull(f"{message} (judge service at {url})")
    if code is ServiceErrorCode.UNAUTHORIZED:
        return JudgeUnavailable(
            f"the judge service at {url} refused the token (or its absence): pass the "
            "service's token with --judge-token or ADAEXPLORE_REMOTE__TOKEN"
        )
    if code is ServiceErrorCode.JUDGE_UNAVAILABLE:
        return JudgeUnavailable(f"{message} (judge service at {url})")
    if code is ServiceErrorCode.TASK_ERROR:
        return TaskError(message)
    if code in (
        ServiceErrorCode.INVALID_REQUEST,
        ServiceErrorCode.BODY_TOO_LARGE,
        ServiceErrorCode.UNSUPPORTED_MEDIA_TYPE,
        ServiceErrorCode.REQUEST_TIMEOUT,
    ):
        return ValueError(f"the judge service at {url} rejected the request: {message}")
    return JudgeError(f"the judge service at {url} failed: {message}")
