"""The candidate's first signals about threads: a native thread counts only while it runs."""

from __future__ import annotations

import threading

from adaexplore_mcp.judge.candidate.signals import _native_thread_count, _native_threads_stay_above


def _running(seconds: float) -> threading.Thread:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, args=(seconds,), daemon=True)
    thread.start()
    return thread


def test_a_thread_that_ends_within_the_settling_time_is_not_counted() -> None:
    # an OpenMP team of a joined Python thread leaves /proc a few milliseconds after forward
    before = _native_thread_count()
    thread = _running(0.02)
    assert _native_thread_count() > before
    assert not _native_threads_stay_above(before)
    thread.join()


def test_a_thread_that_keeps_running_is_counted() -> None:
    before = _native_thread_count()
    thread = _running(1.0)
    assert _native_threads_stay_above(before, settle_s=0.05)
    thread.join()
