"""How long the GPU lets one process's context run before it turns to another's.

A *watch* kernel in this process reads the GPU's global timer in a loop; while a second
process keeps a kernel of its own resident, the GPU time-slices between the two contexts and
every turn the other takes shows as a gap in the watch's readings. The gaps' lengths are the
other context's time slices (plus a context switch); their spacing is the watch's own.

The judge's settle (``trusted.hold.Hold.settle``) waits for a quiet spell longer than one
slice (``timing.settle_quiet_ms``): this is how that length was chosen.

    python benchmarks/time_slice.py [--spin-ms 20] [--watch-ms 40]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time

import torch
import triton
import triton.language as tl

from adaexplore_mcp.judge.trusted.hold import PREEMPTION_NS, global_ns

MAX_GAPS = 512  # gaps recorded; more are counted


@triton.jit
def spin_kernel(limit_ns):
    start = global_ns()
    while global_ns() - start < limit_ns:
        pass


@triton.jit
def watch_kernel(gaps_ptr, count_ptr, limit_ns, MAX: tl.constexpr, PREEMPTION: tl.constexpr):
    start = global_ns()
    previous = start
    count = 0
    while previous - start < limit_ns:
        now = global_ns()
        gap = now - previous
        if gap > PREEMPTION:
            if count < MAX:
                tl.store(gaps_ptr + 2 * count, previous - start)
                tl.store(gaps_ptr + 2 * count + 1, gap)
            count += 1
        previous = now
    tl.store(count_ptr, count)


def _spinner(ready, go, spin_ms: float) -> None:
    spin_kernel[(1,)](1000)  # compiled and loaded before the measurement
    torch.cuda.synchronize()
    ready.set()
    go.wait()
    spin_kernel[(1,)](int(spin_ms * 1e6))
    torch.cuda.synchronize()


def _watch(watch_ms: float) -> list[tuple[float, float]]:
    """(at µs, length µs) of every gap the watch saw."""
    gaps = torch.zeros(2 * MAX_GAPS, dtype=torch.int64, device="cuda")
    count = torch.zeros(1, dtype=torch.int64, device="cuda")
    watch_kernel[(1,)](
        gaps, count, int(watch_ms * 1e6), MAX=MAX_GAPS, PREEMPTION=PREEMPTION_NS, num_warps=1
    )
    torch.cuda.synchronize()
    seen = min(int(count.item()), MAX_GAPS)
    return [(at / 1e3, length / 1e3) for at, length in gaps.view(-1, 2)[:seen].tolist()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spin-ms", type=float, default=20.0)
    parser.add_argument("--watch-ms", type=float, default=40.0)
    args = parser.parse_args()
    mp.set_start_method("spawn")
    _watch(0.001)  # compiled and loaded
    print(f"{torch.cuda.get_device_name()}")
    quiet = _watch(args.watch_ms / 2)
    print(f"alone: {len(quiet)} gaps in {args.watch_ms / 2:g} ms")
    ready, go = mp.Event(), mp.Event()
    other = mp.Process(target=_spinner, args=(ready, go, args.spin_ms))
    other.start()
    ready.wait()
    go.set()
    time.sleep(0.0005)
    busy = _watch(args.watch_ms)
    other.join()
    lengths = [length for _, length in busy]
    print(
        f"another process spinning {args.spin_ms:g} ms: {len(busy)} gaps, "
        f"{sum(lengths) / 1e3:.3f} ms in all"
    )
    for at, length in busy[:16]:
        print(f"  at {at:9.1f} µs: {length:8.1f} µs")
    if lengths:
        print(f"longest {max(lengths):.1f} µs, median {statistics.median(lengths):.1f} µs")


if __name__ == "__main__":
    main()
