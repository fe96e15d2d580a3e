"""The exploit regression suite on a GPU, where timing and streams are real. Skipped without
one (CI); run on the GPU machine with ``pytest -m gpu``."""

from __future__ import annotations

import pytest

from adaexplore_mcp.judge import LocalJudge, Status
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task, parse_task

from ..conftest import SyncJudge
from .exploits import (
    BEFORE_THE_GATE,
    DONE_WORD_AHEAD_OF_THE_WORK,
    EXPLOITS,
    GPU_EXPLOITS,
    IDENTITY_TASK,
    JOINED_SIDE_STREAM,
    JUDGES_OWN,
    PADDED,
    SIDE_STREAM,
    SIDE_STREAM_BESIDE_ITS_GATES,
    Exploit,
    busy_through_the_calibration,
    gates_on_its_own_stream,
    padded,
    touching,
    wrapped,
)
from .test_gpu import _has_gpu, gpu_judge  # noqa: F401  (the module's GPU judge fixture)
from .test_integrity import HONEST_NOW, assert_caught, assert_no_call_unprofiled

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _has_gpu(), reason="needs a CUDA GPU")]


@pytest.fixture(scope="module")
def dishonest_judge(loop_thread, tmp_path_factory):
    """A judge with its first signals off (no audit hook, no recorders): where the exploits that
    serve the judge dishonestly (``exploits.JUDGES_OWN``) can run, as a process would whose
    first signals failed. The clock and every output check still apply."""
    from adaexplore_mcp.judge.settings import JudgeSettings

    settings = JudgeSettings(device="cuda:0", timeout_s=600, integrity={"enabled": False})
    judge = LocalJudge(settings, home=tmp_path_factory.mktemp("dishonest-home"))
    loop_thread.run(judge.start())
    yield SyncJudge(loop_thread, judge)
    loop_thread.run(judge.close())


TASKS = {
    "softmax": get_bundled_task("softmax"),
    "identity": parse_task(IDENTITY_TASK, name="identity"),
}
# a cache keyed by pointer may already be caught while checking, when a trial's fresh input
# lands at a freed block's address
ALSO_ACCEPTED = {"result_cache_by_pointer": {"result_reuse"}}


@pytest.mark.parametrize(
    "exploit",
    [e for e in EXPLOITS + GPU_EXPLOITS if not e.cpu_only and e.name not in HONEST_NOW],
    ids=lambda e: e.name,
)
def test_every_exploit_is_rejected_on_a_gpu(gpu_judge, exploit: Exploit):  # noqa: F811
    judge, _ = gpu_judge
    result = judge.evaluate(TASKS[exploit.task], exploit.code)
    also = ALSO_ACCEPTED.get(exploit.name, set())
    if result.integrity and result.integrity[0].check in also:
        return
    assert_caught(result, exploit)


def test_on_a_gpu_no_call_goes_unprofiled(gpu_judge):  # noqa: F811
    """Checked and timed calls alike: on a GPU only the main shape's profiled call was."""
    judge, _ = gpu_judge
    assert_no_call_unprofiled(judge)


@pytest.mark.parametrize(
    "code",
    [SIDE_STREAM, SIDE_STREAM_BESIDE_ITS_GATES],
    ids=["side_stream", "side_stream_beside_its_gates"],
)
def test_work_left_on_a_side_stream_gains_little(gpu_judge, code):  # noqa: F811
    """Work on a stream forward never joins runs after the done word, so the trusted stream
    does not pay the latency of noticing the word after the work. With spans timed from the
    trusted copy of the inputs that gained 12% on an H200 (softmax 0.0604 ms against 0.069);
    timed from the gate's opening, with the inputs in the candidate's own memory, 2.5% (0.0673
    against 0.0691, three evaluations each). With a gate a call and contexts of one hardware
    queue it gained 7-8% (0.0652-0.0668 against 0.0707-0.0723 ms), which is why
    ``sandbox.cuda_connections`` is at least 2; with 2, 4 or 8 queues the kernel read 2.12 ms.
    The gates go on the default stream whatever stream the kernel made current (a kernel that
    leaves its own stream current is rejected anyway, by ``hidden_work``). A process that serves
    the judge dishonestly can still put its gates on a stream of its own, beside its work: with
    2 or 8 queues that read 2.12 ms too, with the work on the gates' stream or on the kernel's
    2nd to 5th or 9th (H200, 2026-11-29, ``benchmarks/stream_gains.py``). What is
    left is bounded here and documented (docs/integrity.md, "The handoff calibration")."""
    judge, _ = gpu_judge
    assert_gains_little(judge, code, "on a side stream")


