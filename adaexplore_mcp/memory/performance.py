"""Performance lessons: measured changes that made a kernel faster, kept so that the memory helps
speed and not only correctness.

A lesson is recorded when a step's kernel beats its parent's speedup by ``lesson_margin`` on the
same device, under one policy: what changed (the agent's note, else the edits), the speedups
before and after, the GPU, the policies, and the task's operator signature. It is retrieved for
tasks whose signatures overlap (``task_operators``), never for a search whose policies or GPU
contradict it (``MemoryContext``).
"""

from __future__ import annotations

import json
import time

from pydantic import BaseModel, Field

from adaexplore_mcp.memory.context import MemoryContext
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.memory.task_operators import similarity, task_operators
from adaexplore_mcp.store import Store

# What an answer shows of a change: enough to repeat it, short enough for a prompt.
CHANGE_CHARS = 300


class Measured(BaseModel):
    """One side of a step: the speedup a correct kernel was measured at, and where."""

    speedup: float = Field(gt=0)
    device_name: str | None = None
    context: MemoryContext = Field(description="The search's policies and the GPU's arch.")


class PerformanceLesson(BaseModel):
    id: int
    task: str
    change: str = Field(description="What the step changed: its note, else its edits.")
    speedup_before: float
    speedup_after: float
    device_name: str | None
    context: MemoryContext
    similarity: float = Field(default=0.0, description="Operator overlap with the asking task.")

    def line(self) -> str:
        """The lesson as one sentence for a prompt."""
        where = self.device_name or self.context.gpu_arch or "a GPU"
        return (
            f"On {where} ({self.context.label()}), {self.task}: {self.change} "
            f"({self.speedup_before:.2f}x -> {self.speedup_after:.2f}x)"
        )


class PerformanceMemory:
    """The store's performance lessons; ``settings`` give the margin and the retrieval bounds."""

    def __init__(self, store: Store, settings: MemorySettings | None = None) -> None:
        self._store = store
        self.settings = settings or MemorySettings()

    def observe(
        self,
        *,
        search_id: str,
        node_id: int,
        parent_id: int,
        task: str,
        task_source: str,
        change: str,
        before: Measured,
        after: Measured,
    ) -> PerformanceLesson | None:
        """Records the step as a lesson when it is one: faster than its parent by the margin,
        measured on the same device under the same policies, with something to say about what
        changed. Recording the same node twice keeps the first."""
        change = " ".join(change.split())
        if (
            not change
            or before.device_name != after.device_name
            or before.context != after.context
            or after.speedup < before.speedup * (1 + self.settings.lesson_margin)
        ):
            return None
        if len(change) > CHANGE_CHARS:
            change = change[: CHANGE_CHARS - 1] + "…"
        context = after.context
        with self._store.connect() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO performance_lessons (search_id, node_id, parent_id, task, "
                "task_operators, change, speedup_before, speedup_after, device_name, gpu_arch, "
                "precision, ops, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    search_id,
                    node_id,
                    parent_id,
                    task,
                    json.dumps(sorted(task_operators(task_source))),
                    change,
                    before.speedup,
                    after.speedup,
                    after.device_name,
                    context.gpu_arch,
                    context.precision,
                    context.ops,
                    time.time(),
                ),
            )
            row = conn.execute(
                "SELECT * FROM performance_lessons WHERE search_id = ? AND node_id = ?",
                (search_id, node_id),
            ).fetchone()
        return _lesson(row)

    def similar(
        self, task_source: str, context: MemoryContext | None = None, *, k: int | None = None
    ) -> list[PerformanceLesson]:
        """Lessons from tasks whose operators overlap ``task_source``'s by at least
        ``lesson_similarity``, none that ``context`` contradicts: most similar first, then the
        largest gain."""
        wanted = task_operators(task_source)
        if not wanted:
            return []
        with self._store.connect() as conn:
            rows = conn.execute("SELECT * FROM performance_lessons").fetchall()
        found = []
        for row in rows:
            overlap = similarity(wanted, frozenset(json.loads(row["task_operators"])))
            lesson = _lesson(row)
            if overlap >= self.settings.lesson_similarity and not lesson.context.contradicts(
                context
            ):
                found.append(lesson.model_copy(update={"similarity": round(overlap, 4)}))
        found.sort(key=lambda x: (-x.similarity, -x.speedup_after / x.speedup_before, -x.id))
        return found[: k if k is not None else self.settings.max_lessons]


def _lesson(row) -> PerformanceLesson:
    return PerformanceLesson(
        id=row["id"],
        task=row["task"],
        change=row["change"],
        speedup_before=row["speedup_before"],
        speedup_after=row["speedup_after"],
        device_name=row["device_name"],
        context=MemoryContext(precision=row["precision"], ops=row["ops"], gpu_arch=row["gpu_arch"]),
    )
