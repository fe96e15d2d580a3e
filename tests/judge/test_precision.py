"""Precision policies: tolerance selection, plumbing through the judge, the reduced-precision
hint, baseline keys. (The TF32 behaviour itself needs a GPU: benchmarks/precision_policies.py.)"""

import pytest
import torch

from adaexplore_mcp.judge.checks import Violation
from adaexplore_mcp.judge.messages import incorrect, range_note, scale_words
from adaexplore_mcp.judge.policy import (
    LEGACY_TOLERANCE,
    TF32_TOLERANCE,
    TF32_UNIT_ROUNDOFF,
    Precision,
    Tolerance,
    forced_tolerances,
)
from adaexplore_mcp.judge.pool.baselines import baseline_key
from adaexplore_mcp.judge.result import Mismatch, ShapeError
from adaexplore_mcp.judge.trusted import integrity
from adaexplore_mcp.judge.trusted.compare import Comparison, tolerance_for
from adaexplore_mcp.tasks import bundled_solution, parse_task, resolve_task

BASE = {
    "float32": Tolerance(atol=1e-4, rtol=1e-4),
    "float16": Tolerance(atol=1e-2, rtol=1e-2),
    "bfloat16": Tolerance(atol=1e-2, rtol=1e-2),
}
GELU = resolve_task("gelu")


@pytest.mark.parametrize(
    "policy, expected",
    [
        (Precision.STRICT, BASE["float32"]),
        (Precision.TF32, TF32_TOLERANCE),
        (Precision.LEGACY, LEGACY_TOLERANCE),
    ],
)
def test_float32_follows_the_policy_and_half_precision_keeps_its_own(policy, expected):
    forced = forced_tolerances(policy)
    assert tolerance_for(torch.float32, BASE, None, forced) == expected
    for dtype, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
        assert tolerance_for(dtype, BASE, None, forced) == BASE[name]
    assert tolerance_for(torch.int64, BASE, None, forced).atol == 0


def test_a_policy_overrides_a_tasks_own_float_tolerance():
    override = Tolerance(atol=1e-3, rtol=1e-3)
    assert tolerance_for(torch.float32, BASE, override, {}) == override
    assert tolerance_for(torch.float32, BASE, override, forced_tolerances(Precision.LEGACY)) == (
        LEGACY_TOLERANCE
    )


def test_the_tf32_tolerance_scales_with_the_outputs_rms():
    torch.manual_seed(0)
    expected = torch.randn(256, 256, dtype=torch.float64).float() * 100  # rms 100, zeros inside
    rounding = expected + 4 * TF32_UNIT_ROUNDOFF * 100 * torch.randn_like(expected).clamp(-1, 1)
    comparison = Comparison(BASE, None, forced_tolerances(Precision.TF32))
    assert comparison.compare(rounding, expected, variant="v", trial=0) is None
    dropped_term = expected.clone()
    dropped_term[3, 7] += 0.05 * 100  # 5% of the rms on one element: a real bug
    mismatch = comparison.compare(dropped_term, expected, variant="v", trial=0)
    assert mismatch is not None and mismatch.mismatch_count == 1
    assert mismatch.atol == pytest.approx(16 * TF32_UNIT_ROUNDOFF * 100, rel=0.02)
    # strict rejects the rounding that tf32 accepts
    assert Comparison(BASE, None).compare(rounding, expected, variant="v", trial=0) is not None


def scaled_gelu(factor: float) -> str:
    """The bundled GELU with every output multiplied by ``factor`` inside the kernel."""
    code = bundled_solution("gelu")
    marker = "    tl.store(y_ptr + offsets, y, mask=mask)"
    assert marker in code
    return code.replace(marker, f"    y = y * {factor}\n{marker}")


def test_a_small_uniform_error_fails_strict_with_the_hint_and_passes_tf32_and_legacy(cpu_judge):
    slightly_off = scaled_gelu(1.002)
    strict = cpu_judge.evaluate(GELU, slightly_off)
    assert strict.status == "incorrect" and strict.precision is Precision.STRICT
    assert "reduced precision" in strict.message and 'input_precision="ieee"' in strict.message
    assert "--precision tf32" in strict.message
    # the same output checked on the other shapes: a scaled output errs equally on all of them
    shapes = strict.correctness.mismatch.errors_by_shape
    assert len(shapes) >= 2 and all(s.rel_l2_error == pytest.approx(2e-3, rel=0.05) for s in shapes)
    assert "grows with the problem size" not in strict.message

    tf32 = cpu_judge.evaluate(GELU, slightly_off, precision=Precision.TF32)
    assert tf32.status == "correct", tf32.message
    assert tf32.precision is Precision.TF32 and tf32.message.startswith("[tf32 precision]")

    legacy = cpu_judge.evaluate(GELU, slightly_off, precision="legacy")
    assert legacy.status == "correct" and legacy.precision is Precision.LEGACY
    assert legacy.message.startswith("[legacy precision]")


