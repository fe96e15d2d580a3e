import math

import pytest
import torch

from adaexplore_mcp.judge.policy import Tolerance
from adaexplore_mcp.judge.trusted.compare import Comparison, first_modified, same_bits

TOL = {"float32": Tolerance(atol=1e-4, rtol=1e-4), "float16": Tolerance(atol=1e-2, rtol=1e-2)}


def compare(actual, expected, override=None):
    return Comparison(TOL, override).compare(actual, expected, variant="v", trial=0)


def test_the_bound_is_atol_plus_rtol_times_expected():
    expected = torch.tensor([0.0, 10.0])
    assert compare(expected + torch.tensor([1e-4, 1.1e-3]), expected) is None
    mismatch = compare(expected + torch.tensor([0.0, 1.2e-3]), expected)
    assert mismatch.kind == "values" and mismatch.mismatch_count == 1
    assert mismatch.first_bad_index == [1]


def test_first_bad_index_is_unravelled():
    expected = torch.zeros(3, 4, 5)
    actual = expected.clone()
    actual[2, 1, 3] = 1.0
    actual[2, 3, 0] = 5.0
    mismatch = compare(actual, expected)
    assert mismatch.first_bad_index == [2, 1, 3]
    assert mismatch.max_abs_error == 5.0
    assert mismatch.mismatch_count == 2 and mismatch.numel == 60
    assert mismatch.actual_value == 1.0 and mismatch.expected_value == 0.0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nonfinite_never_passes_even_with_huge_tolerance(bad):
    expected = torch.ones(4)
    actual = expected.clone()
    actual[1] = bad
    mismatch = compare(actual, expected, override=Tolerance(atol=1e30, rtol=1e30))
    assert mismatch.kind == "nonfinite" and mismatch.nonfinite_count == 1
    assert mismatch.first_bad_index == [1]


def test_integers_compare_exactly_and_fp16_uses_its_own_tolerance():
    assert compare(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4])).kind == "values"
    half = torch.tensor([1.0, 2.0], dtype=torch.float16)
    assert compare(half + 0.005, half) is None
    assert compare(half + 0.05, half) is not None


def test_shape_dtype_type_and_count_mismatches():
    expected = torch.zeros(2, 3)
    assert compare(torch.zeros(3, 2), expected).kind == "shape"
    assert compare(torch.zeros(2, 3, dtype=torch.float64), expected).kind == "dtype"
    assert compare([[0.0] * 3] * 2, expected).kind == "count"
    assert compare(0.0, torch.tensor(0.0)).kind == "type"
    assert compare((expected, expected), (expected,)).kind == "count"


def test_tensor_subclasses_are_not_tensors():
    class Sneaky(torch.Tensor):
        pass

    expected = torch.zeros(3)
    assert compare(expected.as_subclass(Sneaky), expected).kind == "type"


def test_passed_comparisons_accumulate_the_maxima():
    comparison = Comparison(TOL, None)
    expected = torch.ones(3)
    for error in (1e-5, 5e-5, 2e-5):
        assert comparison.compare(expected + error, expected, variant="v", trial=0) is None
    assert comparison.max_abs_error == pytest.approx(5e-5, rel=1e-2)  # float32 rounding of 1 + 5e-5


def test_same_bits_treats_nan_as_equal_and_catches_any_change():
    a = torch.tensor([1.0, math.nan])
    assert same_bits(a, a.clone())
    b = a.clone()
    b[0] = 1.0000001
    assert not same_bits(a, b)


def test_first_modified_names_the_first_changed_tensor_and_skips_non_tensors():
    before = [torch.zeros(2), 3, torch.ones(2)]
    after = [torch.zeros(2), 4, torch.tensor([1.0, 2.0])]
    assert first_modified(before, after) == 2
    assert (
        first_modified(before, [t.clone() if isinstance(t, torch.Tensor) else t for t in before])
        is None
    )


