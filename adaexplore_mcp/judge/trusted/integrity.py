"""Every run-time integrity verdict, decided in the trusted process: the only place that raises
``Violation``.

Some decisions rest on what the trusted process saw for itself (an output that matches an
earlier answer, a right answer with Triton's launches disabled, a timed call's output, a time
below what the GPU's bandwidth allows); the others on the first signals the candidate's process
sent (``wire.subject.Signals``), which only ever make a verdict stricter.
"""

from __future__ import annotations

from typing import Any

import torch

from adaexplore_mcp.judge.checks import Check, Violation
from adaexplore_mcp.judge.policy import Ops
from adaexplore_mcp.judge.trusted.compare import Comparison, as_outputs
from adaexplore_mcp.judge.wire.subject import Signals
from adaexplore_mcp.judge.wire.values import Opaque

_KNOWN = {check.value for check in Check}


def first_signals(
    signals: Signals, *, calls: int = 1, compiling: bool = False, tracing: bool = False
) -> None:
    """What the candidate's process reported about ``calls`` calls of forward (or its import).
    ``compiling``: the first call on a shape, where Triton may start threads of its own;
    ``tracing``: a call whose profiler traced the GPU's kernels, which starts threads too (the
    profiler's own threads are started before the candidate's module is imported)."""
    for event in signals.audit:
        check = Check(event.check) if event.check in _KNOWN else Check.HARNESS_TAMPERING
        raise Violation(check, event.detail)
    if signals.precision:
        raise Violation(
            Check.PRECISION_DOWNGRADE,
            f"{signals.precision[0]}; the judge compares float32 work in full float32 precision",
        )
    if signals.threads:
        raise Violation(
            Check.BACKGROUND_THREAD,
            f"thread {signals.threads[0]!r} was still running after forward returned; all work "
            "must be finished (and timed) when forward returns",
        )
    if signals.native_threads_grew and not compiling and not tracing:
        raise Violation(
            Check.BACKGROUND_THREAD,
            "forward left a new native thread running; all work must be finished (and timed) "
            "when forward returns",
        )
    if signals.stream_not_default:
        raise Violation(
            Check.HIDDEN_WORK,
            "forward returned with another CUDA stream current; launch on the current stream, or "
            "join a side stream into it before returning",
        )


def launches(signals: Signals, *, calls: int, ops: Ops = Ops.TRITON, where: str = "") -> None:
    """Each call of forward launches a Triton kernel; under ``triton`` it computes nothing in
    torch, under ``mixed`` torch's operators may compute beside it. ``where``: the shape."""
    if signals.launches < calls:
        raise Violation(
            Check.NO_TRITON_KERNEL,
            f"forward launched no Triton kernel{f' on {where}' if where else ''}; the "
            "computation must run in a `@triton.jit` "
            "kernel launched as `kernel[grid](...)` on every call"
            + (
                " (under --ops mixed torch's library operators may stay, beside a Triton "
                "kernel that does part of the work)"
                if ops is Ops.MIXED
                else ""
            ),
        )
    replayed = signals.profile.graph_launches if signals.profile is not None else 0
    if replayed:
        raise Violation(
            Check.HIDDEN_WORK,
            f"forward replayed a CUDA graph ({replayed} launches); the work captured in a graph "
            "runs beneath torch's operators and Triton's launches, where the judge sees none of "
            "it: launch the work from forward, as Triton kernels"
            + (" or torch operators" if ops is Ops.MIXED else ""),
        )
    if ops is Ops.MIXED:
        return
    profiled = signals.profile.torch_ops if signals.profile is not None else {}
    ops_seen = signals.torch_ops or profiled
    if ops_seen:
        listed = _listed(ops_seen)
        seen = "" if signals.torch_ops else " (seen by the profiler, on every thread)"
        raise Violation(
            Check.TORCH_FALLBACK,
            f"forward computed with torch operators ({listed}){seen}; torch may only allocate, "
            "reshape and copy (see docs/integrity.md), the computation belongs in Triton; to "
            "keep torch's library operators (a cuBLAS GEMM, a cuDNN convolution) beside Triton "
            "kernels, judge under --ops mixed",
        )


def library_ops_checked(signals: Signals, *, calls: int, checked: dict[str, int]) -> None:
    """Under ``mixed``, timed calls compute with no torch operator beyond those of the checked
    calls (``checked``: the most of each one call made): the no-op call proved the Triton
    kernels of those calls did work, not of calls that run torch alone once timing starts."""
    extra = {
        name: count
        for name, count in signals.torch_ops.items()
        if count > checked.get(name, 0) * calls
    }
    if extra:
        listed = _listed(extra)
        raise Violation(
            Check.TORCH_FALLBACK,
            f"{calls} timed calls computed with torch operators the checked calls did not "
            f"make as often ({listed}); the work timed must be the work checked",
        )


