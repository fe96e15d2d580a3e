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
from adaexplore_mcp.judge.policy import Ops, forced_tolerances, range_trial_scale
from adaexplore_mcp.judge.result import (
    Correctness,
    Environment,
    EvalResult,
    Mismatch,
    Phase,
    PhaseTimes,
    Status,
)
from adaexplore_mcp.judge.roofline import usable_flops
from adaexplore_mcp.judge.subject.loading import describe_platform
from adaexplore_mcp.judge.trusted import integrity, verdicts
from adaexplore_mcp.judge.trusted.common import (
    EarlyVerdict,
    device_of,
    gpu_lock,
    task_failure,
)
from adaexplore_mcp.judge.trusted.compare import Comparison, first_modified
from adaexplore_mcp.judge.trusted.gpulock import NoHold, SharedHold
from adaexplore_mcp.judge.trusted.link import Link, SubjectFailed, SubjectLost
from adaexplore_mcp.judge.trusted.peaks import PeakFlops, peak_math, tensor_bytes
from adaexplore_mcp.judge.trusted.report import Reporter, TaskFailed
from adaexplore_mcp.judge.trusted.shapes import is_float32, nonfinite, nothing_to_compute
from adaexplore_mcp.judge.trusted.task_exchange import TaskExchange, sendable
from adaexplore_mcp.judge.wire.jobs import ChildJob
from adaexplore_mcp.judge.wire.subject import (
    BuildAnswer,
    CallAnswer,
    CallMode,
    CallRequest,
    CompileNote,
    Profile,
    ResumeRequest,
    SubjectError,
    WeightPrint,
)
from adaexplore_mcp.tasks import ShapeVariant, VariantRole


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
        self._calls_on: dict[str, int] = {}
        self._earlier: dict[str, list[Any]] = {}
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
                    self._check_all()
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

    def _check_all(self) -> None:
        variants = self.task.variants_for(self.device_kind)
        scale = range_trial_scale(self.job.precision)
        for position, variant in enumerate(variants):
            built = None
            if variant.role is VariantRole.DERIVED:
                built = self._derived_runs(variant)
                if built is None:
                    continue
            self._build(variant, built)
            trials = self.job.trials if position == 0 else self.job.odd_trials
            # the range trial among the main shape's at a place drawn in secret: always last,
            # a kernel told it by counting its calls and used float16 operands in the others
            scaled_at = None
            if position == 0 and scale is not None:
                scaled_at = self.exchange.rng.randrange(trials + 1)
                trials += 1
            for trial in range(trials):
                self._trial(variant, trial, "check", scale=scale if trial == scaled_at else None)
            if self.guarded:
                # every checked call is profiled; this one also checks torch's glue operators
                # are still torch's, and on a GPU (where tracing them costs the most) records
                # the kernels, on the main shape
                if position == 0 or self.device_kind == "cpu":
                    self._trial(variant, trials, "profile")
                self._trial(variant, trials + 1, "noop")
            self.correctness.variants_checked.append(variant.describe())

    def _derived_runs(self, variant: ShapeVariant) -> tuple[BuildAnswer, bytes] | None:
        """The task's build of a derived shape when its reference runs it, else None (the
        variant recorded as skipped, with why)."""
        built, skipped = self.exchange.probe(variant)
        if skipped is not None:
            self.correctness.variants_skipped.append(skipped)
        return built

    def _build(self, variant: ShapeVariant, built_here: tuple[BuildAnswer, bytes] | None) -> None:
        """Build both modules for a variant (the task's already, when ``built_here``)."""
        request = self.exchange.build_request(variant)
        built, payload = built_here or self.exchange.build(variant)
        init = self.task_link.take(built.init or [], payload, set())
        sendable(self.task, init, "get_init_inputs()")
        self.parameter_bytes[variant.name] = built.parameter_bytes
        specs, offered, _ = self.candidate.offer(init)
        try:
            new, _ = self.candidate.ask(
                request.model_copy(update={"init": specs}), offered, expect=BuildAnswer
            )
            self.weights[variant.describe()] = (built.weights, new.weights)
        except SubjectFailed as failure:
            if self.guarded:
                integrity.first_signals(failure.answer.signals)
            self._fail(failure.answer.error, Phase.COMPILING, loading=True)

    def _trial(
        self, variant: ShapeVariant, trial: int, mode: CallMode, *, scale: float | None = None
    ) -> None:
        """One call of the candidate on fresh inputs, checked. ``scale``: the float32 inputs
        multiplied by it (the float32-range trial of the tf32 policy)."""
        key, master = self.exchange.inputs(variant, scale=scale)
        if scale is not None and not any(is_float32(value) for value in master):
            self.exchange.forget(key)  # nothing to scale: no such trial
            return
        first = self._calls_on.get(variant.name, 0) == 0
        phase = Phase.COMPILING if not self._calls_on else Phase.CHECKING
        outputs, answer, args_after, offered_views = self._call(variant, master, mode, phase, first)
        if answer is None:  # noop mode: forward failed without its launches, as it should
            self.exchange.forget(key)
            return
        if self.guarded:
            tracing = mode == "profile" and self.device_kind == "cuda"
            integrity.first_signals(answer.signals, compiling=first, tracing=tracing)
        if mode != "noop":
            self.library_ops = ops.widest(self.library_ops, ops.computed_ops(answer.signals))
        if mode == "profile" and self.profile_main is None:
            self.profile_main = answer.signals.profile
        after = offered_views or args_after
        modified = first_modified(master, after) if after else None
        if modified is not None and mode != "noop":
            self._incorrect(
                Mismatch(
                    variant=variant.describe(),
                    trial=trial,
                    output_index=modified,
                    kind="input_modified",
                    reference_modifies_input=self.exchange.reference_modifies(
                        key, master, modified
                    ),
                )
            )
        count = self.work is None and mode == "check" and scale is None  # the first such
        count = count and variant.name == self.task.main_variant(self.device_kind).name
        expected, reference = self.exchange.reference(key, count_flops=count)
        # a shape with nothing to compute asks for no launch, and any output is right there
        empty = nothing_to_compute(expected)
        if self.guarded:
            integrity.launches(
                answer.signals, calls=0 if empty else 1, ops=self.job.ops, where=variant.describe()
            )
        if count:
            self._count_work(variant, master, expected, reference.flops)
        where = f"input set {trial + 1} of {variant.describe()}"
        if any(nonfinite(value) for value in expected):
            if scale is not None:
                return  # the reference itself leaves float32's range on these inputs
            raise self._task_failed(
                SubjectError(
                    type="NonFiniteReference",
                    message=f"the reference's output on {where} holds NaN or Inf, which no "
                    "output can match (NaN and Inf never pass): draw inputs on which the "
                    "reference is finite",
                )
            )
        if mode == "noop":
            if (
                not empty
                and self.comparison.fresh().compare(outputs, expected, variant=where, trial=trial)
                is None
            ):
                integrity.no_triton_work(variant.describe(), self.job.ops)
            return
        if self.guarded:
            integrity.outputs(
                answer.signals,
                outputs,
                expected,
                reference_aliases=reference.aliased_input is not None,
            )
        mismatch = self.comparison.compare(
            outputs, expected, variant=variant.describe(), trial=trial
        )
        self.correctness.trials_run += 1
        if mismatch is not None:
            integrity.result_reuse(outputs, self._earlier.get(variant.name), self.comparison, where)
            if scale is None:
                self._diagnose_rounding(mismatch)
            mismatch.input_scale = scale
            self._incorrect(mismatch)
        self._earlier[variant.name] = expected
        self.correctness.trials_passed += 1
        self.correctness.max_abs_error = self.comparison.max_abs_error
        self.correctness.max_rel_error = self.comparison.max_rel_error

    def _count_work(
        self, variant: ShapeVariant, inputs: list[Any], outputs: list[Any], flops: float | None
    ) -> None:
        """The main shape's work: the FLOPs the task's process counted (checked: it runs user
        code), the bytes sized here from what this process generated and received, of the
        inputs and parameters only the part the task says a kernel must read."""
        usable, note = usable_flops(flops)
        read = tensor_bytes(inputs) + max(self.parameter_bytes.get(variant.name, 0), 0)
        self.work = TaskWork(
            variant=variant.describe(),
            flops=usable,
            bytes=round(read * self.read_fraction) + tensor_bytes(outputs),
            note=note,
        )
        self.peak_math = peak_math([*inputs, *outputs], self.job.precision)

    def _on_compile_note(self, note: CompileNote) -> None:
        """A Triton compile needs the CPU, not the GPU: the lock is let go while it runs, so it
        never keeps another evaluation's timing waiting."""
        if not note.done:
            self.hold.let_go()
            return
        self.hold.take()
        self.candidate.send(ResumeRequest())

    def _call(
        self, variant: ShapeVariant, master: list[Any], mode: CallMode, phase: Phase, first: bool
    ) -> tuple[list[Any], CallAnswer | None, list[Any] | None, list[Any]]:
        """One call of the candidate's forward on a copy of ``master``."""
        self.reporter.phase(phase)
        specs, payload, views = self.candidate.offer(master)
        started = time.perf_counter()
        notes = mode == "check" and self.device_kind == "cuda"
        try:
            answer, answer_payload = self.candidate.ask(
                CallRequest(variant=variant.name, args=specs, mode=mode, compile_notes=notes),
                payload,
                expect=CallAnswer,
                on_note=self._on_compile_note if notes else None,
            )
        except SubjectFailed as failure:
            if self.guarded:
                tracing = mode == "profile" and self.device_kind == "cuda"
                integrity.first_signals(failure.answer.signals, compiling=first, tracing=tracing)
            if mode == "noop":
                return [], None, None, []
            self._charge(time.perf_counter() - started, first)
            self._fail(failure.answer.error, phase, loading=False, variant=variant.describe())
        finally:
            self.hold.take()  # taken back, whatever the process said of its compiles
        self._charge(time.perf_counter() - started, first)
        self._calls_on[variant.name] = self._calls_on.get(variant.name, 0) + 1
        if answer.args_after is not None and len(answer.args_after) != len(master):
            # told before anything is decoded: 260,000 described took 16 s to decode first
            raise SubjectLost(
                self.candidate.role,
                f"sent back {len(answer.args_after)} arguments for the {len(master)} it was given",
                garbled=True,
            )
        own = self.candidate.own_handles
        outputs = self.candidate.take(answer.outputs, answer_payload, own)
        args_after = (
            self.candidate.take(answer.args_after, answer_payload, own)
            if answer.args_after is not None
            else None
        )
        return outputs, answer, args_after, views

    def _charge(self, elapsed: float, first: bool) -> None:
        if first:
            self.phases.compile_s += elapsed
        else:
            self.phases.check_s += elapsed
            self.kernel_s += elapsed

    def _diagnose_rounding(self, mismatch: Mismatch) -> None:
        from adaexplore_mcp.judge.trusted.diagnosis import diagnose_rounding

        diagnose_rounding(self, mismatch)

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

    def _incorrect(self, mismatch: Mismatch) -> NoReturn:
        raise verdicts.incorrect(self, mismatch)

    def _result(self, status: Status, message: str, **fields: Any) -> EvalResult:
        return verdicts.result(self, status, message, **fields)
