"""Operator policies: whether torch's library operators may compute beside Triton kernels, and
how much of a call each did (``docs/ops.md``).

Under ``triton`` a forward may use torch only to allocate, reshape and copy. Under ``mixed`` it
may keep torch's compute operators too (a cuBLAS GEMM, a cuDNN convolution) and fuse what follows
in Triton; what it may not do is launch Triton kernels that change nothing, which the call with
every launch turned into a no-op refuses under both policies. The profiled call's split of time
between the two is reported, since a share near zero is a Triton kernel in name only.
"""

from __future__ import annotations

from adaexplore_mcp.judge.measurement import WorkSplit
from adaexplore_mcp.judge.policy import Ops
from adaexplore_mcp.judge.wire.subject import Profile, Signals


def describe(policy: Ops) -> str:
    return {
        Ops.TRITON: "triton (every computation in Triton kernels; torch only allocates, "
        "reshapes and copies)",
        Ops.MIXED: "mixed (torch's library operators may stay beside Triton kernels that do "
        "real work; the Triton share of the time is reported)",
    }[policy]


def computed_ops(signals: Signals) -> dict[str, int]:
    """The torch operators one call computed with, as the dispatch mode counted them (the
    operators the timed calls are held to), else as the profiler did (which names composite
    operators, ``matmul`` for ``mm``, and sees other threads)."""
    if signals.torch_ops or signals.profile is None:
        return dict(signals.torch_ops)
    return dict(signals.profile.torch_ops)


def widest(known: dict[str, int], seen: dict[str, int]) -> dict[str, int]:
    """Per operator, the most calls of it one call of forward made so far."""
    merged = dict(known)
    for name, count in seen.items():
        merged[name] = max(count, merged.get(name, 0))
    return merged


def work_split(
    profile: Profile | None, library_ops: dict[str, int], device_kind: str
) -> WorkSplit | None:
    """Triton's time against the library's in the profiled call: the GPU's kernels where
    there is a GPU, the host's time in launches against torch's operators on the CPU."""
    if profile is None:
        return None
    if device_kind == "cuda":
        if not profile.kernels:
            return None
        triton_us = sum(k.us for k in profile.kernels if k.triton)
        library_us = sum(k.us for k in profile.kernels if not k.triton)
    else:
        triton_us, library_us = profile.launch_us, profile.torch_us
    return WorkSplit(
        measured_on="gpu" if device_kind == "cuda" else "cpu",
        triton_ms=triton_us / 1e3,
        library_ms=library_us / 1e3,
        library_ops=dict(sorted(library_ops.items())),
    )


def split_text(split: WorkSplit | None) -> str:
    """One sentence for the verdict under ``mixed``: where the time went, which operators of
    torch computed."""
    if split is None or split.triton_share is None:
        return (
            " The judge could not profile the call to split its time between Triton and the "
            "library."
        )
    kept = (
        ", ".join(f"{name} ×{count}" for name, count in split.library_ops.items())
        or "none beyond glue"
    )
    if split.measured_on == "gpu":
        shares = (
            f"Triton kernels took {split.triton_share:.0%} of the GPU time, library kernels "
            f"{1 - split.triton_share:.0%}"
        )
    else:
        shares = (
            f"Triton's launches took {split.triton_share:.0%} of the profiled host time (in "
            f"its CPU interpreter), torch's operators {1 - split.triton_share:.0%}"
        )
    return f" {shares} (torch operators kept per call: {kept})."
