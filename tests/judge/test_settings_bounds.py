"""Settings that reach setrlimit, a sleep or the body limit are finite and bounded: out of
range they are refused when the settings are read, with the field named, rather than crashing
a worker or a service later and blaming the kernel or the task (a red team)."""

from __future__ import annotations

import pydantic
import pytest

from adaexplore_mcp.judge.request import WireEvalOptions
from adaexplore_mcp.judge.settings import (
    JudgeSettings,
    RemoteJudgeSettings,
    SandboxSettings,
    ServiceSettings,
)


@pytest.mark.parametrize(
    ("model", "field", "value"),
    [
        (SandboxSettings, "cpu_time_factor", float("inf")),  # the worker died on its JSON null
        (SandboxSettings, "memory_limit_mb", 256),  # the judge's own setup ran out of memory
        (SandboxSettings, "memory_limit_mb", 10**20),  # setrlimit overflowed
        (SandboxSettings, "cache_limit_mb", 10**20),
        (SandboxSettings, "max_processes", 10**20),
        (SandboxSettings, "answer_limit_mb", 10**6),
        (RemoteJudgeSettings, "backoff_s", float("inf")),  # a client slept forever
        (RemoteJudgeSettings, "retries", 100_000),  # doubling delays for days
        (RemoteJudgeSettings, "connect_timeout_s", float("nan")),
        (ServiceSettings, "max_body_mb", float("inf")),  # judge serve died with OverflowError
        (JudgeSettings, "trials", 10**6),  # the evaluation timed out, told as a slow task
        (JudgeSettings, "odd_trials", 10**6),
    ],
)
def test_a_setting_out_of_range_is_refused_when_read(model, field, value):
    with pytest.raises(pydantic.ValidationError) as caught:
        model(**{field: value})
    assert field in str(caught.value)


@pytest.mark.parametrize("timeout_s", [1e-300, 0.05])
def test_a_request_asks_for_at_least_a_second(timeout_s):
    """The service and the MCP tools took 1e-300 s and told the kernel to look for an endless
    loop; the command line already asked for at least one second."""
    with pytest.raises(pydantic.ValidationError):
        WireEvalOptions(timeout_s=timeout_s)


@pytest.mark.parametrize("field", ["trials", "odd_trials"])
def test_trials_run_up_to_a_hundred(field):
    assert getattr(JudgeSettings(**{field: 100}), field) == 100
    with pytest.raises(pydantic.ValidationError):
        JudgeSettings(**{field: 101})


@pytest.mark.parametrize("field", ["trials", "odd_trials"])
def test_a_job_holds_the_same_bound(field):
    """A second guard: a job built around the settings (``reeval`` did) is refused where the
    trusted process reads it."""
    from adaexplore_mcp.judge.wire.jobs import ChildJob

    with pytest.raises(pydantic.ValidationError):
        ChildJob.model_validate_json(f'{{"kind": "eval", "device": "cpu", "{field}": 101}}')
