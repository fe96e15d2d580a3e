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
from torch.profiler import ProfilerActivity, profile  # bound now: the kernel may replace theirs

from adaexplore_mcp.judge.candidate.recorder import top_level_ops, torch_time_us
from adaexplore_mcp.judge.candidate.switches import ProfilerSwitches
from adaexplore_mcp.judge.wire.subject import KernelRecord, Profile

# bound now too: imported per call, a module the kernel had put in sys.modules was taken (its
# copy without this class made the profiler watch the calling thread alone)
_EXPERIMENTAL: Any = getattr(torch._C._profiler, "_ExperimentalConfig", None)


class CallProfiler:
    """torch.profiler over one call: every thread's operators, and with ``kernels`` the GPU's
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

        activities = [ProfilerActivity.CPU]
        if kernels and device.type == "cuda":
            activities.append(ProfilerActivity.CUDA)
        kwargs: dict[str, Any] = {}
        if _EXPERIMENTAL is not None:
            with contextlib.suppress(TypeError):  # older torch: the calling thread only
                kwargs["experimental_config"] = _EXPERIMENTAL(profile_all_threads=True)
        self._profile = profile(activities=activities, **kwargs)
        self._kernels = ProfilerActivity.CUDA in activities
        self._quiet = _QuietStderr()

    def __enter__(self) -> CallProfiler:
        with self._quiet, self._own():
            self._profile.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._quiet, self._own():
            self._profile.__exit__(*exc)

    def _own(self) -> contextlib.AbstractContextManager[None]:
        return self._switches.judges_own()

    def report(self, triton_names: set[str]) -> Profile:
        with self._quiet:
            events = self._events()
        ranges = (self._launch_range, self._callback_range, self._bench_range)
        return summarize(events, ranges, triton_names)

    def _events(self) -> list:
        """The call's events. With no kernels traced, read straight from the profiler's
        results: torch's own parse builds a full record (shapes, stacks, memory, a tree) of
        every event, ~10 ms of a timed span's 25 on an H100, for the five fields the checks
        read. Kernels need torch's parse, which ties each to the operator that launched it."""
        results = getattr(getattr(self._profile, "profiler", None), "kineto_results", None)
        if self._kernels or results is None:
            return list(self._profile.events())
        return operator_records(results)


class _TimeRange:
    __slots__ = ("end", "start")

    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        return self.end - self.start


class OperatorRecord:
    """What the checks read of one host-side profiler event, as ``FunctionEvent`` names it
    (microseconds from the trace's start)."""

    __slots__ = ("device_type", "is_user_annotation", "name", "scope", "thread", "time_range")

    def __init__(self, event: Any, trace_start_ns: int) -> None:
        self.name: str = event.name()
        self.thread: int = event.start_thread_id()
        self.time_range = _TimeRange(
            (event.start_ns() - trace_start_ns) / 1e3, (event.end_ns() - trace_start_ns) / 1e3
        )
        self.is_user_annotation: bool = event.is_user_annotation()
        self.scope: int = event.scope()
        self.device_type = event.device_type()


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
    """The host-side events of a CPU-only profile, as ``profile.events()`` would give them."""
    start = results.trace_start_ns()
    return [
        OperatorRecord(event, start)
        for event in results.events()
        if event.name() not in _LEFT_OUT and not getattr(event, "is_hidden_event", lambda: False)()
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
        sys.stderr.flush()
        self._saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)

    def __exit__(self, *exc: object) -> None:
        os.dup2(self._saved, 2)
        os.close(self._saved)
