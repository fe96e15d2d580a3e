"""Operator policies: under ``mixed`` a library GEMM may stay beside a Triton epilogue, while a
Triton launch that changes nothing is still refused; the default refuses both. The timed-call
check (GPU only at run time) is tested on the signals it reads."""

from __future__ import annotations

import pytest

from adaexplore_mcp.judge import Check, Status
from adaexplore_mcp.judge.checks import Violation
from adaexplore_mcp.judge.measurement import WorkSplit
from adaexplore_mcp.judge.ops import split_text, work_split
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.pool.baselines import baseline_key
from adaexplore_mcp.judge.trusted import integrity
from adaexplore_mcp.judge.wire.subject import KernelRecord, Profile, Signals

from .mixed import (
    DISCARDED_DECOY,
    IRRELEVANT_DECOY,
    LIBRARY_GEMM_TRITON_EPILOGUE,
    TASK,
    TORCH_ONLY,
)


def test_a_library_gemm_with_a_triton_epilogue_passes_under_mixed_only(cpu_judge):
    triton_only = cpu_judge.evaluate(TASK, LIBRARY_GEMM_TRITON_EPILOGUE)
    assert triton_only.status is Status.REJECTED and triton_only.ops is Ops.TRITON
    assert triton_only.integrity[0].check == Check.TORCH_FALLBACK
    assert "mm ×1" in triton_only.message and "--ops mixed" in triton_only.message

    mixed = cpu_judge.evaluate(TASK, LIBRARY_GEMM_TRITON_EPILOGUE, ops=Ops.MIXED)
    assert mixed.status is Status.CORRECT, mixed.message
    assert mixed.ops is Ops.MIXED and mixed.message.startswith("[mixed ops] ")
    assert len(mixed.correctness.variants_checked) == 2  # the odd shape too
    split = mixed.work_split
    assert split is not None and split.measured_on == "cpu"
    assert split.library_ops == {"mm": 1}
    assert split.triton_ms > 0 and split.library_ms > 0 and 0 < split.triton_share < 1
    assert "Triton's launches took" in mixed.message and "kept per call: mm ×1" in mixed.message


@pytest.mark.parametrize(
    "code", [DISCARDED_DECOY, IRRELEVANT_DECOY], ids=["discarded", "irrelevant"]
)
def test_torch_doing_the_work_behind_a_decoy_launch_is_rejected_under_both_policies(
    cpu_judge, code
):
    mixed = cpu_judge.evaluate(TASK, code, ops="mixed")
    assert mixed.status is Status.REJECTED, mixed.message
    assert mixed.integrity[0].check == Check.NO_TRITON_WORK
    assert mixed.message.startswith("[mixed ops] Rejected by the no_triton_work check: ")
    assert "library operators may do part of the work" in mixed.message
    triton_only = cpu_judge.evaluate(TASK, code)
    assert triton_only.integrity[0].check == Check.TORCH_FALLBACK


def test_no_triton_launch_at_all_is_rejected_under_mixed_too(cpu_judge):
    result = cpu_judge.evaluate(TASK, TORCH_ONLY, ops=Ops.MIXED)
    assert result.integrity[0].check == Check.NO_TRITON_KERNEL
    assert "--ops mixed" in result.message


def test_both_policies_label_the_message_and_the_record(cpu_judge):
    result = cpu_judge.evaluate(
        TASK, LIBRARY_GEMM_TRITON_EPILOGUE, precision=Precision.LEGACY, ops=Ops.MIXED
    )
    assert result.status is Status.CORRECT, result.message
    assert result.message.startswith("[legacy precision, mixed ops] ")
    assert (result.precision, result.ops) == (Precision.LEGACY, Ops.MIXED)


