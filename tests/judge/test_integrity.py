"""The exploit regression suite: every known way to fake a result ends in the answer it must
(rejected by the named check, or the verdict the trick cannot escape), honest kernels pass, and
tricks that once fooled the guard in the candidate's process now change nothing."""

from __future__ import annotations

import pytest

from adaexplore_mcp.judge import Check, LocalJudge, Status
from adaexplore_mcp.judge.checks import Violation
from adaexplore_mcp.judge.messages import MESSAGE_CHARS
from adaexplore_mcp.judge.settings import SandboxSettings
from adaexplore_mcp.judge.trusted import integrity
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task, parse_task

from ..conftest import SyncJudge, cpu_settings
from .exploits import (
    ANNOUNCES_A_LARGE_ANSWER,
    COPY,
    EXPLOITS,
    HARMLESS,
    IDENTITY_TASK,
    JUDGES_OWN,
    MESSAGE_FLOODED_BY_A_FORGED_DTYPE,
    Exploit,
    by_name,
    copied_by_triton,
    touching,
    wrapped,
)

TASKS = {
    "softmax": get_bundled_task("softmax"),
    "identity": parse_task(IDENTITY_TASK, name="identity"),
    "gelu": get_bundled_task("gelu"),
}
CHECKS = {check.value for check in Check}


def assert_caught(result, exploit: Exploit) -> None:
    assert result.status is not Status.CORRECT, f"{exploit.name}: {result.message}"
    if exploit.caught_by in CHECKS:
        assert result.status is Status.REJECTED, f"{exploit.name}: {result.message}"
        assert result.integrity[0].check == exploit.caught_by, result.message
        assert result.message.startswith(f"Rejected by the {exploit.caught_by} check: ")
        assert not result.correctness.mismatch
    else:
        assert result.status.value == exploit.caught_by, f"{exploit.name}: {result.message}"


# honest in every call once no call goes unprofiled (the test below says so)
HONEST_NOW = {"torch_unless_profiled_profiler_flag"}


@pytest.mark.parametrize(
    "exploit",
    [e for e in EXPLOITS if not e.gpu_only and e.name not in HONEST_NOW],
    ids=lambda e: e.name,
)
def test_every_exploit_is_caught(cpu_judge, exploit: Exploit):
    assert_caught(cpu_judge.evaluate(TASKS[exploit.task], exploit.code), exploit)


def assert_no_call_unprofiled(judge) -> None:
    """A kernel that computed with torch, out of the dispatch mode's sight, wherever the
    profiler was off was judged correct: only one call a shape was profiled."""
    code = by_name("torch_unless_profiled_profiler_flag").code.replace(
        "        with _disable_current_modes():",
        "        print('unprofiled')\n        with _disable_current_modes():",
    )
    assert "print('unprofiled')" in code
    result = judge.evaluate(TASKS["softmax"], code)
    if result.status is Status.CORRECT:
        assert "unprofiled" not in (result.output_tail or ""), result.output_tail


def test_on_the_cpu_no_call_goes_unprofiled(cpu_judge):
    assert_no_call_unprofiled(cpu_judge)


@pytest.mark.parametrize(("name", "code"), HARMLESS, ids=[name for name, _ in HARMLESS])
def test_tricks_inside_the_candidates_process_change_nothing(cpu_judge, name, code):
    result = cpu_judge.evaluate(TASKS["softmax"], code)
    assert result.status is Status.CORRECT, result.message


def test_a_forged_verdict_never_becomes_the_verdict(cpu_judge):
    forged = next(e for e in EXPLOITS if e.name == "forged_verdict")
    result = cpu_judge.evaluate(TASKS["softmax"], forged.code)
    assert result.status is Status.RUNTIME_ERROR
    assert "9.80x" not in result.message and result.runtime is None
    assert result.error.type == "ProtocolError"


def test_a_source_finding_names_its_line(cpu_judge):
    code = wrapped("return honest(x)", prelude="import subprocess")
    line = code.splitlines().index("import subprocess") + 1
    result = cpu_judge.evaluate(TASKS["softmax"], code)
    assert result.integrity[0].detail.startswith(f"kernel.py:{line}: `import subprocess`")
    assert result.phases.total_s == 0  # refused before any process was spent on it


def test_the_torch_fallback_reason_names_the_operators(cpu_judge):
    result = cpu_judge.evaluate(TASKS["softmax"], wrapped("return honest(x) * 1.0 + 0.0"))
    assert result.integrity[0].check == "torch_fallback"
    assert "mul ×1" in result.message and "add ×1" in result.message


def test_the_profiler_names_torch_work_the_dispatch_mode_missed(cpu_judge):
    code = next(e for e in EXPLOITS if e.name == "torch_in_a_joined_thread").code
    result = cpu_judge.evaluate(TASKS["softmax"], code)
    assert "seen by the profiler, on every thread" in result.message
    assert "softmax ×1" in result.message


