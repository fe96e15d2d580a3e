"""The one SQLite database (WAL mode) that holds everything adaexplore-mcp persists.

Each call opens a short-lived connection, so a ``Store`` can be shared between threads, and
several processes can use one database file at once (WAL readers never block the writer; writers
wait up to ``busy_timeout_s``). The schema is versioned with ``PRAGMA user_version`` and upgraded
in place by appending to ``_MIGRATIONS``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

_MIGRATIONS: list[str] = [
    # 1: timed baselines (eager PyTorch and torch.compile) per task, device and software versions.
    """
    CREATE TABLE baselines (
        key          TEXT PRIMARY KEY,
        task_name    TEXT NOT NULL,
        task_hash    TEXT NOT NULL,
        device_name  TEXT NOT NULL,
        torch        TEXT NOT NULL,
        triton       TEXT NOT NULL,
        created_at   REAL NOT NULL,
        record       TEXT NOT NULL
    );
    """,
    # 2: the skill memory: failures, the rules distilled from them, and which failure supports
    # which rule. A rule's support is derived from its links (plus what an import carried).
    """
    CREATE TABLE failures (
        id           INTEGER PRIMARY KEY,
        task         TEXT NOT NULL,
        code_hash    TEXT NOT NULL,
        code         TEXT NOT NULL,
        signature    TEXT NOT NULL,
        error_type   TEXT NOT NULL,
        error        TEXT NOT NULL,
        torch        TEXT,
        triton       TEXT,
        gpu_arch     TEXT,
        origin       TEXT NOT NULL,
        created_at   REAL NOT NULL,
        UNIQUE (task, code_hash, signature)
    );
    CREATE INDEX failures_by_signature ON failures (signature);
    CREATE TABLE rules (
        id               INTEGER PRIMARY KEY,
        text             TEXT NOT NULL,
        normalized       TEXT NOT NULL UNIQUE,
        status           TEXT NOT NULL CHECK (status IN ('candidate', 'active', 'retired')),
        kernel_specific  INTEGER NOT NULL DEFAULT 0,
        imported_support INTEGER NOT NULL DEFAULT 0,
        provenance       TEXT NOT NULL,
        first_seen       REAL NOT NULL,
        last_seen        REAL NOT NULL,
        revision         INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX rules_by_status ON rules (status);
    CREATE INDEX rules_by_revision ON rules (revision);
    CREATE TABLE rule_failures (
        rule_id      INTEGER NOT NULL REFERENCES rules (id) ON DELETE CASCADE,
        failure_id   INTEGER NOT NULL REFERENCES failures (id) ON DELETE CASCADE,
        linked_at    REAL NOT NULL,
        PRIMARY KEY (rule_id, failure_id)
    );
    CREATE INDEX rule_failures_by_failure ON rule_failures (failure_id);
    CREATE TABLE memory_meta (
        key          TEXT PRIMARY KEY,
        value        TEXT NOT NULL
    );
    INSERT INTO memory_meta VALUES ('generation', '0');
    """,
    # 3: search trees (adaexplore_mcp.search_engine): searches, their nodes (numbered per search,
    # root 0), the leases that hold virtual loss on a selected node, and the re-measurements
    # that decide the best kernel. The task is stored whole so a search resumes without its file.
    """
    CREATE TABLE searches (
        id           TEXT PRIMARY KEY,
        task_name    TEXT NOT NULL,
        task_hash    TEXT NOT NULL,
        task         TEXT NOT NULL,
        settings     TEXT NOT NULL,
        budget       TEXT NOT NULL,
        label        TEXT,
        seed         INTEGER NOT NULL,
        forked_from  TEXT,
        forked_node  INTEGER,
        created_at   REAL NOT NULL,
        steps        INTEGER NOT NULL DEFAULT 0,
        evaluations  INTEGER NOT NULL DEFAULT 0,
        tokens       INTEGER NOT NULL DEFAULT 0,
        active_s     REAL NOT NULL DEFAULT 0,
        tick_at      REAL NOT NULL,
        selections   INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX searches_by_task ON searches (task_name, created_at);
    CREATE TABLE search_nodes (
        search_id    TEXT NOT NULL REFERENCES searches (id) ON DELETE CASCADE,
        id           INTEGER NOT NULL,
        parent_id    INTEGER,
        action       TEXT NOT NULL CHECK (action IN ('root', 'small', 'large')),
        depth        INTEGER NOT NULL,
        code         TEXT,
        code_hash    TEXT,
        edits        TEXT,
        result       TEXT,
        status       TEXT,
        speedup      REAL,
        runtime_ms   REAL,
        reward       REAL,
        visits       INTEGER NOT NULL DEFAULT 0,
        value_sum    REAL NOT NULL DEFAULT 0,
        author       TEXT,
        note         TEXT,
        tokens       INTEGER NOT NULL DEFAULT 0,
        copied_from  INTEGER,
        created_at   REAL NOT NULL,
        PRIMARY KEY (search_id, id),
        FOREIGN KEY (search_id, parent_id) REFERENCES search_nodes (search_id, id)
    );
    CREATE INDEX search_nodes_by_parent ON search_nodes (search_id, parent_id);
    CREATE TABLE search_leases (
        id           INTEGER PRIMARY KEY,
        search_id    TEXT NOT NULL REFERENCES searches (id) ON DELETE CASCADE,
        node_id      INTEGER NOT NULL,
        action       TEXT NOT NULL,
        author       TEXT,
        claimed      INTEGER NOT NULL DEFAULT 0,
        created_at   REAL NOT NULL,
        expires_at   REAL NOT NULL,
        FOREIGN KEY (search_id, node_id) REFERENCES search_nodes (search_id, id)
    );
    CREATE INDEX search_leases_by_search ON search_leases (search_id, expires_at);
    CREATE TABLE search_measurements (
        id           INTEGER PRIMARY KEY,
        search_id    TEXT NOT NULL,
        node_id      INTEGER NOT NULL,
        status       TEXT NOT NULL,
        runtime_ms   REAL,
        speedup      REAL,
        device       TEXT,
        created_at   REAL NOT NULL,
        FOREIGN KEY (search_id, node_id) REFERENCES search_nodes (search_id, id) ON DELETE CASCADE
    );
    CREATE INDEX search_measurements_by_node ON search_measurements (search_id, node_id);
    """,
    # 4: the reasoning bank: one short lesson per finished task, retrieved for similar tasks.
    """
    CREATE TABLE lessons (
        id           INTEGER PRIMARY KEY,
        task         TEXT NOT NULL,
        task_text    TEXT NOT NULL,
        text         TEXT NOT NULL,
        outcome      TEXT NOT NULL CHECK (outcome IN ('solved', 'unsolved')),
        speedup      REAL,
        run          TEXT,
        created_at   REAL NOT NULL,
        UNIQUE (task, run)
    );
    """,
    # 5: who holds a lease (a client connection), so a client that goes away gives its
    # selections back.
    """
    ALTER TABLE search_leases ADD COLUMN holder TEXT;
    CREATE INDEX search_leases_by_holder ON search_leases (holder);
    """,
    # 6: the context a rule holds for (precision policy, operator policy, GPU architecture; NULL
    # is any), the verdict and policies of a failure it is learned from, and the performance
    # lessons: a child kernel measurably faster than its parent, what changed and where.
    """
    ALTER TABLE rules ADD COLUMN precision TEXT;
    ALTER TABLE rules ADD COLUMN ops TEXT;
    ALTER TABLE rules ADD COLUMN gpu_arch TEXT;
    ALTER TABLE failures ADD COLUMN verdict TEXT;
    ALTER TABLE failures ADD COLUMN precision TEXT;
    ALTER TABLE failures ADD COLUMN ops TEXT;
    CREATE TABLE performance_lessons (
        id              INTEGER PRIMARY KEY,
        search_id       TEXT NOT NULL,
        node_id         INTEGER NOT NULL,
        parent_id       INTEGER NOT NULL,
        task            TEXT NOT NULL,
        task_operators  TEXT NOT NULL,
        change          TEXT NOT NULL,
        speedup_before  REAL NOT NULL,
        speedup_after   REAL NOT NULL,
        device_name     TEXT,
        gpu_arch        TEXT,
        precision       TEXT NOT NULL,
        ops             TEXT NOT NULL,
        created_at      REAL NOT NULL,
        UNIQUE (search_id, node_id)
    );
    """,
]


class StoredBaseline(BaseModel):
    key: str
    task_name: str
    task_hash: str
    device_name: str
    torch: str
    triton: str
    created_at: float
    record: dict


class Store:
    def __init__(self, path: Path, *, busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self._busy_timeout_s = busy_timeout_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._migrate()

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A connection in a transaction: committed on success, rolled back on error."""
        conn = sqlite3.connect(self.path, timeout=self._busy_timeout_s, isolation_level=None)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()

    def _migrate(self) -> None:
        with self.connect() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(_MIGRATIONS):
                raise RuntimeError(
                    f"the database {self.path} has schema version {version}, newer than this "
                    f"adaexplore-mcp knows ({len(_MIGRATIONS)}); upgrade adaexplore-mcp"
                )
            for number, script in enumerate(_MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")

    # -- baselines ---------------------------------------------------------------------------

    def get_baseline(self, key: str) -> StoredBaseline | None:
        with self.connect() as conn:
            row = conn.execute("SELECT * FROM baselines WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return StoredBaseline(**{**dict(row), "record": json.loads(row["record"])})

    def put_baseline(
        self,
        *,
        key: str,
        task_name: str,
        task_hash: str,
        device_name: str,
        torch: str,
        triton: str,
        record: dict,
    ) -> None:
        with self.connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO baselines VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    task_name,
                    task_hash,
                    device_name,
                    torch,
                    triton,
                    time.time(),
                    json.dumps(record),
                ),
            )

    def list_baselines(self) -> list[StoredBaseline]:
        with self.connect() as conn:
            rows = conn.execute("SELECT * FROM baselines ORDER BY created_at").fetchall()
        return [StoredBaseline(**{**dict(r), "record": json.loads(r["record"])}) for r in rows]
