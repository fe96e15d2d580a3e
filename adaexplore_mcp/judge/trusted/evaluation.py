"""One evaluation, run by the trusted process, which imports neither the task nor the candidate.

The task's process builds every input from a seed drawn here (the candidate never sees one) and
computes the reference; the candidate's process only ever receives inputs and sends back what
forward returned. A trial, in order: fresh inputs from the task's process, copied into this
process; a copy offered to the candidate; its outputs copied back here; its inputs checked
unmodified; only then the reference, computed on the task's own copy. Every comparison, every
clock and the verdict are this process's.
"""

from __future__ import annotations

import time
from typing import Any, Literal, NoReturn

from adaexplore_mcp.judge import messages, ops
from adaexplore_mcp.judge.checks import Violation
from adaexplore_mcp.judge.measurement import RuntimeStats, TaskWork, TimingDetail
from adaexplore_mcp.judge.policy import Ops, forced_tolerances
from adaexplore_mcp.judge.result import (
    Correctness,
    Environment,
    EvalResult,
    Phase,
    PhaseTimes,
    Status,
)
from adaexplore_mcp.judge.subject.loading import describe_platform
from adaexplore_mcp.judge.trusted import integrity, verdicts
from adaexplore_mcp.judge.trusted.checked_calls import check_candidate
from adaexplore_mcp.judge.trusted.common import (
    EarlyVerdict,
    device_of,
    gpu_lock,
    task_failure,
)
from adaexplore_mcp.judge.trusted.compare import Comparison
from adaexplore_mcp.judge.trusted.gpulock import NoHold, SharedHold
from adaexplore_mcp.judge.trusted.link import Link, SubjectFailed, SubjectLost
from adaexplore_mcp.judge.trusted.peaks import PeakFlops
from adaexplore_mcp.judge.trusted.report import Reporter, TaskFailed
from adaexplore_mcp.judge.trusted.task_exchange import TaskExchange
from adaexplore_mcp.judge.wire.jobs import ChildJob
from adaexplore_mcp.judge.wire.subject import (
    Profile,
    SubjectError,
    WeightPrint,
)


