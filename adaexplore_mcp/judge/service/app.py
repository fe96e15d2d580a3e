"""The judge as an HTTP service, for agents on other machines than the GPUs.

``JudgeService`` does the work (no HTTP in it); ``create_app`` puts a Starlette app in front of
it; ``server.serve`` runs it. The API is in ``api`` and ``docs/judge-service.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import adaexplore_mcp
from adaexplore_mcp.judge.exceptions import JudgeError, JudgeUnavailable, QueueFull
from adaexplore_mcp.judge.pool.local import LocalJudge
from adaexplore_mcp.judge.result import EvalResult, LintReport, Phase, ProgressCallback
from adaexplore_mcp.judge.service.api import (
    API_PREFIX,
    NDJSON,
    ErrorResponse,
    EvaluateRequest,
    HealthResponse,
    LintRequest,
    ProgressEvent,
    QueueResponse,
    ResultEvent,
    ServiceErrorCode,
    TaskPayload,
    Versions,
)
from adaexplore_mcp.judge.settings import ServiceSettings
from adaexplore_mcp.listening import BearerAuth, LoopbackHost, RequestLimit, is_loopback
from adaexplore_mcp.tasks import Task, TaskError, task_from_source

log = logging.getLogger(__name__)

RETRY_AFTER_S = 1
# While an evaluation waits in the queue nothing else would be sent; a repeated progress line
# keeps proxies and the client's read timeout from taking the stream for dead.
HEARTBEAT_S = 15.0
_CLIENT_GONE = 499  # nginx's code; nobody reads it, the connection is gone

M = TypeVar("M", bound=BaseModel)
Result = TypeVar("Result")


class JudgeService:
    """What the endpoints do, in terms of the API models."""

    def __init__(self, judge: LocalJudge) -> None:
        self.judge = judge
        self._started = time.monotonic()

    async def evaluate(
        self, request: EvaluateRequest, on_progress: ProgressCallback | None = None
    ) -> EvalResult:
        task = await _read_task(request.task)
        return await self.judge.evaluate(
            task, request.code, on_progress=on_progress, **request.params()
        )

    async def lint(self, request: LintRequest) -> LintReport:
        task = await _read_task(request.task)
        return await self.judge.lint(task, device=request.device)

    def health(self) -> HealthResponse:
        return HealthResponse(
            versions=Versions(package=adaexplore_mcp.__version__, **self.judge.versions()),
            uptime_s=time.monotonic() - self._started,
            timeout_s=self.judge.settings.timeout_s,
            devices=self.judge.lanes_status(),
        )

    def queue(self) -> QueueResponse:
        return QueueResponse(devices=self.judge.lanes_status())


class RequestRejected(Exception):
    """A request refused before the judge saw it."""

    def __init__(self, status: int, code: ServiceErrorCode, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(exc: BaseException, *, retry_after: bool = False) -> Response:
    """The HTTP answer for an exception raised by a request (``ErrorResponse`` JSON);
    ``retry_after``: with a Retry-After header, as a full queue's."""
    headers: dict[str, str] = {"Retry-After": str(RETRY_AFTER_S)} if retry_after else {}
    if isinstance(exc, RequestRejected):
        status, code, message = exc.status, exc.code, exc.message
        if code is ServiceErrorCode.UNAUTHORIZED:
            headers["WWW-Authenticate"] = "Bearer"
    elif isinstance(exc, QueueFull):
        status, code, message = 503, ServiceErrorCode.QUEUE_FULL, str(exc)
        headers["Retry-After"] = str(RETRY_AFTER_S)
    elif isinstance(exc, JudgeUnavailable):
        status, code, message = 503, ServiceErrorCode.JUDGE_UNAVAILABLE, str(exc)
    elif isinstance(exc, JudgeError):
        status, code, message = 500, ServiceErrorCode.JUDGE_ERROR, str(exc)
    elif isinstance(exc, TaskError):
        status, code, message = 422, ServiceErrorCode.TASK_ERROR, str(exc)
    elif isinstance(exc, HTTPException) and exc.status_code in (404, 405):
        status = exc.status_code
        code = ServiceErrorCode.NOT_FOUND if status == 404 else ServiceErrorCode.METHOD_NOT_ALLOWED
        message = (
            f"no such endpoint or method; the service answers POST {API_PREFIX}/evaluate, "
            f"POST {API_PREFIX}/lint, GET {API_PREFIX}/health and GET {API_PREFIX}/queue"
        )
    elif isinstance(exc, ClientDisconnect):
        # the client left while its body arrived: nothing to answer, nothing gone wrong here
        log.info("a client disconnected before its request arrived")
        status, code, message = 400, ServiceErrorCode.INVALID_REQUEST, "the client went away"
    else:
        log.error("unexpected error in a request", exc_info=exc)
        status, code = 500, ServiceErrorCode.INTERNAL
        message = f"the service failed unexpectedly ({type(exc).__name__}); see its log"
    body = ErrorResponse(error=code, message=message).model_dump_json()
    return Response(body, status, headers, media_type="application/json")


