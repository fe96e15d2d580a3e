"""The trusted judge on a GPU: its clock against do_bench, its spread, its throughput, its cost.

    python benchmarks/trusted_judge.py smoke      --device cuda:0
    python benchmarks/trusted_judge.py fidelity   --device cuda:0 --repeats 3 --out fidelity.json
    python benchmarks/trusted_judge.py throughput --device cuda:0 --workers 4 --out t.json
    python benchmarks/trusted_judge.py cost       --device cuda:0 --out cost.json
    python benchmarks/trusted_judge.py sol        --device cuda:0 --out sol.json
    python benchmarks/trusted_judge.py do-bench-spread --repeats 3 --out spread.json

- ``fidelity``: every bundled solution judged ``--repeats`` times (baselines cached first); its
  median runtime against timers in this process: ``triton.testing.do_bench`` on the same
  kernel (its median, calls cycling through 8 seeded input sets, L2 flushed before every call:
  as shipped, by zeroing a buffer, and with a flush that reads it and leaves L2 clean), the
  judge's own quantity timed by do_bench (K back-to-back calls, each on an input set of its
  own, after do_bench's one flush, at the judge's K), the same quantity without do_bench
  and without the judge's second process (``fresh_inputs.py``: K back-to-back calls
  on fresh inputs after one flush, at the judge's K), and CUPTI's kernel durations in that
  regime; and the spread (max/min - 1) of the repeated medians, quiet and while other
  evaluations keep the judge's other workers busy.
- ``throughput``: every bundled solution, ``--passes`` times, all submitted at once to one judge
  with ``--workers`` workers, once every worker has run one evaluation (not counted; a worker
  starts its trusted processes on its first job); evaluations per minute.
- ``cost``: the bundled solutions one at a time on one worker; seconds per evaluation by phase.
- ``do-bench-spread``: ``triton.testing.do_bench`` (as in ``fidelity``) in ``--repeats`` fresh
  processes a task, one after another, as the judge starts a fresh candidate process for every
  evaluation: the spread (max/min - 1) a timer in the kernel's own process shows between
  processes, next to the judge's in ``fidelity``.
- ``sol``: the bundled solutions once each; their speed of light (the task's FLOPs and bytes,
  achieved and measured-peak bandwidth and FLOP/s, the fractions and the binding limit).

Uses only the judge's public API, so the same script measures an older checkout of the
project for a before/after comparison: run it from that checkout's root with it first on
PYTHONPATH. (Before the workers were started with ``-P``, a worker took the package from the
working directory whatever PYTHONPATH said.) Prints a table last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adaexplore_mcp.judge import EvalResult, LocalJudge

try:
    from adaexplore_mcp.judge.settings import JudgeSettings
except ImportError:  # the in-process judge (dab6669 and before), run from its own root: the A/B
    from adaexplore_mcp.config import JudgeSettings  # type: ignore[no-redef,attr-defined,unused-ignore]
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task, solution_names


def solution(name: str) -> str:
    code = bundled_solution(name)
    if code is None:
        raise SystemExit(f"the task {name!r} has no bundled solution")
    return code


PID_NAMESPACE = True
TIMEOUT_S = 600.0
BASELINES = True
TIMING: dict[str, str] = {}  # --timing overrides of the judge's TimingSettings
SANDBOX: dict[str, str] = {}  # --sandbox overrides of its SandboxSettings


def overridden(model: Any, fields: dict[str, str]) -> Any:
    """``model`` with ``fields`` set from the command line ('none' for None)."""
    values = {key: None if value.lower() == "none" else value for key, value in fields.items()}
    return model.model_validate(model.model_dump() | values)


def judge_for(
    device: str,
    workers: int,
    home: Path,
    timing: dict[str, str] | None = None,
    sandbox: dict[str, str] | None = None,
    *,
    first_signals: bool = True,
) -> LocalJudge:
    """A judge with the command line's overrides, or with ``timing`` and ``sandbox``'s;
    ``first_signals`` off: no audit hook or recorders in the candidate's process."""
    settings = JudgeSettings(device=device, workers_per_device=workers, timeout_s=TIMEOUT_S)
    settings.integrity.enabled = first_signals
    settings.timing = overridden(settings.timing, TIMING if timing is None else timing)
    settings.sandbox = overridden(settings.sandbox, SANDBOX if sandbox is None else sandbox)
    if not PID_NAMESPACE:
        settings.sandbox.pid_namespace = False
    judge = LocalJudge(settings, home=home, store=Store(home / "db.sqlite3"))
    if not BASELINES:  # timing candidates only: no speedups, so no baselines to compile

        async def no_speedups(*args: Any, **kwargs: Any) -> None:
            return None

        judge._add_speedups = no_speedups  # type: ignore[method-assign]
    return judge


