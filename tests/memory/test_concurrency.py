"""Several processes writing one memory at once lose nothing and duplicate nothing."""

import asyncio
import multiprocessing as mp

from adaexplore_mcp.memory import FailureReport, RuleStatus

from .conftest import GLOBAL_RULE, global_read_failure, memory_in

WORKERS = 4
PER_WORKER = 15
SHARED = "You cannot give tl.arange a range that is not a power of two; round up and mask the tail."


def _writer(tmp_path, worker: int) -> None:
    memory = memory_in(tmp_path)

    async def run() -> None:
        for i in range(PER_WORKER):
            task = f"task-{worker}-{i % 5}"
            if i % 3 == 0:
                await memory.add_failure(
                    global_read_failure(task, f"NAME_{worker}_{i}", i), GLOBAL_RULE
                )
            elif i % 3 == 1:
                await memory.add_failure(
                    FailureReport(
                        task=task, code=f"# kernel {worker} {i}", error=f"ValueError: bad range {i}"
                    ),
                    SHARED,
                )
            else:
                await memory.add_failure(global_read_failure(task, f"OTHER_{worker}_{i}", i))

    asyncio.run(run())


def test_concurrent_writers_lose_no_failure_and_make_each_rule_once(tmp_path):
    memory_in(tmp_path)  # migrate once, as a server would before workers start
    context = mp.get_context("spawn")
    processes = [context.Process(target=_writer, args=(tmp_path, w)) for w in range(WORKERS)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
        assert process.exitcode == 0

    memory = memory_in(tmp_path)
    failures = memory.failures()
    assert len(failures) == WORKERS * PER_WORKER
    rules = {r.text: r for r in memory.rules()}
    assert set(rules) == {GLOBAL_RULE, SHARED}
    # Every global-read failure, with a rule or not, ended under the one rule of its signature.
    assert rules[GLOBAL_RULE].support_failures == WORKERS * 10
    assert rules[SHARED].support_failures == WORKERS * 5
    assert rules[GLOBAL_RULE].status is RuleStatus.ACTIVE
    assert all(f.rule_ids for f in failures)
