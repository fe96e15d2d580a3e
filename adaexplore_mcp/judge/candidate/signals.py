"""First signals: what the candidate's process observes about its own calls of forward.

Installed before the candidate's module is imported:

- Triton's launchers are wrapped (``candidate.launch_wrappers``): each launch is counted, the
  span of a launch (and of the autotuner around it) is marked so that the torch work Triton
  does itself is not charged to the candidate, and in ``noop`` mode a launch does nothing at
  all. Within that span the dispatch mode still counts what the candidate's own code runs (it
  asks which code called); for the profiler, the candidate's callables Triton calls there (a
  grid function, a heuristic, a pre-run or autotuner hook, a config pruner) get ranges of their
  own;
- an audit hook refuses and records the candidate's own reach outside its computation;
- the float32 precision switches and the threads alive are noted;
- what torch and Triton code the recorders run on is noted, to be found unchanged after each
  call (``candidate.watch``), and everything the judge leaves within the kernel's reach is
  sealed (``candidate.sealing``).

Around each call: a ``TorchDispatchMode`` counts the torch operators forward runs outside its
launches; the profiler records every thread's operators (``candidate.profiler``) in every call,
and on a GPU in ``profile`` mode the GPU's kernels too. Everything here runs in
the candidate's process, which the candidate could change: the trusted process treats it as a
first signal and decides for itself (``trusted.integrity``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch

from adaexplore_mcp.judge.candidate.audit import (
    audit_hook,
    candidate_calls,
    candidate_on_stack,
    installed_code,
)
from adaexplore_mcp.judge.candidate.guards import DispatchGuards
from adaexplore_mcp.judge.candidate.launch_wrappers import LaunchState, wrap_launchers
from adaexplore_mcp.judge.candidate.launchers import wrap_compiler
from adaexplore_mcp.judge.candidate.profiler import CallProfiler
from adaexplore_mcp.judge.candidate.provenance import guard_renaming
from adaexplore_mcp.judge.candidate.recorder import (
    OpRecorder,
    changed_glue,
    glue_overloads,
    glue_tables,
    package_dirs,
)
from adaexplore_mcp.judge.candidate.switches import ProfilerSwitches
from adaexplore_mcp.judge.candidate.watch import Watch
from adaexplore_mcp.judge.own_builtins import own_builtins
from adaexplore_mcp.judge.wire.subject import AuditEvent, Signals

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

_GET_DETERMINISTIC = torch._C._get_deterministic_algorithms
_GET_WARN_ONLY = torch._C._get_deterministic_algorithms_warn_only
_SET_DETERMINISTIC = torch._C._set_deterministic_algorithms


class Monitor:
    def __init__(self, *, kernel_path: str, workdir: str, device: torch.device) -> None:
        self.kernel_path = os.path.realpath(kernel_path)
        self.workdir = os.path.realpath(workdir) + os.sep
        self.device = device
        self.events: list[tuple[str, str]] = []
        self._precision: dict[str, Any] = {}
        self._threads: set[int] = set()
        self._glue: frozenset[tuple[str, str]] = frozenset()
        self._glue_tables: dict[str, str] = {}
        # the profiler's names for a launch's span, for the candidate's code inside one and for
        # Triton's benchmarking: not names a candidate could give a range of its own to hide
        # torch work in (only sealed functions' defaults hold them: ``launch_wrappers``)
        # (a token each: one the judge opens often must not give the others away)
        self._launch = LaunchState(
            events=self.events,
            launch_range=f"adaexplore.triton_launch.{secrets.token_hex(8)}",
            callback_range=f"adaexplore.candidate_code.{secrets.token_hex(8)}",
            bench_range=f"adaexplore.triton_bench.{secrets.token_hex(8)}",
        )
        self._switches = ProfilerSwitches(self.events)
        self._watch: Watch | None = None
        # what the judge lets go of in a call, let go only in the server's last look
        self.kept: list[Any] = []
        self.replaced: Callable[[], str | None] = lambda: None
        # set for one call by the harness: runs each Triton compile (``outside_lock``)
        self.compile_gate: list[Callable[[Callable[[], Any]], Any] | None] = [None]

    def install(self, *, audit: bool = True) -> None:
        """Before the candidate's module is imported; irreversible for this process.
        ``audit``: the audit hook, the renaming guard and the switches' refusal of the kernel's
        code on the stack; off only with the integrity checks (``IntegritySettings.enabled``)."""
        import torch._dynamo  # noqa: F401  (on import it rewraps torch.manual_seed and friends)

        self._glue = glue_overloads()
        self._glue_tables = glue_tables()
        installed = installed_code(self.workdir)
        self._switches.install(
            (lambda frame: candidate_on_stack(frame, self.kernel_path, installed))
            if audit
            else (lambda frame: False)  # a first signal, off with the others
        )
        DispatchGuards(self.events, self.kernel_path, installed).install()
        # the profiler's own threads start with its first session: now, not in a call
        with self._profiler(kernels=False):
            pass
        wrap_launchers(self._launch)
        package_dirs()  # found now, while ``sys.modules`` is still the judge's
        wrap_compiler(self.compile_gate)
        self._watch = Watch()  # the judge's own wrappers in place, the kernel not yet imported
        self.replaced = self._watch.replaced  # bound now (``candidate.last_look``)
        self._precision = _precision_state()
        self._threads = {thread.ident or 0 for thread in threading.enumerate()}
        if audit:
            sys.addaudithook(
                audit_hook(
                    self.kernel_path,
                    self.workdir,
                    self.events,
                    installed,
                    tmpdir=os.environ.get("TMPDIR"),
                )
            )
            guard_renaming(
                lambda frame: candidate_calls(frame, self.kernel_path, installed),
                lambda detail: self.events.append(("harness_tampering", detail)),
            )

    def _profiler(self, *, kernels: bool) -> CallProfiler:
        """Every call is profiled, checked and timed (the profiler sees torch's operators on
        every thread, also out of the dispatch mode's sight): a kernel that can tell one call
        from the others cannot keep torch work to calls no profiler watches. The GPU's kernels,
        whose tracing costs the most to start, only in ``kernels`` calls (the main shape's
        ``profile`` call)."""
        return CallProfiler(
            self.device,
            (self._launch.launch_range, self._launch.callback_range, self._launch.bench_range),
            self._switches,
            kernels=kernels and self.device.type == "cuda",
        )

    @property
    def launched_names(self) -> set[str]:
        return set(self._launch.launched)

    def audit(self) -> list[AuditEvent]:
        return [AuditEvent(check=check, detail=detail[:1000]) for check, detail in self.events[:20]]

    @contextlib.contextmanager
    def call(self, mode: str, *, poison: bool = True) -> Iterator[Signals]:
        """Around one call of forward; the signals are complete when the block ends.
        ``poison``: memory torch hands out uninitialized is filled with NaN (or the largest
        integer), so an output element the kernel never writes is plainly wrong (its process
        holds no reference it could find by chance anyway)."""
        signals = Signals()
        # what the last call held back: let go already by the server's last look where there is
        # one, and here where there is none (the integrity checks off), or it would pile up
        self.kept.clear()
        before = self._launch.launches
        native_before = _native_thread_count()
        counts: dict[str, int] = {}
        recorder = OpRecorder(counts, self._launch.in_launch, self._glue)
        self._launch.noop = mode == "noop"
        profiler = self._profiler(kernels=mode == "profile")
        self._launch.profiling = True
        try:
            poisoned = _poisoned(self.kept) if poison else contextlib.nullcontext()
            with profiler, poisoned, recorder:
                yield signals
                # before the profiler stops: a replacement that undid itself as the judge's
                # profiler called it would be gone by then
                self._note_replaced()
        finally:
            self._launch.noop = False
            self._launch.profiling = False
        if mode == "profile":  # the dispatcher's tables: ~10 ms here, tens on a GPU, not every call
            self.note_glue_changes()
        signals.launches = self._launch.launches - before
        signals.torch_ops = counts
        signals.precision = self._precision_changes()
        signals.threads = self._live_threads()
        signals.native_threads_grew = _native_threads_stay_above(native_before)
        signals.stream_not_default = (
            self.device.type == "cuda"
            and torch.cuda.current_stream() != torch.cuda.default_stream()
        )
        signals.profile = profiler.report(self.launched_names)
        self._note_replaced()  # and once the profile is read (code of the kernel's may run there)
        signals.audit = self.audit()

    def _note_replaced(self) -> None:
        replaced = self._watch.replaced() if self._watch is not None else None
        if replaced is not None and not any(replaced in detail for _, detail in self.events):
            self.events.append(
                (
                    "harness_tampering",
                    f"{replaced} was replaced: the judge's profiler and recorders run on it",
                )
            )

    def note_glue_changes(self) -> None:
        """A kernel of the candidate's registered for a glue operator (``torch.library``) runs
        beneath the dispatch mode, which takes it for glue."""
        changed = changed_glue(self._glue_tables)
        if changed:
            self.events.append(
                (
                    "harness_tampering",
                    f"a kernel of its own was registered for torch's {changed}, an operator "
                    "the judge counts as glue",
                )
            )

    def _precision_changes(self) -> list[str]:
        now = _precision_state()
        return [
            f"{name} was changed from {self._precision.get(name)!r} to {value!r}"
            for name, value in now.items()
            if self._precision.get(name) != value
        ][:20]

    def _live_threads(self) -> list[str]:
        return [
            thread.name[:100]
            for thread in threading.enumerate()
            if (thread.ident or 0) not in self._threads and thread.is_alive()
        ][:20]


@contextlib.contextmanager
def _poisoned(kept: list[Any]) -> Iterator[None]:
    """torch's deterministic mode, which fills what it hands out uninitialized, switched
    through torch's C functions bound at import (``torch.use_deterministic_algorithms``, a
    function of a module a kernel may change, armed a replacement as the call ended). The
    warning filters the kernel may have added in the call go into ``kept``, not away: dropped
    as ``catch_warnings`` ends, one of them ran a finalizer that armed a replacement between
    the judge's looks (``last_look`` lets them go)."""
    deterministic, warn_only = _GET_DETERMINISTIC(), _GET_WARN_ONLY()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the kernel's glue may be non-deterministic: no matter
        _SET_DETERMINISTIC(True, warn_only=True)
        try:
            yield
        finally:
            _SET_DETERMINISTIC(deterministic, warn_only=warn_only)
            kept.append(warnings.filters)


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


def _native_threads_stay_above(count: int, settle_s: float = 0.1) -> bool:
    """Whether more native threads than ``count`` still run after a short wait: a thread that
    ended just before forward returned (an OpenMP team of a joined Python thread) may take a few
    milliseconds to leave ``/proc``, and it is no longer work hiding from the timer."""
    deadline = time.monotonic() + settle_s
    while _native_thread_count() > count:
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.002)
    return False


def _native_thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0