async def cache_baselines(judge: LocalJudge, names: list[str]) -> None:
    if not BASELINES:
        return
    for name in names:
        await judge.baseline(get_bundled_task(name))


def row(name: str, result: EvalResult) -> dict[str, Any]:
    timing = getattr(result, "timing", None)
    return {
        "task": name,
        "status": result.status.value,
        "message": result.message[:300],
        "median_ms": result.runtime.median_ms if result.runtime else None,
        "runtime": result.runtime.model_dump() if result.runtime else None,
        "speedup_eager": result.speedup_eager,
        "phases": result.phases.model_dump(),
        "timing": timing.model_dump() if timing is not None else None,
        "integrity": [flag.model_dump() for flag in result.integrity],
    }


# -- do_bench on the same kernel, in this (trusted, our own code) process -----------------------


SEEDS = 8  # input sets do_bench cycles through: a task's work may depend on its inputs
# do_bench runs with its own defaults (25 ms of warm-up, 100 ms of calls). Longer runs time a
# compute-bound kernel at the clock the GPU's power limit allows under sustained load: on an H100
# the bundled GEMM read 0.2536 ms over 20 ms of calls at 1980 MHz, 0.2854 ms over 3 s at a
# median 1620 MHz (700 W); the judge times short bursts, as do_bench's defaults do. So every
# in-process timer starts from an idle GPU (``SETTLE_S``), not from the heat the timer before it
# left, and the SM clock is sampled while it runs.
SETTLE_S = 1.5
CLOCK_EVERY_S = 0.005