def test_gates_on_a_stream_of_its_own_gain_little(dishonest_judge):
    """Its gates on its first stream, its work on its second (``gates_on_its_own_stream``): a
    layout only a process serving the judge dishonestly reaches. 2.12 ms against 0.07 (H200)."""
    assert_gains_little(
        dishonest_judge, gates_on_its_own_stream(1), "with its gates on its own stream", timed=True
    )


def test_a_done_word_written_ahead_of_the_work_gains_little(dishonest_judge):
    """The candidate's process enqueues its own gates and done words, so it can write each done
    word as soon as its gate opens, ahead of the work, with any number of hardware queues. The
    judge records a call's end only once the candidate's context yields, so what it can save is
    the done word's latency after the work, which the calibration takes off every call: the
    gain a side stream had with one queue (7-8%). On an H200 it gained nothing: 0.995 and 1.075
    of the honest median with 2 queues, 1.047 and 1.002 with 8 (three evaluations each, two
    runs of ``benchmarks/stream_gains.py``, 2026-11-29)."""
    assert_gains_little(
        dishonest_judge, DONE_WORD_AHEAD_OF_THE_WORK, "with its done words ahead", timed=True
    )


def test_an_honest_kernel_on_a_joined_side_stream_is_judged_correct_and_told_its_cost(
    gpu_judge,  # noqa: F811
):
    """The control for the side-stream exploits: the same work on a stream of its own, joined
    back before forward returns (as kernels that overlap launches do). It is correct; where it
    does not read the solution's median its verdict says why. With two hardware queues it read
    2.12 ms against 0.0715 ms, 29.7 times, three evaluations each (H200, 2026-11-29,
    ``benchmarks/stream_gains.py --variants joined_side_stream``): every call costs about a
    GPU time slice, as unjoined work does (docs/integrity.md, "The clock")."""
    judge, _ = gpu_judge
    honest = judge.evaluate(TASKS["softmax"], bundled_solution("softmax"))
    joined = judge.evaluate(TASKS["softmax"], JOINED_SIDE_STREAM)
    assert honest.status is Status.CORRECT, honest.message
    assert joined.status is Status.CORRECT, joined.message
    if joined.runtime.median_ms > 1.05 * honest.runtime.median_ms:
        assert "launch on the current stream" in joined.message, joined.message


def assert_gains_little(judge, code: str, how: str, *, timed: bool = False) -> None:
    """``code``, a variant of the softmax solution, is not judged 5% faster than it;
    ``timed``: it must be timed (a kernel whose trick never ran shows nothing)."""
    honest = judge.evaluate(TASKS["softmax"], bundled_solution("softmax"))
    variant = judge.evaluate(TASKS["softmax"], code)
    assert honest.status is Status.CORRECT, honest.message
    assert variant.status is Status.CORRECT or not timed, variant.message
    if variant.status is Status.CORRECT:
        assert variant.runtime.median_ms >= 0.95 * honest.runtime.median_ms, (
            f"{variant.runtime.median_ms} ms {how} against "
            f"{honest.runtime.median_ms} ms honestly: {variant.message}"
        )


def test_work_done_before_the_gate_opens_is_charged(gpu_judge):  # noqa: F811
    """forward may launch work on a stream the gate does not hold; it runs while the judge
    copies the span's inputs in, before the clock starts. The copy then takes longer than the
    calibration's, and what exceeds the allowance is charged to the calls: moving the work
    there must not make the kernel faster than doing it in the call."""
    judge, _ = gpu_judge
    padded = judge.evaluate(TASKS["softmax"], PADDED)
    hidden = judge.evaluate(TASKS["softmax"], BEFORE_THE_GATE)
    assert padded.status is Status.CORRECT, padded.message
    assert hidden.status is not Status.CORRECT or (
        hidden.runtime.median_ms >= 0.9 * padded.runtime.median_ms
    ), f"{hidden.runtime.median_ms} against {padded.runtime.median_ms}: {hidden.message}"