def test_a_real_bug_fails_under_every_policy_without_the_precision_hint(cpu_judge):
    wrong = scaled_gelu(1.2)
    for policy in Precision:
        result = cpu_judge.evaluate(GELU, wrong, precision=policy)
        assert result.status == "incorrect", (policy, result.message)
        assert result.precision is policy
        assert "reduced precision" not in result.message
    legacy = cpu_judge.evaluate(GELU, wrong, precision=Precision.LEGACY)
    assert legacy.correctness.mismatch.atol == pytest.approx(5e-2)


def test_the_hint_reports_the_error_growing_with_the_problem_size():
    shapes = [
        ShapeError(
            shape="small (batch_size=64, in_features=128)", inputs=10_000, rel_l2_error=3e-5
        ),
        ShapeError(shape="benchmark", inputs=10_000_000, rel_l2_error=2e-4),
    ]
    mismatch = Mismatch(
        variant="benchmark",
        trial=0,
        output_index=0,
        kind="values",
        numel=1000,
        mismatch_count=400,
        max_abs_error=3e-3,
        rel_l2_error=2e-4,
        atol=1e-4,
        rtol=1e-4,
        first_bad_index=[0, 1],
        expected_value=1.0,
        actual_value=1.001,
        errors_by_shape=shapes,
    )
    text = incorrect(mismatch)
    assert "grows with the problem size (3.0e-05 on small, 2.0e-04 on benchmark)" in text
    assert 'input_precision="ieee"' in text and "--precision tf32" in text
    flat = mismatch.model_copy(
        update={"errors_by_shape": [s.model_copy(update={"rel_l2_error": 2e-4}) for s in shapes]}
    )
    assert "grows" not in incorrect(flat) and "reduced precision" in incorrect(flat)
    assert "reduced precision" not in incorrect(mismatch.model_copy(update={"rel_l2_error": 0.3}))


def test_policies_never_share_baselines_and_strict_keeps_its_old_key():
    keys = {p: baseline_key(GELU, "NVIDIA H200", "2.11", "3.6", p) for p in Precision}
    assert len(set(keys.values())) == 3
    assert keys[Precision.STRICT] == baseline_key(GELU, "NVIDIA H200", "2.11", "3.6")


# -- float16 operands under tf32: TF32's significand, float32's range ----------------------------

GEMM = parse_task(
    '''"""C = A @ B in float32, KernelBench style."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


M = 32
K = 64
N = 32


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []

ODD_SHAPES = [{"M": 17, "K": 33, "N": 19}]
''',
    name="gemm_f32",
)

# One tiled GEMM; OPERANDS turns the float32 tiles into what tl.dot multiplies.
GEMM_KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for start in range(0, K, BLOCK):
        ks = start + tl.arange(0, BLOCK)
        a = tl.load(
            a_ptr + rows[:, None] * K + ks[None, :],
            mask=(rows[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + ks[:, None] * N + cols[None, :],
            mask=(ks[:, None] < K) & (cols[None, :] < N),
            other=0.0,
        )
OPERANDS
    c = c_ptr + rows[:, None] * N + cols[None, :]
    tl.store(c, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), dtype=torch.float32, device=a.device)
        gemm_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](a, b, c, M, N, K, BLOCK=16)
        return c