def settled(measure: Any, *args: Any, **kwargs: Any) -> tuple[Any, dict[str, float] | None]:
    """``measure(*args, **kwargs)`` after the GPU idled ``SETTLE_S``, with the SM clock (MHz)
    seen while it ran: its min and median, or None where NVML cannot be read."""
    import threading

    import torch

    torch.cuda.synchronize()
    time.sleep(SETTLE_S)
    seen: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                seen.append(torch.cuda.clock_rate())
            except Exception:  # no NVML (pynvml) here: the timing stands without the clock
                return
            time.sleep(CLOCK_EVERY_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        value = measure(*args, **kwargs)
    finally:
        stop.set()
        sampler.join()
    clock = {"min": min(seen), "median": statistics.median(seen)} if seen else None
    return value, clock


def do_bench_ms(name: str, flush: str = "write") -> float:
    """``triton.testing.do_bench``'s median over calls that cycle through ``SEEDS`` input sets.

    ``flush="write"`` is do_bench as it ships: before every call it zeroes a buffer larger than
    L2, so every call starts by writing back the lines that zeroing left dirty. ``"read"`` fills
    L2 by reading that buffer instead, with clean lines no call has to write back (what the
    judge's own flush does): the same timer without the write-back in every call."""
    import itertools

    import torch
    import triton.testing
    from fresh_inputs import input_sets, task_and_solution
    from triton import runtime

    task, model = task_and_solution(name)
    sets = itertools.cycle(input_sets(task, SEEDS))
    driver = runtime.driver.active
    shipped = driver.clear_cache
    if flush == "read":
        sink = torch.empty(1, dtype=torch.int32, device="cuda")
        driver.clear_cache = lambda cache: torch.amax(cache.view(-1), dim=0, out=sink[0])
    try:
        with torch.no_grad():
            return float(triton.testing.do_bench(lambda: model(*next(sets)), return_mode="median"))
    finally:
        driver.clear_cache = shipped


def do_bench_span_ms(name: str, calls: int) -> float:
    """``triton.testing.do_bench`` timing what the judge times: ``calls`` back-to-back calls,
    each on an input set of its own, after one flush (do_bench's, as it ships), per call."""
    import torch
    import triton.testing
    from fresh_inputs import input_sets, task_and_solution

    task, model = task_and_solution(name)
    sets = input_sets(task, calls)

    def span() -> None:
        for values in sets:
            model(*values)

    with torch.no_grad():
        total = triton.testing.do_bench(span, return_mode="median")
    return float(total) / calls


# -- the measurements ---------------------------------------------------------------------------


async def smoke(device: str, home: Path) -> dict:
    async with judge_for(device, 1, home) as judge:
        results = {}
        for name in ("softmax", "gemm_bias_relu"):
            started = time.perf_counter()
            result = await judge.evaluate(get_bundled_task(name), solution(name))
            results[name] = row(name, result) | {"wall_s": time.perf_counter() - started}
            print(name, result.status.value, result.message[:400], flush=True)
        return results


async def fidelity(
    device: str,
    home: Path,
    names: list[str],
    repeats: int,
    earlier: dict | None = None,
    save: Callable[[dict], None] = lambda out: None,
) -> dict:
    """The judge's side first, handed to ``save`` as soon as it is in (a run cut short by a
    time limit in the in-process timers keeps it: ``--from`` runs them alone), then the
    in-process timers."""
    if earlier is not None:  # the judge's side from an earlier run: the in-process timers only
        return independent_timers({name: earlier[name] for name in names if name in earlier})
    out: dict[str, Any] = {}
    async with judge_for(device, 4, home) as judge:
        await cache_baselines(judge, names)
        for name in names:
            task, code = get_bundled_task(name), solution(name)
            quiet = [await judge.evaluate(task, code) for _ in range(repeats)]
            stop = asyncio.Event()

            async def load(stop: asyncio.Event = stop, name: str = name) -> None:
                others = [n for n in names if n != name]
                index = 0
                while not stop.is_set():
                    other = others[index % len(others)]
                    await judge.evaluate(get_bundled_task(other), solution(other))
                    index += 1

            loaders = [asyncio.create_task(load()) for _ in range(3)]
            loaded = [await judge.evaluate(task, code) for _ in range(repeats)]
            stop.set()
            await asyncio.gather(*loaders)
            out[name] = {
                "quiet": [row(name, r) for r in quiet],
                "loaded": [row(name, r) for r in loaded],
            }
            print(name, [r.status.value for r in quiet + loaded], flush=True)
    save(out)
    return independent_timers(out)


def independent_timers(out: dict) -> dict:
    from fresh_inputs import measure

    for name in out:
        clocks = out[name]["clock_mhz"] = {}
        out[name]["do_bench_ms"], clocks["do_bench"] = settled(do_bench_ms, name)
        out[name]["do_bench_read_ms"], clocks["do_bench_read"] = settled(
            do_bench_ms, name, flush="read"
        )
        calls = [r["timing"]["calls_per_span"] for r in out[name]["quiet"] if r["timing"]]
        if calls:
            k = int(statistics.median(calls))
            out[name]["do_bench_span_ms"], clocks["do_bench_span"] = settled(
                do_bench_span_ms, name, k
            )
            rows, clocks["fresh_and_cupti"] = settled(
                measure,
                name,
                [k],
                repeats=15,
                budget_bytes=2**40,
                modes=("fresh", "cupti", "cupti_each"),
            )
            out[name]["fresh_ms"] = rows[0]["fresh"]
            out[name]["cupti_ms"] = rows[0]["cupti"]
            out[name]["cupti_each_ms"] = rows[0]["cupti_each"]
    return out


def _do_bench_settled(name: str) -> float:
    return settled(do_bench_ms, name)[0]


def do_bench_spread(names: list[str], repeats: int) -> dict:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    out = {}
    for name in names:
        medians = []
        for _ in range(repeats):
            with ProcessPoolExecutor(1, mp_context=context) as fresh:
                medians.append(fresh.submit(_do_bench_settled, name).result())
        out[name] = {"do_bench_ms": medians, "spread_pct": (max(medians) / min(medians) - 1) * 100}
        print(f"{name:26} {out[name]['spread_pct']:6.2f}%  {medians}", flush=True)
    return out


async def throughput(device: str, home: Path, names: list[str], workers: int, passes: int) -> dict:
    async with judge_for(device, workers, home) as judge:
        await cache_baselines(judge, names)
        # one evaluation a worker first, not counted: each worker starts its trusted processes
        # on its first job, which caching the baselines did only where they were not cached yet
        await asyncio.gather(
            *(
                judge.evaluate(get_bundled_task(names[0]), solution(names[0]))
                for _ in range(workers)
            )
        )
        jobs = [name for _ in range(passes) for name in names]
        started = time.perf_counter()
        ended: list[float] = []

        async def one(name: str) -> EvalResult:
            result = await judge.evaluate(get_bundled_task(name), solution(name))
            ended.append(time.perf_counter() - started)
            return result

        results = await asyncio.gather(*(one(n) for n in jobs))
        wall = time.perf_counter() - started
    return {
        "workers": workers,
        "evaluations": len(jobs),
        "wall_s": wall,
        "evals_per_min": len(jobs) / wall * 60,
        "steady_evals_per_min": steady_rate(sorted(ended), workers),
        "ended_s": sorted(ended),
        "rows": [row(n, r) for n, r in zip(jobs, results, strict=True)],
        "not_correct": [
            (n, r.status.value, r.message[:200])
            for n, r in zip(jobs, results, strict=True)
            if not r.ok
        ],
    }


def steady_rate(ended: list[float], workers: int) -> float | None:
    """Evaluations a minute once every worker is busy: from the first wave's last end to the
    last wave's first end, so neither the workers' start (every one compiling at once) nor the
    tail (workers idle for want of jobs) counts."""
    n = len(ended)
    if n <= 2 * workers:
        return None
    return (n - 2 * workers) / (ended[n - workers - 1] - ended[workers - 1]) * 60


async def cost(device: str, home: Path, names: list[str]) -> dict:
    async with judge_for(device, 1, home) as judge:
        await cache_baselines(judge, names)
        for name in names:  # a first pass warms the compile caches of the workers' image
            await judge.evaluate(get_bundled_task(name), solution(name))
        rows = []
        for name in names:
            started = time.perf_counter()
            result = await judge.evaluate(get_bundled_task(name), solution(name))
            rows.append(row(name, result) | {"wall_s": time.perf_counter() - started})
    keys = rows[0]["phases"].keys()
    return {
        "rows": rows,
        "mean_wall_s": statistics.fmean(r["wall_s"] for r in rows),
        "mean_phases": {k: statistics.fmean(r["phases"][k] for r in rows) for k in keys},
    }


async def sol(device: str, home: Path, names: list[str]) -> dict:
    async with judge_for(device, 1, home) as judge:
        rows = {}
        for name in names:
            result = await judge.evaluate(get_bundled_task(name), solution(name))
            rows[name] = row(name, result) | {
                "work": result.work.model_dump() if result.work else None
            }
            print(name, result.status.value, flush=True)
    return rows


def summarize_sol(out: dict) -> None:
    print(
        f"{'task':26} {'ms':>9} {'GFLOP':>8} {'MB':>8} {'GB/s':>7} {'of peak':>9} "
        f"{'TFLOP/s':>8} {'of peak':>9} {'bound':>7}  peak math"
    )
    for name, data in out.items():
        sol = (data["timing"] or {}).get("speed_of_light")
        if sol is None:
            print(f"{name:26} {data['status']}: {data['message'][:80]}")
            continue
        flops = sol["flops"] / 1e9 if sol["flops"] is not None else float("nan")
        tflop_s = sol["achieved_tflop_s"] if sol["achieved_tflop_s"] is not None else float("nan")
        peak_tf = sol["peak_tflop_s"] or float("nan")
        compute = sol["compute_fraction"] if sol["compute_fraction"] is not None else float("nan")
        print(
            f"{name:26} {data['median_ms']:9.4f} {flops:8.3g} {sol['bytes'] / 1e6:8.3g} "
            f"{sol['achieved_gb_s']:7.0f} "
            f"{sol['bandwidth_fraction']:4.0%}/{sol['peak_gb_s']:<4.0f} "
            f"{tflop_s:8.3g} {compute:4.0%}/{peak_tf:<4.0f} {sol['bound']:>7}  {sol['peak_math']}"
        )


def spread(medians: list[float]) -> float:
    """max/min - 1 of repeated medians, in percent."""
    return (max(medians) / min(medians) - 1) * 100 if medians else float("nan")


def summarize_fidelity(out: dict) -> None:
    print(
        f"{'task':26} {'judge ms':>10} {'do_bench':>10} {'ratio':>7} {'db read':>10} {'ratio':>7} "
        f"{'db span':>10} {'ratio':>7} {'fresh K':>10} {'ratio':>7} "
        f"{'CUPTI':>10} {'ratio':>7} {'CUPTI each':>10} {'ratio':>7} "
        f"{'quiet':>7} {'loaded':>7} {'K':>4} {'spans':>5} "
        f"{'handoff':>8} {'excess':>8} {'settle q/l':>13} {'db MHz min/med':>15}"
    )
    for name, data in out.items():
        quiet = [r["median_ms"] for r in data["quiet"] if r["median_ms"]]
        loaded = [r["median_ms"] for r in data["loaded"] if r["median_ms"]]
        if not quiet:
            print(f"{name:26} {data['quiet'][0]['status']}: {data['quiet'][0]['message'][:80]}")
            continue
        median = statistics.median(quiet)
        timing = data["quiet"][0]["timing"] or {}
        fresh = data.get("fresh_ms") or float("nan")
        cupti = data.get("cupti_ms") or float("nan")
        cupti_each = data.get("cupti_each_ms") or float("nan")
        read = data.get("do_bench_read_ms") or float("nan")
        span = data.get("do_bench_span_ms") or float("nan")
        clock = (data.get("clock_mhz") or {}).get("do_bench")
        mhz = f"{clock['min']:.0f}/{clock['median']:.0f}" if clock else "-"
        excess = statistics.median(
            (r["timing"] or {}).get("fill_excess_ms", float("nan")) for r in data["quiet"]
        )
        # other processes' GPU time after each span, while the judge waited for quiet
        settled = [
            statistics.median((r["timing"] or {}).get("settled_ms", float("nan")) for r in runs)
            if runs
            else float("nan")
            for runs in (data["quiet"], data["loaded"])
        ]
        print(
            f"{name:26} {median:10.4f} {data['do_bench_ms']:10.4f} "
            f"{median / data['do_bench_ms']:7.3f} {read:10.4f} {median / read:7.3f} "
            f"{span:10.4f} {median / span:7.3f} "
            f"{fresh:10.4f} {median / fresh:7.3f} "
            f"{cupti:10.4f} {median / cupti:7.3f} "
            f"{cupti_each:10.4f} {median / cupti_each:7.3f} "
            f"{spread(quiet):6.2f}% {spread(loaded):6.2f}% "
            f"{timing.get('calls_per_span', '-'):>4} {timing.get('spans', '-'):>5} "
            f"{timing.get('handoff_ms', float('nan')):8.4f} {excess:8.4f} "
            f"{settled[0]:6.3f}/{settled[1]:6.3f} {mhz:>15}"
        )
    association = handoff_association(out)
    if association is not None:
        r, slope, count = association
        print(
            f"within a task, an evaluation's median against its null subject's handoff: "
            f"r = {r:+.2f}, slope {slope:+.2f} over {count} evaluations (about -1: the null's "
            f"handoff differs from the candidate's by evaluation, and the medians carry it)"
        )
    workers = worker_bias(out)
    if len(workers) > 1:
        listed = ", ".join(f"{mean:+.2f} ({count})" for mean, count in workers)
        print(
            f"each worker's evaluations against their task's median, µs a call (evaluations): "
            f"{listed}; what a worker's calibration alone moves a median by"
        )
    scatters = [
        r["timing"]["context_scatter_ms"] * 1e3
        for data in out.values()
        for r in data["quiet"] + data["loaded"]
        if r["timing"] and r["timing"].get("context_scatter_ms") is not None
    ]
    if scatters:
        print(
            f"new contexts' handoffs lay {min(scatters):.2f}-{max(scatters):.2f} µs from each "
            f"other (sd over each worker's null panel): what a candidate's new context alone "
            f"may move its median by, every evaluation"
        )


def worker_of(r: dict) -> tuple[Any, Any]:
    """The worker an evaluation ran on, told by its null panel's reading (made once, when the
    worker starts); (None, None) without a panel."""
    return (r["timing"].get("null_offset_ms"), r["timing"].get("context_scatter_ms"))


def worker_bias(out: dict) -> list[tuple[float, int]]:
    """Per worker, the mean of its evaluations' medians less their task's median, in µs a call,
    and how many evaluations: how far each worker's calibration sits from the others'. A
    worker is told by its null panel's reading (``null_offset_ms``, ``context_scatter_ms``),
    made once when it starts."""
    deviations: dict[tuple[float, float], list[float]] = {}
    for data in out.values():
        runs = [r for r in data["quiet"] + data["loaded"] if r["median_ms"] and r["timing"]]
        if len(runs) < 2:
            continue
        middle = statistics.median(r["median_ms"] for r in runs)
        for r in runs:
            panel = worker_of(r)
            if None not in panel:
                deviations.setdefault(panel, []).append((r["median_ms"] - middle) * 1e3)
    return [(statistics.fmean(d), len(d)) for d in deviations.values()]


def handoff_association(out: dict) -> tuple[float, float, int] | None:
    """The correlation and slope of evaluations' medians on their handoffs, both centred per
    task (the kernels' own lengths taken out)."""
    handoffs: list[float] = []
    medians: list[float] = []
    for data in out.values():
        runs = [
            (r["timing"]["handoff_ms"], r["median_ms"])
            for r in data["quiet"] + data["loaded"]
            if r["median_ms"] and r["timing"]
        ]
        if len(runs) < 2:
            continue
        mean_handoff = statistics.fmean(h for h, _ in runs)
        mean_median = statistics.fmean(m for _, m in runs)
        handoffs += [h - mean_handoff for h, _ in runs]
        medians += [m - mean_median for _, m in runs]
    if len(handoffs) < 3 or not any(handoffs) or not any(medians):
        return None
    return (
        statistics.correlation(handoffs, medians),
        statistics.linear_regression(handoffs, medians).slope,
        len(handoffs),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "what", choices=["smoke", "fidelity", "throughput", "cost", "sol", "do-bench-spread"]
    )
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--tasks", default=",".join(solution_names()))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--no-pid-namespace", action="store_true")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--from",
        dest="earlier",
        type=Path,
        default=None,
        help="fidelity: take the judge's results from this earlier --out file and run only the "
        "in-process timers (of the same checkout's kernels, on the same kind of GPU).",
    )
    parser.add_argument(
        "--no-baselines",
        action="store_true",
        help="Time candidates only (no speedups): the same work as with baselines cached.",
    )
    parser.add_argument(
        "--timing",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="Override a field of the judge's TimingSettings, e.g. max_calls_per_span=1.",
    )
    parser.add_argument(
        "--sandbox",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="Override a field of the judge's SandboxSettings, e.g. cuda_connections=none.",
    )
    args = parser.parse_args()
    global PID_NAMESPACE, TIMEOUT_S, BASELINES
    TIMING.update(item.split("=", 1) for item in args.timing)
    SANDBOX.update(item.split("=", 1) for item in args.sandbox)
    PID_NAMESPACE = not args.no_pid_namespace
    TIMEOUT_S = args.timeout
    BASELINES = not args.no_baselines
    home = args.home or Path(tempfile.mkdtemp(prefix="trusted-judge-"))
    home.mkdir(parents=True, exist_ok=True)
    names = [n for n in args.tasks.split(",") if n]
    if args.what == "smoke":
        out = asyncio.run(smoke(args.device, home))
    elif args.what == "fidelity":
        earlier = json.loads(args.earlier.read_text()) if args.earlier else None

        def save(partial: dict) -> None:
            if args.out:
                args.out.write_text(json.dumps(partial, indent=1, default=str))

        out = asyncio.run(fidelity(args.device, home, names, args.repeats, earlier, save))
    elif args.what == "throughput":
        out = asyncio.run(throughput(args.device, home, names, args.workers, args.passes))
    elif args.what == "sol":
        out = asyncio.run(sol(args.device, home, names))
    elif args.what == "do-bench-spread":
        out = do_bench_spread(names, args.repeats)
    else:
        out = asyncio.run(cost(args.device, home, names))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1, default=str))
    if args.what == "fidelity":
        summarize_fidelity(out)
    elif args.what == "throughput":
        print(
            f"{out['evaluations']} evaluations, {out['workers']} workers: "
            f"{out['evals_per_min']:.1f}/min over the whole run, "
            f"{out['steady_evals_per_min'] or float('nan'):.1f}/min with every worker busy; "
            f"not correct: {out['not_correct']}"
        )
    elif args.what == "sol":
        summarize_sol(out)
    elif args.what == "cost":
        print(f"mean {out['mean_wall_s']:.3f} s per evaluation; phases {out['mean_phases']}")


if __name__ == "__main__":
    main()
