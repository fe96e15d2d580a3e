"""How fast ``get_rules`` answers over a large memory (issue target: under 20 ms at 10,000 rules).

    python benchmarks/rules_retrieval.py --rules 10000 --repeats 200

Fills a fresh store with that many distinct active rules (synthetic but shaped like real ones:
15–40 words naming Triton constructs), then times ``SkillMemory.get_rules`` as the MCP tool
calls it: with no query, with a short query, with a whole kernel as the query, and right after
another writer changed the memory (the index is rebuilt). Prints median and p95 in ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from adaexplore_mcp.memory import RuleStatus, SkillMemory
from adaexplore_mcp.memory import repository as repo
from adaexplore_mcp.memory.models import Provenance
from adaexplore_mcp.memory.rule_text import normalized
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import bundled_solution

ACTIONS = [
    "call",
    "pass",
    "store",
    "load",
    "reduce",
    "index",
    "reshape",
    "broadcast",
    "cast",
    "accumulate",
    "mask",
    "launch",
    "compare",
    "permute",
    "read",
    "write",
    "split",
    "join",
]
CONSTRUCTS = [
    "tl.arange",
    "tl.dot",
    "tl.load",
    "tl.store",
    "tl.where",
    "tl.sum",
    "tl.max",
    "tl.reshape",
    "tl.trans",
    "tl.atomic_add",
    "tl.cumsum",
    "tl.program_id",
    "tl.constexpr",
    "triton.cdiv",
    "num_warps",
    "num_stages",
    "BLOCK_SIZE",
    "a float16 pointer",
    "an int64 offset",
    "a bfloat16 accumulator",
    "a 2-D block",
    "a scalar",
    "a strided view",
    "a masked lane",
    "a tail block",
    "a row pointer",
]
CONTEXTS = [
    "inside a @triton.jit kernel",
    "in a reduction loop",
    "across program ids",
    "without a mask",
    "before the barrier",
    "on non-contiguous inputs",
    "when the size is not a power of two",
    "with mismatched dtypes",
    "after the accumulator is cast",
    "in the epilogue",
    "on the GPU compiler",
    "in the CPU interpreter",
    "when autotuning",
    "for odd shapes",
]
FIXES = [
    "use triton.next_power_of_2 and mask the tail",
    "pass it as a constexpr argument",
    "cast to float32 first",
    "load masked lanes with other=0",
    "use tl.where instead",
    "compute offsets in int64",
    "keep the accumulator in float32",
    "split the loop",
]


def synthetic_rules(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    texts: set[str] = set()
    while len(texts) < count:
        text = (
            f"You cannot {rng.choice(ACTIONS)} {rng.choice(CONSTRUCTS)} "
            f"{rng.choice(CONTEXTS)} {rng.choice(CONTEXTS)}; {rng.choice(FIXES)} "
            f"(case {rng.randrange(10**6)})."
        )
        texts.add(text)
    return sorted(texts)


def fill(store: Store, texts: list[str]) -> None:
    with store.connect() as conn:
        for text in texts:
            repo.insert_rule(
                conn,
                text=text,
                normalized=normalized(text),
                status=RuleStatus.ACTIVE,
                provenance=Provenance.IMPORT,
                kernel_specific=False,
            )
        repo.touch(conn, [])


def timed(call, repeats: int, before=None) -> list[float]:
    samples = []
    for _ in range(repeats):
        if before is not None:
            before()
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "db.sqlite3")
        fill(store, synthetic_rules(args.rules))
        memory = SkillMemory(store, MemorySettings(starter=False))
        writer = SkillMemory(store, MemorySettings(starter=False))
        kernel = bundled_solution("softmax")
        memory.get_rules()  # build the index once
        added = iter(range(10**9))

        def another_writer_adds_a_rule():
            writer.add_rule(f"You cannot launch kernel variant {next(added)} twice per step.")

        def a_new_process_opens_the_memory():
            SkillMemory(store, MemorySettings(starter=False)).get_rules("tl.dot dtypes")

        cases = [
            ("no query", lambda: memory.get_rules(), None, args.repeats),
            (
                "short query",
                lambda: memory.get_rules("tl.dot with mismatched dtypes"),
                None,
                args.repeats,
            ),
            (
                f"kernel query ({len(kernel)} chars)",
                lambda: memory.get_rules(kernel, task="softmax"),
                None,
                args.repeats,
            ),
            (
                "short query after another writer's change",
                lambda: memory.get_rules("tl.dot with mismatched dtypes"),
                another_writer_adds_a_rule,
                max(5, args.repeats // 4),
            ),
            ("cold: a new process, first query", a_new_process_opens_the_memory, None, 5),
        ]
        print(f"get_rules over {args.rules} active rules")
        print(f"{'case':<44} {'calls':>5} {'median ms':>10} {'p95 ms':>8}")
        for name, call, before, repeats in cases:
            samples = sorted(timed(call, repeats, before))
            p95 = samples[min(len(samples) - 1, int(0.95 * len(samples)))]
            print(f"{name:<44} {repeats:>5} {statistics.median(samples):>10.2f} {p95:>8.2f}")


if __name__ == "__main__":
    main()