def _json(model: BaseModel) -> Response:
    return Response(model.model_dump_json(), media_type="application/json")


def _line(model: BaseModel) -> bytes:
    return model.model_dump_json().encode() + b"\n"


def _validation_summary(exc: ValidationError, limit: int = 5) -> str:
    errors = exc.errors(include_url=False)
    if any(e["type"] == "json_invalid" for e in errors):
        return f"the body is not valid JSON: {errors[0]['msg']}"
    parts = [f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in errors[:limit]]
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more + " (the request format is in docs/judge-service.md)"


def _unauthorized() -> Response:
    return error_response(
        RequestRejected(
            401,
            ServiceErrorCode.UNAUTHORIZED,
            "this judge service requires `Authorization: Bearer <token>` with its token "
            "(adaexplore-mcp: --judge-token or ADAEXPLORE_REMOTE__TOKEN)",
        )
    )


def _too_many_requests() -> Response:
    return error_response(
        RequestRejected(
            503,
            ServiceErrorCode.TOO_MANY_REQUESTS,
            "this service is serving as many requests as it takes at once "
            "(ADAEXPLORE_SERVICE__MAX_REQUESTS); retry later",
        ),
        retry_after=True,
    )


def _untrusted_host() -> Response:
    return error_response(
        RequestRejected(
            421,
            ServiceErrorCode.UNTRUSTED_HOST,
            "this service listens on the loopback interface without a token and answers only "
            "requests for a loopback host (localhost, 127.0.0.1, [::1]); set a token "
            "(ADAEXPLORE_SERVICE__TOKEN) to serve others",
        )
    )


async def _until_disconnected(request: Request) -> None:
    # The body has been read, so the next message uvicorn delivers is the disconnect.
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _collect(job: asyncio.Task) -> None:
    if job.done() and not job.cancelled():
        job.exception()  # marks it retrieved; the client it was for is gone


async def _read_task(payload: TaskPayload) -> Task:
    """The task a request carries, read in a thread: a large source takes a while to parse, and
    the service goes on answering meanwhile."""
    return await asyncio.to_thread(task_from_source, payload.source, payload.name)


