"""The judge service over real loopback HTTP, and RemoteJudge against it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import socket
import threading
import time

import httpx
import pytest

from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import (
    Judge,
    JudgeUnavailable,
    LocalJudge,
    Phase,
    QueueFull,
    RemoteJudge,
    Status,
    open_judge,
)
from adaexplore_mcp.judge.service import app as service_module
from adaexplore_mcp.judge.service.server import check_bind
from adaexplore_mcp.judge.settings import RemoteJudgeSettings, ServiceSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import TaskError

from ..conftest import cpu_settings, run_cli
from .servers import (
    GELU,
    RunningService,
    gelu_exiting,
    gelu_hanging,
    gelu_solution,
    gelu_wrong,
    payload,
)

TOKEN = "test-token-0123456789"
NDJSON = {"Accept": "application/x-ndjson"}


@pytest.fixture(scope="module")
def local_judge(loop_thread, tmp_path_factory):
    judge = LocalJudge(cpu_settings(), home=tmp_path_factory.mktemp("service"))
    loop_thread.run(judge.start())
    yield judge
    loop_thread.run(judge.close())


@pytest.fixture(scope="module")
def service(loop_thread, local_judge):
    running = RunningService(loop_thread, local_judge, ServiceSettings(max_body_mb=0.1))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def guarded(loop_thread, local_judge):
    running = RunningService(loop_thread, local_judge, ServiceSettings(token=TOKEN))
    yield running
    running.stop()


@pytest.fixture
def tight(loop_thread, tmp_path):
    """One worker and room for one more evaluation in the queue."""
    judge = LocalJudge(cpu_settings(workers_per_device=1, max_queue=1), home=tmp_path)
    loop_thread.run(judge.start())
    running = RunningService(loop_thread, judge)
    yield running
    running.stop()
    loop_thread.run(judge.close())


def remote(url: str, **settings: object) -> RemoteJudge:
    return RemoteJudge(RemoteJudgeSettings(url=url, **settings))  # type: ignore[arg-type]


def test_evaluate_a_bundled_solution(service):
    response = httpx.post(
        f"{service.url}/v1/evaluate", json=payload(GELU, gelu_solution()), timeout=60
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    result = response.json()
    assert result["status"] == "correct", result["message"]
    assert result["task"] == "gelu" and result["task_hash"] == GELU.hash
    assert result["environment"]["device"] == "cpu"


def test_streaming_relays_every_phase_then_the_result(service):
    body = payload(GELU, gelu_solution())
    with httpx.stream(
        "POST", f"{service.url}/v1/evaluate", json=body, headers=NDJSON, timeout=60
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in response.iter_lines() if line]
    phases = [line["phase"] for line in lines[:-1]]
    assert phases[0] == "queued" and "compiling" in phases and "checking" in phases
    assert all(line["elapsed_s"] >= 0 for line in lines[:-1])
    assert lines[-1]["result"]["status"] == "correct"


def test_a_quiet_stream_repeats_its_phase(service, monkeypatch):
    monkeypatch.setattr(service_module, "HEARTBEAT_S", 0.2)
    body = payload(GELU, gelu_hanging(), timeout_s=1.5)
    with httpx.stream(
        "POST", f"{service.url}/v1/evaluate", json=body, headers=NDJSON, timeout=60
    ) as response:
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert lines[-1]["result"]["status"] == "timeout"
    compiling = [line["elapsed_s"] for line in lines if line.get("phase") == "compiling"]
    assert len(compiling) >= 3 and compiling == sorted(compiling)


def test_health_and_queue(service):
    health = httpx.get(f"{service.url}/v1/health").json()
    assert health["status"] == "ok"
    assert health["uptime_s"] > 0 and health["timeout_s"] == 60
    assert set(health["versions"]) == {"package", "torch", "triton", "python"}
    assert health["versions"]["torch"] and health["versions"]["triton"]
    [cpu] = health["devices"]
    assert cpu["device"] == "cpu" and cpu["device_name"] == "cpu" and cpu["gpu"] is None
    assert cpu["workers"] == 2 and cpu["capacity"] == 256
    assert cpu["queued"] == cpu["running"] == 0
    queue = httpx.get(f"{service.url}/v1/queue").json()
    assert queue["devices"][0]["device"] == "cpu"
    assert set(queue["devices"][0]) >= {"queued", "running", "workers", "capacity"}


@pytest.mark.parametrize("header", [None, "Bearer wrong-token", f"Basic {TOKEN}", TOKEN])
def test_without_the_token_nothing_is_answered_or_run(guarded, header):
    headers = {"Authorization": header} if header else {}
    before = guarded.served()
    for method, path in [("GET", "/v1/health"), ("GET", "/v1/queue"), ("POST", "/v1/evaluate")]:
        body = payload(GELU, gelu_solution()) if method == "POST" else None
        response = httpx.request(method, guarded.url + path, json=body, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"] == "unauthorized"
        assert "ADAEXPLORE_REMOTE__TOKEN" in response.json()["message"]
    assert guarded.served() == before
    assert all(lane.queued == lane.running == 0 for lane in guarded.judge.lanes_status())


def test_with_the_token_everything_works(guarded):
    headers = {"Authorization": f"bearer {TOKEN}"}
    assert httpx.get(f"{guarded.url}/v1/health", headers=headers).status_code == 200
    response = httpx.post(
        f"{guarded.url}/v1/evaluate",
        json=payload(GELU, gelu_solution()),
        headers=headers,
        timeout=60,
    )
    assert response.json()["status"] == "correct"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"code": "x"}', "task: Field required"),
        (b'{"task": {"name": "t"}, "code": "x"}', "task.source: Field required"),
        (b'{"task": {"name": "t", "source": "x"}, "code": "x", "timeout_s": -1}', "timeout_s"),
        (b'{"task": {"name": "t", "source": "x"}, "code": "x", "kernel": 1}', "kernel"),
    ],
    ids=["json", "task", "source", "timeout", "extra"],
)
def test_malformed_requests_are_422_and_run_nothing(service, body, expected):
    before = service.served()
    response = httpx.post(f"{service.url}/v1/evaluate", content=body, headers=JSON)
    assert response.status_code == 422
    assert response.json()["error"] == "invalid_request"
    assert expected in response.json()["message"]
    assert service.served() == before


JSON = {"Content-Type": "application/json"}


def test_a_body_not_sent_as_json_is_415_and_runs_nothing(service):
    """A web page may post text/plain to any address without asking: with no token, any page
    open on the machine could have had kernels judged."""
    before = service.served()
    body = json.dumps(payload(GELU, gelu_solution()))
    for headers in ({"Content-Type": "text/plain;charset=UTF-8"}, {}):
        response = httpx.post(f"{service.url}/v1/evaluate", content=body, headers=headers)
        assert response.status_code == 415, response.text
        assert response.json()["error"] == "unsupported_media_type"
    assert service.served() == before


def test_without_a_token_only_a_loopback_host_is_answered(service):
    """A name a web page points at 127.0.0.1 (DNS rebinding) reaches nothing."""
    before = service.served()
    hosts = ("rebind.example", "rebind.example:8765", "10.0.0.1", "127.rebind.example")
    for host in (*hosts, "127.0.0.1.rebind.example", "127.rebind.example:8765"):
        response = httpx.post(
            f"{service.url}/v1/evaluate",
            json=payload(GELU, gelu_solution()),
            headers={"Host": host},
        )
        assert response.status_code == 421, (host, response.text)
        assert response.json()["error"] == "untrusted_host"
    assert service.served() == before
    for host in ("localhost:1", "127.0.0.1", "[::1]:8765", "127.0.0.2:8765"):
        response = httpx.get(f"{service.url}/v1/health", headers={"Host": host})
        assert response.status_code == 200, (host, response.text)


def test_with_a_token_any_host_is_answered(guarded):
    headers = {"Authorization": f"Bearer {TOKEN}", "Host": "judge.example"}
    assert httpx.get(f"{guarded.url}/v1/health", headers=headers).status_code == 200


def test_the_service_answers_while_a_task_is_read(service, monkeypatch):
    """A task's source is read off the event loop: a slow one (a source of 20,000 integers
    took 16 s) froze every other request, /v1/health included."""
    reading, release = threading.Event(), threading.Event()
    read = service_module.task_from_source

    def slow(source: str, name: str):
        reading.set()
        release.wait(30)
        return read(source, name)

    monkeypatch.setattr(service_module, "task_from_source", slow)
    body = payload(GELU, gelu_solution())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        evaluation = pool.submit(httpx.post, f"{service.url}/v1/evaluate", json=body, timeout=60)
        assert reading.wait(30)
        try:
            assert httpx.get(f"{service.url}/v1/health", timeout=5).status_code == 200
        finally:
            release.set()
        assert evaluation.result().json()["status"] == "correct"


def test_a_broken_task_is_422_and_a_task_error_remotely(service):
    broken = {"task": {"name": "broken", "source": "x = 1\n"}, "code": gelu_solution()}
    response = httpx.post(f"{service.url}/v1/evaluate", json=broken)
    assert response.status_code == 422
    assert response.json()["error"] == "task_error"
    assert "class Model" in response.json()["message"]

    async def run():
        async with remote(service.url) as judge:
            with pytest.raises(TaskError, match="class Model"):
                await judge.evaluate(GELU.model_copy(update={"source": "x = 1\n"}), "")

    asyncio.run(run())


def test_a_body_over_the_limit_is_413(service):
    before = service.served()
    big = payload(GELU, "#" * 200_000)
    response = httpx.post(f"{service.url}/v1/evaluate", json=big)
    assert response.status_code == 413
    assert response.json()["error"] == "body_too_large"
    assert "ADAEXPLORE_SERVICE__MAX_BODY_MB" in response.json()["message"]
    assert service.served() == before


def test_unknown_paths_are_404_json(service):
    response = httpx.get(f"{service.url}/v2/evaluate")
    assert response.status_code == 404 and response.json()["error"] == "not_found"
    response = httpx.get(f"{service.url}/v1/evaluate")
    assert response.status_code == 405 and response.json()["error"] == "method_not_allowed"


async def _occupy(url: str, client: httpx.AsyncClient) -> list[asyncio.Task]:
    """Fill the tight service: one hanging evaluation running, one waiting."""
    tasks = []
    for _ in range(2):
        body = payload(GELU, gelu_hanging(), timeout_s=2)
        tasks.append(asyncio.create_task(client.post(f"{url}/v1/evaluate", json=body)))
        await asyncio.sleep(0.4)
    return tasks


def test_a_full_queue_is_503_with_retry_after(tight):
    async def run():
        async with httpx.AsyncClient(timeout=60) as client:
            occupying = await _occupy(tight.url, client)
            refused = await client.post(
                f"{tight.url}/v1/evaluate", json=payload(GELU, gelu_solution())
            )
            streamed = await client.post(
                f"{tight.url}/v1/evaluate", json=payload(GELU, gelu_solution()), headers=NDJSON
            )
            with pytest.raises(QueueFull, match="retry when some have finished"):
                async with remote(tight.url, retries=0) as judge:
                    await judge.evaluate(GELU, gelu_solution())
            return refused, streamed, [(await t).json()["status"] for t in occupying]

    refused, streamed, statuses = asyncio.run(run())
    for response in (refused, streamed):
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
        assert response.json()["error"] == "queue_full"
    assert statuses == ["timeout", "timeout"]


class _Recording(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.statuses: list[int] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        self.statuses.append(response.status_code)
        return response


def test_remote_judge_retries_a_full_queue_then_succeeds(tight):
    transport = _Recording()

    async def run():
        async with httpx.AsyncClient(timeout=60) as client:
            occupying = await _occupy(tight.url, client)
            settings = RemoteJudgeSettings(url=tight.url, retries=8, backoff_s=0.5)
            async with RemoteJudge(settings, transport=transport) as judge:
                result = await judge.evaluate(GELU, gelu_solution())
            await asyncio.gather(*occupying)
            return result

    result = asyncio.run(run())
    assert result.status is Status.CORRECT
    assert 503 in transport.statuses and transport.statuses[-1] == 200


@pytest.mark.parametrize("streaming", [False, True])
def test_a_client_that_leaves_cancels_its_evaluation(tight, streaming):
    body = payload(GELU, gelu_hanging(), timeout_s=120)
    with httpx.Client(timeout=1.5) as client:
        if streaming:
            with client.stream("POST", f"{tight.url}/v1/evaluate", json=body, headers=NDJSON) as r:
                lines = r.iter_lines()
                assert json.loads(next(lines))["phase"] == "queued"
                assert json.loads(next(lines))["phase"] == "compiling"
        else:
            with pytest.raises(httpx.ReadTimeout):  # the client gives up waiting
                client.post(f"{tight.url}/v1/evaluate", json=body)
    _wait_until_idle(tight.judge)
    started = time.monotonic()
    response = httpx.post(f"{tight.url}/v1/evaluate", json=payload(GELU, gelu_solution()))
    assert response.json()["status"] == "correct"
    assert time.monotonic() - started < 10


def _wait_until_idle(judge: LocalJudge, within_s: float = 3) -> None:
    deadline = time.monotonic() + within_s
    while any(lane.running or lane.queued for lane in judge.lanes_status()):
        assert time.monotonic() < deadline, "the evaluation kept its worker"
        time.sleep(0.02)


def test_an_evaluation_cancelled_as_its_child_starts_frees_the_worker_at_once(loop_thread, tight):
    async def cancel_after(delay_s: float) -> None:
        job = asyncio.create_task(tight.judge.evaluate(GELU, gelu_hanging(), timeout_s=120))
        await asyncio.sleep(delay_s)
        job.cancel()

    for delay_s in (0.0, 0.001, 0.003, 0.01, 0.1):
        loop_thread.run(cancel_after(delay_s))
        _wait_until_idle(tight.judge, within_s=2)


def test_remote_and_local_judges_are_interchangeable(loop_thread, local_judge, service):
    kernels = [gelu_solution(), gelu_wrong(), gelu_exiting(), "def broken(:\n"]
    progress: list[Phase] = []

    async def verdicts(judge: Judge) -> list:
        return [await judge.evaluate(GELU, code, timeout_s=30) for code in kernels]

    async def remotely():
        async with remote(service.url) as judge:
            assert isinstance(judge, Judge)
            found = await verdicts(judge)
            streamed = await judge.evaluate(
                GELU, gelu_solution(), on_progress=lambda p, _: progress.append(p)
            )
            return found, streamed, judge.devices, judge.versions()

    assert isinstance(local_judge, Judge)
    local = loop_thread.run(verdicts(local_judge))
    far, streamed, devices, versions = asyncio.run(remotely())
    assert (
        [r.status for r in far]
        == [r.status for r in local]
        == [
            Status.CORRECT,
            Status.INCORRECT,
            Status.RUNTIME_ERROR,
            Status.COMPILE_ERROR,
        ]
    )
    for mine, theirs in zip(local, far, strict=True):
        assert (mine.task_hash, mine.kernel_hash) == (theirs.task_hash, theirs.kernel_hash)
        assert mine.correctness.variants_checked == theirs.correctness.variants_checked
        assert (mine.error and mine.error.type) == (theirs.error and theirs.error.type)
    assert streamed.status is Status.CORRECT
    assert progress[0] is Phase.QUEUED and Phase.CHECKING in progress
    assert devices == local_judge.devices and versions == local_judge.versions()


def test_remote_judge_without_the_token_says_how_to_pass_it(guarded):
    async def run():
        async with remote(guarded.url, retries=0):
            pass

    with pytest.raises(JudgeUnavailable, match="--judge-token or ADAEXPLORE_REMOTE__TOKEN"):
        asyncio.run(run())


def test_remote_judge_that_cannot_connect_is_unavailable():
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"

    async def run():
        async with remote(url, retries=2, backoff_s=0.05):
            pass

    started = time.monotonic()
    with pytest.raises(JudgeUnavailable, match="is `adaexplore-mcp judge serve` running"):
        asyncio.run(run())
    assert time.monotonic() - started < 5


def test_open_judge_picks_remote_when_a_url_is_set(tmp_path):
    stores: list[Store] = []

    def open_store() -> Store:
        stores.append(Store(tmp_path / "db.sqlite3"))
        return stores[-1]

    local = open_judge(Settings(home=tmp_path), open_store=open_store)
    far = open_judge(
        Settings(home=tmp_path, remote=RemoteJudgeSettings(url="http://h:1")),
        open_store=open_store,
    )
    assert isinstance(local, LocalJudge) and isinstance(far, RemoteJudge)
    assert len(stores) == 1  # only the local pool caches baselines in the caller's store


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_needs_no_token(host):
    check_bind(ServiceSettings(host=host))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1"])
def test_beyond_loopback_a_token_is_required(host):
    with pytest.raises(ValueError, match="without a token"):
        check_bind(ServiceSettings(host=host))
    check_bind(ServiceSettings(host=host, token=TOKEN))


def test_cli_serve_refuses_to_listen_beyond_loopback_without_a_token(tmp_path):
    proc = run_cli(
        "judge", "serve", "--host", "0.0.0.0", "--device", "cpu", home=tmp_path, timeout=120
    )
    assert proc.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in proc.stderr


def test_cli_eval_and_lint_through_the_service(guarded, tmp_path):
    auth = ("--judge", guarded.url, "--judge-token", TOKEN)
    proc = run_cli("eval", "gelu", "--solution", "--json", *auth, home=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "correct"
    assert not (tmp_path / "adaexplore.sqlite3").exists()  # nothing ran here
    proc = run_cli("tasks", "lint", "softmax", *auth, home=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok")
    proc = run_cli("eval", "gelu", "--solution", "--judge", guarded.url, home=tmp_path, timeout=120)
    assert proc.returncode == 3
    assert "--judge-token" in proc.stderr


def test_the_precision_policy_travels_to_the_service(service):
    async def run():
        async with remote(service.url) as judge:
            return await judge.evaluate(GELU, gelu_solution(), precision="legacy")

    result = asyncio.run(run())
    assert result.status == "correct"
    assert result.precision == "legacy" and result.message.startswith("[legacy precision]")


def test_the_operator_policy_travels_to_the_service(service):
    from .mixed import LIBRARY_GEMM_TRITON_EPILOGUE, TASK

    async def run(**policy):
        async with remote(service.url) as judge:
            return await judge.evaluate(TASK, LIBRARY_GEMM_TRITON_EPILOGUE, **policy)

    mixed = asyncio.run(run(ops="mixed"))
    assert mixed.status == "correct" and mixed.ops == "mixed", mixed.message
    assert mixed.work_split is not None and mixed.work_split.library_ops == {"mm": 1}
    assert asyncio.run(run()).status == "rejected"


def _held_request(url: str, path: str = "/v1/evaluate") -> socket.socket:
    """A connection whose request announces a body of 1000 bytes and sends five."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=15)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        'Content-Length: 1000\r\n\r\n{"a":'.encode()
    )
    return sock


