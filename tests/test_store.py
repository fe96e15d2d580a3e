import multiprocessing as mp
import sqlite3

import pytest

from adaexplore_mcp.store import Store


def _writer(path: str, worker: int) -> None:
    store = Store(path)
    for i in range(20):
        store.put_baseline(
            key=f"{worker}-{i}",
            task_name="t",
            task_hash="h",
            device_name="d",
            torch="2",
            triton="3",
            record={"i": i},
        )


def test_baselines_round_trip_and_replace(tmp_path):
    store = Store(tmp_path / "db.sqlite3")
    assert store.get_baseline("k") is None
    row = {"key": "k", "task_name": "t", "task_hash": "h", "device_name": "H100"}
    store.put_baseline(**row, torch="2", triton="3", record={"a": 1})
    store.put_baseline(**row, torch="2", triton="3", record={"a": 2})
    assert store.get_baseline("k").record == {"a": 2}
    assert len(store.list_baselines()) == 1
    # a second Store on the same file sees it and does not re-run migrations
    assert Store(tmp_path / "db.sqlite3").get_baseline("k").device_name == "H100"


def test_uses_wal_and_refuses_a_newer_schema(tmp_path):
    path = tmp_path / "db.sqlite3"
    Store(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    with pytest.raises(RuntimeError, match="newer than this adaexplore-mcp"):
        Store(path)


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    Store(path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(Store(path).list_baselines()) == 80
