"""A local HTTP server that answers like the OpenAI and Anthropic APIs, for tests.

The official clients talk to it for real (HTTP, JSON, server-sent events), so what is tested is
what runs against the providers. It serves a script of replies, one per request, whichever API
is asked, and records every request:

    with FakeProviders() as fake:
        fake.script(Reply.rate_limited(), Reply(text="hello", input_tokens=12))
        ...  # point a client at fake.url (Anthropic) or fake.openai_url (OpenAI, vLLM)
        fake.requests[-1].body["model"]

Endpoints: ``POST /v1/chat/completions`` (OpenAI chat completions, plain and ``stream: true``
with a final usage chunk when ``stream_options.include_usage``), ``POST
/openai/deployments/{name}/chat/completions`` (the same, as Azure OpenAI routes it) and ``POST
/v1/messages`` (Anthropic Messages, plain and streamed). Once the script is spent, the default
reply (``Reply()``, or what ``respond_with`` set) answers.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

Api = Literal["openai", "anthropic"]

_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_denied",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer, rendered in the format of the API that was called."""

    text: str = "ok"
    status: int = 200
    input_tokens: int = 10
    output_tokens: int = 5
    stop_reason: str | None = None  # default: end_turn (Anthropic), stop (OpenAI)
    model: str | None = None  # default: the model the request named
    report_usage: bool = True  # False: no usage in the body (some OpenAI-compatible servers)
    headers: Mapping[str, str] = field(default_factory=dict)
    body: str | None = None  # sent verbatim instead of a rendered body (malformed replies)
    delay_s: float = 0.0  # wait this long before answering (to provoke client timeouts)
    error_type: str | None = None  # for status >= 400; default by status
    message: str = "scripted error"  # for status >= 400
    stream_error: str | None = None  # streamed only: an error event of this type mid-stream
    chunks: int = 3  # streamed only: text deltas the text is split into

    @classmethod
    def error(
        cls, status: int, message: str = "scripted error", *, error_type: str | None = None, **kw
    ) -> Reply:
        return cls(status=status, message=message, error_type=error_type, **kw)

    @classmethod
    def rate_limited(cls, retry_after: str | None = "0", **kw: Any) -> Reply:
        """429; ``retry_after`` is the Retry-After header's value (None: no header)."""
        headers = {"retry-after": retry_after} if retry_after is not None else {}
        return cls(status=429, message="rate limited", headers=headers, **kw)

    @classmethod
    def malformed(cls, body: str = '{"id": "cut off', **kw: Any) -> Reply:
        """A 200 whose JSON body is broken (a proxy cut it, or it is not the API at all)."""
        return cls(body=body, headers={"content-type": "application/json"}, **kw)

    @classmethod
    def slow(cls, delay_s: float, text: str = "late", **kw: Any) -> Reply:
        return cls(text=text, delay_s=delay_s, **kw)


@dataclass(frozen=True)
class Recorded:
    """A request the server received."""

    api: Api
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]  # the parsed JSON body ({} if it was not JSON)

    @property
    def api_key(self) -> str | None:
        """The key the client sent, however its API carries it."""
        auth = self.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:]
        return self.headers.get("x-api-key") or self.headers.get("api-key")

    @property
    def streamed(self) -> bool:
        return bool(self.body.get("stream"))


Responder = Callable[[Recorded], Reply]


class FakeProviders:
    """The server, on a free loopback port, in a thread of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self._requests: list[Recorded] = []
        self._default: Responder = _ok
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        host, port = self._sock.getsockname()
        self.url = f"http://{host}:{port}"
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
                Route(
                    "/openai/deployments/{deployment}/chat/completions",
                    self._openai,
                    methods=["POST"],
                ),
                Route("/v1/messages", self._anthropic, methods=["POST"]),
            ]
        )
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def openai_url(self) -> str:
        """The base URL an OpenAI client (or an OpenAI-compatible one) is given."""
        return self.url + "/v1"

    def start(self) -> FakeProviders:
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the fake provider server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._sock.close()

    def __enter__(self) -> FakeProviders:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # scripting

    def script(self, *replies: Reply) -> None:
        """Queue replies; each request takes the next one."""
        with self._lock:
            self._script.extend(replies)

    def respond_with(self, responder: Reply | Responder) -> None:
        """What answers once the script is spent: a fixed reply, or a function of the request."""
        self._default = responder if callable(responder) else (lambda _request: responder)

    def reset(self) -> None:
        """Forget the script, the requests and the default reply."""
        with self._lock:
            self._script.clear()
            self._requests.clear()
            self._default = _ok

    @property
    def pending(self) -> int:
        """Scripted replies not yet served."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    # serving

    async def _take(self, request: Request, api: Api) -> tuple[Recorded, Reply]:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        recorded = Recorded(
            api=api,
            method=request.method,
            path=request.url.path,
            query=dict(request.query_params),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body if isinstance(body, dict) else {},
        )
        with self._lock:
            self._requests.append(recorded)
            reply = self._script.popleft() if self._script else None
        if reply is None:
            reply = self._default(recorded)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        return recorded, reply

    async def _openai(self, request: Request) -> Response:
        recorded, reply = await self._take(request, "openai")
        model = reply.model or recorded.body.get("model") or request.path_params.get("deployment")
        if (early := _early(reply, _openai_error(reply))) is not None:
            return early
        if recorded.streamed:
            include_usage = bool((recorded.body.get("stream_options") or {}).get("include_usage"))
            events = _openai_events(reply, str(model), include_usage)
            return _sse(events, reply)
        return JSONResponse(_openai_completion(reply, str(model)), headers=dict(reply.headers))

    async def _anthropic(self, request: Request) -> Response:
        recorded, reply = await self._take(request, "anthropic")
        model = str(reply.model or recorded.body.get("model"))
        if (early := _early(reply, _anthropic_error(reply))) is not None:
            return early
        if recorded.streamed:
            return _sse(_anthropic_events(reply, model), reply)
        return JSONResponse(_anthropic_message(reply, model), headers=dict(reply.headers))


