"""The null subject's offset from new contexts (``trusted.null_panel``): how it is read from
the panel's rounds, that every call's handoff carries it, and that every evaluation reports
how far new contexts lie from each other (what the candidate's own context may move it by)."""

from __future__ import annotations

import statistics

import pytest

from adaexplore_mcp.judge import messages
from adaexplore_mcp.judge.devices import GpuInfo
from adaexplore_mcp.judge.measurement import RuntimeStats
from adaexplore_mcp.judge.pool.lane import Lane
from adaexplore_mcp.judge.result import Correctness, Environment
from adaexplore_mcp.judge.settings import JudgeSettings
from adaexplore_mcp.judge.trusted.null_panel import offset_from
from adaexplore_mcp.judge.trusted.span_result import Handoff, NullOffset, SpanResult
from adaexplore_mcp.judge.trusted.spans import SpanMeasurement
from adaexplore_mcp.judge.trusted.timed_calls import detail
from adaexplore_mcp.judge.wire.subject import Signals


def test_the_offset_is_read_within_rounds_so_what_moves_every_context_cancels():
    """In the second round every context read 5 µs more (the GPU, not a context): the
    members' differences from the null subject stay what they are in the other rounds."""
    null = [0.2880, 0.2930, 0.2881]
    members = [
        [0.2890, 0.2940, 0.2891],  # +1.0 µs
        [0.2900, 0.2950, 0.2901],  # +2.0 µs
        [0.2875, 0.2925, 0.2876],  # -0.5 µs
    ]
    offset = offset_from(null, members)
    assert offset.members_ms == pytest.approx((0.0010, 0.0020, -0.0005))
    assert offset.ms == pytest.approx(0.0010)


def test_one_odd_member_moves_the_offset_no_further_than_the_middle_members():
    """A median over the panel: a member 12 µs off (a context that read oddly, or work of
    another process in its spans) weighs no more than one 1.2 µs off."""
    null = [0.288] * 4
    members = [[0.289] * 4, [0.2892] * 4, [0.2888] * 4, [0.300] * 4]
    assert offset_from(null, members).ms == pytest.approx(0.0011)


def test_how_far_new_contexts_lie_from_each_other_is_the_members_standard_deviation():
    offset = offset_from([0.288] * 2, [[0.289] * 2, [0.2895] * 2, [0.2875] * 2, [0.2880] * 2])
    assert offset.scatter_ms == pytest.approx(statistics.stdev([0.001, 0.0015, -0.0005, 0.0]))
    assert NullOffset(ms=0.001, members_ms=(0.001,)).scatter_ms is None  # one member: unknown


def test_an_evaluation_reports_the_offset_it_was_charged_and_the_contexts_scatter():
    """The scatter is how far the candidate's own context may lie from the offset charged:
    what a reader needs to tell a speedup from a new context."""
    measurement = SpanMeasurement(
        per_call_ms=[0.070] * 3,
        handoff_ms=[0.289] * 3,
        fill_excess_ms=[0.0] * 3,
        held_excess_ms=[0.0] * 3,
        settled_ms=[0.0] * 3,
        calls_per_span=13,
    )
    offset = NullOffset(ms=0.0011, members_ms=(0.0002, 0.0011, 0.0019, 0.0012))
    timing = detail(measurement, None, offset)
    assert timing.null_offset_ms == pytest.approx(0.0011)
    assert timing.context_scatter_ms == pytest.approx(offset.scatter_ms)
    unmeasured = detail(measurement, None, None)
    assert unmeasured.null_offset_ms is None and unmeasured.context_scatter_ms is None


def test_a_panel_of_no_members_is_an_error_not_an_offset_of_zero():
    with pytest.raises(ValueError, match="no members"):
        offset_from([0.288], [])


def test_every_call_is_charged_the_null_subjects_handoff_moved_by_the_offset():
    """A worker whose null subject reads its handoff 2 µs below a new context's would time a
    0.07 ms kernel 3% slow: the offset is part of the handoff taken off every call."""
    handoff = Handoff(gated_ms=0.287, fill_ms=1.0, offset_ms=0.002)
    result = SpanResult(
        gated_ms=[0.359] * 10,
        fill_ms=1.0,
        handoff=handoff,
        host_s=0.001,
        outputs=[],
        synchronizing=False,
        signals=Signals(),
        inputs_modified=False,
    )
    assert result.handoff_ms == pytest.approx(0.289)
    assert result.per_call_ms(10) == pytest.approx(0.070)
    assert result.own_ms() == pytest.approx(0.070)


def _gpu(memory_gb: float) -> GpuInfo:
    return GpuInfo(
        index=0,
        name="a GPU",
        uuid="GPU-0",
        capability="9.0",
        memory_gb=memory_gb,
        l2_bytes=50 * 2**20,
        sm_count=132,
    )


@pytest.mark.parametrize(("memory_gb", "panel"), [(141.0, 8), (80.0, 8), (40.0, 0), (24.0, 0)])
def test_a_gpu_too_small_for_every_workers_panel_at_once_gets_none(memory_gb, panel):
    """Four workers' panels of eight are 32 contexts at once, next to their first jobs': a GPU
    where that is over a quarter of its memory gets no panel rather than a smaller one."""
    lane = Lane("cuda:0", {}, JudgeSettings(), gpu=_gpu(memory_gb), lock=None)
    assert lane.timing.null_panel == panel
    assert lane.timing.model_copy(update={"null_panel": 8}) == JudgeSettings().timing


def _verdict_text(median_ms: float, scatter_ms: float | None) -> str:
    runtime = RuntimeStats(
        median_ms=median_ms,
        mean_ms=median_ms,
        std_ms=0.0,
        min_ms=median_ms,
        max_ms=median_ms,
        n=104,
    )
    environment = Environment(
        device="cuda:0",
        device_name="NVIDIA H200",
        interpreter=False,
        torch="2.11",
        triton="3.6",
        python="3.12",
    )
    correctness = Correctness(trials_run=6, trials_passed=6, variants_checked=["main"])
    return messages.correct(correctness, runtime, environment, scatter_ms)


def test_the_verdict_says_how_much_a_new_context_alone_moves_a_short_kernel():
    """A model comparing two runtimes of a 0.07 ms kernel 1% apart should read that a new
    context alone moves it by about as much; a 5 ms kernel's runtime is not worth the words."""
    short = _verdict_text(0.070, 0.0007)
    assert "Median 0.07 ms over 104 runs" in short
    assert "differ by about 1.0% from the GPU's handoff to each new process alone" in short
    assert "differ by" not in _verdict_text(5.0, 0.0007)
    assert "differ by" not in _verdict_text(0.070, None)


def test_the_verdict_says_when_the_clock_read_far_beyond_the_kernels():
    """An honest kernel joined back from a stream of its own read 2.12 ms a call against its
    0.07 ms of kernels (H200): the verdict says why and what to do; a clock that read what the
    kernels took, or a kernel whose kernels went unprofiled, gets no such note."""
    note = messages.beyond_its_kernels(2.12, 0.068)
    assert "2.12 ms under the judge's clock against 0.068 ms" in note
    assert "launch on the current stream" in note
    assert messages.beyond_its_kernels(0.0715, 0.068) == ""
    assert messages.beyond_its_kernels(1.5, 1.2) == ""  # within 3x: not the stream's slice
    assert messages.beyond_its_kernels(2.12, None) == ""
