"""Timing a task's baselines (eager PyTorch and torch.compile) with the same clock as the
candidates: the task's process is the subject of gated spans, and the trusted process times it.
"""

from __future__ import annotations

import random
import secrets
import time
from typing import Any

from pydantic import BaseModel

from adaexplore_mcp.judge.measurement import RuntimeStats
from adaexplore_mcp.judge.result import Phase
from adaexplore_mcp.judge.trusted.common import ask_task, gpu_lock, task_failure
from adaexplore_mcp.judge.trusted.compare import Comparison
from adaexplore_mcp.judge.trusted.gpu import Gpu
from adaexplore_mcp.judge.trusted.link import Link, SubjectFailed
from adaexplore_mcp.judge.trusted.report import Reporter
from adaexplore_mcp.judge.trusted.span_result import SpanResult
from adaexplore_mcp.judge.trusted.spans import run_spans, stats
from adaexplore_mcp.judge.trusted.timed_calls import first_wrong
from adaexplore_mcp.judge.trusted.timing import SpanTimer
from adaexplore_mcp.judge.wire.jobs import ChildJob
from adaexplore_mcp.judge.wire.subject import (
    BuildAnswer,
    BuildRequest,
    CompileRequest,
    ExpectedRequest,
    ForgetRequest,
    OkAnswer,
    SetsAnswer,
    SetsRequest,
)


class BaselineReport(BaseModel):
    eager: RuntimeStats
    compiled: RuntimeStats | None = None
    compile_error: str | None = None
    compile_s: float | None = None


class _Baselines:
    def __init__(self, job: ChildJob, task: Link, calibrator: Link, reporter: Reporter) -> None:
        assert job.task is not None
        self.job, self.task, self.link, self.calibrator = job, job.task, task, calibrator
        self.reporter = reporter
        self.rng = random.Random(secrets.randbits(64))
        self.variant = job.task.main_variant("cuda")
        self.keys = iter(range(1, 1 << 30))
        self.shared, self.exclusive = gpu_lock(job)

    def ask(self, request: Any, expect: type) -> tuple[Any, bytes]:
        return ask_task(self.link, self.task, request, expect)

    def fresh_sets(self, count: int) -> list[tuple[int, list[Any]]]:
        keys = [next(self.keys) for _ in range(count)]
        request = SetsRequest(
            variant=self.variant.name,
            overrides=dict(self.variant.overrides),
            seeds=[self.rng.getrandbits(62) for _ in keys],
            keys=keys,
        )
        answer, payload = self.ask(request, SetsAnswer)
        return list(zip(keys, self.link.take_sets(answer.sets, payload), strict=True))

    def time(self, *, compiled: bool) -> RuntimeStats:
        try:
            return self._time(compiled=compiled)
        except SubjectFailed as failure:
            if compiled:
                raise _CompiledWrong(failure.answer.error.message[:300]) from None
            raise task_failure(self.task, failure.answer.error) from None

    def _time(self, *, compiled: bool) -> RuntimeStats:
        comparison = Comparison(self.job.tolerances, self.task.tolerance)

        def check(sets: list[tuple[int, list[Any]]], result: SpanResult, first: int) -> None:
            keys = [key for key, _ in sets]
            if not compiled:
                self.ask(ForgetRequest(keys=keys), OkAnswer)
                return
            answer, payload = self.ask(ExpectedRequest(keys=keys), SetsAnswer)
            expected = self.link.take_sets(answer.sets, payload)
            bad = first_wrong(comparison, result.outputs, expected)
            if bad is not None:  # torch.compile's answer must be the eager one
                mismatch = comparison.compare(
                    result.outputs[bad], expected[bad], variant="benchmark", trial=-1
                )
                raise _CompiledWrong(mismatch.kind if mismatch else "values")

        self.reporter.phase(Phase.TIMING)
        with self.exclusive():
            gpu = Gpu(self.job.timing)
            timer = SpanTimer(
                subject=self.link,
                calibrator=self.calibrator,
                gpu=gpu,
                settings=self.job.timing,
                variant=self.variant.name,
                compiled=compiled,
            )
            measurement = run_spans(
                timer,
                fresh_sets=self.fresh_sets,
                check=check,
                settings=self.job.timing,
                total_memory=gpu.total_memory,
                warm=lambda: self.warm(timer),
            )
        runtime = stats(measurement.per_call_ms)
        runtime.n = measurement.spans * measurement.calls_per_span
        return runtime

    def warm(self, timer: SpanTimer) -> None:
        sets = self.fresh_sets(2)
        timer.warm([values for _, values in sets])
        self.ask(ForgetRequest(keys=[key for key, _ in sets]), OkAnswer)

    def run(self) -> BaselineReport:
        self.reporter.phase(Phase.COMPILING)
        ready = self.link.ready()
        if ready.error is not None:
            raise task_failure(self.task, ready.error)
        self.calibrator.ready()
        with self.shared():
            self.ask(
                BuildRequest(
                    variant=self.variant.name,
                    overrides=dict(self.variant.overrides),
                    seed=self.rng.getrandbits(62),
                ),
                BuildAnswer,
            )
        eager = self.time(compiled=False)
        report = BaselineReport(eager=eager)
        self.reporter.phase(Phase.COMPILING)
        started = time.perf_counter()
        with self.shared():
            key, values = self.fresh_sets(1)[0]
            specs, payload, _ = self.link.offer(values)
            try:
                self.link.ask(
                    CompileRequest(variant=self.variant.name, args=specs), payload, expect=OkAnswer
                )
            except SubjectFailed as failure:
                error = failure.answer.error
                report.compile_error = f"{error.type}: {error.message[:500]}"
            self.ask(ForgetRequest(keys=[key]), OkAnswer)
        report.compile_s = time.perf_counter() - started
        if report.compile_error is None:
            try:
                report.compiled = self.time(compiled=True)
            except _CompiledWrong as wrong:
                report.compile_error = (
                    f"torch.compile's output differs from eager PyTorch ({wrong})"
                )
        return report


class _CompiledWrong(Exception):
    pass


def measure_baselines(
    job: ChildJob, task: Link | None, calibrator: Link | None, reporter: Reporter
) -> BaselineReport:
    if task is None or calibrator is None or job.device == "cpu":
        raise ValueError("baselines are only timed on a GPU")
    return _Baselines(job, task, calibrator, reporter).run()
