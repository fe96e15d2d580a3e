"""Does a kernel run slower, per call, when back-to-back calls each read inputs of their own?

The judge times K calls per span, each on a fresh input set, so a span reads K distinct input
sets. This measures, in one process (no judge, no second context), a bundled solution's time per
call in K back-to-back calls after an L2 flush:

- ``same``: all K calls read the same input set (what ``triton.testing.do_bench`` measures);
- ``fresh``: call i reads set i, and every set was rewritten just before the flush;
- ``packed``: as ``fresh``, but the sets lie one after another in a single allocation, each
  tensor at a 256-byte offset, as the judge's input arena places them;
- ``cupti``: as ``fresh``, timed by another clock: the sum of the calls' kernel durations that
  CUPTI reports through ``torch.profiler`` (GPU time only, no gaps between launches);
- ``cupti_each``: as ``cupti``, but L2 is flushed by zeroing before every call, as the judge
  (since its gate per call) and ``triton.testing.do_bench`` do; the flush's own kernel is left
  out of the sum.

``cupti_each`` is the judge's regime without its second process: ``trusted_judge.py fidelity``
compares the judge's medians with it at the judge's own K (``fresh`` and ``cupti`` are the
regime of its earlier clock, one flush a span).

Every fresh set is the task's ``get_inputs()`` under a seed of its own, never timed before, as
the judge draws a seed per set: on a task whose work depends on its inputs (decode_attention's
random sequence lengths), one set repeated would time one draw of the work, not the
distribution the judge's median comes from.

    python benchmarks/fresh_inputs.py --tasks cross_entropy_rows,softmax --calls 1,2,4,8,16

Prints one row per (task, K): milliseconds per call, median of ``--repeats``.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

from adaexplore_mcp.tasks import bundled_solution, get_bundled_task


def _module(name: str, source: str):
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


MODES = ("same", "fresh", "packed", "cupti", "cupti_each")
FLUSH_KERNEL = "zero_to_flush_l2"


@triton.jit
def zero_to_flush_l2(buffer_ptr, n, BLOCK: tl.constexpr):
    """A flush by zeroing, under a name of its own: CUPTI's records of it can be told from the
    solution's."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buffer_ptr + offsets, tl.zeros([BLOCK], dtype=tl.int32), mask=offsets < n)


def _zeroing_flush(buffer: torch.Tensor):
    """Zeroes ``buffer`` (int32) when called."""
    count = buffer.numel()

    def flush() -> None:
        zero_to_flush_l2[(triton.cdiv(count, 4096),)](buffer, count, BLOCK=4096)

    return flush


def _tensors(values: list) -> list[torch.Tensor]:
    return [v for v in values if isinstance(v, torch.Tensor)]


