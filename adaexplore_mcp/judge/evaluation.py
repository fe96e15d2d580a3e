"""One evaluation of a candidate kernel, inside the sandboxed child.

Order of a trial, chosen so that stale memory cannot pass for an answer: fresh inputs are drawn
from a seed the candidate never sees; memory of the output's size is poisoned; the candidate runs
on its own clone of the inputs; its inputs must come back unmodified; only then does the
reference run, on another clone, so the expected output does not exist anywhere while the
candidate runs.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

import torch

from adaexplore_mcp.judge import messages
from adaexplore_mcp.judge.compare import Comparison, as_outputs, same_bits
from adaexplore_mcp.judge.errors import KERNEL_FILE, classify, describe
from adaexplore_mcp.judge.harness import (
    Channel,
    TaskRuntime,
    clone_args,
    device_of,
    environment,
    gpu_lock,
    load_module,
    synchronize,
)
from adaexplore_mcp.judge.protocol import ChildJob
from adaexplore_mcp.judge.result import (
    Correctness,
    EvalResult,
    Mismatch,
    Phase,
    PhaseTimes,
    Status,
    kernel_hash,
)
from adaexplore_mcp.judge.timing import L2Flusher, measure
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
        self.timing_seed = self._rng.getrandbits(62)
        job.seed = 0
        self._check_started: float | None = None
        self.comparison = Comparison()
        self.correctness = Correctness()
        self.phases = PhaseTimes()
        self.kernel_s = 0.0
        self.calls = 0
        self.environment = environment(job)
        self.shared, self.exclusive = gpu_lock(job)

    # -- the procedure -----------------------------------------------------------------------

    def run(self) -> EvalResult:
        try:
            with self.shared():
                candidate_cls, runtime = self._load()
                main_models = self._check_all(candidate_cls, runtime)
                timing_inputs = None
                if self.device_kind == "cuda":
                    timing_inputs = runtime.inputs(self.task.main_variant("cuda"), self.timing_seed)
            runtime_stats = None
            if timing_inputs is not None:
                runtime_stats = self._time(main_models[1], timing_inputs)
        except _Verdict as verdict:
            return verdict.result
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
        try:
            module = load_module(path, "adaexplore_kernel")
        except BaseException as exc:
            self._fail(exc, Phase.COMPILING, loading=True)
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
            trials = self.job.trials if position == 0 else self.job.odd_trials
            for trial in range(trials):
                self._trial(
                    runtime, models, variant, trial, self._rng.getrandbits(62), output_specs
                )
            self.correctness.variants_checked.append(variant.describe())
        assert main_models is not None and self._check_started is not None
        self.phases.check_s = time.perf_counter() - self._check_started
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
        _poison(output_specs, self.device)
        actual = self._call_candidate(candidate, candidate_inputs)
        self.correctness.trials_run += 1
        for index, (before, after) in enumerate(zip(inputs, candidate_inputs, strict=True)):
            if isinstance(before, torch.Tensor) and not same_bits(before, after):
                mismatch = Mismatch(
                    variant=variant.describe(),
                    trial=trial,
                    output_index=index,
                    kind="input_modified",
                )
                self._incorrect(mismatch)
        expected = runtime.run_reference(reference, clone_args(inputs))
        mismatch = self.comparison.compare(
            actual,
            expected,
            tolerances=self.job.tolerances,
            override=self.task.tolerance,
            variant=variant.describe(),
            trial=trial,
        )
        if mismatch is not None:
            self._incorrect(mismatch)
        self.correctness.trials_passed += 1
        self.correctness.max_abs_error = self.comparison.max_abs_error
        self.correctness.max_rel_error = self.comparison.max_rel_error

    def _call_candidate(self, candidate: Any, args: list[Any]) -> Any:
        first = self.calls == 0
        phase = Phase.COMPILING if first else Phase.CHECKING
        started = time.perf_counter()
        try:
            with torch.no_grad():
                output = candidate(*args)
            synchronize(self.device)
        except BaseException as exc:
            self._fail(exc, phase, loading=False)
        elapsed = time.perf_counter() - started
        self.calls += 1
        if first:
            self.phases.compile_s += elapsed
            self.channel.phase(Phase.CHECKING)
            self._check_started = time.perf_counter()
        else:
            self.kernel_s += elapsed
        return output

    def _time(self, candidate: Any, inputs: list[Any]):
        with self.exclusive():
            self.channel.phase(Phase.TIMING)
            started = time.perf_counter()
            flush = L2Flusher(self.device, self.job.timing.l2_flush_factor)

            def call() -> None:
                with torch.no_grad():
                    candidate(*inputs)

            try:
                measured = measure(call, self.job.timing, flush)
            except BaseException as exc:
                self._fail(exc, Phase.TIMING, loading=False)
            self.phases.timing_s = time.perf_counter() - started
            self.kernel_s += measured.events.median_ms * measured.events.n / 1e3
        return measured.events

    # -- verdicts ----------------------------------------------------------------------------

    def _fail(self, exc: BaseException, phase: Phase, *, loading: bool):
        status = classify(exc, phase, loading=loading)
        detail = describe(exc, phase, KERNEL_FILE)
        raise _Verdict(
            self._result(status, messages.error(status, detail, phase), error=detail)
        ) from None

    def _incorrect(self, mismatch: Mismatch):
        self.correctness.mismatch = mismatch
        raise _Verdict(self._result(Status.INCORRECT, messages.incorrect(mismatch)))

    def _result(self, status: Status, message: str, **fields: Any) -> EvalResult:
        if status is not Status.CORRECT and self._check_started and not self.phases.check_s:
            self.phases.check_s = time.perf_counter() - self._check_started
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