def outputs(
    signals: Signals, actual: list[Any], expected: list[Any], *, reference_aliases: bool
) -> None:
    """Plain tensors of the reference's precision, in memory of their own."""
    for index, kind in enumerate(signals.output_kinds):
        if kind is not None:
            raise Violation(
                Check.LAZY_OUTPUT,
                f"output {index} is a {kind[:200]}; forward must return plain torch.Tensor "
                "results, computed before it returns",
            )
    for index, (got, want) in enumerate(zip(actual, expected, strict=False)):
        if isinstance(got, Opaque) and isinstance(want, torch.Tensor):
            raise Violation(
                Check.LAZY_OUTPUT,
                f"output {index} is a {got.type_name}, not a tensor; forward must return plain "
                "torch.Tensor results, computed before it returns",
            )
        if (
            isinstance(got, torch.Tensor)
            and isinstance(want, torch.Tensor)
            and got.dtype.is_floating_point
            and want.dtype.is_floating_point
            and got.dtype != want.dtype
            and torch.finfo(got.dtype).eps > torch.finfo(want.dtype).eps
        ):
            name = lambda d: str(d).removeprefix("torch.")  # noqa: E731
            raise Violation(
                Check.PRECISION_DOWNGRADE,
                f"output {index} is {name(got.dtype)} where the reference returns "
                f"{name(want.dtype)}; compute in {name(want.dtype)} or convert the result back "
                "before returning",
            )
    if signals.aliased_input is not None and not reference_aliases:
        raise Violation(
            Check.OUTPUT_ALIASES_INPUT,
            f"output {signals.aliased_input} shares memory with an input; return a new tensor "
            "holding the result",
        )


def result_reuse(
    actual: Any, earlier: list[Any] | None, comparison: Comparison, where: str
) -> None:
    """A wrong result that is right for an earlier input set was kept from that call."""
    if earlier is None:
        return
    if comparison.fresh().compare(as_outputs(actual), earlier, variant=where, trial=-1) is None:
        raise Violation(
            Check.RESULT_REUSE,
            f"for {where}, forward returned the result of the previous input set; caches keyed "
            "by pointer, shape or content are not allowed, compute on every call",
        )


def no_triton_work(where: str, ops: Ops = Ops.TRITON) -> None:
    must = (
        "torch's library operators may do part of the work, but Triton kernels must do the rest "
        "and their results must reach the output"
        if ops is Ops.MIXED
        else "the computation must run in Triton kernels"
    )
    raise Violation(
        Check.NO_TRITON_WORK,
        f"on {where}, forward returned the right result with every Triton launch turned into a "
        f"no-op, so something else computed it; {must}",
    )


def timed_output(call: int, kind: str, note: str = "") -> None:
    """``note``: what the set the call was wrong on tells (``messages.range_note``)."""
    raise Violation(
        Check.TIMED_OUTPUT,
        f"timed call #{call} returned a result that does not match its own inputs ({kind}); a "
        "kernel must compute its result on every call, from the inputs it is given"
        + ("." + note if note else ""),
    )


def timed_inputs_modified() -> None:
    raise Violation(Check.TIMED_OUTPUT, "the kernel modified its inputs during the timed calls")


def speed_of_light(
    median_ms: float, nbytes: int, bandwidth: float, fraction: float, read_fraction: float = 1.0
) -> None:
    """No kernel reads its inputs and parameters (the part of them a correct kernel must read:
    the task's ``READ_FRACTION``) faster than the GPU's copy bandwidth allows."""
    must_read = nbytes * read_fraction
    floor_ms = must_read / bandwidth * 1e3
    if median_ms < fraction * floor_ms:
        part = f" ({read_fraction:g} of {nbytes / 2**20:.1f} MiB)" if read_fraction < 1 else ""
        raise Violation(
            Check.IMPOSSIBLE_SPEEDUP,
            f"the kernel took {median_ms * 1e3:.1f} µs, but reading the "
            f"{must_read / 2**20:.1f} MiB of inputs and parameters the task needs read{part} "
            f"once at this GPU's measured {bandwidth / 1e9:.0f} GB/s takes "
            f"{floor_ms * 1e3:.1f} µs; the work was skipped or done outside the timed call",
        )


def _listed(counts: dict[str, int]) -> str:
    """Operators and their counts for a message, each name and the list bounded: the names come
    from the candidate's process."""
    shown = [f"{name[:100]} ×{count}" for name, count in sorted(counts.items())[:20]]
    more = len(counts) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
