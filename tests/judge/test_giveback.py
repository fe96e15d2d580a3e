"""Memory a job leaves is given back when the GPU lock is free, and never keeps the resident
trusted process from reading its next order while another worker times (``trusted.giveback``)."""

from __future__ import annotations

import socket
import threading
import time

import torch

from adaexplore_mcp.judge.trusted.giveback import IDLE_S, Giveback
from adaexplore_mcp.judge.trusted.gpulock import GpuLock
from adaexplore_mcp.judge.trusted.resident import Resident
from adaexplore_mcp.judge.wire.jobs import ResidentOrder

KIB = 1024


class FakeArena:
    def __init__(self, size: int) -> None:
        self.size = size
        self.freed_at: float | None = None

    def free(self) -> None:
        self.freed_at = time.monotonic()


class Cache:
    def __init__(self, cached: int = 0) -> None:
        self.cached = cached
        self.emptied = 0

    def empty(self) -> None:
        self.emptied += 1
        self.cached = 0


def _giveback(lock: GpuLock | None, cache: Cache, limit: int = 10 * KIB) -> Giveback:
    return Giveback(
        lock, limit_bytes=limit, cached_bytes=lambda: cache.cached, empty_cache=cache.empty
    )


def _timing_elsewhere(base: str, seconds: float) -> threading.Event:
    """Another worker's timing: the lock held exclusively for ``seconds``, from another open
    file (flock locks belong to the open file, so a thread stands in for a process)."""
    holding = threading.Event()

    def hold() -> None:
        with GpuLock(base).exclusive():
            holding.set()
            time.sleep(seconds)

    threading.Thread(target=hold, daemon=True).start()
    assert holding.wait(5)
    return holding


def test_a_free_lock_gets_everything_back_at_once(tmp_path):
    cache, arena = Cache(cached=4 * KIB), FakeArena(KIB)
    giveback = _giveback(GpuLock(str(tmp_path / "gpu")), cache)
    giveback.owe([arena], cache=True)
    assert giveback.owed_bytes() == 5 * KIB
    assert giveback.settle() is True
    assert arena.freed_at is not None and cache.emptied == 1
    assert not giveback.owed


def test_a_timing_elsewhere_leaves_it_owed_without_waiting(tmp_path):
    base = str(tmp_path / "gpu")
    cache, arena = Cache(cached=4 * KIB), FakeArena(KIB)
    giveback = _giveback(GpuLock(base), cache)
    giveback.owe([arena], cache=True)
    _timing_elsewhere(base, 1.5)
    began = time.monotonic()
    assert giveback.settle() is False
    assert time.monotonic() - began < 0.5
    assert arena.freed_at is None and cache.emptied == 0 and giveback.owed
    # waiting, it is given back once the timing is over, and not before
    assert giveback.settle(wait=True) is True
    assert arena.freed_at is not None and arena.freed_at - began > 1.0
    assert cache.emptied == 1


def test_more_than_the_limit_owed_waits_for_the_lock(tmp_path):
    base = str(tmp_path / "gpu")
    cache, large = Cache(), FakeArena(64 * KIB)
    giveback = _giveback(GpuLock(base), cache, limit=16 * KIB)
    giveback.owe([large])
    _timing_elsewhere(base, 1.0)
    began = time.monotonic()
    assert giveback.settle() is True
    assert large.freed_at is not None and large.freed_at - began > 0.5


def test_without_a_lock_nothing_waits(tmp_path):
    cache, arena = Cache(cached=KIB), FakeArena(KIB)
    giveback = _giveback(None, cache, limit=0)
    giveback.owe([arena], cache=True)
    assert giveback.settle() is True
    assert arena.freed_at is not None and cache.emptied == 1


def _send(sock: socket.socket, order: ResidentOrder) -> None:
    socket.send_fds(sock, [order.model_dump_json().encode()], [])


def test_the_resident_reads_its_next_order_while_another_worker_times(tmp_path):
    """A reaped job's arenas are owed, not freed under a blocking wait: the trusted process
    goes on to its next order while the lock is held elsewhere, and frees them once it has
    been idle with the lock free."""
    base = str(tmp_path / "gpu")
    ours, theirs = socket.socketpair()
    resident = Resident(theirs, None, torch.device("cpu"), base, kept_bytes=64 * KIB)
    arenas = [FakeArena(KIB), FakeArena(KIB)]
    resident.unfreed[3] = arenas  # type: ignore[assignment]
    resident.unfreed[4] = [later := FakeArena(KIB)]  # type: ignore[list-item]
    served = threading.Thread(target=resident.serve, daemon=True)
    served.start()
    _timing_elsewhere(base, 3.0)
    began = time.monotonic()
    _send(ours, ResidentOrder(kind="reaped", seq=3))
    # the next order is read at once: the loop is back waiting on its socket, arenas owed
    deadline = time.monotonic() + 1.0
    while not resident.giveback.owed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert resident.giveback.owed and not resident.unfreed.keys() - {4}
    _send(ours, ResidentOrder(kind="reaped", seq=3))
    time.sleep(0.3)
    assert all(arena.freed_at is None for arena in arenas)
    assert time.monotonic() - began < 2.5  # both orders read with the lock still held
    # once the timing is over and no order comes, what is owed is given back
    deadline = time.monotonic() + 5
    while any(arena.freed_at is None for arena in arenas) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(arena.freed_at is not None and arena.freed_at - began > 2.5 for arena in arenas)
    assert later.freed_at is None and 4 in resident.unfreed  # not reaped: never freed early
    ours.close()
    served.join(5)
    assert not served.is_alive()
    assert IDLE_S < 1.0
