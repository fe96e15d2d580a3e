"""The one-paragraph messages an agent reads first. Each says what happened and what to do."""

from __future__ import annotations

import math

from adaexplore_mcp.judge.errors import PHASE_WORDS, SIGNAL_HINTS, hint_for
from adaexplore_mcp.judge.measurement import RuntimeStats
from adaexplore_mcp.judge.result import (
    Correctness,
    Environment,
    ErrorDetail,
    Mismatch,
    Phase,
    Status,
)


def _number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}g}"


def correct(
    correctness: Correctness,
    runtime: RuntimeStats | None,
    env: Environment,
    context_scatter_ms: float | None = None,
) -> str:
    """``context_scatter_ms``: how far new GPU contexts' handoffs lie from each other
    (``TimingDetail.context_scatter_ms``), said where it is 0.5% of the median or more: a
    model that reads two runtimes 1% apart should know whether that is the kernel."""
    shapes = len(correctness.variants_checked)
    names = ", ".join(_short(shape) for shape in correctness.variants_checked)
    text = (
        f"Correct on {correctness.trials_passed} trials over {shapes} shape"
        f"{'s' if shapes != 1 else ''} ({names}; max abs error "
        f"{_number(correctness.max_abs_error)})."
    )
    for skipped in correctness.variants_skipped:
        text += f" Not checked on {skipped.variant}: {skipped.reason}."
    if runtime is None:
        text += " Ran in Triton's CPU interpreter: no timing."
    else:
        text += f" Median {runtime.median_ms:.4g} ms over {runtime.n} runs on {env.device_name}."
        if context_scatter_ms is not None and runtime.median_ms > 0:
            share = context_scatter_ms / runtime.median_ms
            if share >= 0.005:
                text += (
                    f" Evaluations of one kernel differ by about {share:.1%} from the GPU's "
                    "handoff to each new process alone: closer runtimes are a tie."
                )
    return text


def beyond_its_kernels(median_ms: float, profiled_ms: float | None) -> str:
    """A note where the clock read far more than the GPU kernels of the profiled call took
    (``TimingDetail.profiled_ms``, the candidate's own report: this only explains, it changes
    no figure). On an H200 an honest softmax whose work ran on a stream of its own, joined back
    before forward returned, read 2.12 ms a call against 0.07 ms on the current stream, about
    a GPU time slice more."""
    if profiled_ms is None or median_ms - profiled_ms < 1.0 or median_ms < 3 * profiled_ms:
        return ""
    return (
        f" Its calls took {median_ms:.3g} ms under the judge's clock against {profiled_ms:.3g} ms "
        "of GPU kernels in its profiled call. Work on a CUDA stream other than the current "
        "one, joined back or not, costs about a GPU time slice (~2 ms) a call there "
        "(docs/integrity.md, 'The clock'): launch on the current stream."
    )


def with_speedups(text: str, speedup_eager: float | None, speedup_compile: float | None) -> str:
    parts = []
    if speedup_eager is not None:
        parts.append(f"{speedup_eager:.2f}x vs eager PyTorch")
    if speedup_compile is not None:
        parts.append(f"{speedup_compile:.2f}x vs torch.compile")
    return f"{text} Speedup: {', '.join(parts)}." if parts else text


def error(status: Status, detail: ErrorDetail, phase: Phase) -> str:
    what = "Compile error" if status is Status.COMPILE_ERROR else "Runtime error"
    where = f" at {detail.location}" if detail.location else ""
    message = detail.message.strip().splitlines()
    first = message[0] if message else ""
    if len(message) > 1 and len(first) < 40:  # Triton puts the useful line last
        first = " ".join(line.strip() for line in message[-2:])
    shape = f" on shape {detail.variant}" if detail.variant else ""
    return (
        f"{what}{where} while {PHASE_WORDS[phase]}{shape}: {detail.type}: {first[:400]}"
        f"{hint_for(detail.type, detail.message)}"
    )


def crashed(
    phase: Phase, signal: str | None, exit_code: int | None, note: str | None = None
) -> str:
    if note:
        return f"{note} (while {PHASE_WORDS[phase]}). Fix and resubmit."
    if signal:
        hint = SIGNAL_HINTS.get(signal, "")
        how = f"was killed by {signal}" + (f" ({hint})" if hint else "")
    else:
        how = f"exited with code {exit_code} without a result (os._exit in the kernel?)"
    return (
        f"The kernel's process {how} while {PHASE_WORDS[phase]}. "
        "The judge is fine; fix and resubmit."
    )