def packed_bytes(source: list, calls: int, alignment: int) -> int:
    """Bytes ``calls`` copies of ``source`` take laid out by ``place``."""
    sizes = [t.untyped_storage().nbytes() for t in _tensors(source)]
    return calls * sum(-(-size // alignment) * alignment for size in sizes)


def place(buffer: torch.Tensor, source: list, calls: int, alignment: int) -> list[list]:
    """``calls`` copies of ``source`` one after another in ``buffer`` (uint8, aligned), each
    tensor at an aligned offset, as the judge's input arena places them."""
    sets, offset = [], 0
    for _ in range(calls):
        values = []
        for value in source:
            if not isinstance(value, torch.Tensor):
                values.append(value)
                continue
            size = value.untyped_storage().nbytes()
            raw = buffer[offset : offset + size]
            values.append(raw.view(value.dtype).view(value.shape).copy_(value))
            offset += -(-size // alignment) * alignment
        sets.append(values)
    return sets


def _packed_sets(sources: list[list], alignment: int) -> list[list]:
    """Copies of ``sources`` one after another in a single allocation of torch's (``place``)."""
    step = packed_bytes(sources[0], 1, alignment)
    buffer = torch.empty(len(sources) * step + alignment, dtype=torch.uint8, device="cuda")
    base = -(-buffer.data_ptr() // alignment) * alignment - buffer.data_ptr()
    return [
        place(buffer[base + i * step :], source, 1, alignment)[0]
        for i, source in enumerate(sources)
    ]


def solution_and_inputs(name: str) -> tuple[Any, list]:
    """The bundled solution of task ``name`` on the GPU, and one input set of its main shape."""
    task, model = task_and_solution(name)
    return model, input_sets(task, 1)[0]


def task_and_solution(name: str) -> tuple[Any, Any]:
    """Task ``name``'s module, and its bundled solution's model on the GPU."""
    task = _module(f"task_{name}", get_bundled_task(name).source)
    solution = _module(f"solution_{name}", bundled_solution(name) or "")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = solution.ModelNew(*task.get_init_inputs())
    return task, (model.cuda() if isinstance(model, torch.nn.Module) else model)


def input_sets(task: Any, count: int, first_seed: int = 0) -> list[list]:
    """``count`` input sets of the task's main shape on the GPU, drawn under seeds
    ``first_seed``, ``first_seed + 1``, ..."""
    sets = []
    for seed in range(first_seed, first_seed + count):
        torch.manual_seed(seed)
        with torch.device("cuda"):
            sets.append([v.cuda() if isinstance(v, torch.Tensor) else v for v in task.get_inputs()])
    return sets


def kernel_ms(model, sets: list[list], calls: int, flush_each=None) -> float:
    """Per call, the GPU time of the kernels ``calls`` calls launch, as CUPTI timed them;
    with ``flush_each``, run before every call and left out of the sum."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for index in range(calls):
            if flush_each is not None:
                flush_each()
            model(*sets[index])
        torch.cuda.synchronize()
    device_us = sum(
        event.device_time
        for event in prof.events()
        if event.device_type == torch.autograd.DeviceType.CUDA and FLUSH_KERNEL not in event.name
    )
    return device_us / 1e3 / calls


def measure(
    name: str, counts: list[int], repeats: int, budget_bytes: int, modes=MODES
) -> list[dict]:
    task, model = task_and_solution(name)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
    flush_each = _zeroing_flush(flush)
    rows = []
    for calls in counts:
        sources = input_sets(task, calls)
        set_bytes = sum(t.untyped_storage().nbytes() for t in _tensors(sources[0]))
        if 2 * calls * set_bytes > budget_bytes:
            break
        sets = [[v.clone() if isinstance(v, torch.Tensor) else v for v in s] for s in sources]
        layouts = {"packed": _packed_sets(sources, 256)} if "packed" in modes else {}

        seeds = itertools.count(calls)

        def run(mode: str, sets=sets, calls=calls, layouts=layouts, seeds=seeds) -> float:
            if mode in layouts:
                sets = layouts[mode]
            if mode in ("fresh", "packed", "cupti", "cupti_each"):  # seeds never timed before
                drawn = input_sets(task, calls, first_seed=next(seeds) * calls)
                for values, source in zip(sets, drawn, strict=True):
                    for target, value in zip(_tensors(values), _tensors(source), strict=True):
                        target.copy_(value)
                del drawn
            flush.zero_()
            if mode == "cupti":
                return kernel_ms(model, sets, calls)
            if mode == "cupti_each":
                return kernel_ms(model, sets, calls, flush_each)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for index in range(calls):
                model(*(sets[0] if mode == "same" else sets[index]))
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / calls

        with torch.no_grad():
            for mode in modes:
                run(mode)  # compile, and first touches
            row = {"task": name, "calls": calls, "set_mib": set_bytes / 2**20}
            for mode in modes:
                row[mode] = statistics.median(run(mode) for _ in range(repeats))
        rows.append(row)
        times = "  ".join(f"{mode}={row[mode]:.4f}" for mode in modes)
        print(f"{name:20} K={calls:3d} set={row['set_mib']:7.1f} MiB  {times} ms/call", flush=True)
        del sets, sources, layouts
        torch.cuda.empty_cache()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", default="cross_entropy_rows,softmax,sum_rows")
    parser.add_argument("--calls", default="1,2,4,8,16")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--budget-gib", type=float, default=40.0)
    args = parser.parse_args()
    counts = [int(c) for c in args.calls.split(",")]
    for name in args.tasks.split(","):
        measure(name, counts, args.repeats, int(args.budget_gib * 2**30))


if __name__ == "__main__":
    main()
