"""The options of an evaluation are one list: the typed keywords, the plain-data part and the
model that crosses to the judge service and the Ray actors agree, and the service's request
keeps its flat JSON."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from adaexplore_mcp.judge import EvalOptions, EvalParams, LazyJudge, WireEvalOptions
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.service.api import EvaluateRequest, TaskPayload


def test_the_wire_model_carries_every_option_but_the_callback() -> None:
    assert set(EvalParams.__annotations__) == set(WireEvalOptions.model_fields)
    assert set(EvalOptions.__annotations__) - set(EvalParams.__annotations__) == {"on_progress"}


def test_options_cross_and_come_back_unchanged() -> None:
    options: EvalOptions = {
        "device": "cpu",
        "timeout_s": 12.5,
        "on_progress": lambda phase, elapsed: None,
        "precision": Precision.TF32,
        "ops": Ops.MIXED,
    }
    sent = WireEvalOptions.of(options)
    back = WireEvalOptions.model_validate_json(sent.model_dump_json()).params()
    assert back == {"device": "cpu", "timeout_s": 12.5, "precision": "tf32", "ops": "mixed"}


def test_a_misspelled_option_is_refused() -> None:
    with pytest.raises(ValidationError, match="timeout"):
        WireEvalOptions.model_validate({"timeout": 3})


def test_the_service_request_is_flat_and_keeps_its_hour() -> None:
    task = TaskPayload(name="gelu", source="x")
    request = EvaluateRequest.of({"timeout_s": 60.0, "ops": Ops.TRITON}, task=task, code="k")
    assert request.model_dump(exclude_none=True) == {
        "task": {"name": "gelu", "source": "x"},
        "code": "k",
        "timeout_s": 60.0,
        "ops": "triton",
    }
    assert request.params() == {
        "device": None,
        "timeout_s": 60.0,
        "precision": None,
        "ops": "triton",
    }
    with pytest.raises(ValidationError, match="3600"):
        EvaluateRequest.of({"timeout_s": 3601.0}, task=task, code="k")
    # the local judge allows longer: the service's limit is the service's alone
    assert WireEvalOptions.of({"timeout_s": 3601.0}).timeout_s == 3601.0


class _Recording:
    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.devices = ["cpu"]

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def evaluate(self, task, code, **options):
        self.calls.append(options)
        return "verdict"


def test_the_lazy_judge_passes_every_option_on() -> None:
    inner = _Recording()
    lazy = LazyJudge(inner)  # type: ignore[arg-type]

    def progress(phase, elapsed):
        return None

    task = object()  # passed through untouched
    answer = asyncio.run(
        lazy.evaluate(
            task,  # type: ignore[arg-type]
            "k",
            device="cpu",
            timeout_s=5,
            on_progress=progress,
            precision=Precision.STRICT,
        )
    )
    assert answer == "verdict" and lazy.started
    assert inner.calls == [
        {"device": "cpu", "timeout_s": 5, "on_progress": progress, "precision": Precision.STRICT}
    ]