def _ok(_request: Recorded) -> Reply:
    return Reply()


def _early(reply: Reply, error_body: dict) -> Response | None:
    """The response for a verbatim body or an error status; None for a normal answer."""
    headers = dict(reply.headers)
    if reply.body is not None:
        return Response(reply.body, status_code=reply.status, headers=headers)
    if reply.status >= 400:
        return JSONResponse(error_body, status_code=reply.status, headers=headers)
    return None


def _sse(events: list[tuple[str | None, str]], reply: Reply) -> StreamingResponse:
    async def stream() -> AsyncIterator[bytes]:
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            yield f"{head}data: {data}\n\n".encode()
            await asyncio.sleep(0)

    return StreamingResponse(stream(), media_type="text/event-stream", headers=dict(reply.headers))


def _pieces(text: str, count: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(count, 1)))
    return [text[i : i + size] for i in range(0, len(text), size)]


# OpenAI chat completions


def _openai_error(reply: Reply) -> dict:
    kind = reply.error_type or _OPENAI_ERRORS.get(reply.status, "server_error")
    return {"error": {"message": reply.message, "type": kind, "param": None, "code": kind}}


def _openai_usage(reply: Reply) -> dict:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def _openai_completion(reply: Reply, model: str) -> dict:
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text, "refusal": None},
                "finish_reason": reply.stop_reason or "stop",
                "logprobs": None,
            }
        ],
    }
    if reply.report_usage:
        body["usage"] = _openai_usage(reply)
    return body


def _openai_events(reply: Reply, model: str, include_usage: bool) -> list[tuple[str | None, str]]:
    def chunk(choices: list[dict], **extra: Any) -> tuple[None, str]:
        body = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            **extra,
        }
        if include_usage:
            body.setdefault("usage", None)
        return None, json.dumps(body)

    def delta(content: dict, finish: str | None = None) -> list[dict]:
        return [{"index": 0, "delta": content, "finish_reason": finish, "logprobs": None}]

    events = [chunk(delta({"role": "assistant", "content": ""}))]
    for i, piece in enumerate(_pieces(reply.text, reply.chunks)):
        events.append(chunk(delta({"content": piece})))
        if reply.stream_error and i == 0:
            error = {"message": reply.message, "type": reply.stream_error, "code": None}
            return [*events, (None, json.dumps({"error": error}))]
    events.append(chunk(delta({}, reply.stop_reason or "stop")))
    if include_usage and reply.report_usage:
        events.append(chunk([], usage=_openai_usage(reply)))
    events.append((None, "[DONE]"))
    return events


# Anthropic messages


def _anthropic_error(reply: Reply) -> dict:
    kind = reply.error_type or _ANTHROPIC_ERRORS.get(reply.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": reply.message}}


def _anthropic_message(reply: Reply, model: str) -> dict:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": reply.text}],
        "stop_reason": reply.stop_reason or "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens if reply.report_usage else 0,
            "output_tokens": reply.output_tokens if reply.report_usage else 0,
        },
    }


def _anthropic_events(reply: Reply, model: str) -> list[tuple[str | None, str]]:
    def event(name: str, **data: Any) -> tuple[str, str]:
        return name, json.dumps({"type": name, **data})

    start = _anthropic_message(reply, model) | {"content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": start["usage"]["input_tokens"], "output_tokens": 1}
    events = [
        event("message_start", message=start),
        event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        event("ping"),
    ]
    for i, piece in enumerate(_pieces(reply.text, reply.chunks)):
        events.append(
            event("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
        )
        if reply.stream_error and i == 0:
            error = {"type": reply.stream_error, "message": reply.message}
            return [*events, event("error", error=error)]
    usage = {"output_tokens": reply.output_tokens if reply.report_usage else 0}
    events += [
        event("content_block_stop", index=0),
        event(
            "message_delta",
            delta={"stop_reason": reply.stop_reason or "end_turn", "stop_sequence": None},
            usage=usage,
        ),
        event("message_stop"),
    ]
    return events