def never_finished() -> str:
    return (
        "The kernel's timed calls never reported their work done: its process armed them and "
        "then left them waiting. Launch on the current stream and return once the work is "
        "enqueued."
    )


def kept_busy(limit_ms: float) -> str:
    return (
        f"The kernel's process left work running on the GPU for over {limit_ms:g} ms after "
        "its timed calls had reported done (with its process stopped). Everything forward "
        "launches must be part of the call: join any other stream back into the current one "
        "before returning, and launch nothing that outlives the call."
    )


def garbled(phase: Phase, why: str) -> str:
    return (
        f"{_process_did(why, phase)}: something in it changed or broke the judge's harness. "
        "Fix and resubmit."
    )


def answer_too_large(phase: Phase, why: str) -> str:
    return (
        f"{_process_did(why, phase)}: what forward returns (and, on the CPU, the inputs sent "
        "back with it) is more than the judge takes in one answer. Return smaller outputs, or "
        "raise the limit if they must be this large."
    )


def _process_did(why: str, phase: Phase) -> str:
    """What the kernel's process did, and in which phase (``why`` is its own words: cut)."""
    return f"The kernel's process {clipped(why, 300)} while {PHASE_WORDS[phase]}"


# A verdict's message is read by a model with a finite context: at most this many characters,
# whatever a kernel put into what it sent
MESSAGE_CHARS = 4000


