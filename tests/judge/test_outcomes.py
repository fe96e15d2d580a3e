"""How a job's end becomes the judge's answer: a report that does not parse is the judge's
error, said as such, never an exception of another kind escaping to the caller."""

from __future__ import annotations

import pytest

from adaexplore_mcp.judge.exceptions import JudgeError
from adaexplore_mcp.judge.outcomes import eval_result
from adaexplore_mcp.judge.wire.jobs import ChildOutcome
from adaexplore_mcp.tasks import resolve_task


def test_a_report_that_does_not_parse_is_a_judge_error():
    # a report whose body fails EvalResult's validation (as one built from a candidate's
    # infinite profile did) raised pydantic's ValidationError, which ended a problem set's run
    outcome = ChildOutcome(end="reported", report={"kind": "eval", "body": {"status": "correct"}})
    with pytest.raises(JudgeError, match="report that does not parse"):
        eval_result(outcome, resolve_task("softmax"), "code", 60.0)
