"""An evaluation's checked calls: the candidate built on every shape, then called on fresh
inputs, each call's outputs compared with the reference the task's process computes on its own
copy, with the profiled call and the call with Triton's launches turned off."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any

from adaexplore_mcp.judge import ops
from adaexplore_mcp.judge.measurement import TaskWork
from adaexplore_mcp.judge.policy import range_trial_scale
from adaexplore_mcp.judge.result import Mismatch, Phase
from adaexplore_mcp.judge.roofline import usable_flops
from adaexplore_mcp.judge.trusted import diagnosis, integrity, verdicts
from adaexplore_mcp.judge.trusted.common import task_failure
from adaexplore_mcp.judge.trusted.compare import first_modified
from adaexplore_mcp.judge.trusted.link import SubjectFailed, SubjectLost
from adaexplore_mcp.judge.trusted.peaks import peak_math, tensor_bytes
from adaexplore_mcp.judge.trusted.shapes import is_float32, nonfinite, nothing_to_compute
from adaexplore_mcp.judge.trusted.task_exchange import sendable
from adaexplore_mcp.judge.wire.subject import (
    BuildAnswer,
    CallAnswer,
    CallMode,
    CallRequest,
    CompileNote,
    ResumeRequest,
    SubjectError,
)
from adaexplore_mcp.tasks import ShapeVariant, VariantRole

if TYPE_CHECKING:
    from adaexplore_mcp.judge.trusted.evaluation import TrustedEvaluation


def check_candidate(evaluation: TrustedEvaluation) -> None:
    """Each shape in turn: both modules built, the checked calls, and where the integrity
    checks are on, the profiled call and the call with the launches turned off."""
    variants = evaluation.task.variants_for(evaluation.device_kind)
    scale = range_trial_scale(evaluation.job.precision)
    for position, variant in enumerate(variants):
        built = None
        if variant.role is VariantRole.DERIVED:
            built = _derived_runs(evaluation, variant)
            if built is None:
                continue
        build(evaluation, variant, built)
        trials = evaluation.job.trials if position == 0 else evaluation.job.odd_trials
        # the range trial among the main shape's at a place drawn in secret: always last,
        # a kernel told it by counting its calls and used float16 operands in the others
        scaled_at = None
        if position == 0 and scale is not None:
            scaled_at = evaluation.exchange.rng.randrange(trials + 1)
            trials += 1
        for trial in range(trials):
            _trial(evaluation, variant, trial, "check", scale=scale if trial == scaled_at else None)
        if evaluation.guarded:
            # every checked call is profiled; this one also checks torch's glue operators
            # are still torch's, and on a GPU (where tracing them costs the most) records
            # the kernels, on the main shape
            if position == 0 or evaluation.device_kind == "cpu":
                _trial(evaluation, variant, trials, "profile")
            _trial(evaluation, variant, trials + 1, "noop")
        evaluation.correctness.variants_checked.append(variant.describe())


def _derived_runs(
    evaluation: TrustedEvaluation, variant: ShapeVariant
) -> tuple[BuildAnswer, bytes] | None:
    """The task's build of a derived shape when its reference runs it, else None (the
    variant recorded as skipped, with why)."""
    built, skipped = evaluation.exchange.probe(variant)
    if skipped is not None:
        evaluation.correctness.variants_skipped.append(skipped)
    return built


def build(
    evaluation: TrustedEvaluation,
    variant: ShapeVariant,
    built_here: tuple[BuildAnswer, bytes] | None,
) -> None:
    """Build both modules for a variant (the task's already, when ``built_here``)."""
    request = evaluation.exchange.build_request(variant)
    built, payload = built_here or evaluation.exchange.build(variant)
    init = evaluation.task_link.take(built.init or [], payload, set())
    sendable(evaluation.task, init, "get_init_inputs()")
    evaluation.parameter_bytes[variant.name] = built.parameter_bytes
    specs, offered, _ = evaluation.candidate.offer(init)
    try:
        new, _ = evaluation.candidate.ask(
            request.model_copy(update={"init": specs}), offered, expect=BuildAnswer
        )
        evaluation.weights[variant.describe()] = (built.weights, new.weights)
    except SubjectFailed as failure:
        if evaluation.guarded:
            integrity.first_signals(failure.answer.signals)
        raise verdicts.failed(
            evaluation, failure.answer.error, Phase.COMPILING, loading=True
        ) from None


def _trial(
    evaluation: TrustedEvaluation,
    variant: ShapeVariant,
    trial: int,
    mode: CallMode,
    *,
    scale: float | None = None,
) -> None:
    """One call of the candidate on fresh inputs, checked. ``scale``: the float32 inputs
    multiplied by it (the float32-range trial of the tf32 policy)."""
    key, master = evaluation.exchange.inputs(variant, scale=scale)
    if scale is not None and not any(is_float32(value) for value in master):
        evaluation.exchange.forget(key)  # nothing to scale: no such trial
        return
    first = evaluation.calls_on.get(variant.name, 0) == 0
    phase = Phase.COMPILING if not evaluation.calls_on else Phase.CHECKING
    outputs, answer, args_after, offered_views = call(
        evaluation, variant, master, mode, phase, first
    )
    if answer is None:  # noop mode: forward failed without its launches, as it should
        evaluation.exchange.forget(key)
        return
    if evaluation.guarded:
        tracing = mode == "profile" and evaluation.device_kind == "cuda"
        integrity.first_signals(answer.signals, compiling=first, tracing=tracing)
    if mode != "noop":
        evaluation.library_ops = ops.widest(
            evaluation.library_ops, ops.computed_ops(answer.signals)
        )
    if mode == "profile" and evaluation.profile_main is None:
        evaluation.profile_main = answer.signals.profile
    after = offered_views or args_after
    modified = first_modified(master, after) if after else None
    if modified is not None and mode != "noop":
        raise verdicts.incorrect(
            evaluation,
            Mismatch(
                variant=variant.describe(),
                trial=trial,
                output_index=modified,
                kind="input_modified",
                reference_modifies_input=evaluation.exchange.reference_modifies(
                    key, master, modified
                ),
            ),
        )
    count = evaluation.work is None and mode == "check" and scale is None  # the first such
    count = count and variant.name == evaluation.task.main_variant(evaluation.device_kind).name
    expected, reference = evaluation.exchange.reference(key, count_flops=count)
    # a shape with nothing to compute asks for no launch, and any output is right there
    empty = nothing_to_compute(expected)
    if evaluation.guarded:
        integrity.launches(
            answer.signals,
            calls=0 if empty else 1,
            ops=evaluation.job.ops,
            where=variant.describe(),
        )
    if count:
        _count_work(evaluation, variant, master, expected, reference.flops)
    where = f"input set {trial + 1} of {variant.describe()}"
    if any(nonfinite(value) for value in expected):
        if scale is not None:
            return  # the reference itself leaves float32's range on these inputs
        raise task_failure(
            evaluation.task,
            SubjectError(
                type="NonFiniteReference",
                message=f"the reference's output on {where} holds NaN or Inf, which no "
                "output can match (NaN and Inf never pass): draw inputs on which the "
                "reference is finite",
            ),
        )
    if mode == "noop":
        if (
            not empty
            and evaluation.comparison.fresh().compare(outputs, expected, variant=where, trial=trial)
            is None
        ):
            integrity.no_triton_work(variant.describe(), evaluation.job.ops)
        return
    if evaluation.guarded:
        integrity.outputs(
            answer.signals,
            outputs,
            expected,
            reference_aliases=reference.aliased_input is not None,
        )
    mismatch = evaluation.comparison.compare(
        outputs, expected, variant=variant.describe(), trial=trial
    )
    evaluation.correctness.trials_run += 1
    if mismatch is not None:
        integrity.result_reuse(
            outputs, evaluation.earlier.get(variant.name), evaluation.comparison, where
        )
        if scale is None:
            diagnosis.diagnose_rounding(evaluation, mismatch)
        mismatch.input_scale = scale
        raise verdicts.incorrect(evaluation, mismatch)
    evaluation.earlier[variant.name] = expected
    evaluation.correctness.trials_passed += 1
    evaluation.correctness.max_abs_error = evaluation.comparison.max_abs_error
    evaluation.correctness.max_rel_error = evaluation.comparison.max_rel_error


def _count_work(
    evaluation: TrustedEvaluation,
    variant: ShapeVariant,
    inputs: list[Any],
    outputs: list[Any],
    flops: float | None,
) -> None:
    """The main shape's work: the FLOPs the task's process counted (checked: it runs user
    code), the bytes sized here from what this process generated and received, of the
    inputs and parameters only the part the task says a kernel must read."""
    usable, note = usable_flops(flops)
    read = tensor_bytes(inputs) + max(evaluation.parameter_bytes.get(variant.name, 0), 0)
    evaluation.work = TaskWork(
        variant=variant.describe(),
        flops=usable,
        bytes=round(read * evaluation.read_fraction) + tensor_bytes(outputs),
        note=note,
    )
    evaluation.peak_math = peak_math([*inputs, *outputs], evaluation.job.precision)


def _on_compile_note(evaluation: TrustedEvaluation, note: CompileNote) -> None:
    """A Triton compile needs the CPU, not the GPU: the lock is let go while it runs, so it
    never keeps another evaluation's timing waiting."""
    if not note.done:
        evaluation.hold.let_go()
        return
    evaluation.hold.take()
    evaluation.candidate.send(ResumeRequest())


def call(
    evaluation: TrustedEvaluation,
    variant: ShapeVariant,
    master: list[Any],
    mode: CallMode,
    phase: Phase,
    first: bool,
) -> tuple[list[Any], CallAnswer | None, list[Any] | None, list[Any]]:
    """One call of the candidate's forward on a copy of ``master``."""
    evaluation.reporter.phase(phase)
    specs, payload, views = evaluation.candidate.offer(master)
    started = time.perf_counter()
    notes = mode == "check" and evaluation.device_kind == "cuda"
    try:
        answer, answer_payload = evaluation.candidate.ask(
            CallRequest(variant=variant.name, args=specs, mode=mode, compile_notes=notes),
            payload,
            expect=CallAnswer,
            on_note=functools.partial(_on_compile_note, evaluation) if notes else None,
        )
    except SubjectFailed as failure:
        if evaluation.guarded:
            tracing = mode == "profile" and evaluation.device_kind == "cuda"
            integrity.first_signals(failure.answer.signals, compiling=first, tracing=tracing)
        if mode == "noop":
            return [], None, None, []
        _charge(evaluation, time.perf_counter() - started, first)
        raise verdicts.failed(
            evaluation, failure.answer.error, phase, loading=False, variant=variant.describe()
        ) from None
    finally:
        evaluation.hold.take()  # taken back, whatever the process said of its compiles
    _charge(evaluation, time.perf_counter() - started, first)
    evaluation.calls_on[variant.name] = evaluation.calls_on.get(variant.name, 0) + 1
    if answer.args_after is not None and len(answer.args_after) != len(master):
        # told before anything is decoded: 260,000 described took 16 s to decode first
        raise SubjectLost(
            evaluation.candidate.role,
            f"sent back {len(answer.args_after)} arguments for the {len(master)} it was given",
            garbled=True,
        )
    own = evaluation.candidate.own_handles
    outputs = evaluation.candidate.take(answer.outputs, answer_payload, own)
    args_after = (
        evaluation.candidate.take(answer.args_after, answer_payload, own)
        if answer.args_after is not None
        else None
    )
    return outputs, answer, args_after, views


def _charge(evaluation: TrustedEvaluation, elapsed: float, first: bool) -> None:
    if first:
        evaluation.phases.compile_s += elapsed
    else:
        evaluation.phases.check_s += elapsed
        evaluation.kernel_s += elapsed
