"""The judge's policies and the one decision of a tolerance.

The vocabulary every layer speaks about a verdict (``Precision``, ``Ops``, ``Tolerance``) and
``tolerance_for``, the only place that decides which tolerance an output is compared with:
a precision policy's forced one, else the task's own, else the configured one for its dtype.

Precision policies decide which tolerance float32 outputs get and whether baselines use TF32.

TF32 keeps float32's exponent and 10 of its 23 mantissa bits, so rounding an operand costs a
relative error of up to 2**-11 (its unit roundoff). A dot product of TF32-rounded operands
errs by about that much relative to the size of its terms, with random signs, so relative to
the output's root mean square the error stays near 2**-11 whatever the reduction length; the
largest of millions of such errors is several times that. The ``tf32`` policy allows 16 unit
roundoffs (2**-7, about 7.8e-3) of the output's RMS, plus the same relative tolerance: a
TF32 kernel passes, a kernel that drops or repeats part of a sum does not.

TF32 also keeps float32's 8-bit exponent. Float16 has TF32's significand but a 5-bit exponent
(normal numbers from 6.1e-5 to 65504), so on ordinary data a kernel that rounds its float32
operands to float16 errs as little as a TF32 one, at twice the tensor-core rate. ``tf32`` means
TF32's numbers, range included: under it the judge adds one input set whose float32 inputs are
multiplied by 2**-24, well inside float32's normal range and at float16's smallest subnormal.
A kernel that keeps float32's range (TF32, float32, or float16 with its own scaling) passes; one
that rounds to float16 loses its operands and fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field


class Tolerance(BaseModel, frozen=True):
    """An element passes when ``|actual - expected| <= atol + rtol * |expected|``.

    With ``atol_scale="output_rms"`` the ``atol`` is a fraction of the expected output's root
    mean square, so a rounding error that scales with the output passes near its zeros too."""

    atol: float = Field(ge=0, allow_inf_nan=False)
    rtol: float = Field(ge=0, allow_inf_nan=False)
    atol_scale: Literal["absolute", "output_rms"] = "absolute"


class Precision(StrEnum):
    """How float32 work is judged and timed (``docs/precision.md``).

    - ``strict``: the float32 tolerance against a float32 reference; baselines with TF32 off.
    - ``tf32``: the candidate may round like TF32: a tolerance derived from TF32's precision
      against the float32 reference; baselines timed with TF32 on, so speedups compare like
      with like.
    - ``legacy``: atol = rtol = 5e-2 with TF32-off baselines, to reproduce numbers published
      under that gate; its results are labelled ``legacy``.

    Float16 and bfloat16 outputs keep their own tolerances under every policy.
    """

    STRICT = "strict"
    TF32 = "tf32"
    LEGACY = "legacy"


class Ops(StrEnum):
    """Which operators may compute (``docs/ops.md``).

    - ``triton``: every computation in Triton; torch may only allocate, reshape and copy.
    - ``mixed``: torch's library operators (a cuBLAS GEMM, a cuDNN convolution) may stay beside
      Triton kernels, which must still do real work: the output is wrong with their launches
      turned into no-ops. The result reports the share of time in Triton kernels.

    ``--precision legacy --ops mixed`` is the setting KernelBench's and AdaExplore's published
    numbers were measured under.
    """

    TRITON = "triton"
    MIXED = "mixed"


def default_tolerances() -> dict[str, Tolerance]:
    """The configured per-dtype tolerances when the settings name none."""
    return {
        "float32": Tolerance(atol=1e-4, rtol=1e-4),
        "float16": Tolerance(atol=1e-2, rtol=1e-2),
        "bfloat16": Tolerance(atol=1e-2, rtol=1e-2),
        "float64": Tolerance(atol=1e-7, rtol=1e-7),
        # one unit in the last place: an output rounded from float32 may land one step apart.
        # A normal number's step is within rtol of it, a subnormal's is the smallest subnormal
        # (atol). With atol as large as rtol every value under 2**-3 passed as zero: a kernel
        # that wrote zeros passed a softmax over rows of 1000
        "float8_e4m3fn": Tolerance(atol=2**-9, rtol=2**-3),
        "float8_e4m3fnuz": Tolerance(atol=2**-10, rtol=2**-3),
        "float8_e5m2": Tolerance(atol=2**-16, rtol=2**-2),
        "float8_e5m2fnuz": Tolerance(atol=2**-17, rtol=2**-2),
    }


TF32_UNIT_ROUNDOFF = 2.0**-11
TF32_TOLERANCE = Tolerance(
    atol=16 * TF32_UNIT_ROUNDOFF, rtol=16 * TF32_UNIT_ROUNDOFF, atol_scale="output_rms"
)
LEGACY_TOLERANCE = Tolerance(atol=5e-2, rtol=5e-2)
RANGE_TRIAL_SCALE = 2.0**-24  # exact on float32; below float16's smallest normal (2**-14)

# Only float32 outputs change with the policy; half-precision outputs keep their tolerances.
_POLICY_DTYPE = "float32"


def forced_tolerances(policy: Precision) -> dict[str, Tolerance]:
    """Tolerances the policy imposes on a dtype, over the configured ones and a task's own."""
    if policy is Precision.TF32:
        return {_POLICY_DTYPE: TF32_TOLERANCE}
    if policy is Precision.LEGACY:
        return {_POLICY_DTYPE: LEGACY_TOLERANCE}
    return {}