def test_glue_around_an_honest_kernel_passes(cpu_judge):
    glue = "y = honest(x.contiguous().view(x.shape))\nreturn y.reshape(-1).clone().view(x.shape)"
    result = cpu_judge.evaluate(TASKS["softmax"], wrapped(glue))
    assert result.status is Status.CORRECT, result.message


def test_namedtuples_and_dataclasses_in_a_kernel_are_not_frame_access(cpu_judge):
    prelude = (
        "import collections, dataclasses, enum\n"
        "Config = collections.namedtuple('Config', 'block warps')\n"
        "@dataclasses.dataclass\nclass Tile:\n    rows: int = 1\n"
        "class Mode(enum.Enum):\n    FAST = 1\n"
    )
    result = cpu_judge.evaluate(TASKS["softmax"], wrapped("return honest(x)", prelude=prelude))
    assert result.status is Status.CORRECT, result.message


def test_writing_inside_the_working_directory_is_allowed(cpu_judge):
    forward = "open('scratch.txt', 'w').write('notes')\nreturn honest(x)"
    result = cpu_judge.evaluate(TASKS["softmax"], wrapped(forward))
    assert result.status is Status.CORRECT, result.message


def test_stale_memory_never_passes_for_an_answer(cpu_judge):
    """An output the kernel never writes cannot hold the answer: its process never had one."""
    result = cpu_judge.evaluate(TASKS["softmax"], touching("torch.empty_like(x)"))
    assert result.status is Status.INCORRECT
    assert result.correctness.mismatch.kind in ("nonfinite", "values")


def test_the_first_signals_can_be_turned_off_for_measuring_their_cost(unguarded_judge):
    result = unguarded_judge.evaluate(TASKS["softmax"], EXPLOITS[0].code)  # torch only
    assert result.status is Status.CORRECT


# what the judge's recorders start on, taken away by the kernel (its profiler quiets standard
# error by duplicating its descriptor)
RECORDERS_FAIL_TO_START = wrapped("return honest(x)", prelude="os.close(2)")


def test_a_kernel_whose_code_fails_as_the_recorders_start_gets_its_error_back(cpu_judge):
    """The recorders' own failure to start ended the kernel's process (exit code 70, "os._exit
    in the kernel?"); now the call fails with the error, and with any event recorded so far (a
    profiler switch refused as it started)."""
    result = cpu_judge.evaluate(TASKS["softmax"], RECORDERS_FAIL_TO_START)
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert "Bad file descriptor" in result.message and "exit code" not in result.message


def test_with_the_first_signals_off_a_kernel_serves_the_judge_as_it_likes(unguarded_judge):
    """The GPU's exploits that stand for a dishonest server (``exploits._the_server``) rebind
    the loop the server bound before the kernel was imported; with the first signals off,
    nothing refuses them and their hooks run (since 5848a61 the server no longer calls its
    class's methods, and the exploits that replaced those judged an honest kernel instead)."""
    serving = wrapped(
        "return honest(x)",
        prelude=JUDGES_OWN,
        suffix="""
_serving = _the_server()
_receive, _send, _answer, _look = vars(_serving)["_loop"]


def _answered(request, payload):
    print("answered by the kernel:", type(request).__name__, flush=True)
    return _answer(request, payload)


_serving._loop = (_receive, _send, _answered, _look)
""",
    )
    result = unguarded_judge.evaluate(TASKS["softmax"], serving)
    assert result.status is Status.CORRECT, result.message
    assert "answered by the kernel: CallRequest" in (result.output_tail or ""), result.output_tail


def test_what_a_kernel_sends_cannot_flood_the_verdicts_message(cpu_judge):
    """A verdict's message has a size one can state (``messages.MESSAGE_CHARS``): a forged
    answer with a dtype of 2 MB made a message of 2 MB, and one of 20 MB one of 20 MB."""
    result = cpu_judge.evaluate(TASKS["softmax"], MESSAGE_FLOODED_BY_A_FORGED_DTYPE)
    assert result.status is Status.RUNTIME_ERROR, result.message[:300]
    assert len(result.message) <= MESSAGE_CHARS, len(result.message)


def test_an_answer_over_the_limit_is_refused_before_its_bytes_are_read(loop_thread, tmp_path):
    """The trusted process holds what a user-code process sends it: an answer is bounded
    (``SandboxSettings.answer_limit_mb``) and refused on its header, with the setting named;
    the same judge then judges an honest kernel as usual."""
    settings = cpu_settings(workers_per_device=1, sandbox=SandboxSettings(answer_limit_mb=64))
    judge = SyncJudge(loop_thread, LocalJudge(settings, home=tmp_path / "home"))
    loop_thread.run(judge.judge.start())
    try:
        result = judge.evaluate(TASKS["softmax"], ANNOUNCES_A_LARGE_ANSWER, timeout_s=30)
        assert result.status is Status.RUNTIME_ERROR, result.message
        assert "exceeds the 67108864-byte limit" in result.message, result.message
        assert "ANSWER_LIMIT_MB" in result.message, result.message
        assert result.error.type == "AnswerTooLarge" and "harness" not in result.message
        honest = judge.evaluate(TASKS["softmax"], bundled_solution("softmax"))
        assert honest.status is Status.CORRECT, honest.message
    finally:
        loop_thread.run(judge.judge.close())


