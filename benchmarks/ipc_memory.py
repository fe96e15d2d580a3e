"""Does a kernel read inputs more slowly from memory another process shared with it?

The judge's candidate reads its timed inputs from an arena the trusted process allocated
(``cuMemAlloc``) and shared through CUDA IPC. This times a bundled solution, in a child process,
on K back-to-back calls after an L2 flush, each call on its own input set, with the K sets in:

- ``torch``: one allocation of the child's torch caching allocator;
- ``own``: one ``cuMemAlloc`` of the child's (the judge's allocation, without the sharing);
- ``ipc``: one ``cuMemAlloc`` of the parent's, opened in the child with ``cuIpcOpenMemHandle``
  (what the judge does).

    python benchmarks/ipc_memory.py --tasks cross_entropy_rows,decode_attention,add_layernorm

Prints milliseconds per call per layout, median of ``--repeats``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ALIGN = 256


def child(name: str, calls: int, handle: str, repeats: int) -> dict:
    import torch
    from fresh_inputs import packed_bytes, place, solution_and_inputs

    from adaexplore_mcp.judge.wire import cuda

    model, source = solution_and_inputs(name)
    size = packed_bytes(source, calls, ALIGN)
    own = cuda.mem_alloc(size)
    layouts = {
        "torch": torch.empty(size, dtype=torch.uint8, device="cuda"),
        "own": cuda.as_bytes(own, size),
        "ipc": cuda.as_bytes(cuda.ipc_open(bytes.fromhex(handle)), size),
    }
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
    row: dict = {"task": name, "calls": calls}
    with torch.no_grad():
        for layout, buffer in layouts.items():
            sets = place(buffer, source, calls, ALIGN)

            def run(sets=sets) -> float:
                flush.zero_()
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                start.record()
                for values in sets:
                    model(*values)
                end.record()
                end.synchronize()
                return start.elapsed_time(end) / calls

            run()
            row[layout] = statistics.median(run() for _ in range(repeats))
    return row


def parent(name: str, calls: int, repeats: int) -> dict:
    import torch

    from adaexplore_mcp.judge.wire import cuda

    sys.path.insert(0, str(Path(__file__).parent))
    from fresh_inputs import packed_bytes, solution_and_inputs

    _, source = solution_and_inputs(name)
    size = packed_bytes(source, calls, ALIGN)
    del source
    torch.cuda.empty_cache()
    pointer = cuda.mem_alloc(size)
    handle = cuda.ipc_handle(pointer).hex()
    done = subprocess.run(
        [sys.executable, __file__, "--child", name, str(calls), handle, str(repeats)],
        capture_output=True,
        text=True,
        check=True,
    )
    cuda.mem_free(pointer)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.path.insert(0, str(Path(__file__).parent))
        name, calls, handle, repeats = sys.argv[2:6]
        print(json.dumps(child(name, int(calls), handle, int(repeats))))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", default="cross_entropy_rows,decode_attention,add_layernorm")
    parser.add_argument("--calls", default="7,1,10", help="K per task, in the same order")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    for name, calls in zip(args.tasks.split(","), args.calls.split(","), strict=True):
        row = parent(name, int(calls), args.repeats)
        times = "  ".join(f"{k}={row[k]:.4f}" for k in ("torch", "own", "ipc"))
        print(f"{name:24} K={row['calls']:3d}  {times} ms/call", flush=True)


if __name__ == "__main__":
    main()