def test_stale_memory_never_passes_on_a_gpu(gpu_judge):  # noqa: F811
    judge, _ = gpu_judge
    code = touching("torch.empty_like(x)")
    result = judge.evaluate(TASKS["softmax"], code)
    assert result.status is Status.INCORRECT, result.message


def test_the_network_is_isolated_on_the_gpu_machine(gpu_judge):  # noqa: F811

    judge, _ = gpu_judge
    result = judge.evaluate(TASKS["softmax"], bundled_solution("softmax"))
    assert result.status is Status.CORRECT
    print("network isolated:", result.environment.network_isolated)


LENDS_TOO_LITTLE = (
    (bundled_solution("softmax") or "")
    + """

"""
    + JUDGES_OWN
    + """
_codec = _judges("subject.server", "Codec")
_lend = _codec.lend
_codec.lend = lambda self, nbytes: _lend(self, 1 << 20)
"""
)


def test_memory_lent_for_the_inputs_too_small_is_the_kernels_fault_and_harms_nothing(
    dishonest_judge,
):
    """The candidate's process lends the memory its timed inputs are written into; one that
    lends less than asked is refused before anything is written, and the next evaluation on
    the same trusted process is judged as usual."""
    judge = dishonest_judge
    result = judge.evaluate(TASKS["softmax"], LENDS_TOO_LITTLE)
    assert result.status is Status.RUNTIME_ERROR and "lent memory" in result.message, result.message
    honest = judge.evaluate(TASKS["softmax"], bundled_solution("softmax"))
    assert honest.status is Status.CORRECT, honest.message


def test_a_forward_that_waits_on_the_gpu_is_timed_one_call_a_span(gpu_judge):  # noqa: F811
    """Its answer comes only once its gates are open, too late to copy each call's outputs
    before the next gate opens (where work put off to a later call would show): its spans
    have one call each, and it is judged like any other."""
    judge, _ = gpu_judge
    waits = wrapped("out = honest(x)\ntorch.cuda.synchronize()\nreturn out")
    result = judge.evaluate(TASKS["softmax"], waits)
    assert result.status is Status.CORRECT, result.message
    assert result.timing is not None and result.timing.synchronizing
    assert result.timing.calls_per_span == 1


# 8 GiB zeroed every call: about 3 ms on an H100, so that a calibration slowed by a time slice
# (about 2.4 ms) takes most of each call off, not all of it (a kernel judged to take no time
# at all is rejected as an impossible speedup)
PAD_FLOATS = 2**31


@pytest.mark.parametrize("delay_ms", [0.3, 4.0])
def test_work_left_running_through_the_calibration_gains_nothing(dishonest_judge, delay_ms):
    """After each span the candidate's process launches a kernel that spins until the judge
    releases it, after the calibration: the GPU time-slices between processes, so the null
    subject's calls took a time slice longer, and that was taken off every call (on an H100:
    a handoff of 2.54 ms against 0.29, softmax judged to take 0.0 µs). Now the job's processes
    are stopped from the span's end until the calibration's, and the calibration starts only
    once the GPU has been quiet for longer than a time slice. Launched 0.3 ms after the last
    call, the spin runs into the settle, which waits it out; launched 4 ms after, its process
    is stopped by then and launches it only once the calibration is over."""
    judge = dishonest_judge
    honest = judge.evaluate(TASKS["softmax"], padded(PAD_FLOATS))
    code = busy_through_the_calibration(pad=PAD_FLOATS, delay_ms=delay_ms)
    busy = judge.evaluate(TASKS["softmax"], code)
    assert honest.status is Status.CORRECT, honest.message
    assert busy.status is Status.CORRECT, busy.message
    assert busy.runtime.median_ms >= 0.97 * honest.runtime.median_ms, busy.message
    assert busy.timing.handoff_ms <= 1.05 * honest.timing.handoff_ms, busy.message


def test_work_left_running_past_the_settle_limit_fails_the_kernel(dishonest_judge):
    """A spin that outlives its span by two seconds, its process stopped: the judge waits for
    the GPU to be quiet up to its limit, then fails the kernel with what to change."""
    judge = dishonest_judge
    code = busy_through_the_calibration(limit_ms=2000.0, released=False)
    result = judge.evaluate(TASKS["softmax"], code)
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert result.error.type == "KeptBusy" and "after its timed calls" in result.message
