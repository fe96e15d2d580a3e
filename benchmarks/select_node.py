"""Latency of ``select_node`` on a large search tree (target: under 10 ms).

    python benchmarks/select_node.py --nodes 5000 --selections 300

Builds a tree of --nodes nodes in a temporary store (real bundled kernels with variations, real
EvalResult JSON, rewards and backed-up statistics as a search records them), then times
``select_node`` end to end: the transaction, refreshing the cached tree, UCT with virtual loss,
the lease, and the context (working memory or the diverse pool). --concurrent leases stay
outstanding throughout, as with that many workers. Three cases:

- ``cold``: the first selection of a fresh engine (loads the whole tree from the store);
- ``warm``: later selections, the tree unchanged (its max is the first large step, which
  tokenizes up to ``pool_scan`` kernels once per engine to build the diverse pool);
- ``appending``: another engine (as another process would) records a node before every
  selection, so each selection first reads that node into its cache.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from adaexplore_mcp.judge.measurement import RuntimeStats
from adaexplore_mcp.judge.result import EvalResult, Status, kernel_hash
from adaexplore_mcp.search_engine import Action, Budget, SearchEngine
from adaexplore_mcp.search_engine import repository as repo
from adaexplore_mcp.search_engine.repository import NewNode
from adaexplore_mcp.search_engine.reward import runtime_of, speedup_of
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task

STATUSES = [
    (Status.CORRECT, 0.5),
    (Status.INCORRECT, 0.2),
    (Status.RUNTIME_ERROR, 0.15),
    (Status.COMPILE_ERROR, 0.15),
]
VARIANTS = [
    "",
    "\n\ndef _grid(n, block):\n    return (triton.cdiv(n, block),)\n",
    "\n\n@triton.jit\ndef _helper(x):\n    return tl.where(x > 0, x, 0.0)\n",
    "\n\n@triton.autotune(configs=[triton.Config({'BLOCK': 128}), triton.Config({'BLOCK': 256})],"
    " key=['n'])\n@triton.jit\ndef _tuned(x_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n",
]


def fake_result(task, code: str, rng: random.Random) -> EvalResult:
    status = rng.choices([s for s, _ in STATUSES], [w for _, w in STATUSES])[0]
    base = {"task": task.name, "task_hash": task.hash, "kernel_hash": kernel_hash(code)}
    if status is not Status.CORRECT:
        return EvalResult(status=status, message=f"{status.value}: " + "detail " * 40, **base)
    speedup = rng.lognormvariate(0.0, 0.6)
    ms = 1.0 / speedup
    stats = RuntimeStats(median_ms=ms, mean_ms=ms, std_ms=ms / 50, min_ms=ms, max_ms=ms, n=100)
    return EvalResult(
        status=status,
        message="correct",
        runtime=stats,
        speedup_eager=speedup,
        timing_meaningful=True,
        **base,
    )


def build_tree(store: Store, engine: SearchEngine, nodes: int, seed: int) -> str:
    rng = random.Random(seed)
    task = get_bundled_task("softmax")
    solution = bundled_solution("softmax") or "import triton\n"
    settings = engine.settings
    search = engine.start_search(task, budget=Budget(max_steps=10 * nodes))
    depth = {0: 0}
    with store.connect() as conn:
        for node_id in range(1, nodes):
            # grow like a search: mostly continue recent nodes, sometimes widen old ones
            if node_id < 20 or rng.random() < 0.05:
                parent = 0
            elif rng.random() < 0.7:
                parent = rng.randrange(max(1, node_id - 50), node_id)
            else:
                parent = rng.randrange(1, node_id)
            large = parent == 0 or rng.random() < 0.2
            code = (
                solution.replace("1024", str(rng.choice([256, 512, 1024, 2048])))
                + rng.choice(VARIANTS)
                + f"\n# node {node_id}\n"
            )
            result = fake_result(task, code, rng)
            node = NewNode(
                parent_id=parent,
                action=Action.LARGE if large else Action.SMALL,
                code=code,
                result_json=result.model_dump_json(),
                status=result.status.value,
                speedup=speedup_of(result, settings),
                runtime_ms=runtime_of(result),
            )
            repo.insert_node(conn, search.id, node, time.time())
            depth[node_id] = depth[parent] + 1
    print(f"tree: {nodes} nodes, max depth {max(depth.values())}")
    return search.id


def timed_selections(
    engine: SearchEngine, search_id: str, count: int, concurrent: int, append=None
) -> list[float]:
    held: list[int] = []
    samples = []
    for i in range(count):
        if append is not None:
            append(i)
        started = time.perf_counter()
        selection = engine.select_node(search_id)
        samples.append((time.perf_counter() - started) * 1000)
        held.append(selection.node.id)
        if len(held) > concurrent:
            engine.release(search_id, held.pop(0))
    for node_id in held:
        engine.release(search_id, node_id)
    return samples


def row(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"{name:<10} {len(samples):>5} {statistics.median(samples):>9.2f} {p95:>9.2f} "
        f"{ordered[-1]:>9.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--selections", type=int, default=300)
    parser.add_argument("--concurrent", type=int, default=8, help="Leases held at once.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    settings = SearchSettings(seed=args.seed, lease_timeout_s=3600)
    with tempfile.TemporaryDirectory() as home:
        store = Store(Path(home) / "bench.sqlite3")
        started = time.perf_counter()
        search_id = build_tree(store, SearchEngine(store, settings=settings), args.nodes, args.seed)
        print(f"built in {time.perf_counter() - started:.1f} s")

        engine = SearchEngine(store, settings=settings)
        cold = timed_selections(engine, search_id, 1, args.concurrent)
        warm = timed_selections(engine, search_id, args.selections, args.concurrent)

        writer = SearchEngine(store, settings=settings)  # stands for another process
        rng = random.Random(args.seed + 1)
        task = get_bundled_task("softmax")

        def append(i: int) -> None:
            code = (bundled_solution("softmax") or "") + f"\n# appended {i}\n"
            result = fake_result(task, code, rng)
            node = NewNode(
                parent_id=rng.randrange(1, args.nodes),
                action=Action.SMALL,
                code=code,
                result_json=result.model_dump_json(),
                status=result.status.value,
                speedup=speedup_of(result, settings),
                runtime_ms=runtime_of(result),
            )
            with writer.store.connect() as conn:
                repo.insert_node(conn, search_id, node, time.time())

        appending = timed_selections(engine, search_id, args.selections, args.concurrent, append)

    print(f"\nselect_node latency (ms), {args.concurrent} leases outstanding")
    print(f"{'case':<10} {'n':>5} {'median':>9} {'p95':>9} {'max':>9}")
    print(row("cold", cold))
    print(row("warm", warm))
    print(row("appending", appending))


if __name__ == "__main__":
    main()
