"""Where searches come from: a new search for a task, or a fork of part of another one."""

from __future__ import annotations

import json
import secrets
import sqlite3
import uuid
from collections.abc import Iterator, Sequence

from adaexplore_mcp.search_engine.models import Action, Budget, Edit
from adaexplore_mcp.search_engine.repository import NewNode, SearchRecord
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.tasks import Task


def new_record(
    task: Task, *, settings: SearchSettings, budget: Budget, label: str | None, now: float
) -> SearchRecord:
    return SearchRecord(
        id=new_search_id(),
        task_name=task.name,
        task_hash=task.hash,
        task=task.model_dump_json(),
        settings=settings,
        budget=budget,
        label=label,
        seed=settings.seed if settings.seed is not None else secrets.randbits(31),
        forked_from=None,
        forked_node=None,
        created_at=now,
        steps=0,
        evaluations=0,
        tokens=0,
        active_s=0.0,
        tick_at=now,
        selections=0,
    )


def forked_record(
    record: SearchRecord,
    node_id: int,
    *,
    settings: SearchSettings,
    budget: Budget,
    label: str | None,
    now: float,
) -> SearchRecord:
    """The new search's row: same task, fresh id, budget and usage; the seed of the new
    settings when they name one, else the source's."""
    return record.model_copy(
        update={
            "id": new_search_id(),
            "settings": settings,
            "seed": settings.seed if settings.seed is not None else record.seed,
            "budget": budget,
            "label": label if label is not None else record.label,
            "forked_from": record.id,
            "forked_node": node_id,
            "created_at": now,
            "steps": 0,
            "evaluations": 0,
            "tokens": 0,
            "active_s": 0.0,
            "tick_at": now,
            "selections": 0,
        }
    )


def new_search_id() -> str:
    return uuid.uuid4().hex[:12]


def fork_rows(rows: Sequence[sqlite3.Row]) -> Iterator[tuple[int, NewNode, dict]]:
    """(new id, node, its depth and creation time) for each row. ``rows`` must be closed under
    parents (a path from the root plus whole subtrees) and in id order, so parents come first
    and the new ids are their positions. Rewards and statistics are not copied: the new
    search's tree derives them from its own nodes and measurements."""
    new_ids = {row["id"]: new_id for new_id, row in enumerate(rows)}
    for new_id, row in enumerate(rows):
        node = NewNode(
            parent_id=new_ids[row["parent_id"]] if row["parent_id"] is not None else None,
            action=Action(row["action"]),
            code=row["code"],
            edits=[Edit(**e) for e in json.loads(row["edits"])] if row["edits"] else None,
            result_json=row["result"],
            status=row["status"],
            speedup=row["speedup"],
            runtime_ms=row["runtime_ms"],
            author=row["author"],
            note=row["note"],
            tokens=row["tokens"],
            copied_from=row["id"],
        )
        yield new_id, node, {"depth": row["depth"], "created_at": row["created_at"]}
