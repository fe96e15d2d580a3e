"""The listing tools' answers: one compact row per item, pages behind an opaque cursor, and a
word on whether more exist."""

from __future__ import annotations

import base64
import binascii

from pydantic import BaseModel, Field

from adaexplore_mcp.search_engine import LeaseView, SearchInfo, TreeView


class CursorError(ValueError):
    """A cursor this server did not hand out."""


def encode_cursor(kind: str, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode().rstrip("=")


def decode_cursor(kind: str, cursor: str | None) -> int:
    """The offset a cursor of ``kind`` points at; 0 for None."""
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        found, _, offset = text.partition(":")
        if found == kind and offset.isdigit():
            return int(offset)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise CursorError(
        f"cursor {cursor[:40]!r} is not one this tool handed out; pass the next_cursor of its "
        "last answer, or leave cursor out to start from the first page"
    )


class SearchRow(BaseModel):
    id: str
    task: str
    label: str | None
    created_at: float
    nodes: int
    correct: int
    best_node_id: int | None
    best_speedup: float | None
    steps: int = Field(description="Evaluated nodes.")
    max_steps: int
    exhausted: str | None = Field(description="steps | wall_clock | tokens, or None.")
    forked_from: str | None

    @classmethod
    def of(cls, info: SearchInfo) -> SearchRow:
        return cls(
            id=info.id,
            task=info.task,
            label=info.label,
            created_at=info.created_at,
            nodes=info.node_count,
            correct=info.correct_count,
            best_node_id=info.best.id if info.best else None,
            best_speedup=info.best.speedup if info.best else None,
            steps=info.usage.steps,
            max_steps=info.budget.max_steps,
            exhausted=info.exhausted,
            forked_from=info.forked_from.search_id if info.forked_from else None,
        )


class SearchList(BaseModel):
    searches: list[SearchRow] = Field(description="Newest first.")
    next_cursor: str | None = Field(
        description="More searches exist: pass this as cursor for the next page."
    )


class TreeRow(BaseModel):
    """One node of a tree listing; get_node has everything else (code, result, edits)."""

    id: int
    parent_id: int | None = Field(description="None for the root.")
    action: str = Field(description="root | small | large")
    status: str | None = Field(description="The judge's verdict; None for the root.")
    speedup: float | None
    reward: float | None
    visits: int


class TreeListing(BaseModel):
    """A search's tree, compact: a row per node in creation order, where the search stands, and
    who holds which node."""

    search_id: str
    task: str
    node_count: int
    correct_count: int
    best_node_id: int | None = Field(
        description="Highest reward: the correct kernel with the lowest median runtime over "
        "its measurements (the one best_kernel chooses)."
    )
    steps: int = Field(description="Evaluated nodes so far.")
    in_flight: int = Field(description="Selections and evaluations still outstanding.")
    max_steps: int
    exhausted: str | None = Field(description="steps | wall_clock | tokens, or None.")
    leases: list[LeaseView] = Field(description="The outstanding selections and evaluations.")
    nodes: list[TreeRow]
    next_cursor: str | None = Field(
        description="More nodes exist: pass this as cursor for the next page."
    )

    @classmethod
    def of(cls, view: TreeView, leases: list[LeaseView], *, offset: int, limit: int) -> TreeListing:
        info = view.search
        end = offset + limit
        return cls(
            search_id=info.id,
            task=info.task,
            node_count=info.node_count,
            correct_count=info.correct_count,
            best_node_id=info.best.id if info.best else None,
            steps=info.usage.steps,
            in_flight=info.usage.in_flight,
            max_steps=info.budget.max_steps,
            exhausted=info.exhausted,
            leases=leases,
            nodes=[
                TreeRow(
                    id=n.id,
                    parent_id=n.parent_id,
                    action=n.action.value,
                    status=n.status.value if n.status else None,
                    speedup=n.speedup,
                    reward=n.reward,
                    visits=n.visits,
                )
                for n in view.nodes[offset:end]
            ],
            next_cursor=encode_cursor("tree", end) if end < len(view.nodes) else None,
        )
