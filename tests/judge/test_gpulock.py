"""The GPU readers-writer lock, across real processes."""

import multiprocessing as mp
import os
import time

from adaexplore_mcp.judge.trusted.gpulock import GpuLock


def _hold(base: str, mode: str, seconds: float, log, started) -> None:
    lock = GpuLock(base)
    started.set()
    with getattr(lock, mode)():
        log.put((mode, "in", time.monotonic()))
        time.sleep(seconds)
        log.put((mode, "out", time.monotonic()))


def _run(base, plan):
    ctx = mp.get_context("fork")
    log = ctx.Queue()
    procs = []
    for mode, hold, delay in plan:
        started = ctx.Event()
        proc = ctx.Process(target=_hold, args=(base, mode, hold, log, started))
        proc.start()
        started.wait()
        procs.append(proc)
        time.sleep(delay)
    for proc in procs:
        proc.join(20)
    events = []
    while not log.empty():
        events.append(log.get())
    return sorted(events, key=lambda e: e[2])


def test_readers_share_and_a_writer_excludes_them(tmp_path):
    base = str(tmp_path / "gpu")
    events = _run(base, [("shared", 0.6, 0.1), ("shared", 0.6, 0.1), ("exclusive", 0.3, 0.0)])
    order = [(mode, what) for mode, what, _ in events]
    # both readers are inside together; the writer enters only after both left
    assert order[:2] == [("shared", "in"), ("shared", "in")]
    writer_in = order.index(("exclusive", "in"))
    assert order[writer_in - 2 : writer_in] == [("shared", "out"), ("shared", "out")]


def test_a_waiting_writer_keeps_new_readers_out(tmp_path):
    base = str(tmp_path / "gpu")
    events = _run(base, [("shared", 0.8, 0.2), ("exclusive", 0.3, 0.2), ("shared", 0.1, 0.0)])
    order = [(mode, what) for mode, what, _ in events]
    writer_out = order.index(("exclusive", "out"))
    late_reader_in = len(order) - 1 - order[::-1].index(("shared", "in"))
    assert late_reader_in > writer_out


def test_a_killed_holder_releases_the_lock(tmp_path):
    base = str(tmp_path / "gpu")
    ctx = mp.get_context("fork")
    started = ctx.Event()
    holder = ctx.Process(target=_hold, args=(base, "exclusive", 60, ctx.Queue(), started))
    holder.start()
    started.wait()
    time.sleep(0.2)
    holder.kill()
    holder.join()
    begun = time.monotonic()
    with GpuLock(base).exclusive():
        pass
    assert time.monotonic() - begun < 2


def _exclusive_wait(base: str, go, log) -> None:
    go.wait()
    with GpuLock(base).exclusive():
        log.put(time.monotonic())  # one clock for every process of the machine


def test_a_shared_hold_let_go_lets_a_writer_in_and_is_taken_back_after_it(tmp_path):
    # the trusted process lets the lock go while the candidate compiles, then takes it again
    base = str(tmp_path / "gpu")
    ctx = mp.get_context("fork")
    log = ctx.Queue()
    go = [ctx.Event(), ctx.Event()]
    # forked before the hold: a child would inherit the held descriptor, and with it the lock
    writers = [ctx.Process(target=_exclusive_wait, args=(base, g, log)) for g in go]
    for writer in writers:
        writer.start()
    with GpuLock(base).shared() as hold:
        go[0].set()
        time.sleep(0.3)
        assert log.empty()  # held: the writer waits
        let_go = time.monotonic()
        hold.let_go()
        hold.let_go()  # idempotent
        assert not hold.held
        writers[0].join(5)
        assert log.get(timeout=1) >= let_go  # in once it was let go, not before
        hold.take()
        hold.take()
        assert hold.held
        go[1].set()
        time.sleep(0.3)
        assert log.empty()  # taken back: writers wait again
        released = time.monotonic()
    writers[1].join(5)
    assert log.get(timeout=1) >= released


def test_a_shared_hold_counts_its_wait_for_the_lock(tmp_path):
    """``SharedHold.waited_s`` (an evaluation's ``phases.gpu_wait_s``): the time its takes
    waited for another evaluation's timing, and nothing when the lock was free."""
    base = str(tmp_path / "gpu")
    with GpuLock(base).shared() as hold:
        assert hold.waited_s < 0.1
    ctx = mp.get_context("fork")
    log, started = ctx.Queue(), ctx.Event()
    writer = ctx.Process(target=_hold, args=(base, "exclusive", 0.5, log, started))
    writer.start()
    started.wait()
    lock = GpuLock(base)
    deadline = time.monotonic() + 10
    while (probe := lock.try_shared()) is not None:  # until the writer holds it
        os.close(probe)
        assert time.monotonic() < deadline
        time.sleep(0.005)
    with lock.shared() as hold:
        assert 0.2 < hold.waited_s < 2
        waited = hold.waited_s
        hold.let_go()
        hold.take()  # free now: nothing more
        assert hold.waited_s - waited < 0.1
    writer.join(5)
