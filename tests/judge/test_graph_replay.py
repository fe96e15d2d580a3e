"""A CUDA graph replayed in forward runs work beneath every recorder: the profiled call counts
the runtime's graph launches, and the trusted process rejects any. The profiler's events are
stood in for here (no GPU in CI); tests/judge/test_gpu_integrity.py replays a real graph."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from adaexplore_mcp.judge.candidate.profiler import graph_launches
from adaexplore_mcp.judge.checks import Check, Violation
from adaexplore_mcp.judge.policy import Ops
from adaexplore_mcp.judge.trusted import integrity
from adaexplore_mcp.judge.wire.subject import Profile, Signals


@dataclass
class Event:
    name: str


def test_the_runtimes_and_the_drivers_graph_launches_are_counted():
    events = [Event(n) for n in ("aten::copy_", "cudaLaunchKernel", "cudaGraphLaunch")]
    assert graph_launches(events) == 1
    assert graph_launches([Event("cuGraphLaunch"), Event("cudaGraphLaunch_v10000")]) == 2
    assert graph_launches([Event("cuLaunchKernelEx"), Event("aten::clone")]) == 0


@pytest.mark.parametrize("ops", [Ops.TRITON, Ops.MIXED])
def test_a_replayed_graph_is_hidden_work(ops):
    with pytest.raises(Violation) as caught:
        integrity.launches(Signals(launches=1, profile=Profile(graph_launches=2)), calls=1, ops=ops)
    assert caught.value.check is Check.HIDDEN_WORK
    assert "replayed a CUDA graph (2 launches)" in caught.value.detail
    integrity.launches(Signals(launches=1, profile=Profile()), calls=1, ops=ops)


def test_a_forged_count_cannot_be_negative():
    with pytest.raises(ValueError):
        Profile(graph_launches=-1)