class TrustedEvaluation:
    def __init__(
        self,
        job: ChildJob,
        *,
        candidate: Link,
        task: Link,
        calibrator: Link | None,
        reporter: Reporter,
        peaks: PeakFlops | None = None,
    ) -> None:
        """``peaks``: the trusted process's matmul peaks, kept across its jobs (None: measured
        for this evaluation, if it is timed)."""
        assert job.task is not None and job.code is not None
        self.job = job
        self.task = job.task
        self.candidate = candidate
        self.task_link = task
        self.calibrator = calibrator
        self.reporter = reporter
        # its seeds are drawn in this process, after the fork: no other process ever held one
        self.exchange = TaskExchange(task, job.task, reporter.task_running)
        self.device = device_of(job)
        self.device_kind: Literal["cpu", "cuda"] = "cpu" if self.device.type == "cpu" else "cuda"
        self.comparison = Comparison(
            job.tolerances, job.task.tolerance, forced_tolerances(job.precision)
        )
        self.correctness = Correctness()
        self.phases = PhaseTimes()
        self.shared, self.exclusive = gpu_lock(job)
        self.hold: SharedHold | NoHold = NoHold()
        self.environment: Environment | None = None
        self.calls_on: dict[str, int] = {}  # per shape, the checked calls made
        self.earlier: dict[str, list[Any]] = {}  # per shape, the last call's expected outputs
        self.parameter_bytes: dict[str, int] = {}
        self.weights: dict[str, tuple[WeightPrint | None, WeightPrint | None]] = {}
        self.profile_main: Profile | None = None
        # per torch operator, the most calls of it one checked call of forward made
        self.library_ops: dict[str, int] = {}
        self.kernel_s = 0.0
        self.guarded = job.integrity.enabled
        self.peaks = peaks
        self.work: TaskWork | None = None  # the main shape's, from its first trial
        # the matmul the peak is measured in (dtype, TF32), chosen from that trial's tensors
        self.peak_math: tuple[Any, bool] | None = None

    @property
    def read_fraction(self) -> float:
        """Of the inputs and parameters, the part a correct kernel must read (the task's
        READ_FRACTION)."""
        return self.job.task.read_fraction if self.job.task else 1.0

    # -- the procedure -------------------------------------------------------------------------

    def run(self) -> EvalResult:
        runtime: RuntimeStats | None = None
        timing: TimingDetail | None = None
        try:
            self._ready()  # starting and importing, outside the lock that guards GPU work
            try:
                with self.shared() as self.hold:
                    check_candidate(self)
            finally:
                self.phases.gpu_wait_s += self.hold.waited_s
            if self.device_kind == "cuda":
                runtime, timing = self._time()
        except EarlyVerdict as verdict:
            return verdict.result
        except Violation as violation:
            return verdicts.rejected(self, violation)
        except SubjectLost as lost:
            if lost.role == "task":
                raise TaskFailed(f"task {self.task.name!r}: its process {lost.why}") from None
            return verdicts.lost(self, lost)
        self.phases.kernel_s = self.kernel_s
        split = ops.work_split(self.profile_main, self.library_ops, self.device_kind)
        assert self.environment is not None  # _ready set it, or a verdict was returned
        scatter = timing.context_scatter_ms if timing is not None else None
        text = messages.correct(self.correctness, runtime, self.environment, scatter)
        if runtime is not None and timing is not None and not timing.synchronizing:
            text += messages.beyond_its_kernels(runtime.median_ms, timing.profiled_ms)
        if self.job.ops is Ops.MIXED:
            text += ops.split_text(split)
        return self._result(Status.CORRECT, text, runtime=runtime, timing=timing, work_split=split)

    def _ready(self) -> None:
        self.reporter.phase(Phase.COMPILING)
        started = time.perf_counter()
        with self.reporter.task_running():
            task_ready = self.task_link.ready()
        if task_ready.error is not None:
            raise self._task_failed(task_ready.error)
        ready = self.candidate.ready()
        if self.calibrator is not None:
            self.calibrator.ready()
        self.environment = verdicts.environment_of(self.job, describe_platform(self.device))
        self.phases.compile_s += time.perf_counter() - started
        if ready.error is not None:
            if self.guarded:
                integrity.first_signals(ready.signals)
            if ready.error.type == "MissingModelNew":
                raise EarlyVerdict(self._result(Status.COMPILE_ERROR, messages.MISSING_MODEL_NEW))
            self._fail(ready.error, Phase.COMPILING, loading=True)
        if self.guarded:
            integrity.first_signals(ready.signals)

    def _task_failed(self, error: SubjectError) -> TaskFailed:
        return task_failure(self.task, error)

    def _time(self) -> tuple[RuntimeStats, TimingDetail]:
        from adaexplore_mcp.judge.trusted.timed_calls import time_candidate
        from adaexplore_mcp.judge.trusted.timing import SubjectBusy, SubjectStuck

        try:
            return time_candidate(self)
        except SubjectFailed as failure:
            if failure.role == "task":
                raise self._task_failed(failure.answer.error) from None
            if self.guarded:
                integrity.first_signals(failure.answer.signals)
            self._fail(failure.answer.error, Phase.TIMING, loading=False)
        except SubjectStuck:
            raise verdicts.stuck(self) from None
        except SubjectBusy as busy:
            raise verdicts.kept_busy(self, busy.limit_ms) from None

    # -- verdicts (``verdicts.py``) ------------------------------------------------------------

    def _fail(
        self, error: SubjectError, phase: Phase, *, loading: bool, variant: str | None = None
    ) -> NoReturn:
        raise verdicts.failed(self, error, phase, loading=loading, variant=variant)

    def _result(self, status: Status, message: str, **fields: Any) -> EvalResult:
        return verdicts.result(self, status, message, **fields)