def test_an_argument_sent_back_missing_or_as_another_type_counts_as_modified():
    """``after`` comes from the candidate's process: what it holds is not trusted to match."""
    before = [torch.zeros(2), 3, torch.ones(2)]
    assert first_modified(before, [torch.zeros(2), 3, 7]) == 2
    assert first_modified(before, [torch.zeros(2), 3]) == 2
    assert first_modified(before, []) == 0


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_integers_compare_exactly_however_large(dtype):
    """int64 values were compared as float64, whose 53-bit significand cannot tell 2**60 from
    2**60 + 1: an output off by one there passed."""
    big = {torch.int64: 2**60, torch.int32: 2**30, torch.uint8: 200, torch.bool: 1}[dtype]
    expected = torch.full((4,), big, dtype=dtype)
    actual = expected.clone()
    assert compare(actual, expected) is None
    assert bool(Comparison(TOL, None).close_enough(actual, expected))
    actual[2] = 0 if dtype is torch.bool else big - 1
    mismatch = compare(actual, expected)
    assert mismatch is not None and mismatch.mismatch_count == 1
    assert mismatch.first_bad_index == [2]
    assert not bool(Comparison(TOL, None).close_enough(actual, expected))


FLOAT8 = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"]


@pytest.mark.parametrize("name", FLOAT8)
def test_a_float8_output_passes_one_step_apart_and_not_as_zeros(name):
    """atol was as large as rtol (2**-3 for e4m3): zeros passed for every probability under
    0.125, and a kernel that wrote zero bytes passed a softmax over rows of 1000."""
    from adaexplore_mcp.judge.policy import default_tolerances

    dtype = getattr(torch, name)
    generator = torch.Generator().manual_seed(0)
    expected = torch.softmax(torch.randn(64, 1000, generator=generator), -1).to(dtype)
    compare = Comparison(default_tolerances(), None).compare
    zeros = torch.zeros_like(expected.view(torch.uint8)).view(dtype)
    assert compare(zeros, expected, variant="v", trial=0).kind == "values"
    # the next value up from each (positive) one: its bits plus one
    stepped = (expected.view(torch.uint8) + 1).view(dtype)
    assert torch.isfinite(stepped.float()).all()
    assert compare(stepped, expected, variant="v", trial=0) is None


def close_enough(actual, expected, override=None):
    return Comparison(TOL, override).close_enough(actual, expected)


def test_a_python_float_past_float32s_range_is_held_to_its_value():
    """A reference returned a float of 1e173 (finite in float64): made float32's inf, it passed
    any finite 0-d float32 output (|42 - inf| > inf is false), and failed the honest one."""
    huge = math.exp(400.0)
    assert compare(torch.tensor(42.0), huge) is not None
    assert not bool(close_enough(torch.tensor(42.0), huge) or False)
    assert compare(huge, huge) is None  # the honest float, held in float64
    assert compare(2**70, 2**70) is None and compare(2**70 + 2**60, 2**70) is not None
    assert compare(1.5, 1.5) is None and compare(torch.tensor(1.5), 1.5) is None


def test_an_expected_inf_or_a_huge_rms_passes_no_output():
    """The timed calls' check: one inf in the expected outputs, or outputs of 3e19 and more
    under a tolerance scaled by their RMS (the tf32 policy's), let zeros through."""
    scaled = Tolerance(atol=1e-3, rtol=1e-3, atol_scale="output_rms")
    expected = torch.tensor([1.0, math.inf, 2.0])
    assert not bool(close_enough(torch.zeros(3), expected))
    assert compare(torch.zeros(3), expected) is not None
    large = torch.full((4,), 3e19)
    assert not bool(close_enough(torch.zeros(4), large, override=scaled))
    assert bool(close_enough(large * (1 + 1e-6), large, override=scaled))
    huge = torch.full((4,), 1e160, dtype=torch.float64)  # squares past float64's range
    assert not bool(close_enough(torch.zeros(4, dtype=torch.float64), huge, override=scaled))
    assert bool(close_enough(huge * (1 + 1e-6), huge, override=scaled))
    assert bool(close_enough(torch.zeros(3), torch.zeros(3), override=scaled))


def test_the_checked_and_the_timed_comparisons_agree_on_complex_outputs():
    """The checked comparison took an RMS-scaled tolerance from the real parts alone: on purely
    imaginary outputs it was plain ``atol``, where the timed check scaled it by |z|."""
    scaled = Tolerance(atol=1e-3, rtol=0.0, atol_scale="output_rms")
    expected = torch.full((4,), 100j, dtype=torch.complex64)
    near = expected + 0.05  # within 1e-3 of an RMS of 100
    assert bool(close_enough(near, expected, override=scaled))
    assert compare(near, expected, override=scaled) is None
