"""What the sandbox takes on this machine: a throwaway child sets it up and reports."""

from __future__ import annotations

import os
import shutil
import socket
from typing import TYPE_CHECKING

from adaexplore_mcp.judge import sandbox
from adaexplore_mcp.judge.result import SandboxReport
from adaexplore_mcp.judge.sandbox import limits
from adaexplore_mcp.judge.settings import SandboxSettings

if TYPE_CHECKING:
    from adaexplore_mcp.judge.worker.main import Worker


def sandbox_report(worker: Worker, settings: SandboxSettings | None = None) -> SandboxReport:
    settings = settings or SandboxSettings()
    ours, theirs = socket.socketpair()
    out_r, out_w = os.pipe()
    setup_r, setup_w = os.pipe()
    root = worker.job_root()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            report = sandbox.enter(
                sandbox.Spec(
                    socket_fd=theirs.fileno(),
                    output_fd=out_w,
                    setup_fd=setup_w,
                    limits=limits.Limits(file_bytes=2**20),
                    env={},
                    private_dirs=worker.private_dirs,
                    fallback_root=root,
                    network=settings.isolate_network,
                    pids=settings.pid_namespace,
                    mounts=settings.private_filesystem,
                    required=False,
                )
            )
            os.write(sandbox.SETUP_FD, report.model_dump_json().encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    for fd in (out_w, setup_w):
        os.close(fd)
    theirs.close()
    chunks = []
    while chunk := os.read(setup_r, 65536):
        chunks.append(chunk)
    os.waitpid(pid, 0)
    for fd in (out_r, setup_r):
        os.close(fd)
    ours.close()
    shutil.rmtree(root, ignore_errors=True)
    if not chunks:
        return SandboxReport(notes=["the sandbox's self-test failed"])
    return SandboxReport.model_validate_json(b"".join(chunks))
