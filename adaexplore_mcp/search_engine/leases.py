"""Leases: a selected node's claim on one step of the budget, and its virtual loss.

A lease is taken by ``select_node`` (unclaimed) or by a step that came without one, claimed
while the step evaluates, and deleted when the step is recorded or given up. Each carries who
holds it: ``holder`` names the client connection (so a client that goes away gives its
selections back) and ``author`` the worker within it. A holder and author keep one unclaimed
selection per search: selecting again gives back the one before, so retried or abandoned
``select_node`` calls do not pile up. A lease nobody renews expires; an evaluating step renews
its own, so only a process that died leaves one to expire.
"""

from __future__ import annotations

import sqlite3

from pydantic import BaseModel, Field

from adaexplore_mcp.search_engine.models import Action

_COLUMNS = "id, node_id, action, author, holder, claimed, created_at, expires_at"


class Lease(BaseModel):
    id: int
    node_id: int
    action: Action
    author: str | None
    holder: str | None
    claimed: bool
    created_at: float
    expires_at: float


class LeaseView(BaseModel):
    """An outstanding selection or evaluation, as an agent sees it."""

    node_id: int
    action: Action = Field(description="The step it was selected for.")
    author: str | None
    evaluating: bool = Field(description="A step on it is being evaluated now.")
    yours: bool = Field(description="Held by your connection; release gives it back.")
    expires_in_s: float = Field(description="Seconds until it lapses unless renewed.")

    @classmethod
    def of(cls, lease: Lease, *, holder: str | None, now: float) -> LeaseView:
        return cls(
            node_id=lease.node_id,
            action=lease.action,
            author=lease.author,
            evaluating=lease.claimed,
            yours=holder is not None and lease.holder == holder,
            expires_in_s=round(max(0.0, lease.expires_at - now), 1),
        )


def active(conn: sqlite3.Connection, search_id: str, now: float) -> list[Lease]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM search_leases WHERE search_id = ? AND expires_at > ? ORDER BY id",
        (search_id, now),
    )
    return [Lease(**dict(row)) for row in rows]


def purge_expired(conn: sqlite3.Connection, search_id: str, now: float) -> None:
    conn.execute(
        "DELETE FROM search_leases WHERE search_id = ? AND expires_at <= ?", (search_id, now)
    )


def add(
    conn: sqlite3.Connection,
    search_id: str,
    node_id: int,
    action: Action,
    *,
    author: str | None,
    holder: str | None,
    claimed: bool,
    now: float,
    expires_at: float,
) -> int:
    cursor = conn.execute(
        "INSERT INTO search_leases (search_id, node_id, action, author, holder, claimed, "
        "created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (search_id, node_id, action.value, author, holder, int(claimed), now, expires_at),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def give_back_earlier(
    conn: sqlite3.Connection, search_id: str, holder: str, author: str | None
) -> int:
    """Deletes the unclaimed selections ``holder`` and ``author`` hold in the search: a new
    selection replaces them. Returns how many there were."""
    return conn.execute(
        "DELETE FROM search_leases WHERE search_id = ? AND holder = ? AND author IS ? "
        "AND claimed = 0",
        (search_id, holder, author),
    ).rowcount


def claim(
    conn: sqlite3.Connection,
    search_id: str,
    node_id: int,
    *,
    holder: str | None,
    now: float,
    expires_at: float,
) -> int | None:
    """Marks a live unclaimed lease on the node as evaluating (the caller's own first, else the
    oldest); its id, or None when the node has none."""
    row = conn.execute(
        "SELECT id FROM search_leases WHERE search_id = ? AND node_id = ? AND claimed = 0 "
        "AND expires_at > ? ORDER BY (holder IS ? AND holder IS NOT NULL) DESC, id LIMIT 1",
        (search_id, node_id, now, holder),
    ).fetchone()
    if row is None:
        return None
    conn.execute(
        "UPDATE search_leases SET claimed = 1, expires_at = ? WHERE id = ?", (expires_at, row["id"])
    )
    return row["id"]


def renew(conn: sqlite3.Connection, lease_id: int, expires_at: float) -> None:
    conn.execute("UPDATE search_leases SET expires_at = ? WHERE id = ?", (expires_at, lease_id))


def delete(conn: sqlite3.Connection, lease_id: int) -> None:
    conn.execute("DELETE FROM search_leases WHERE id = ?", (lease_id,))


def release_unclaimed(
    conn: sqlite3.Connection, search_id: str, node_id: int, holder: str | None
) -> int:
    """Gives back one unclaimed selection of the node, the caller's own first."""
    return conn.execute(
        "DELETE FROM search_leases WHERE id = (SELECT id FROM search_leases WHERE search_id = ? "
        "AND node_id = ? AND claimed = 0 ORDER BY (holder IS ? AND holder IS NOT NULL) DESC, id "
        "LIMIT 1)",
        (search_id, node_id, holder),
    ).rowcount


def release_holder(conn: sqlite3.Connection, holder: str) -> int:
    """Gives back every unclaimed selection of a client that went away; evaluations it started
    go on and keep theirs until they are recorded."""
    return conn.execute(
        "DELETE FROM search_leases WHERE holder = ? AND claimed = 0", (holder,)
    ).rowcount


def clear(conn: sqlite3.Connection, search_id: str) -> int:
    return conn.execute("DELETE FROM search_leases WHERE search_id = ?", (search_id,)).rowcount
