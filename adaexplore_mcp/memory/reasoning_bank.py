"""The reasoning bank: a short lesson distilled from each finished task, retrieved for the most
similar new tasks (a baseline memory mode for the driver, beside the rule memory).

Similarity is lexical: BM25 of the new task's name, description and reference source against
the same text of the tasks the lessons came from. No hosted service is involved.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from adaexplore_mcp.memory.retrieval import RuleIndex
from adaexplore_mcp.prompts import render
from adaexplore_mcp.store import Store

if TYPE_CHECKING:
    from adaexplore_mcp.llm import LLM
    from adaexplore_mcp.tasks import Task

MAX_LESSON_WORDS = 120
_SYSTEM = "You write short, general lessons about optimizing GPU kernels. Answer tersely."


class Lesson(BaseModel):
    id: int
    task: str
    text: str
    outcome: Literal["solved", "unsolved"]
    speedup: float | None
    run: str | None
    created_at: float
    score: float = Field(default=0.0, description="Similarity to the query task.")


class TaskOutcome(BaseModel):
    """What a finished search tells the distiller."""

    steps: int
    solved: bool
    best_speedup: float | None = None
    best_kernel: str | None = None
    failures: list[str] = Field(default_factory=list, description="Most frequent first.")


def task_text(task: Task) -> str:
    return "\n".join(
        filter(None, [task.name.replace("_", " "), task.summary, task.description, task.source])
    )


class ReasoningBank:
    def __init__(self, store: Store, llm: LLM | None = None) -> None:
        self._store = store
        self._llm = llm

    async def distil(
        self, task: Task, outcome: TaskOutcome, run: str | None = None
    ) -> Lesson | None:
        """Asks the model for the task's lesson and stores it; None without a model or when
        the reply is empty."""
        if self._llm is None:
            return None
        from adaexplore_mcp.llm import Message

        prompt = render(
            "lesson",
            task_name=task.name,
            task_description=task.description,
            steps=outcome.steps,
            outcome="solved" if outcome.solved else "unsolved",
            best_speedup=outcome.best_speedup,
            failures=outcome.failures[:5],
            best_kernel=(outcome.best_kernel or "")[:6000] or None,
        )
        completion = await self._llm.complete(
            system=_SYSTEM, messages=[Message(role="user", content=prompt)], max_tokens=300
        )
        text = " ".join(completion.text.split()).strip().strip('"')
        if not text:
            return None
        words = text.split()
        if len(words) > MAX_LESSON_WORDS:
            text = " ".join(words[:MAX_LESSON_WORDS]) + " …"
        return self.add(task, text, solved=outcome.solved, speedup=outcome.best_speedup, run=run)

    def add(
        self,
        task: Task,
        text: str,
        *,
        solved: bool,
        speedup: float | None = None,
        run: str | None = None,
    ) -> Lesson:
        """Stores a lesson; a task's lesson of one run replaces the earlier one of that run."""
        now = time.time()
        with self._store.connect() as conn:
            conn.execute(
                "INSERT INTO lessons (task, task_text, text, outcome, speedup, run, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (task, run) DO UPDATE SET "
                "text = excluded.text, outcome = excluded.outcome, speedup = excluded.speedup, "
                "created_at = excluded.created_at",
                (
                    task.name,
                    task_text(task),
                    text,
                    "solved" if solved else "unsolved",
                    speedup,
                    run,
                    now,
                ),
            )
            row = conn.execute(
                "SELECT * FROM lessons WHERE task = ? AND run IS ? ", (task.name, run)
            ).fetchone()
        return _lesson(row)

    def lessons(self) -> list[Lesson]:
        with self._store.connect() as conn:
            return [_lesson(r) for r in conn.execute("SELECT * FROM lessons ORDER BY id")]

    def similar(self, task: Task, *, k: int = 3, exclude_same_task: bool = False) -> list[Lesson]:
        """The ``k`` lessons whose tasks read most like ``task``, most similar first; lessons
        with no word in common are not returned."""
        with self._store.connect() as conn:
            rows = conn.execute("SELECT * FROM lessons").fetchall()
        lessons = {row["id"]: (_lesson(row), row["task_text"]) for row in rows}
        index = RuleIndex()
        for lesson_id, (lesson, text) in lessons.items():
            if exclude_same_task and lesson.task == task.name:
                continue
            index.upsert(lesson_id, text, 0, lesson.created_at, [lesson.task])
        found: list[Lesson] = []
        for score, entry in index.search(task_text(task), None):
            if score <= 0 or len(found) == k:
                break
            found.append(lessons[entry.id][0].model_copy(update={"score": round(score, 4)}))
        return found


def _lesson(row) -> Lesson:
    return Lesson(
        id=row["id"],
        task=row["task"],
        text=row["text"],
        outcome=row["outcome"],
        speedup=row["speedup"],
        run=row["run"],
        created_at=row["created_at"],
    )
