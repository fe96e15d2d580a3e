"""How an exception out of a Ray actor reaches the caller (``judge.cluster.raycalls``)."""

from __future__ import annotations

import pytest

from adaexplore_mcp.judge import JudgeError
from adaexplore_mcp.judge.cluster.raycalls import translated

exceptions = pytest.importorskip("ray.exceptions", reason="needs Ray: pip install '.[ray]'")


def test_an_unexpected_error_becomes_a_judge_error_naming_what_failed() -> None:
    answer = translated(RuntimeError("the actor's disk is full\ntraceback..."), "an actor failed")
    assert isinstance(answer, JudgeError)
    assert str(answer) == "an actor failed: the actor's disk is full"


def test_a_lost_actor_and_the_judge_s_own_errors_are_passed_on_as_they_are() -> None:
    lost = exceptions.RayActorError()
    assert translated(lost, "an actor failed") is lost
    refused = ValueError("unknown device")
    assert translated(refused, "an actor failed") is refused