def test_a_body_that_does_not_arrive_in_time_is_refused(loop_thread, local_judge):
    """A body held open kept its memory for as long as the client liked: 100 of them took the
    service to 484 MB (a red team). It now has ``body_timeout_s`` to arrive."""
    running = RunningService(loop_thread, local_judge, ServiceSettings(body_timeout_s=1.0))
    try:
        with _held_request(running.url) as sock:
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
        assert b" 408 " in reply.split(b"\r\n")[0], reply
        assert b"request_timeout" in reply and b"BODY_TIMEOUT_S" in reply, reply
    finally:
        running.stop()


def test_requests_beyond_the_limit_are_answered_503_at_once(loop_thread, local_judge):
    """Requests were not counted, so held bodies piled up without bound."""
    settings = ServiceSettings(max_requests=2, body_timeout_s=60.0)
    running = RunningService(loop_thread, local_judge, settings)
    held = [_held_request(running.url) for _ in range(2)]
    try:
        time.sleep(0.5)  # both requests are in the app, waiting for their bodies
        response = httpx.get(f"{running.url}/v1/health", timeout=10)
        assert response.status_code == 503, response.text
        assert response.json()["error"] == "too_many_requests"
    finally:
        for sock in held:
            sock.close()
        running.stop()


def test_a_client_that_leaves_mid_body_is_one_line_in_the_log(loop_thread, local_judge, caplog):
    """Each client that left while its body arrived logged a traceback of 5.5 KB as an
    unexpected error (a red team)."""
    import logging

    running = RunningService(loop_thread, local_judge, ServiceSettings(body_timeout_s=30.0))
    try:
        with caplog.at_level(logging.INFO):
            _held_request(running.url).close()
            deadline = time.monotonic() + 10
            while "disconnected" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        running.stop()
    assert "a client disconnected" in caplog.text, caplog.text
    assert "unexpected error" not in caplog.text and "Traceback" not in caplog.text
