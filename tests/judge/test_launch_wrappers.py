"""The judge's wrappers around Triton's launches (``candidate.launch_wrappers``), on their own:
what they count and which ranges they open for the profiler."""

from __future__ import annotations

import os

import torch

from adaexplore_mcp.judge.candidate.launch_wrappers import TRITON_DIR, LaunchState

# a benchmarker and its caller whose code names a file of Triton's, as the autotuner's do
TRITONS_OWN = """
def bench(fn):
    return fn()


def autotuner(benchmark, fn):
    return benchmark(fn)
"""


def _tritons_own(root: str = TRITON_DIR) -> dict:
    where = os.path.join(root, "runtime", "autotuner.py")
    found: dict = {}
    exec(compile(TRITONS_OWN, where, "exec"), found)
    return found


def _state() -> LaunchState:
    return LaunchState(events=[], launch_range="l.1", callback_range="c.2", bench_range="b.3")


def _ranges(call) -> list[str]:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        call()
    return [event.name for event in profile.events() if event.name in ("b.3", "c.2", "l.1")]


def test_the_benchmark_range_opens_for_tritons_autotuner_and_for_no_one_else():
    """A grid function can read the wrapped benchmarker off its autotuner during a launch and
    keep it: called from the kernel's code, it runs the kernel's work with no range around it,
    so the profiler counts that work."""
    own = _tritons_own()
    state = _state()
    state.profiling = True
    wrapped = state.benchmark(own["bench"])
    assert wrapped is not own["bench"]
    assert _ranges(lambda: own["autotuner"](wrapped, lambda: torch.ones(2).sum())) == ["b.3"]
    assert _ranges(lambda: wrapped(lambda: torch.ones(2).sum())) == []


def test_a_wrapper_takes_no_default_from_its_caller():
    """``_judge_body`` from a caller replaces the whole body: none of the judge's state or
    ranges run with the caller's code."""
    own = _tritons_own()
    state = _state()
    state.profiling = True
    wrapped = state.benchmark(own["bench"])
    ran = []
    result = wrapped("x", _judge_body=lambda args, kwargs: ran.append(args) or "theirs")
    assert result == "theirs" and ran == [("x",)]
    assert wrapped.__closure__ is None and set(wrapped.__globals__) == {"__builtins__"}


def test_tritons_autotuner_is_known_through_a_link_to_its_directory(tmp_path):
    """A virtual environment's ``lib64`` is often a link to its ``lib``: the code's file name
    and Triton's directory need not be spelled alike."""
    link = tmp_path / "triton"
    link.symlink_to(TRITON_DIR)
    own = _tritons_own(str(link))
    state = _state()
    state.profiling = True
    wrapped = state.benchmark(_tritons_own()["bench"])
    assert _ranges(lambda: own["autotuner"](wrapped, lambda: torch.ones(2).sum())) == ["b.3"]