class _Endpoints:
    def __init__(self, service: JudgeService, settings: ServiceSettings) -> None:
        self.service = service
        self.max_body = int(settings.max_body_mb * 2**20)
        self.body_timeout_s = settings.body_timeout_s

    async def _body(self, request: Request, model: type[M]) -> M:
        # a web page can post text/plain anywhere without asking; application/json it cannot,
        # short of a CORS preflight this service never approves
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            raise RequestRejected(
                415,
                ServiceErrorCode.UNSUPPORTED_MEDIA_TYPE,
                f"the request body must be JSON, sent with `Content-Type: application/json` "
                f"(got {media or 'none'!r})",
            )
        declared = request.headers.get("content-length", "")
        too_large = RequestRejected(
            413,
            ServiceErrorCode.BODY_TOO_LARGE,
            f"the request body is larger than this service's limit of {self.max_body} bytes "
            "(ADAEXPLORE_SERVICE__MAX_BODY_MB)",
        )
        if declared.isdigit() and int(declared) > self.max_body:
            raise too_large
        chunks, size = [], 0
        try:
            async with asyncio.timeout(self.body_timeout_s):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > self.max_body:
                        raise too_large
                    chunks.append(chunk)
        except TimeoutError:
            raise RequestRejected(
                408,
                ServiceErrorCode.REQUEST_TIMEOUT,
                f"the request body did not arrive within {self.body_timeout_s:g} s "
                "(ADAEXPLORE_SERVICE__BODY_TIMEOUT_S)",
            ) from None
        try:
            return model.model_validate_json(b"".join(chunks))
        except ValidationError as exc:
            raise RequestRejected(
                422, ServiceErrorCode.INVALID_REQUEST, _validation_summary(exc)
            ) from None

    async def _unless_disconnected(
        self, request: Request, work: Awaitable[Result]
    ) -> Result | None:
        """The result of ``work``, or None once the client has gone (the work is cancelled,
        which frees its worker)."""
        job = asyncio.ensure_future(work)
        gone = asyncio.create_task(_until_disconnected(request))
        try:
            await asyncio.wait({job, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not job.done():
                job.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await job
        _collect(job)
        return None if job.cancelled() else job.result()

    async def evaluate(self, request: Request) -> Response:
        body = await self._body(request, EvaluateRequest)
        if NDJSON in request.headers.get("accept", ""):
            return await self._evaluate_streaming(request, body)
        result = await self._unless_disconnected(request, self.service.evaluate(body))
        return Response(status_code=_CLIENT_GONE) if result is None else _json(result)

    async def _evaluate_streaming(self, request: Request, body: EvaluateRequest) -> Response:
        events: asyncio.Queue[ProgressEvent] = asyncio.Queue()
        accepted = asyncio.Event()

        def progress(phase: Phase, elapsed_s: float) -> None:
            events.put_nowait(ProgressEvent(phase=phase, elapsed_s=elapsed_s))
            accepted.set()

        job = asyncio.create_task(self.service.evaluate(body, progress))
        # Refusals (queue full, broken task) come before the first event and keep their status
        # code; only an accepted evaluation is answered with a stream.
        if await self._unless_disconnected(request, self._first(accepted, job)) is None:
            job.cancel()
            return Response(status_code=_CLIENT_GONE)
        if job.done() and job.exception() is not None:
            raise job.exception()  # type: ignore[misc]
        return StreamingResponse(self._lines(request, job, events), media_type=NDJSON)

    @staticmethod
    async def _first(accepted: asyncio.Event, job: asyncio.Task) -> bool:
        waiter = asyncio.create_task(accepted.wait())
        try:
            await asyncio.wait({waiter, job}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        return True

    async def _lines(
        self, request: Request, job: asyncio.Task, events: asyncio.Queue[ProgressEvent]
    ) -> AsyncIterator[bytes]:
        gone = asyncio.create_task(_until_disconnected(request))
        getter: asyncio.Task | None = None
        last, last_at = ProgressEvent(phase=Phase.QUEUED, elapsed_s=0.0), time.monotonic()
        try:
            while True:
                getter = asyncio.create_task(events.get())
                done, _ = await asyncio.wait(
                    {getter, job, gone}, timeout=HEARTBEAT_S, return_when=asyncio.FIRST_COMPLETED
                )
                if getter in done:
                    last, last_at = getter.result(), time.monotonic()
                    yield _line(last)
                    continue
                getter.cancel()
                if job in done:
                    while not events.empty():  # put just before it finished
                        yield _line(events.get_nowait())
                    yield self._final(job)
                    return
                if gone in done:
                    return
                elapsed = last.elapsed_s + time.monotonic() - last_at
                yield _line(ProgressEvent(phase=last.phase, elapsed_s=elapsed))
        finally:
            for waiting in (getter, gone):
                if waiting is not None:
                    waiting.cancel()
            job.cancel()  # a no-op when it finished; otherwise the client left mid-stream
            _collect(job)

    @staticmethod
    def _final(job: asyncio.Task) -> bytes:
        exc = job.exception()
        if exc is None:
            return _line(ResultEvent(result=job.result()))
        response = error_response(exc)
        return bytes(response.body) + b"\n"

    async def lint(self, request: Request) -> Response:
        body = await self._body(request, LintRequest)
        report = await self._unless_disconnected(request, self.service.lint(body))
        return Response(status_code=_CLIENT_GONE) if report is None else _json(report)

    async def health(self, request: Request) -> Response:
        return _json(self.service.health())

    async def queue(self, request: Request) -> Response:
        return _json(self.service.queue())


async def _handle(request: Request, exc: Exception) -> Response:
    return error_response(exc)


def create_app(judge: LocalJudge, settings: ServiceSettings) -> Starlette:
    """The HTTP API over a started ``judge``."""
    endpoints = _Endpoints(JudgeService(judge), settings)
    return Starlette(
        routes=[
            Route(f"{API_PREFIX}/evaluate", endpoints.evaluate, methods=["POST"]),
            Route(f"{API_PREFIX}/lint", endpoints.lint, methods=["POST"]),
            Route(f"{API_PREFIX}/health", endpoints.health, methods=["GET"]),
            Route(f"{API_PREFIX}/queue", endpoints.queue, methods=["GET"]),
        ],
        middleware=[
            Middleware(RequestLimit, limit=settings.max_requests, reject=_too_many_requests),
            Middleware(
                LoopbackHost,
                enforce=settings.token is None and is_loopback(settings.host),
                reject=_untrusted_host,
            ),
            Middleware(BearerAuth, token=settings.token, reject=_unauthorized),
        ],
        exception_handlers={
            HTTPException: _handle,
            RequestRejected: _handle,
            JudgeError: _handle,
            TaskError: _handle,
            Exception: _handle,
        },
    )
