"""``ADAEXPLORE_DEBUG_SPANS``: a line a timed span, each step's own host time (a diagnostic for
the judge's cost per evaluation: ``notes/trusted-judge-h200.md``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from adaexplore_mcp.judge.trusted.diagnostics import span_steps


class _Clock:
    """Moves only when told: each step below takes a known time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def take(self, ms: float) -> None:
        self.now += ms / 1e3


class _Timer:
    """A span timer's steps, each taking its time on the clock; the calibration arms the null
    subject and waits for the GPU inside itself, as ``SpanTimer._handoff`` does."""

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.inputs = SimpleNamespace(stage=lambda sets: clock.take(1))

    def _armed(self, link, patience_s=None):
        self.clock.take(20 if link.role == "candidate" else 2)

    def _wait(self, event, done_word):
        self.clock.take(8)

    def _settle(self):
        self.clock.take(3)

    def _handoff(self):
        self.clock.take(0.5)
        self._armed(SimpleNamespace(role="calibrator"))
        self._wait(None, 0)

    def span(self, sets):
        self.inputs.stage(sets)
        self._armed(SimpleNamespace(role="candidate"))
        self._wait(None, 0)
        self._settle()
        self._handoff()
        self.clock.take(4)  # what no step covers: the release, say


def test_a_span_prints_each_steps_own_time(capsys):
    clock = _Clock()
    timer = _Timer(clock)
    checked = []
    fresh_sets, check = span_steps(
        {"ADAEXPLORE_DEBUG_SPANS": "1"},
        timer,
        lambda count: clock.take(7) or [count],
        lambda *args: clock.take(14) or checked.append(args),
        clock=clock,
    )
    for _ in range(2):
        sets = fresh_sets(13)
        timer.span(sets)
        check(sets, "result", 0)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    steps = dict(item.split("=") for item in lines[0].split(": ", 1)[1].split())
    assert steps == {
        "fresh_sets": "7.0",
        "staging": "1.0",
        "candidate_arming": "20.0",
        "gpu_waits": "16.0",  # the span's and the calibration's
        "settle": "3.0",
        "calibrator_arming": "2.0",
        "calibration": "0.5",  # its own, without the arming and the wait inside it
        "check": "14.0",
        "total": "67.5",
        "other": "4.0",
    }, lines[0]
    assert len(checked) == 2  # the check itself still ran


@pytest.mark.parametrize("env", [{}, {"ADAEXPLORE_DEBUG_SPANS": "0"}])
def test_unset_nothing_is_wrapped_or_printed(capsys, env):
    timer = _Timer(_Clock())
    armed = timer._armed
    fresh_sets, check = span_steps(env, timer, print, print)
    assert (fresh_sets, check) == (print, print)
    assert timer._armed == armed and "_armed" not in vars(timer)
    assert capsys.readouterr().out == ""


def test_the_steps_it_wraps_are_the_span_timers():
    """A step renamed in ``SpanTimer`` would fail only with the diagnostic on."""
    from adaexplore_mcp.judge.trusted.staging import SpanInputs
    from adaexplore_mcp.judge.trusted.timing import SpanTimer

    for name in ("_armed", "_wait", "_settle", "_handoff"):
        assert callable(getattr(SpanTimer, name)), name
    assert callable(SpanInputs.stage)
