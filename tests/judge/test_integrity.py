"""The exploit regression suite: every known way to fake a result is rejected by the check
named for it, with a reason an agent can act on; honest kernels are not."""

from __future__ import annotations

import random

import pytest
import torch

from adaexplore_mcp.config import IntegritySettings, JudgeSettings
from adaexplore_mcp.judge import Status
from adaexplore_mcp.judge.compare import Comparison
from adaexplore_mcp.judge.errors import Violation
from adaexplore_mcp.judge.timed_checks import (
    TimedAudit,
    check_side_streams,
    check_speed_of_light,
)
from adaexplore_mcp.tasks import get_bundled_task, parse_task

from .exploits import EXPLOITS, IDENTITY_TASK, Exploit, touching, wrapped

TASKS = {
    "softmax": get_bundled_task("softmax"),
    "identity": parse_task(IDENTITY_TASK, name="identity"),
}


@pytest.mark.parametrize("exploit", [e for e in EXPLOITS if not e.gpu_only], ids=lambda e: e.name)
def test_every_exploit_is_rejected_by_its_check(cpu_judge, exploit: Exploit):
    result = cpu_judge.evaluate(TASKS[exploit.task], exploit.code)
    assert result.status is Status.REJECTED, f"{exploit.name}: {result.message}"
    assert result.integrity[0].check == exploit.check, result.message
    assert result.message.startswith(f"Rejected by the {exploit.check} check: ")
    assert not result.correctness.mismatch


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
    """An output the kernel never writes holds the judge's poison, not a previous answer."""
    code = touching("torch.empty_like(x)")
    result = cpu_judge.evaluate(TASKS["softmax"], code)
    assert result.status is Status.INCORRECT
    assert result.correctness.mismatch.kind in ("nonfinite", "values")


def test_the_guard_can_be_turned_off_for_measuring_its_cost(unguarded_judge):
    result = unguarded_judge.evaluate(TASKS["softmax"], EXPLOITS[0].code)  # torch only
    assert result.status is Status.CORRECT


def test_an_impossible_speedup_is_measured_against_the_bandwidth():
    settings = IntegritySettings()
    gib = 2**30
    check_speed_of_light(0.30, gib, 4e12, settings)  # 0.27 ms needed: plausible
    with pytest.raises(Violation) as caught:
        check_speed_of_light(0.05, gib, 4e12, settings)
    assert caught.value.check == "impossible_speedup"
    assert "1024.0 MiB" in caught.value.detail and "4000 GB/s" in caught.value.detail


def test_work_left_on_a_side_stream_is_hidden_work():
    settings = IntegritySettings()
    check_side_streams(0.008, 0.5, settings)  # 8 µs after a 500 µs call: a sync's own cost
    with pytest.raises(Violation) as caught:
        check_side_streams(0.4, 0.01, settings)
    assert caught.value.check == "hidden_work"


def test_the_timed_audit_catches_an_answer_stored_for_the_timing_inputs():
    """The cheat the first version of the audit missed: one perturbed element of an
    8192-wide softmax row moved the output by less than the tolerance."""
    x = torch.randn(64, 8192)
    stored = torch.softmax(x, -1)
    comparison = Comparison(JudgeSettings().tolerances, None)
    for answer, caught in ((lambda: stored, True), (lambda: torch.softmax(x, -1), False)):
        audit = TimedAudit([x], random.Random(0), IntegritySettings(), min_runs=5)
        for index in range(5):
            audit.before(index)
            audit.after(index, answer())
        if caught:
            with pytest.raises(Violation) as violation:
                audit.verify(lambda args: torch.softmax(args[0], -1), comparison, "main")
            assert violation.value.check == "timed_output"
        else:
            audit.verify(lambda args: torch.softmax(args[0], -1), comparison, "main")
