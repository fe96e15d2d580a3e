"""Precision policies: which tolerance float32 outputs get, and whether baselines use TF32.

TF32 keeps float32's exponent and 10 of its 23 mantissa bits, so rounding an operand costs a
relative error of up to 2**-11 (its unit roundoff). A dot product of TF32-rounded operands
errs by about that much relative to the size of its terms, with random signs, so relative to
the output's root mean square the error stays near 2**-11 whatever the reduction length; the
largest of millions of such errors is several times that. The ``tf32`` policy allows 16 unit
roundoffs (2**-7, about 7.8e-3) of the output's RMS, plus the same relative tolerance: a
TF32 kernel passes, a kernel that drops or repeats part of a sum does not.
"""

from __future__ import annotations

from adaexplore_mcp.config import Precision, Tolerance

TF32_UNIT_ROUNDOFF = 2.0**-11
TF32_TOLERANCE = Tolerance(
    atol=16 * TF32_UNIT_ROUNDOFF, rtol=16 * TF32_UNIT_ROUNDOFF, atol_scale="output_rms"
)
LEGACY_TOLERANCE = Tolerance(atol=5e-2, rtol=5e-2)

# Only float32 outputs change with the policy; half-precision outputs keep their tolerances.
_POLICY_DTYPE = "float32"


def forced_tolerances(policy: Precision) -> dict[str, Tolerance]:
    """Tolerances the policy imposes on a dtype, over the configured ones and a task's own."""
    if policy is Precision.TF32:
        return {_POLICY_DTYPE: TF32_TOLERANCE}
    if policy is Precision.LEGACY:
        return {_POLICY_DTYPE: LEGACY_TOLERANCE}
    return {}


def baselines_use_tf32(policy: Precision) -> bool:
    """Eager and torch.compile are timed with TF32 on only under the ``tf32`` policy."""
    return policy is Precision.TF32


def describe(policy: Precision) -> str:
    return {
        Precision.STRICT: "strict (float32 at the float32 tolerance, TF32 off everywhere)",
        Precision.TF32: "tf32 (float32 outputs within 16 TF32 roundoffs of the float32 "
        "reference; baselines timed with TF32 on)",
        Precision.LEGACY: "legacy (atol=rtol=5e-2, TF32-off baselines; for reproducing "
        "published numbers only)",
    }[policy]