def clipped(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text``, cut to ``limit`` characters with the cut said."""
    if len(text) <= limit:
        return text
    kept = limit - 40  # room for the note, whose number has at most 18 digits
    return f"{text[:kept]} [... {len(text) - kept} characters cut]"


def timed_out(phase: Phase, timeout_s: float) -> str:
    return (
        f"No result within {timeout_s:g} s; the kernel was {PHASE_WORDS[phase]}. "
        "Look for an endless loop, a loop bound that never ends, or a grid far larger than the "
        "data."
    )


def task_timed_out(name: str, timeout_s: float) -> str:
    return (
        f"task {name!r}: no result within {timeout_s:g} s, and the task's own code was running "
        "(its import, get_inputs, get_init_inputs or Model.forward), not the kernel: make the "
        "task faster (smaller shapes), or raise the time limit."
    )


MISSING_MODEL_NEW = (
    "kernel.py defines no `class ModelNew`. Define `class ModelNew(nn.Module)` with the same "
    "__init__ and forward signatures as the task's `Model`."
)


def _short(shape: str) -> str:
    """A variant's name without its sizes (``correctness.variants_checked`` has them)."""
    return shape.split(" (")[0]


_DERIVED_NOTE = (
    " The judge derived this shape from the task's sizes (the task declares no ODD_SHAPES): "
    "the kernel must work for any sizes get_inputs() produces, so read sizes from the "
    "inputs' shapes and strides, mask the last partial block, and assume no alignment."
)


def scale_words(scale: float) -> str:
    """A range trial's scale as the messages write it: ``2**-24``, or the number."""
    mantissa, exponent = math.frexp(scale)
    return f"2**{exponent - 1}" if mantissa == 0.5 else f"{scale:g}"


def range_note(scale: float) -> str:
    """What a wrong output on a set scaled into float32's range means (the tf32 policy)."""
    return (
        f" This input set had its float32 inputs multiplied by {scale_words(scale)}: inside "
        "float32's and TF32's range, below float16's normal numbers. The tf32 policy allows "
        "TF32's precision with float32's range, so operands rounded to float16 fail here: keep "
        'float32 operands in tl.dot (input_precision="tf32" or "ieee"), or judge under '
        "--precision legacy."
    )


def incorrect(mismatch: Mismatch) -> str:
    text = _incorrect(mismatch)
    if mismatch.input_scale is not None:
        text += range_note(mismatch.input_scale)
    elif mismatch.variant.startswith("derived-") and mismatch.kind != "count":
        text += _DERIVED_NOTE
    return text


def _incorrect(mismatch: Mismatch) -> str:
    where = f"output {mismatch.output_index} on shape {mismatch.variant}, trial {mismatch.trial}"
    kind = mismatch.kind
    if kind == "input_modified":
        if mismatch.reference_modifies_input:
            return (
                f"Input {mismatch.output_index} was modified by the kernel on shape "
                f"{mismatch.variant}, as the task's reference modifies it too. The judge holds "
                "every kernel to leaving its inputs as they were, so it cannot judge a task "
                "whose reference works in place: change the task's forward to work on a copy "
                "(x = x.clone()) and return the result."
            )
        return (
            f"Input {mismatch.output_index} was modified by the kernel on shape "
            f"{mismatch.variant}. Kernels must not write to their inputs: write results to a "
            "new output tensor."
        )
    if kind == "count":
        return (
            f"forward returned {int(mismatch.actual_value or 0)} outputs; the reference returns "
            f"{int(mismatch.expected_value or 0)}."
        )
    if kind == "type":
        return f"{where.capitalize()} is a {mismatch.actual_dtype}, not a torch.Tensor."
    if kind == "shape":
        return (
            f"{where.capitalize()} has shape {mismatch.actual_shape}; expected "
            f"{mismatch.expected_shape}."
        )
    if kind == "dtype":
        return (
            f"{where.capitalize()} has dtype {mismatch.actual_dtype}; expected "
            f"{mismatch.expected_dtype}. Cast the result to the reference's dtype."
        )
    if kind == "nonfinite":
        return (
            f"{where.capitalize()} holds {mismatch.nonfinite_count} NaN/Inf values, first at "
            f"index {mismatch.first_bad_index} (expected {_number(mismatch.expected_value)}). "
            "NaN often means an element was never written (a mask too strict, a grid too small) "
            "or a division by zero / overflow."
        )
    text = (
        f"Wrong values in {where}: {mismatch.mismatch_count} of {mismatch.numel} elements "
        f"outside atol={mismatch.atol:g}, rtol={mismatch.rtol:g}; max abs error "
        f"{_number(mismatch.max_abs_error)}, first at index {mismatch.first_bad_index} "
        f"(expected {_number(mismatch.expected_value, 7)}, "
        f"got {_number(mismatch.actual_value, 7)})."
    )
    return text + _value_hint(mismatch)


# Relative L2 errors that rounding alone produces: TF32 (unit roundoff 2**-11) and bfloat16
# (2**-8) inputs give errors from about 1e-4 to a few 1e-2, growing with the reduction length.
# Measured on an H200: a TF32 tl.dot GEMM with K=4096 is 2.0e-4 off a float32 reference.
_ROUNDING_ERRORS = (1e-4, 3e-2)
_FIXES = (
    'pass input_precision="ieee" to tl.dot on float32 inputs (or keep the operands in float32), '
    "or, when TF32 is acceptable, judge under the tf32 precision policy (--precision tf32), "
    "whose baselines use TF32 too"
)


def _value_hint(mismatch: Mismatch) -> str:
    if mismatch.variant.startswith("odd"):
        return (
            " The main shape passed; this odd size fails: check the masks and the handling of "
            "the last, partial block."
        )
    return _precision_hint(mismatch)


def rounding_sized(mismatch: Mismatch) -> bool:
    """Wrong values spread over many elements, with a relative error of rounding's size."""
    low, high = _ROUNDING_ERRORS
    return bool(
        mismatch.kind == "values"
        and mismatch.mismatch_count
        and mismatch.numel
        and mismatch.mismatch_count >= 0.001 * mismatch.numel
        and mismatch.rel_l2_error is not None
        and low <= mismatch.rel_l2_error <= high
    )


def _precision_hint(mismatch: Mismatch) -> str:
    """Says so when wrong values look like reduced precision rather than a logic error."""
    if not rounding_sized(mismatch):
        return ""
    shapes = [
        (e.shape, e.rel_l2_error)
        for e in mismatch.errors_by_shape or []
        if e.rel_l2_error is not None
    ]
    growth = ""
    if len(shapes) >= 2:
        listed = ", ".join(f"{error:.1e} on {shape.split(' (')[0]}" for shape, error in shapes)
        errors = [error for _, error in shapes]
        # Rounding's error grows with the reduction length in absolute terms but can stay flat
        # relative to the output: only growth is evidence, flatness is not counter-evidence.
        if errors == sorted(errors) and errors[-1] > 1.5 * errors[0]:
            growth = f" The error grows with the problem size ({listed}), as rounding does."
        else:
            growth = f" Relative L2 error by shape: {listed}."
    return (
        f" Many elements are slightly off (relative L2 error {mismatch.rel_l2_error:.1e}): this "
        f"looks like reduced precision (TF32 or bfloat16 rounding), not a logic error.{growth} "
        f"To fix it, {_FIXES}."
    )
