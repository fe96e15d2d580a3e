"""``Profiler``: a kernel's few decisive Nsight Compute metrics, from the calling (trusted) side.

It checks that ncu and a GPU are there, starts the launcher (a fresh Python that enters the
judge's sandbox and runs ncu there, ``launcher``), keeps it to a wall-clock limit, and turns
ncu's raw CSV into a ``ProfileReport``. It never opens the store, and the judge's home is hidden
from the sandbox as it is from every evaluation's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from adaexplore_mcp.judge.devices import nvidia_driver_present, parse_device_spec
from adaexplore_mcp.judge.profile import launcher, target
from adaexplore_mcp.judge.profile.errors import ProfileFailed, ProfilerUnavailable
from adaexplore_mcp.judge.profile.metrics import (
    METRICS,
    CsvError,
    Launch,
    parse_raw_csv,
    summarize,
)
from adaexplore_mcp.judge.profile.models import ProfileJob, ProfileReport
from adaexplore_mcp.judge.sandbox import limits
from adaexplore_mcp.judge.settings import JudgeSettings
from adaexplore_mcp.tasks import Task

TAIL_CHARS = 2000
_AUTO = "auto"


class Profiler:
    """Profiles with the ncu of ``settings.profile`` on the judge's first GPU. ``device``
    overrides where the profiled process runs ('cuda:N', or 'cpu' for tests with a stand-in
    ncu); by default the first GPU of ``settings.device``, or none."""

    def __init__(self, settings: JudgeSettings, *, home: Path, device: str | None = _AUTO):
        self.settings = settings
        self.home = home
        self.device = _first_gpu(settings.device) if device == _AUTO else device

    def ncu(self) -> str:
        """ncu's path, or ``ProfilerUnavailable`` saying what to install or set."""
        name = self.settings.profile.ncu or "ncu"
        found = shutil.which(name)
        if found is None:
            where = f"at {name!r}" if self.settings.profile.ncu else "on PATH"
            raise ProfilerUnavailable(
                f"Nsight Compute (ncu) was not found {where}: profiling needs it. The server's "
                "operator must install Nsight Compute (it comes with the CUDA toolkit) or set "
                "ADAEXPLORE_JUDGE__PROFILE__NCU to the ncu executable. evaluate_kernel works "
                "without it."
            )
        return found

    def require_device(self) -> str:
        if self.device is None:
            raise ProfilerUnavailable(
                "profiling needs a CUDA GPU, and this judge has none (ADAEXPLORE_JUDGE__DEVICE "
                f"is {self.settings.device!r}, or no NVIDIA driver was found). Profile on a GPU "
                "host; evaluate_kernel works without one."
            )
        return self.device

    async def profile(self, task: Task, code: str, *, top: int = 5) -> ProfileReport:
        """The ``top`` longest kernels of a few calls of ``ModelNew.forward`` on the task's
        benchmark inputs. Raises ``ProfilerUnavailable`` or ``ProfileFailed``."""
        ncu = self.ncu()
        device = self.require_device()
        gpu = device.startswith("cuda")
        profile = self.settings.profile
        job = ProfileJob(
            task_source=task.source,
            code=code,
            device="cuda" if gpu else "cpu",
            overrides=task.main_variant("cuda" if gpu else "cpu").overrides,
            warmup_calls=profile.warmup_calls,
            profiled_calls=profile.profiled_calls,
        )
        with tempfile.TemporaryDirectory(prefix="adaexplore-profile-") as root:
            request = launcher.LauncherRequest(
                job=job,
                command=[*self.command(ncu), sys.executable, "-P", "-m", target.__name__],
                sandbox=self.settings.sandbox,
                env=self._environment(device),
                keep_paths=_install_dirs(ncu),
                private_dirs=[str(p) for p in (self.home, os.environ.get("HOME")) if p],
                timeout_s=profile.timeout_s,
                output_limit_bytes=self.settings.output_limit_mb * 2**20,
                fallback_root=root,
            )
            code_, csv_text, tail = await self._run(request)
        launches = self._launches(code_, csv_text, tail)
        kernels = summarize(launches, top)
        capability = next((launch.capability for launch in launches if launch.capability), None)
        return ProfileReport(
            task=task.name,
            device=device,
            compute_capability=capability,
            profiled_calls=profile.profiled_calls,
            launches=len(launches),
            distinct_kernels=len({launch.kernel for launch in launches}),
            total_us=round(sum(launch.duration_us for launch in launches), 3),
            kernels=kernels,
            omitted_kernels=len({launch.kernel for launch in launches}) - len(kernels),
        )

    @staticmethod
    def command(ncu: str) -> list[str]:
        """ncu's options: the raw page as CSV in base units, only the metrics read, the clocks
        left as they are (the judge times at the GPU's own clocks too), every process the
        launcher starts followed, and only the range the profiled process marks."""
        return [
            ncu,
            "--csv",
            "--page",
            "raw",
            "--print-units",
            "base",
            "--metrics",
            ",".join(METRICS),
            "--clock-control",
            "none",
            "--target-processes",
            "all",
            "--profile-from-start",
            "off",
            "--log-file",
            launcher.CSV_FILE,
        ]

    def _environment(self, device: str) -> dict[str, str]:
        extra = {
            "PYTHONPATH": limits.package_pythonpath(),
            "PYTHONNOUSERSITE": "1",
        }
        env = limits.scrubbed_environment(dict(os.environ), extra)
        env.pop("TRITON_INTERPRET", None)
        if device.startswith("cuda"):
            index = parse_device_spec(device).indices or (0,)
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            env["CUDA_VISIBLE_DEVICES"] = (
                visible.split(",")[index[0]].strip() if visible else str(index[0])
            )
        else:
            env |= {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
        return env

    async def _run(self, request: launcher.LauncherRequest) -> tuple[int, str, str]:
        """The launcher's exit status, the CSV it sent and the tail of what it printed."""
        # -P: the caller's working directory (an agent's project) is not put on its path, and
        # the package comes from where this process took it
        path = request.env.get("PYTHONPATH", "")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-P",
            "-m",
            launcher.__name__,
            env={**os.environ, "PYTHONPATH": path},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stdin and process.stdout and process.stderr
        process.stdin.write(request.model_dump_json().encode())
        process.stdin.close()
        csv_reader = asyncio.ensure_future(_read_head(process.stdout, launcher.MAX_CSV_BYTES))
        tail_reader = asyncio.ensure_future(_read_tail(process.stderr, TAIL_CHARS))
        try:
            status = await asyncio.wait_for(process.wait(), request.timeout_s)
        except (TimeoutError, asyncio.CancelledError) as exc:
            _kill(process)
            await process.wait()
            tail = await tail_reader
            csv_reader.cancel()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise ProfileFailed(
                f"the profile did not finish within {request.timeout_s:g} s (ncu replays every "
                "launch several times); it was stopped. Raise ADAEXPLORE_JUDGE__PROFILE__TIMEOUT_S "
                f"or profile a smaller shape. The end of its output:\n{tail}"
            ) from None
        return status, (await csv_reader).decode("utf-8", "replace"), await tail_reader

    def _launches(self, status: int, csv_text: str, tail: str) -> list[Launch]:
        if status == launcher.EXIT_SANDBOX:
            raise ProfilerUnavailable(
                "the sandbox for user code could not be set up for the profile, so nothing ran: "
                f"{tail.strip()}"
            )
        if status != 0:
            raise ProfileFailed(f"{_failure(status)} The end of its output:\n{tail}")
        try:
            launches = parse_raw_csv(csv_text)
        except CsvError as exc:
            raise ProfileFailed(
                f"ncu's output could not be read: {exc}. The end of its output:\n{tail}"
            ) from None
        if not launches:
            raise ProfileFailed(
                "ncu recorded no kernel launch in the profiled calls of forward (does ModelNew "
                f"launch its kernels on the GPU?). The end of its output:\n{tail}"
            )
        return launches


def _failure(status: int) -> str:
    if status == target.TASK_FAILED:
        return "the task failed in the profiled process (exit 3); check it with get_task."
    if status == target.KERNEL_FAILED:
        return (
            "the kernel failed while profiled (exit 4); evaluate_kernel says why, and only a "
            "kernel it finds correct is worth profiling."
        )
    return f"ncu failed (exit {status})."


def _first_gpu(spec: str) -> str | None:
    parsed = parse_device_spec(spec)
    if parsed.kind == "cpu" or not nvidia_driver_present():
        return None
    return f"cuda:{parsed.indices[0] if parsed.indices else 0}"


def _install_dirs(ncu: str) -> list[str]:
    """ncu's directory and its real one (a link's target): the sandbox keeps them in view."""
    return sorted({os.path.dirname(ncu), os.path.dirname(os.path.realpath(ncu))})


async def _read_head(stream: asyncio.StreamReader, limit: int) -> bytes:
    """The first ``limit`` bytes; the rest is read and dropped so the writer never blocks."""
    data = bytearray()
    while chunk := await stream.read(65536):
        if len(data) < limit:
            data += chunk[: limit - len(data)]
    return bytes(data)


async def _read_tail(stream: asyncio.StreamReader, chars: int) -> str:
    """The last ``chars`` characters of everything read."""
    data = bytearray()
    while chunk := await stream.read(65536):
        data += chunk
        if len(data) > 4 * chars:
            del data[: len(data) - chars]
    text = bytes(data[-chars:]).decode("utf-8", "replace")
    return ("…" + text) if len(data) > chars else text


def _kill(process: asyncio.subprocess.Process) -> None:
    # the launcher leads its own process group once in its sandbox (ncu and the profiled
    # process are in it); before that, it is alone
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
