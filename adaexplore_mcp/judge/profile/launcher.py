"""The sandboxed side of a profile: ``python -m adaexplore_mcp.judge.profile.launcher``, started
by ``Profiler`` with a ``LauncherRequest`` as JSON on standard input.

It enters the judge's sandbox for user code (``judge.sandbox``: namespaces, the private
read-only filesystem, limits, the scrubbed environment, the system-call filter), then runs ncu
there, and ncu runs the profiled process (``target``) under it. So ncu's injection library,
which lives inside the profiled process, talks to an ncu in the same sandbox, and nothing the
candidate does reaches past it. Its standard output carries ncu's CSV back, and nothing else;
what ncu and the profiled process print goes to standard error.
"""

from __future__ import annotations

import os
import subprocess
import sys

from pydantic import BaseModel

from adaexplore_mcp.judge import sandbox
from adaexplore_mcp.judge.profile.models import ProfileJob
from adaexplore_mcp.judge.sandbox import limits
from adaexplore_mcp.judge.settings import SandboxSettings

JOB_FILE = "profile-job.json"
CSV_FILE = "profile.csv"
MAX_CSV_BYTES = 8 * 2**20
EXIT_SANDBOX = 71  # sandbox.fail_hard's


class LauncherRequest(BaseModel):
    """Everything the launcher needs; the ncu command line ends with the profiled command,
    to which the launcher appends the job file's path."""

    job: ProfileJob
    command: list[str]
    sandbox: SandboxSettings
    env: dict[str, str]
    keep_paths: list[str]
    private_dirs: list[str]
    timeout_s: float
    output_limit_bytes: int
    fallback_root: str = ""  # the work and tmp directories where no private view can be made


def main() -> int:
    launch = LauncherRequest.model_validate_json(sys.stdin.buffer.read())
    settings = launch.sandbox
    csv_out = os.dup(1)
    setup = os.open(os.devnull, os.O_WRONLY)
    try:
        sandbox.enter(
            sandbox.Spec(
                socket_fd=csv_out,  # kept as fd 3: the CSV's way out, closed to children
                output_fd=2,
                setup_fd=setup,
                limits=limits.Limits(
                    file_bytes=settings.cache_limit_mb * 2**20,
                    cpu_seconds=int(launch.timeout_s * settings.cpu_time_factor) + 10,
                    memory_bytes=(
                        settings.memory_limit_mb * 2**20 if settings.memory_limit_mb else None
                    ),
                    extra_processes=settings.max_processes,
                ),
                env=launch.env,
                private_dirs=tuple(launch.private_dirs),
                fallback_root=launch.fallback_root,
                workdir_bytes=launch.output_limit_bytes + MAX_CSV_BYTES,
                tmp_bytes=settings.cache_limit_mb * 2**20,
                network=settings.isolate_network,
                pids=settings.pid_namespace,
                allow_processes=True,  # ncu starts the profiled process
                mounts=settings.private_filesystem,
                required=settings.required,
                keep_paths=tuple(launch.keep_paths),
            )
        )
    except sandbox.SandboxUnavailable as exc:
        sandbox.fail_hard(str(exc))
    os.close(sandbox.SETUP_FD)
    with open(JOB_FILE, "w", encoding="utf-8") as handle:
        handle.write(launch.job.model_dump_json())
    command = [*launch.command, os.path.abspath(JOB_FILE)]
    code = subprocess.run(command, stdin=subprocess.DEVNULL, check=False).returncode
    _send_csv(sandbox.SOCKET_FD)
    return code if code >= 0 else 128 - code


def _send_csv(fd: int) -> None:
    try:
        with open(CSV_FILE, "rb") as handle:
            data = handle.read(MAX_CSV_BYTES)
    except OSError:
        data = b""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
