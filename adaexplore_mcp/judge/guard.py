"""Run-time integrity checks inside the candidate's child process.

Installed before the candidate's module is imported; after the import and after every call of
its forward the evaluation asks the guard whether anything it watches went wrong:

- an audit hook refuses, and records, what the candidate's own code does to reach outside its
  computation: processes, sockets, writes outside its directory, other processes' ``/proc``,
  the heap (``gc``) and the judge's frames;
- a snapshot of every function the judge relies on (its own modules, the clock, torch's tensor
  methods and CUDA events, Triton's launcher) must still hold the same objects: patching any of
  them is tampering;
- the float32 precision switches and the default dtype must be as the judge set them;
- a forward must launch at least one Triton kernel, and on the calls that are not compiling
  it may call torch only for glue (allocation, views, copies, see ``GLUE_OPS``);
- forward must return with no Python thread of its own still running, no thread trace hook set
  and the default CUDA stream current.

The child is a process of its own, so none of this has to survive the candidate: the audit hook
cannot be removed from Python, and what it records lives in a closure the candidate cannot name.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from adaexplore_mcp.judge.audit import audit_hook
from adaexplore_mcp.judge.errors import Violation
from adaexplore_mcp.judge.op_recorder import OpRecorder


@dataclass
class CallReport:
    launches: int = 0
    torch_ops: dict[str, int] = field(default_factory=dict)


class Guard:
    def __init__(self, *, kernel_path: str, workdir: str, device: torch.device) -> None:
        self.kernel_path = os.path.realpath(kernel_path)
        self.workdir = os.path.realpath(workdir) + os.sep
        self.device = device
        self._events: list[Violation] = []
        self._launches = [0]
        self._in_launch = [0]
        self._snapshot: dict[str, tuple[Any, Any]] = {}
        self._precision: dict[str, Any] = {}
        self._threads: set[int] = set()
        self._installed = False

    # -- installation ------------------------------------------------------------------------

    def install(self) -> None:
        """Before the candidate's module is imported; irreversible for this process."""
        import torch._dynamo  # noqa: F401  (on import it rewraps torch.manual_seed and friends)

        self._patch_launchers()
        self._precision = _precision_state()
        self._threads = {thread.ident or 0 for thread in threading.enumerate()}
        self._snapshot = _snapshot_functions()
        sys.addaudithook(audit_hook(self.kernel_path, self.workdir, self._events))
        self._installed = True

    def _patch_launchers(self) -> None:
        """Count every Triton launch (JIT and interpreter), and mark the span of one so that
        the torch calls Triton makes inside it are not charged to the candidate."""
        launches, in_launch = self._launches, self._in_launch
        for owner in _launcher_classes():
            original = owner.run

            def run(self, *args, __original=original, **kwargs):
                if kwargs.get("warmup"):
                    return __original(self, *args, **kwargs)
                launches[0] += 1
                in_launch[0] += 1
                try:
                    return __original(self, *args, **kwargs)
                finally:
                    in_launch[0] -= 1

            run.__wrapped__ = original  # type: ignore[attr-defined]
            owner.run = run

    # -- checks ------------------------------------------------------------------------------

    def check(self, when: str) -> None:
        """Raise the first violation seen so far (``when`` names the moment for the message)."""
        if not self._installed:
            return
        if self._events:
            raise self._events[0]
        precision = _precision_state()
        for name, value in precision.items():
            if self._precision.get(name) != value:
                raise Violation(
                    "precision_downgrade",
                    f"{when}, `{name}` was changed from {self._precision.get(name)!r} to "
                    f"{value!r}; the judge compares float32 work in full float32 precision",
                )
        changed = _changed_functions(self._snapshot)
        if changed:
            raise Violation(
                "harness_tampering",
                f"{when}, {', '.join(changed[:3])} {'was' if len(changed) == 1 else 'were'} "
                "replaced; a kernel may not patch torch, triton, the clock or the judge",
            )
        if sys.gettrace() is not None or sys.getprofile() is not None:
            raise Violation("harness_tampering", f"{when}, a trace or profile hook was set")

    @contextlib.contextmanager
    def call(self, *, record_ops: bool) -> Iterator[CallReport]:
        """Around one call of forward. ``record_ops``: charge torch operators to the candidate
        (off for calls that compile, where Triton's autotuner runs torch code of its own)."""
        report = CallReport()
        before = self._launches[0]
        native_threads = _native_thread_count() if record_ops else None
        mode = OpRecorder(report.torch_ops, self._in_launch) if record_ops else None
        with mode if mode is not None else contextlib.nullcontext():
            yield report
        report.launches = self._launches[0] - before
        self.check("during forward")
        self._check_threads(native_threads)
        if (
            self.device.type == "cuda"
            and torch.cuda.current_stream() != torch.cuda.default_stream()
        ):
            raise Violation(
                "hidden_work",
                "forward returned with another CUDA stream current; launch on the current "
                "stream, or join a side stream into it before returning",
            )
        if report.launches == 0:
            raise Violation(
                "no_triton_kernel",
                "forward launched no Triton kernel; the computation must run in a "
                "`@triton.jit` kernel launched as `kernel[grid](...)` on every call",
            )
        if report.torch_ops:
            ops = ", ".join(f"{name} ×{count}" for name, count in sorted(report.torch_ops.items()))
            raise Violation(
                "torch_fallback",
                f"forward computed with torch operators ({ops}); torch may only allocate, "
                "reshape and copy (see docs/integrity.md), the computation belongs in Triton",
            )

    def _check_threads(self, native_before: int | None) -> None:
        mine = [
            thread
            for thread in threading.enumerate()
            if (thread.ident or 0) not in self._threads and thread.is_alive()
        ]
        if mine:
            raise Violation(
                "background_thread",
                f"thread {mine[0].name!r} was still running after forward returned; all work "
                "must be finished (and timed) when forward returns",
            )
        if native_before is not None and _native_thread_count() > native_before:
            raise Violation(
                "background_thread",
                "forward left a new native thread running; all work must be finished (and "
                "timed) when forward returns",
            )


