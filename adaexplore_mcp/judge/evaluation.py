"""One evaluation of a candidate kernel, inside the sandboxed child.

Order of a trial, chosen so that stale memory cannot pass for an answer: fresh inputs are drawn
from a seed the candidate never sees; memory of the output's size is poisoned; the candidate runs
on its own clone of the inputs; its inputs must come back unmodified; only then does the
reference run, on another clone, so the expected output does not exist anywhere while the
candidate runs.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from typing import Any

import torch

from adaexplore_mcp.judge import messages
from adaexplore_mcp.judge.compare import Comparison, as_outputs, first_modified
from adaexplore_mcp.judge.errors import KERNEL_FILE, Violation, classify, describe
from adaexplore_mcp.judge.guard import Guard
from adaexplore_mcp.judge.harness import (
    Channel,
    TaskRuntime,
    clone_args,
    device_of,
    environment,
    gpu_lock,
    load_module,
    synchronize,
    timing_seed,
)
from adaexplore_mcp.judge.output_checks import (
    EarlierResults,
    Fingerprint,
    aliases,
    check_output_kinds,
)
from adaexplore_mcp.judge.precision import forced_tolerances
from adaexplore_mcp.judge.protocol import ChildJob
from adaexplore_mcp.judge.result import (
    Correctness,
    EvalResult,
    IntegrityFlag,
    Mismatch,
    Phase,
    PhaseTimes,
    ShapeError,
    Status,
    kernel_hash,
)
from adaexplore_mcp.judge.timed_checks import (
    TimedAudit,
    bytes_to_read,
    check_side_streams,
    check_speed_of_light,
)
from adaexplore_mcp.judge.timing import (
    L2Flusher,
    device_bandwidth,
    measure,
    work_after_return_ms,
)
from adaexplore_mcp.tasks import ShapeVariant


class _Verdict(Exception):
    """Ends the evaluation early with a non-correct result."""

    def __init__(self, result: EvalResult) -> None:
        self.result = result


class Evaluation:
    def __init__(self, job: ChildJob, channel: Channel) -> None:
        assert job.task is not None and job.code is not None
        self.job = job
        self.task = job.task
        self.channel = channel
        self.device = device_of(job)
        self.device_kind = "cpu" if self.device.type == "cpu" else "cuda"
        # Every seed is drawn here, from the job's secret seed, before candidate code loads.
        self._rng = random.Random(job.seed)
        self.init_seed = self._rng.getrandbits(62)
        job.seed = 0
        self._check_started: float | None = None
        self._compile_while_checking = 0.0
        self._main_output_specs: list[tuple[Any, Any]] = []
        self._candidate_cls: type | None = None
        self.comparison = Comparison(
            job.tolerances, job.task.tolerance, forced_tolerances(job.precision)
        )
        self.correctness = Correctness()
        self.phases = PhaseTimes()
        self.kernel_s = 0.0
        self.calls = 0
        self.environment = environment(job, channel)
        self.shared, self.exclusive = gpu_lock(job)
        self.guard: Guard | None = None
        if job.integrity.enabled:
            self.guard = Guard(
                kernel_path=os.path.abspath(KERNEL_FILE), workdir=os.getcwd(), device=self.device
            )
        self.earlier = EarlierResults(self.comparison)

    # -- the procedure -----------------------------------------------------------------------

    def run(self) -> EvalResult:
        try:
            with self.shared():
                candidate_cls, runtime = self._load()
                reference, candidate = self._check_all(candidate_cls, runtime)
            runtime_stats = None
            if self.device_kind == "cuda":
                runtime_stats = self._time(runtime, reference, candidate)
        except _Verdict as verdict:
            return verdict.result
        except Violation as violation:
            return self._rejection(violation)
        self.phases.kernel_s = self.kernel_s
        return self._result(
            Status.CORRECT,
            messages.correct(self.correctness, runtime_stats, self.environment),
            runtime=runtime_stats,
        )

    def _load(self) -> tuple[type, TaskRuntime]:
        self.channel.phase(Phase.COMPILING)
        started = time.perf_counter()
        runtime = TaskRuntime(self.task, self.device)
        path = os.path.abspath(KERNEL_FILE)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self.job.code or "")
        if self.guard is not None:
            self.guard.install()
        try:
            module = load_module(path, "adaexplore_kernel")
        except BaseException as exc:
            self.phases.compile_s = time.perf_counter() - started
            self._fail(exc, Phase.COMPILING, loading=True)
        if self.guard is not None:
            self.guard.check(_moment(Phase.COMPILING, loading=True))
        candidate_cls = getattr(module, "ModelNew", None)
        if not isinstance(candidate_cls, type):
            raise _Verdict(
                self._result(
                    Status.COMPILE_ERROR,
                    messages.MISSING_MODEL_NEW,
                )
            )
        self.phases.compile_s = time.perf_counter() - started
        return candidate_cls, runtime

    def _check_all(self, candidate_cls: type, runtime: TaskRuntime) -> tuple[Any, Any]:
        variants = self.task.variants_for(self.device_kind)
        self._candidate_cls = candidate_cls
        main_models: tuple[Any, Any] | None = None
        for position, variant in enumerate(variants):
            models = self._build_models(candidate_cls, runtime, variant)
            if position == 0:
                main_models = models
            probe = runtime.run_reference(
                models[0], runtime.inputs(variant, self._rng.getrandbits(62))
            )
            output_specs = [
                (o.shape, o.dtype) for o in as_outputs(probe) if isinstance(o, torch.Tensor)
            ]
            del probe
            if position == 0:
                self._main_output_specs = output_specs
            trials = self.job.trials if position == 0 else self.job.odd_trials
            for trial in range(trials):
                self._trial(
                    runtime, models, variant, trial, self._rng.getrandbits(62), output_specs
                )
            self.correctness.variants_checked.append(variant.describe())
        assert main_models is not None
        self._end_check()
        return main_models

    def _build_models(self, candidate_cls: type, runtime: TaskRuntime, variant: ShapeVariant):
        init_inputs = runtime.init_inputs(variant)
        reference = runtime.build_reference(init_inputs, self.init_seed)
        try:
            candidate = runtime.build(candidate_cls, init_inputs, self.init_seed)
        except BaseException as exc:
            self._fail(exc, Phase.COMPILING, loading=True)
        return reference, candidate

    def _trial(
        self,
        runtime: TaskRuntime,
        models: tuple[Any, Any],
        variant: ShapeVariant,
        trial: int,
        seed: int,
        output_specs: list[tuple[Any, Any]],
    ) -> None:
        reference, candidate = models
        inputs = runtime.inputs(variant, seed)
        candidate_inputs = clone_args(inputs)
        fingerprint = Fingerprint(inputs) if self.guard is not None else None
        _poison(output_specs, self.device)
        actual = self._call_candidate(candidate, candidate_inputs, new_shape=trial == 0)
        self.correctness.trials_run += 1
        if fingerprint is not None and not fingerprint.unchanged(inputs):
            raise Violation(
                "harness_tampering",
                "the judge's own copy of the inputs changed while the kernel ran; a kernel "
                "may only read the arguments it is given",
            )
        modified = first_modified(inputs, candidate_inputs)
        if modified is not None:
            mismatch = Mismatch(
                variant=variant.describe(),
                trial=trial,
                output_index=modified,
                kind="input_modified",
            )
            self._incorrect(mismatch)
        expected = runtime.run_reference(reference, inputs)
        if self.guard is not None:
            self._check_outputs(actual, expected, candidate_inputs, inputs)
        mismatch = self.comparison.compare(
            actual, expected, variant=variant.describe(), trial=trial
        )
        if mismatch is not None:
            if self.guard is not None and self.earlier.reused(variant.name, actual):
                raise Violation(
                    "result_reuse",
                    f"for input set {trial + 1} of {variant.describe()}, forward returned the "
                    "result of the previous input set; caches keyed by pointer, shape or "
                    "content are not allowed, compute on every call",
                )
            self._diagnose_rounding(mismatch, runtime)
            self._incorrect(mismatch)
        if self.guard is not None:
            self.earlier.remember(variant.name, expected)
        self.correctness.trials_passed += 1
        self.correctness.max_abs_error = self.comparison.max_abs_error
        self.correctness.max_rel_error = self.comparison.max_rel_error

    def _diagnose_rounding(self, mismatch: Mismatch, runtime: TaskRuntime) -> None:
        """For wrong values of the size rounding produces: the same output's error on the
        task's other shapes. Rounding error grows with the reduction length, a logic error
        usually does not; the message reports which it is. Never changes the verdict."""
        if not messages.rounding_sized(mismatch):
            return
        errors = [ShapeError(shape=mismatch.variant, inputs=0, rel_l2_error=mismatch.rel_l2_error)]
        try:
            for variant in self.task.variants_for(self.device_kind):
                seed = self._rng.getrandbits(62)
                if variant.describe() == mismatch.variant:
                    errors[0].inputs = _numel(runtime.inputs(variant, seed))
                    continue
                reference, candidate = self._build_models(self._candidate_cls, runtime, variant)
                inputs = runtime.inputs(variant, seed)
                actual = as_outputs(
                    self._call_candidate(candidate, clone_args(inputs), new_shape=True)
                )[mismatch.output_index]
                expected = as_outputs(runtime.run_reference(reference, inputs))[
                    mismatch.output_index
                ]
                norm = float(expected.double().norm())
                if norm:
                    errors.append(
                        ShapeError(
                            shape=variant.describe(),
                            inputs=_numel(inputs),
                            rel_l2_error=float((actual.double() - expected.double()).norm()) / norm,
                        )
                    )
        except Exception:  # a diagnosis only: whatever the kernel does here, the verdict stands
            return
        mismatch.errors_by_shape = sorted(errors, key=lambda e: e.inputs)

    def _check_outputs(
        self, actual: Any, expected: Any, candidate_inputs: list[Any], inputs: list[Any]
    ) -> None:
        check_output_kinds(actual, expected)
        index = aliases(actual, candidate_inputs)
        if index is not None and aliases(expected, inputs) is None:
            raise Violation(
                "output_aliases_input",
                f"output {index} shares memory with an input; return a new tensor holding "
                "the result",
            )

    def _call_candidate(self, candidate: Any, args: list[Any], *, new_shape: bool) -> Any:
        """``new_shape``: the first call on a shape variant, where Triton may (re)compile its
        kernels for new sizes; its time counts as compile time, not as the kernel's."""
        first = self.calls == 0
        phase = Phase.COMPILING if first else Phase.CHECKING
        started = time.perf_counter()
        watch = (
            self.guard.call(record_ops=not (first or new_shape))
            if self.guard is not None
            else contextlib.nullcontext()
        )
        try:
            with watch, torch.no_grad():
                output = candidate(*args)
                synchronize(self.device)
        except Violation:
            raise
        except BaseException as exc:
            if first or new_shape:  # a failed compile is still compile time
                self.phases.compile_s += time.perf_counter() - started
            self._fail(exc, phase, loading=False)
        elapsed = time.perf_counter() - started
        self.calls += 1
        if first:
            self.phases.compile_s += elapsed
            self.channel.phase(Phase.CHECKING)
            self._check_started = time.perf_counter()
        elif new_shape:
            self.phases.compile_s += elapsed
            self._compile_while_checking += elapsed
        else:
            self.kernel_s += elapsed
        return output

    def _time(self, runtime: TaskRuntime, reference: Any, candidate: Any):
        variant = self.task.main_variant("cuda")
        settings = self.job.integrity
        started = time.perf_counter()
        with self.shared():
            inputs = runtime.inputs(variant, timing_seed(self.task))
            pristine = clone_args(inputs)
        audit = None
        if self.guard is not None:
            audit = TimedAudit(inputs, self._rng, settings, self.job.timing.min_runs)
        with self.exclusive():
            self.channel.phase(Phase.TIMING)
            flush = L2Flusher(self.device, self.job.timing)

            def call() -> Any:
                with torch.no_grad():
                    return candidate(*inputs)

            try:
                measured = measure(
                    call,
                    self.job.timing,
                    flush,
                    before=audit.before if audit else None,
                    after=audit.after if audit else None,
                )
                if self.guard is not None:
                    gap_ms = work_after_return_ms(call, flush)
                    bandwidth = device_bandwidth(self.device)
            except BaseException as exc:
                self._fail(exc, Phase.TIMING, loading=False)
            self.phases.timing_s = time.perf_counter() - started
            self.kernel_s += measured.warmup_s + measured.events.median_ms * measured.events.n / 1e3
        check_started = time.perf_counter()
        with self.shared():
            if self.guard is not None and audit is not None:
                self.guard.check(_moment(Phase.TIMING, loading=False))
                audit.verify(
                    lambda args: runtime.run_reference(reference, args),
                    self.comparison.fresh(),
                    variant.describe(),
                )
            self._check_after_timing(
                runtime,
                models=(reference, candidate),
                variant=variant,
                pristine=pristine,
                inputs=inputs,
            )
            if self.guard is not None:
                check_side_streams(gap_ms, measured.events.median_ms, settings)
                check_speed_of_light(
                    measured.events.median_ms,
                    bytes_to_read(inputs, reference),
                    bandwidth,
                    settings,
                )
        self.phases.check_s += time.perf_counter() - check_started
        return measured.events

    def _check_after_timing(
        self,
        runtime: TaskRuntime,
        *,
        models: tuple[Any, Any],
        variant: ShapeVariant,
        pristine: list[Any],
        inputs: list[Any],
    ) -> None:
        """What was timed must be what was checked. The timed calls left their inputs alone;
        then fresh values are written into the same input buffers and the kernel runs once
        more, into poisoned memory: a kernel that skipped work once the checks were over, or
        that caches results by buffer, gives a wrong answer here."""
        reference, candidate = models
        if first_modified(pristine, inputs) is not None:
            self._reject("timed_output", "the kernel modified its inputs during the timed calls")
        fresh = runtime.inputs(variant, self._rng.getrandbits(62))
        for buffer, value in zip(inputs, fresh, strict=True):
            if isinstance(buffer, torch.Tensor):
                buffer.copy_(value)
        del pristine
        _poison(self._main_output_specs, self.device)
        actual = self._call_candidate(candidate, inputs, new_shape=False)
        expected = runtime.run_reference(reference, fresh)
        mismatch = self.comparison.fresh().compare(
            actual, expected, variant=variant.describe(), trial=-1
        )
        if mismatch is not None:
            self._reject(
                "timed_output",
                f"after the timed calls, fresh inputs in the same buffers gave a wrong result "
                f"({mismatch.kind}); a kernel must compute its result on every call",
            )

    # -- verdicts ----------------------------------------------------------------------------

    def _fail(self, exc: BaseException, phase: Phase, *, loading: bool):
        if self.guard is not None:  # an action the guard refused is why it failed
            self.guard.check(_moment(phase, loading=loading))
        status = classify(exc, phase, loading=loading)
        detail = describe(exc, phase, KERNEL_FILE)
        raise _Verdict(
            self._result(status, messages.error(status, detail, phase), error=detail)
        ) from None

    def _reject(self, check: str, detail: str):
        raise _Verdict(self._rejection(Violation(check, detail)))

    def _rejection(self, violation: Violation) -> EvalResult:
        flag = IntegrityFlag(check=violation.check, detail=violation.detail)
        message = f"Rejected by the {violation.check} check: {violation.detail}."
        return self._result(Status.REJECTED, message, integrity=[flag])

    def _incorrect(self, mismatch: Mismatch):
        self.correctness.mismatch = mismatch
        raise _Verdict(self._result(Status.INCORRECT, messages.incorrect(mismatch)))

    def _end_check(self) -> None:
        if self._check_started is not None:
            elapsed = time.perf_counter() - self._check_started
            self.phases.check_s = elapsed - self._compile_while_checking

    def _result(self, status: Status, message: str, **fields: Any) -> EvalResult:
        if status is not Status.CORRECT and not self.phases.check_s:
            self._end_check()
        return EvalResult(
            status=status,
            message=message,
            task=self.task.name,
            task_hash=self.task.hash,
            kernel_hash=kernel_hash(self.job.code or ""),
            correctness=self.correctness,
            timing_meaningful=self.device_kind == "cuda" and fields.get("runtime") is not None,
            environment=self.environment,
            phases=self.phases,
            **fields,
        )


def _moment(phase: Phase, *, loading: bool) -> str:
    """When a guard check ran, for its message."""
    if loading:
        return "while the kernel was loaded"
    return "during the timed calls" if phase is Phase.TIMING else "during forward"


def _poison(specs: list[tuple[Any, Any]], device: torch.device) -> None:
    """Fill freed memory of each output's size with NaN (or extreme integers), so an output the
    candidate allocates but never writes cannot hold a plausible value."""
    buffers = []
    for shape, dtype in specs:
        for _ in range(2):
            buffer = torch.empty(shape, dtype=dtype, device=device)
            if dtype.is_floating_point or dtype.is_complex:
                buffer.fill_(float("nan"))
            elif dtype == torch.bool:
                buffer.fill_(True)
            else:
                buffer.fill_(torch.iinfo(dtype).max)
            buffers.append(buffer)
    del buffers


def _numel(inputs: list[Any]) -> int:
    return sum(x.numel() for x in inputs if isinstance(x, torch.Tensor))
