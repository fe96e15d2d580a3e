"""An evaluation's timing phase: the candidate's forward in gated spans on fresh inputs, every
output checked against the reference, and the figures that go into the result."""

from __future__ import annotations

import os
import statistics
import time
from typing import TYPE_CHECKING, Any

from adaexplore_mcp.judge import roofline
from adaexplore_mcp.judge.measurement import KernelTime, RuntimeStats, TimingDetail
from adaexplore_mcp.judge.messages import range_note
from adaexplore_mcp.judge.policy import Ops, range_trial_scale
from adaexplore_mcp.judge.result import Phase
from adaexplore_mcp.judge.trusted import integrity
from adaexplore_mcp.judge.trusted.diagnostics import span_steps
from adaexplore_mcp.judge.trusted.gpu import Gpu
from adaexplore_mcp.judge.trusted.peaks import PeakFlops, describe_math, peak_math
from adaexplore_mcp.judge.trusted.span_result import NullOffset, SpanResult
from adaexplore_mcp.judge.trusted.spans import run_spans, stats
from adaexplore_mcp.judge.trusted.staging import set_bytes
from adaexplore_mcp.judge.trusted.timing import SpanTimer
from adaexplore_mcp.judge.wire.subject import Profile

if TYPE_CHECKING:
    from adaexplore_mcp.judge.trusted.evaluation import TrustedEvaluation


def time_candidate(evaluation: TrustedEvaluation) -> tuple[RuntimeStats, TimingDetail]:
    variant = evaluation.task.main_variant("cuda")
    settings = evaluation.job.timing
    started = time.perf_counter()
    assert evaluation.calibrator is not None
    with evaluation.exclusive():
        evaluation.phases.gpu_wait_s += time.perf_counter() - started
        evaluation.reporter.phase(Phase.TIMING)
        gpu = Gpu(settings)
        timer = SpanTimer(
            subject=evaluation.candidate,
            calibrator=evaluation.calibrator,
            gpu=gpu,
            settings=settings,
            variant=variant.name,
            others=[evaluation.task_link],
        )
        one_set: list[Any] = []
        scale = range_trial_scale(evaluation.job.precision)
        scaled_keys: set[int] = set()

        def fresh_sets(count: int) -> list[tuple[int, list[Any]]]:
            # under tf32 each span after the first has one set scaled into float32's range at
            # a place drawn in secret: a kernel that counted its calls used float32 operands in
            # the checked calls and float16 operands in the timed ones
            scales = {}
            if scale is not None and one_set:
                scales[evaluation.exchange.rng.randrange(count)] = scale
            sets = evaluation.exchange.sets(variant, count, scales=scales)
            scaled_keys.update(sets[index][0] for index in scales)
            if not one_set:
                one_set.extend(sets[0][1])
            return sets

        def check(sets: list[tuple[int, list[Any]]], result: SpanResult, first: int) -> None:
            if evaluation.guarded:
                integrity.first_signals(result.signals)
                integrity.launches(result.signals, calls=len(sets), ops=evaluation.job.ops)
                if evaluation.job.ops is Ops.MIXED:
                    integrity.library_ops_checked(
                        result.signals, calls=len(sets), checked=evaluation.library_ops
                    )
            if result.inputs_modified:
                integrity.timed_inputs_modified()
            expected = evaluation.exchange.expected([key for key, _ in sets])
            bad = first_wrong(evaluation.comparison, result.outputs, expected)
            if bad is not None:
                mismatch = evaluation.comparison.fresh().compare(
                    result.outputs[bad], expected[bad], variant=variant.describe(), trial=-1
                )
                kind = mismatch.kind if mismatch else "values"
                note = ""
                if scale is not None and sets[bad][0] in scaled_keys:
                    note = range_note(scale)
                integrity.timed_output(first + bad + 1, kind, note)
            evaluation.correctness.timed_calls_checked += len(sets)

        steps_fresh, steps_check = span_steps(os.environ, timer, fresh_sets, check)
        try:
            measurement = run_spans(
                timer,
                fresh_sets=steps_fresh,
                check=steps_check,
                settings=settings,
                total_memory=gpu.total_memory,
            )
            bandwidth = gpu.bandwidth()
            dtype, tf32 = evaluation.peak_math or peak_math([], evaluation.job.precision)
            peaks = evaluation.peaks or PeakFlops(gpu.device)
            peak_flops = peaks(dtype, tf32, known=evaluation.job.peaks)
        finally:  # a rejection in a timed call reports the time spent too
            evaluation.phases.timing_s = time.perf_counter() - started
    runtime = stats(measurement.per_call_ms)
    runtime.n = measurement.spans * measurement.calls_per_span
    evaluation.kernel_s += sum(measurement.per_call_ms) * measurement.calls_per_span / 1e3
    integrity.speed_of_light(
        runtime.median_ms,
        set_bytes(one_set) + evaluation.parameter_bytes.get(variant.name, 0),
        bandwidth,
        evaluation.job.integrity.speed_of_light_fraction,
        read_fraction=evaluation.read_fraction,
    )
    timing = detail(measurement, evaluation.profile_main, evaluation.calibrator.null_offset)
    if evaluation.work is not None:
        timing.speed_of_light = roofline.speed_of_light(
            evaluation.work,
            median_ms=runtime.median_ms,
            bandwidth=bandwidth,
            peak_flops=peak_flops,
            peak_math=describe_math(dtype, tf32),
        )
    return runtime, timing


def first_wrong(comparison, outputs: list[Any], expected: list[Any]) -> int | None:
    """The index of the first call whose outputs are not right (one wait for the GPU)."""
    import torch

    flags = [
        comparison.close_enough(got, want) for got, want in zip(outputs, expected, strict=True)
    ]
    for index, flag in enumerate(flags):
        if flag is None:
            return index
    if not flags:
        return None
    verdicts = torch.stack([flag.to(flags[0].device) for flag in flags]).cpu().tolist()
    return next((index for index, ok in enumerate(verdicts) if not ok), None)


def detail(
    measurement, profile: Profile | None, null_offset: NullOffset | None = None
) -> TimingDetail:
    kernels = []
    profiled_ms = triton_share = None
    if profile is not None and profile.kernels:
        kernels = [
            KernelTime(name=k.name, triton=k.triton, launches=k.launches, ms=k.us / 1e3)
            for k in profile.kernels[:10]
        ]
        total = sum(k.us for k in profile.kernels)
        profiled_ms = total / 1e3
        triton_share = sum(k.us for k in profile.kernels if k.triton) / total if total else None
    return TimingDetail(
        calls_per_span=measurement.calls_per_span,
        calls_per_gate=measurement.calls_per_gate,
        spans=measurement.spans,
        handoff_ms=statistics.median(measurement.handoff_ms),
        null_offset_ms=null_offset.ms if null_offset else None,
        context_scatter_ms=null_offset.scatter_ms if null_offset else None,
        fill_excess_ms=statistics.median(measurement.fill_excess_ms),
        held_ms=statistics.median(measurement.held_excess_ms),
        settled_ms=statistics.median(measurement.settled_ms),
        synchronizing=measurement.synchronizing,
        host=stats(measurement.host_ms) if measurement.host_ms else None,
        kernels=kernels,
        profiled_ms=profiled_ms,
        triton_share=triton_share,
    )
