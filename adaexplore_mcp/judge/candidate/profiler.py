"""The profiler over one call of forward, in the candidate's process: every thread's operators
and, where asked on a GPU, the kernels, with the time inside Triton's launches and in torch's
operators outside them. A first signal, like everything observed in that process
(``signals``)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import torch
from torch.autograd import (
    DeviceType,
    ProfilerActivity,
    ProfilerConfig,
    ProfilerState,
    _disable_profiler,
    _enable_profiler,
    _KinetoEvent,
    _prepare_profiler,
    _ProfilerResult,
)

from adaexplore_mcp.judge.candidate.recorder import top_level_ops, torch_time_us
from adaexplore_mcp.judge.candidate.switches import ProfilerSwitches
from adaexplore_mcp.judge.own_builtins import own_builtins
from adaexplore_mcp.judge.wire.subject import KernelRecord, Profile

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

# Everything the profiler's start, stop and read call is bound now, before the kernel is
# imported, and called as bound: torch's ``profile`` class looks its methods up as it runs, and
# a kernel's ``config`` that put the original back as it was called (the watch never saw it)
# started the judge's profiler with no CPU activity; torch's softmax then ran unrecorded.
_EXPERIMENTAL: Any = getattr(torch._C._profiler, "_ExperimentalConfig", None)
_SYNCHRONIZE = torch.cuda.synchronize
_DEMANGLE = torch._C._demangle
_RESULT_EVENTS = _ProfilerResult.events
_TRACE_START_NS = _ProfilerResult.trace_start_ns
_NAME = _KinetoEvent.name
_THREAD = _KinetoEvent.start_thread_id
_START_NS = _KinetoEvent.start_ns
_END_NS = _KinetoEvent.end_ns
_IS_USER_ANNOTATION = _KinetoEvent.is_user_annotation
_SCOPE = _KinetoEvent.scope
_DEVICE_TYPE = _KinetoEvent.device_type
_IS_HIDDEN = getattr(_KinetoEvent, "is_hidden_event", None)
_CPU = DeviceType.CPU
# standard error as the judge found it: ``sys.stderr`` is the kernel's to replace, and one it
# replaced armed a replacement as the profiler stopped
_STDERR_FLUSH = sys.stderr.flush


class CallProfiler:
    """torch's profiler over one call: every thread's operators, and with ``kernels`` the GPU's
    kernels. ``switches``: the profiler's own, which work only for the judge's profiler."""

    def __init__(
        self,
        device: torch.device,
        ranges: tuple[str, str, str],
        switches: ProfilerSwitches,
        *,
        kernels: bool = False,
    ) -> None:
        # the judge's names for a Triton launch, the candidate's code Triton calls inside one,
        # and Triton's own benchmarking of an autotuner's configs
        self._launch_range, self._callback_range, self._bench_range = ranges
        self._switches = switches
        self._kernels = kernels and device.type == "cuda"
        self._activities = {ProfilerActivity.CPU}
        if self._kernels:
            self._activities.add(ProfilerActivity.CUDA)
        self._config = _config()
        self._results: Any = None
        self._quiet = _QuietStderr()

    def __enter__(self) -> CallProfiler:
        with self._quiet, self._own():
            _prepare_profiler(self._config, self._activities)
            _enable_profiler(self._config, self._activities)
        return self

    def __exit__(self, *exc: object) -> None:
        with self._quiet, self._own():
            if self._kernels:
                _SYNCHRONIZE()  # the call's kernels end before their records are collected
            self._results = _disable_profiler()

    def _own(self) -> contextlib.AbstractContextManager[None]:
        return self._switches.judges_own()

    def report(self, triton_names: set[str]) -> Profile:
        with self._quiet:
            events = operator_records(self._results)
        ranges = (self._launch_range, self._callback_range, self._bench_range)
        return summarize(events, ranges, triton_names)


def _config() -> Any:
    """Kineto's profiler, with no shapes, memory, stacks, flops or modules recorded, on every
    thread where this torch can (older ones watch the calling thread alone)."""
    experimental: Any = None
    if _EXPERIMENTAL is not None:
        try:
            experimental = _EXPERIMENTAL(profile_all_threads=True)
        except TypeError:
            experimental = _EXPERIMENTAL()
    make: Any = ProfilerConfig  # its fields have changed across torch's versions
    fields = (ProfilerState.KINETO, False, False, False, False, False, experimental)
    try:
        return make(*fields, "")  # and a trace id, where this torch takes one
    except TypeError:
        return make(*fields)


class _TimeRange:
    __slots__ = ("end", "start")

    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        return self.end - self.start


class OperatorRecord:
    """What the checks read of one profiler event, as torch's ``FunctionEvent`` names it
    (microseconds from the trace's start; a GPU kernel's name demangled, as torch's parse
    gives it)."""

    __slots__ = ("device_type", "is_user_annotation", "name", "scope", "thread", "time_range")

    def __init__(self, event: Any, trace_start_ns: int) -> None:
        self.device_type = _DEVICE_TYPE(event)
        name: str = _NAME(event)
        self.name = name if self.device_type == _CPU else _DEMANGLE(name)
        self.thread: int = _THREAD(event)
        self.time_range = _TimeRange(
            (_START_NS(event) - trace_start_ns) / 1e3, (_END_NS(event) - trace_start_ns) / 1e3
        )
        self.is_user_annotation: bool = _IS_USER_ANNOTATION(event)
        self.scope: int = _SCOPE(event)


# the bookkeeping records torch's own parse leaves out (``profiler_util._filter_name``)
_LEFT_OUT = frozenset(
    {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)


def operator_records(results: Any) -> list[OperatorRecord]:
    """The events of a profile, as ``profile.events()`` would give the fields the checks read,
    without torch's parse: it builds a full record (shapes, stacks, memory, a tree) of every
    event (~10 ms of a timed span's 25 on an H100), and it runs on methods a kernel can replace."""
    start = _TRACE_START_NS(results)
    return [
        OperatorRecord(event, start)
        for event in _RESULT_EVENTS(results)
        if _NAME(event) not in _LEFT_OUT and not (_IS_HIDDEN is not None and _IS_HIDDEN(event))
    ]


def summarize(events: list, ranges: tuple[str, str, str], triton_names: set[str]) -> Profile:
    """What the checks read of one call's profile. ``ranges``: the judge's names for a Triton
    launch, the candidate's code Triton calls inside one, and Triton's own benchmarking."""
    spans, callbacks, benches = (
        [
            (e.thread, e.time_range.start, e.time_range.end)
            for e in events
            if e.name == name and getattr(e, "is_user_annotation", True)
        ]
        for name in ranges
    )
    gpu_work = [
        e
        for e in events
        if "CUDA" in str(getattr(e, "device_type", ""))
        and not getattr(e, "is_user_annotation", False)
        and e.name not in ranges
        and not e.name.startswith("aten::")
    ]
    return Profile(
        torch_ops=top_level_ops(events, spans, callbacks, benches, inside_glue=True),
        kernels=_kernels(gpu_work, triton_names),
        graph_launches=graph_launches(events),
        launch_us=_merged_us(spans),
        torch_us=torch_time_us(events, spans, callbacks),
    )


# the CUDA runtime's and driver's calls that replay a CUDA graph, as the profiler names them
GRAPH_LAUNCHES = ("cudaGraphLaunch", "cuGraphLaunch")


def graph_launches(events: list) -> int:
    """How many CUDA graphs the call replayed: the work captured in one runs beneath torch's
    operators and Triton's launches, where neither recorder sees it."""
    return sum(1 for event in events if event.name.startswith(GRAPH_LAUNCHES))


def _kernels(events: list, triton_names: set[str]) -> list[KernelRecord]:
    """The GPU's kernels by name, the longest first."""
    kernels: dict[str, KernelRecord] = {}
    for event in events:
        record = kernels.get(event.name) or KernelRecord(
            name=event.name[:400], triton=event.name in triton_names, launches=0, us=0.0
        )
        record.launches += 1
        record.us += event.time_range.elapsed_us()
        kernels[event.name] = record
    return sorted(kernels.values(), key=lambda r: -r.us)[:200]


def _merged_us(spans: list[tuple[int, float, float]]) -> float:
    """The time the spans cover on their threads, a launch nested in another counted once."""
    total = 0.0
    open_end: dict[int, float] = {}
    for thread, start, end in sorted(spans):
        start = max(start, open_end.get(thread, start))
        if end > start:
            total += end - start
            open_end[thread] = end
    return total


class _QuietStderr:
    """The profiler's own chatter goes nowhere, not into the candidate's output."""

    def __enter__(self) -> None:
        _STDERR_FLUSH()
        self._saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)

    def __exit__(self, *exc: object) -> None:
        os.dup2(self._saved, 2)
        os.close(self._saved)
