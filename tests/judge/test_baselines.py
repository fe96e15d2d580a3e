import asyncio

from adaexplore_mcp.judge.measurement import RuntimeStats
from adaexplore_mcp.judge.pool.baselines import Baseline, BaselineCache, baseline_key
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import get_bundled_task

TASK = get_bundled_task("softmax")
STATS = RuntimeStats(median_ms=1.0, mean_ms=1.0, std_ms=0.0, min_ms=1.0, max_ms=1.0, n=10)


def test_measured_once_however_many_ask_and_persisted(tmp_path):
    calls = 0

    async def measure() -> Baseline:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.05)
        return Baseline(eager=STATS)

    async def many(cache: BaselineCache):
        kwargs = {"device_name": "H100", "torch": "2.11", "triton": "3.6", "measure": measure}
        return await asyncio.gather(*(cache.get(TASK, **kwargs) for _ in range(5)))

    store = Store(tmp_path / "db.sqlite3")
    results = asyncio.run(many(BaselineCache(store)))
    assert calls == 1 and all(r == results[0] for r in results)
    # a new process (new cache) on the same store does not measure again
    asyncio.run(many(BaselineCache(Store(tmp_path / "db.sqlite3"))))
    assert calls == 1


def test_the_key_separates_gpu_and_software_versions():
    keys = {
        baseline_key(TASK, "H100", "2.11", "3.6"),
        baseline_key(TASK, "H200", "2.11", "3.6"),
        baseline_key(TASK, "H100", "2.10", "3.6"),
        baseline_key(TASK, "H100", "2.11", "3.5"),
        baseline_key(get_bundled_task("gelu"), "H100", "2.11", "3.6"),
    }
    assert len(keys) == 5