def test_an_impossible_speedup_is_measured_against_the_bandwidth():
    gib = 2**30
    integrity.speed_of_light(0.30, gib, 4e12, 0.7)  # 0.27 ms needed: plausible
    with pytest.raises(Violation) as caught:
        integrity.speed_of_light(0.05, gib, 4e12, 0.7)
    assert caught.value.check is Check.IMPOSSIBLE_SPEEDUP
    assert "1024.0 MiB" in caught.value.detail and "4000 GB/s" in caught.value.detail


def test_padding_a_task_declares_is_not_counted_as_bytes_a_kernel_must_read():
    """decode_attention's bundled solution took 0.448 ms on an H100 (2961 GB/s measured) and
    was rejected: its 2 GiB of inputs are half padding, which it rightly skips. The task says so
    (READ_FRACTION = 0.5); a kernel that skips the work is still caught."""
    cache = 2 * 2**30
    with pytest.raises(Violation):
        integrity.speed_of_light(0.448, cache, 2.961e12, 0.7)
    integrity.speed_of_light(0.448, cache, 2.961e12, 0.7, read_fraction=0.5)
    with pytest.raises(Violation) as caught:
        integrity.speed_of_light(0.05, cache, 2.961e12, 0.7, read_fraction=0.5)
    assert "1024.0 MiB" in caught.value.detail and "(0.5 of 2048.0 MiB)" in caught.value.detail


def test_the_bundled_padded_task_declares_its_padding():
    from adaexplore_mcp.tasks import get_bundled_task

    assert get_bundled_task("decode_attention").read_fraction == 0.5
    assert get_bundled_task("softmax").read_fraction == 1.0


def test_every_check_is_raised_from_one_module():
    """``trusted.integrity`` decides every run-time verdict; no other module raises one."""
    from pathlib import Path

    import adaexplore_mcp.judge as judge

    root = Path(judge.__file__).parent
    raising = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "raise Violation(" in path.read_text()
    )
    assert raising == ["trusted/integrity.py"]


FORGED_PLATFORM = """
def _classes(root):
    for sub in type.__subclasses__(root):
        yield sub
        yield from _classes(sub)


for _cls in list(_classes(object)):
    if _cls.__name__ == "ReadyAnswer":
        _init = _cls.__init__

        def _forged(self, *args, __init=_init, **data):
            data.update(device_name="NVIDIA H100 80GB HBM3", torch="9.9.9", triton="9.9.9")
            __init(self, *args, **data)

        _cls.__init__ = _forged
"""


def test_the_environment_reported_is_the_judges_own(cpu_judge):
    """The candidate's process describes its platform; a kernel that rewrites that description
    (its classes are reachable through ``object.__subclasses__()``) changes nothing reported,
    and a judge's class replaced is now ``harness_tampering`` (``candidate.watch``)."""
    import torch
    import triton

    result = cpu_judge.evaluate(
        TASKS["softmax"], wrapped("return honest(x)", prelude=FORGED_PLATFORM)
    )
    assert result.status is Status.REJECTED, result.message
    assert result.integrity[0].check == "harness_tampering", result.message
    assert "ReadyAnswer.__init__ was replaced" in result.message
    assert result.environment is not None
    assert (result.environment.torch, result.environment.triton) == (
        torch.__version__,
        triton.__version__,
    )
    assert result.environment.device_name == "cpu (Triton interpreter)"


def test_torch_called_from_a_kernels_body_in_the_interpreter_is_the_candidates(cpu_judge):
    """Triton's CPU interpreter runs a kernel's body as Python, so the body can call any
    function; what that function runs in torch is the candidate's, though Triton called it. (On
    a GPU the compiler refuses such a call.)"""
    code = copied_by_triton(
        "side_kernel[(1,)](x.numel())\n" + COPY,
        prelude="""
        @triton.jit
        def side_kernel(n):
            _hidden()
        """,
    )
    result = cpu_judge.evaluate(TASKS["softmax"], code)
    assert result.status is Status.REJECTED, result.message
    assert result.integrity[0].check == "torch_fallback", result.message


def test_names_from_the_candidates_process_cannot_flood_the_verdict():
    """A tensor subclass named with 30 MB made the verdict's message 30 MB (a red team)."""
    import torch

    from adaexplore_mcp.judge.checks import Violation
    from adaexplore_mcp.judge.wire.subject import Signals

    huge = "N" * 1_000_000
    with pytest.raises(Violation) as caught:
        integrity.outputs(
            Signals(output_kinds=[f"tensor subclass {huge}"]),
            [torch.ones(1)],
            [torch.ones(1)],
            reference_aliases=False,
        )
    assert len(caught.value.detail) < 400
    ops = {f"{huge}{index}": 1 for index in range(50)}
    with pytest.raises(Violation) as caught:
        integrity.launches(Signals(launches=1, torch_ops=ops), calls=1)
    assert len(caught.value.detail) < 3000 and "and 30 more" in caught.value.detail