# Used when a dtype has no configured tolerance: exact for integers and booleans.
EXACT = Tolerance(atol=0.0, rtol=0.0)

# torch's floating and complex dtypes, by name (float16, bfloat16, float8_e4m3fn, complex64, ...)
_INEXACT_PREFIXES = ("float", "bfloat", "complex")
# a complex dtype takes the tolerance of its parts' dtype
_COMPLEX_PARTS = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def tolerance_for(
    dtype: str,
    tolerances: Mapping[str, Tolerance],
    override: Tolerance | None,
    forced: Mapping[str, Tolerance] | None = None,
) -> Tolerance:
    """The tolerance an output of ``dtype`` (torch's name for it, ``"float32"``) is compared
    with: ``forced`` (a precision policy's, ``forced_tolerances``) first, then the task's
    ``override``, then the configured per-dtype ``tolerances``; integers and booleans compare
    exactly."""
    if not dtype.startswith(_INEXACT_PREFIXES):
        return EXACT
    if dtype in _COMPLEX_PARTS:  # compared as the distance between complex numbers
        return tolerance_for(_COMPLEX_PARTS[dtype], tolerances, override, forced)
    if forced and dtype in forced:
        return forced[dtype]
    if override is not None:
        return override
    return tolerances.get(dtype, EXACT)


def baselines_use_tf32(policy: Precision) -> bool:
    """Eager and torch.compile are timed with TF32 on only under the ``tf32`` policy."""
    return policy is Precision.TF32


def range_trial_scale(policy: Precision) -> float | None:
    """The factor of the input set that checks float32's range is kept, or None: only ``tf32``
    needs one (``strict``'s tolerance already fails float16 rounding; ``legacy`` reproduces
    published numbers and allows it)."""
    return RANGE_TRIAL_SCALE if policy is Precision.TF32 else None


def describe(policy: Precision) -> str:
    return {
        Precision.STRICT: "strict (float32 at the float32 tolerance, TF32 off everywhere)",
        Precision.TF32: "tf32 (float32 outputs within 16 TF32 roundoffs of the float32 "
        "reference, float32's range kept: no float16 operands; baselines timed with TF32 on)",
        Precision.LEGACY: "legacy (atol=rtol=5e-2, TF32-off baselines; for reproducing "
        "published numbers only)",
    }[policy]
