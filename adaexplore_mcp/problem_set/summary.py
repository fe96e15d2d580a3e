"""What a judged problem set amounts to: verdicts and integrity checks counted, fast_p, mean and
geometric mean speedup, and AdaExplore's capped mean.

Every rate is over the kernels judged (one record per kernel file). A speedup counts only when
the kernel is correct and its timing is meaningful (a GPU, not Triton's interpreter); it is the
speedup over eager PyTorch. AdaExplore's capped mean clamps each speedup to ``cap`` (10) and
counts every failure as 0, averaged over all kernels judged; it has no value while a correct
kernel has no speedup, since its term is then unknown.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from adaexplore_mcp.judge import Status
from adaexplore_mcp.problem_set.records import Policies, SetRecord

DEFAULT_FAST_P: tuple[float, ...] = (0.0, 1.0)
CAP = 10.0


class KernelRow(BaseModel):
    problem: str
    kernel: str
    kernel_hash: str
    status: Status
    speedup_eager: float | None = Field(description="Only for a correct kernel timed on a GPU.")
    checks: list[str] = Field(description="The integrity checks that flagged the kernel.")
    triton_share: float | None = Field(
        default=None,
        description="Of a correct kernel's profiled time, the fraction in its Triton kernels "
        "(the rest in library kernels: what --ops mixed leaves to cuBLAS or cuDNN).",
    )
    variants: list[str] = Field(description="The shapes its correctness was checked on.")
    message: str


class SetSummary(BaseModel):
    policies: Policies = Field(description="The policies every kernel here was judged under.")
    kernels: int = Field(description="Kernels judged: the denominator of every rate.")
    verdicts: dict[str, int] = Field(description="Kernels per status, every status listed.")
    integrity: dict[str, int] = Field(description="Kernels each integrity check flagged.")
    correct: int
    measured: int = Field(description="Correct kernels with a meaningful speedup over eager.")
    timing: Literal["measured", "partial", "not_meaningful"]
    fast_p: dict[str, float] = Field(
        description="p -> share of the kernels judged that are correct and more than p times "
        "as fast as eager (fast_0: the share that is correct)."
    )
    mean_speedup: float | None = Field(description="Over the measured correct kernels.")
    geomean_speedup: float | None = Field(description="Over the measured correct kernels.")
    capped_mean: float | None = Field(
        description="AdaExplore's: min(speedup, cap) per kernel, 0 for a failure, over all."
    )
    cap: float = CAP
    note: str | None = None
    rows: list[KernelRow]

    @property
    def label(self) -> str:
        """'precision strict' or 'precision legacy · ops mixed'."""
        return " · ".join(f"{name} {value}" for name, value in self.policies.items())


def summarize(
    records: Sequence[SetRecord], fast_p: Sequence[float] = DEFAULT_FAST_P, cap: float = CAP
) -> SetSummary:
    """The summary of records judged under one set of policies (``ValueError`` otherwise)."""
    policies = {tuple(sorted(r.policies.items())) for r in records}
    if len(policies) > 1:
        listing = "; ".join(", ".join(f"{k} {v}" for k, v in p) for p in sorted(policies))
        raise ValueError(
            f"these records were judged under different policies ({listing}); summarize one "
            "policy set at a time"
        )
    rows = [_row(record) for record in records]
    speedups = [row.speedup_eager for row in rows if row.speedup_eager is not None]
    correct = [row for row in rows if row.status is Status.CORRECT]
    unmeasured = len(correct) - len(speedups)
    timing: Literal["measured", "partial", "not_meaningful"]
    if not correct or not unmeasured:
        timing = "measured"
    else:
        timing = "partial" if speedups else "not_meaningful"
    checks = Counter(check for row in rows for check in set(row.checks))
    thresholds = sorted({0.0, *fast_p})
    judged_under = dict(policies.pop()) if policies else {}
    return SetSummary(
        policies=judged_under,
        kernels=len(rows),
        verdicts={status.value: sum(row.status is status for row in rows) for status in Status},
        integrity=dict(sorted(checks.items())),
        correct=len(correct),
        measured=len(speedups),
        timing=timing,
        fast_p={_p_key(p): _fast(rows, p) for p in thresholds},
        mean_speedup=sum(speedups) / len(speedups) if speedups else None,
        geomean_speedup=math.exp(sum(map(math.log, speedups)) / len(speedups))
        if speedups
        else None,
        capped_mean=sum(min(s, cap) for s in speedups) / len(rows)
        if rows and not unmeasured
        else None,
        cap=cap,
        note=_note(timing, unmeasured, judged_under.get("precision")),
        rows=rows,
    )


def _row(record: SetRecord) -> KernelRow:
    result = record.result
    speedup = result.speedup_eager
    measured = (
        result.status is Status.CORRECT
        and result.timing_meaningful
        and speedup is not None
        and math.isfinite(speedup)
        and speedup > 0
    )
    return KernelRow(
        problem=record.problem,
        kernel=record.kernel,
        kernel_hash=record.kernel_hash,
        status=result.status,
        speedup_eager=speedup if measured else None,
        checks=[flag.check for flag in result.integrity],
        triton_share=result.work_split.triton_share
        if result.status is Status.CORRECT and result.work_split is not None
        else None,
        variants=list(result.correctness.variants_checked),
        message=result.message,
    )


def _fast(rows: Sequence[KernelRow], p: float) -> float:
    if not rows:
        return 0.0
    if p <= 0:
        hits = sum(row.status is Status.CORRECT for row in rows)
    else:
        hits = sum(row.speedup_eager is not None and row.speedup_eager > p for row in rows)
    return hits / len(rows)


def _p_key(p: float) -> str:
    return f"{p:g}"


def _note(timing: str, unmeasured: int, precision: str | None) -> str | None:
    notes = []
    if timing == "not_meaningful":
        notes.append(
            "no correct kernel has a meaningful timing (Triton's CPU interpreter): fast_p above "
            "0 is 0 and the speedups and the capped mean have no value"
        )
    elif timing == "partial":
        notes.append(
            f"{unmeasured} correct kernel(s) have no meaningful timing: they count in fast_0 "
            "only, and the capped mean has no value"
        )
    if precision == "legacy":
        notes.append(
            "judged under the LEGACY precision policy (atol = rtol = 5e-2): not comparable with "
            "strict or tf32 results"
        )
    return "; ".join(notes) or None