"""
# TF32 as the tensor cores round it (the interpreter multiplies in float32): the low 13 of
# float32's 23 mantissa bits rounded away, the exponent kept.
TF32_OPERANDS = """\
        a = ((a.to(tl.int32, bitcast=True) + 0x1000) & -8192).to(tl.float32, bitcast=True)
        b = ((b.to(tl.int32, bitcast=True) + 0x1000) & -8192).to(tl.float32, bitcast=True)
        acc = tl.dot(a, b, acc, input_precision="ieee")"""
# float16 operands: the same 10-bit significand, a 5-bit exponent.
FP16_OPERANDS = """\
        acc = tl.dot(a.to(tl.float16), b.to(tl.float16), acc)"""


# tl.dot left at its default precision: TF32 on a GPU, and now in the interpreter too.
DEFAULT_OPERANDS = """\
        acc = tl.dot(a, b, acc)"""
IEEE_OPERANDS = """\
        acc = tl.dot(a, b, acc, input_precision="ieee")"""


def test_a_float32_dot_at_its_default_precision_is_tf32_on_the_cpu_as_on_a_gpu(cpu_judge):
    """The interpreter multiplied in float32 whatever the precision: a kernel that left tl.dot
    at its default passed strict on the CPU and failed it on a GPU, where that is TF32."""
    default = GEMM_KERNEL.replace("OPERANDS", DEFAULT_OPERANDS)
    strict = cpu_judge.evaluate(GEMM, default, precision=Precision.STRICT)
    assert strict.status == "incorrect", strict.message
    assert 'input_precision="ieee"' in strict.message
    assert cpu_judge.evaluate(GEMM, default, precision=Precision.TF32).ok
    ieee = GEMM_KERNEL.replace("OPERANDS", IEEE_OPERANDS)
    assert cpu_judge.evaluate(GEMM, ieee, precision=Precision.STRICT).ok


def test_tf32_passes_tf32_operands_and_fails_float16_operands_on_float32s_range(cpu_judge):
    tf32 = cpu_judge.evaluate(
        GEMM, GEMM_KERNEL.replace("OPERANDS", TF32_OPERANDS), precision=Precision.TF32
    )
    assert tf32.status == "correct", tf32.message
    assert tf32.correctness.trials_passed == tf32.correctness.trials_run

    fp16_kernel = GEMM_KERNEL.replace("OPERANDS", FP16_OPERANDS)
    fp16 = cpu_judge.evaluate(GEMM, fp16_kernel, precision=Precision.TF32)
    assert fp16.status == "incorrect", fp16.message
    mismatch = fp16.correctness.mismatch
    # every ordinary input set passed: only the one scaled into float32's range catches it
    assert mismatch.input_scale == 2.0**-24 and mismatch.variant == "benchmark"
    assert mismatch.trial == fp16.correctness.trials_passed
    assert "below float16's normal numbers" in fp16.message
    assert "reduced precision" not in fp16.message  # not TF32's rounding: no TF32 advice

    # legacy reproduces published numbers, float16 operands included; strict's tolerance
    # refuses them on ordinary inputs already
    assert cpu_judge.evaluate(GEMM, fp16_kernel, precision=Precision.LEGACY).ok
    strict = cpu_judge.evaluate(GEMM, fp16_kernel, precision=Precision.STRICT)
    assert strict.status == "incorrect" and strict.correctness.mismatch.input_scale is None


def test_the_range_trial_is_not_where_a_kernel_could_count_its_way_to(cpu_judge):
    """It was always the main shape's last checked call: a kernel that used float32 operands on
    that call alone, and float16 operands on every other, was judged correct under tf32."""
    fp16_kernel = GEMM_KERNEL.replace("OPERANDS", FP16_OPERANDS)
    places = set()
    for _ in range(8):  # four places: all eight at one of them by chance once in 16,384 runs
        result = cpu_judge.evaluate(GEMM, fp16_kernel, precision=Precision.TF32)
        assert result.correctness.mismatch.input_scale == 2.0**-24, result.message
        places.add(result.correctness.mismatch.trial)
    assert len(places) > 1, places


def test_a_timed_call_wrong_on_the_scaled_set_is_told_what_a_checked_one_is():
    """The timed calls' rejection said the inputs were "scaled by 5.96046e-08" and gave no
    advice, where the checked calls' message says "multiplied by 2**-24" and what to change."""
    assert scale_words(2.0**-24) == "2**-24" and scale_words(0.3) == "0.3"
    with pytest.raises(Violation) as caught:
        integrity.timed_output(7, "values", range_note(2.0**-24))
    detail = caught.value.detail
    assert "timed call #7" in detail and "multiplied by 2**-24" in detail, detail
    assert 'input_precision="tf32"' in detail and ".." not in detail, detail
    with pytest.raises(Violation) as plain:
        integrity.timed_output(7, "values")
    assert plain.value.detail.endswith("from the inputs it is given"), plain.value.detail


@pytest.mark.parametrize("instead", ["None", "7", "x.shape"])
def test_a_kernel_that_answers_the_diagnosis_with_no_tensor_is_still_incorrect(cpu_judge, instead):
    """Off by rounding's size on the first shape, a kernel is called again on the others for the
    message; a kernel that returned no tensor there crashed the trusted process, and the judge
    blamed itself (a problem set then left the kernel out)."""
    code = scaled_gelu(1.002)
    marker = "        return y"
    assert marker in code
    returns = f"        CALLS.append(1)\n        if len(CALLS) > 1:\n            return {instead}\n"
    code = code.replace(marker, returns + marker, 1) + "\nCALLS = []\n"
    result = cpu_judge.evaluate(GELU, code)
    assert result.status == "incorrect", result.message
    assert "reduced precision" in result.message
