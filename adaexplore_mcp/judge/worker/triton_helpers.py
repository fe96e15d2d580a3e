"""Triton's own compiled helper module, built once per worker and planted in the private cache
of every GPU process that runs user code.

The first time a process uses Triton's GPU driver, Triton compiles a small C module of its own
(``cuda_utils``) with the system's C compiler and keeps it in its cache. A user-code process's
cache is private and starts empty, so every candidate paid for that build: 0.26-0.42 s on an
H200, inside the compile phase, which holds the GPU lock. The module is built from Triton's own
source alone, never from user code, so one trusted build serves every job: a throwaway child of
the worker (which must itself stay free of CUDA) builds it, the worker keeps the files in
memory, and each user-code process writes its own copy into its own cache once its sandbox is
up. A process that overwrites its copy touches nothing but its own cache.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import traceback

MAX_BYTES = 32 * 2**20  # far above the module's size (about 0.2 MiB); a runaway build is dropped


def build(root: str) -> dict[str, bytes]:
    """The helper's cache files, as ``{path relative to the cache: content}``; empty where
    Triton has no GPU driver here (the interpreter, or no GPU) or the build failed."""
    cache = os.path.join(root, "triton-helpers")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            from adaexplore_mcp.judge.sandbox import limits

            limits.die_with_parent()
            os.environ["TRITON_CACHE_DIR"] = cache
            _use_triton_driver()
            code = 0
        except BaseException:
            with contextlib.suppress(BaseException):
                traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    try:
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        return collect(cache) if ok else {}
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _use_triton_driver() -> None:
    import triton

    triton.runtime.driver.active.utils  # noqa: B018 - building it is the point


def collect(cache: str) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    for folder, _, names in os.walk(cache):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            total += os.path.getsize(path)
            if total > MAX_BYTES:
                return {}
            with open(path, "rb") as handle:
                files[os.path.relpath(path, cache)] = handle.read()
    return files


def plant(files: dict[str, bytes], cache: str) -> None:
    """Write a copy of the helper's files into ``cache`` (this process's Triton cache)."""
    root = os.path.realpath(cache)
    for relative, content in files.items():
        path = os.path.realpath(os.path.join(root, relative))
        if not path.startswith(root + os.sep):
            raise ValueError(f"a helper file outside the cache: {relative!r}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(content)