def test_the_settings_default_applies_when_an_evaluation_names_no_policy(loop_thread, judge_home):
    from adaexplore_mcp.judge import LocalJudge

    from ..conftest import cpu_settings

    judge = LocalJudge(cpu_settings(ops=Ops.MIXED, workers_per_device=1), home=judge_home / "m")

    async def judged():
        async with judge:
            return await judge.evaluate(TASK, LIBRARY_GEMM_TRITON_EPILOGUE)

    result = loop_thread.run(judged())
    assert result.status is Status.CORRECT and result.ops is Ops.MIXED, result.message


def timed(torch_ops: dict[str, int], launches: int = 4) -> Signals:
    return Signals(launches=launches, torch_ops=torch_ops)


def test_timed_calls_may_not_add_torch_work_the_checked_calls_did_not_make():
    checked = {"mm": 1}
    integrity.library_ops_checked(timed({"mm": 4}), calls=4, checked=checked)
    with pytest.raises(Violation) as caught:
        integrity.library_ops_checked(timed({"mm": 4, "_softmax": 4}), calls=4, checked=checked)
    assert caught.value.check is Check.TORCH_FALLBACK and "_softmax ×4" in caught.value.detail
    with pytest.raises(Violation):
        integrity.library_ops_checked(timed({"mm": 8}), calls=4, checked=checked)


def test_mixed_lets_torch_compute_but_still_wants_a_launch_per_call():
    integrity.launches(timed({"mm": 4}), calls=4, ops=Ops.MIXED)
    with pytest.raises(Violation) as caught:
        integrity.launches(timed({"mm": 4}), calls=4)
    assert caught.value.check is Check.TORCH_FALLBACK
    with pytest.raises(Violation) as caught:
        integrity.launches(timed({"mm": 4}, launches=3), calls=4, ops=Ops.MIXED)
    assert caught.value.check is Check.NO_TRITON_KERNEL


def test_the_gpu_split_counts_kernel_time_by_who_launched_it():
    profile = Profile(
        kernels=[
            KernelRecord(name="sm90_xmma_gemm_f32f32", triton=False, launches=1, us=300.0),
            KernelRecord(name="bias_relu_kernel", triton=True, launches=1, us=100.0),
        ],
        launch_us=5.0,
        torch_us=50.0,
    )
    split = work_split(profile, {"mm": 1}, "cuda")
    assert split is not None and split.measured_on == "gpu"
    assert split.triton_share == pytest.approx(0.25) and split.library_ms == pytest.approx(0.3)
    assert "25% of the GPU time, library kernels 75%" in split_text(split)
    assert work_split(Profile(), {}, "cuda") is None  # a GPU profile without kernels says nothing
    assert "could not profile" in split_text(None)


def test_the_share_travels_in_the_results_json():
    split = WorkSplit(measured_on="cpu", triton_ms=3.0, library_ms=1.0)
    assert split.model_dump(mode="json")["triton_share"] == pytest.approx(0.75)
    assert WorkSplit.model_validate(split.model_dump(mode="json")) == split


def test_operator_policies_never_share_baselines_and_triton_keeps_its_old_key():
    keys = {
        (p, o): baseline_key(TASK, "NVIDIA H200", "2.11", "3.6", p, o)
        for p in Precision
        for o in Ops
    }
    assert len(set(keys.values())) == len(keys)
    old = baseline_key(TASK, "NVIDIA H200", "2.11", "3.6", Precision.TF32)
    assert keys[(Precision.TF32, Ops.TRITON)] == old


def test_a_baseline_cached_before_the_policies_reads_as_strict_and_triton():
    from adaexplore_mcp.judge.pool.baselines import Baseline

    stats = {"median_ms": 1.0, "mean_ms": 1.0, "std_ms": 0.0, "min_ms": 1.0, "max_ms": 1.0, "n": 3}
    old = Baseline.model_validate({"eager": stats})
    assert (old.precision, old.ops) == (Precision.STRICT, Ops.TRITON)
    mixed = old.model_copy(update={"ops": Ops.MIXED})
    assert Baseline.model_validate(mixed.model_dump(mode="json")).ops is Ops.MIXED