def _launcher_classes() -> list[type]:
    classes = []
    with contextlib.suppress(ImportError):
        from triton.runtime.jit import JITFunction

        classes.append(JITFunction)
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    return classes


def _precision_state() -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        matmul = torch.backends.cuda.matmul
        return {
            "torch.backends.cuda.matmul.allow_tf32": matmul.allow_tf32,
            "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
            "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": getattr(
                matmul, "allow_fp16_reduced_precision_reduction", None
            ),
            "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": getattr(
                matmul, "allow_bf16_reduced_precision_reduction", None
            ),
            "torch.get_default_dtype()": torch.get_default_dtype(),
        }


def _watched_namespaces() -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(name, namespace, strict): a strict namespace may not gain entries either (a class
    attribute added to ``torch.Tensor`` shadows the C method under it)."""
    import builtins
    import math
    import random
    import statistics
    import time

    yield "builtins", vars(builtins), False
    for module in (time, math, statistics, sys, os, torch, torch.cuda, torch.nn.functional):
        yield module.__name__, vars(module), False
    yield "torch.testing", vars(torch.testing), False
    for cls in (torch.Tensor, torch.nn.Module, torch.cuda.Event, torch.cuda.Stream, random.Random):
        yield f"{cls.__module__}.{cls.__qualname__}", vars(cls), True
    for cls in _launcher_classes():
        yield f"{cls.__module__}.{cls.__qualname__}", vars(cls), True
    for name, module in list(sys.modules.items()):
        if name.startswith("adaexplore_mcp") and module is not None:
            namespace = vars(module)
            yield name, namespace, False
            for value in list(namespace.values()):
                if isinstance(value, type) and value.__module__ == name:
                    yield f"{name}.{value.__qualname__}", vars(value), True


def _snapshot_functions() -> dict[str, tuple[Any, Any]]:
    """name -> (namespace, object) for every callable the judge relies on."""
    snapshot: dict[str, tuple[Any, Any]] = {}
    for prefix, namespace, strict in _watched_namespaces():
        for key, value in list(namespace.items()):
            if callable(value) or isinstance(value, staticmethod | classmethod | property):
                snapshot[f"{prefix}.{key}"] = (namespace, value)
        if strict:
            snapshot[f"{prefix}.__keys__"] = (namespace, frozenset(namespace))
    return snapshot


def _changed_functions(snapshot: dict[str, tuple[Any, Any]]) -> list[str]:
    changed = []
    for name, (namespace, value) in snapshot.items():
        if name.endswith(".__keys__"):
            added = frozenset(namespace) - value
            if added:
                changed.extend(f"{name.removesuffix('__keys__')}{key}" for key in sorted(added))
            continue
        key = name.rsplit(".", 1)[1]
        if namespace.get(key, _MISSING) is not value:
            changed.append(f"`{name}`")
    return changed


_MISSING = object()


def _native_thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0
