"""Errors a caller (an agent, through the MCP layer) can act on; each message says what to do."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class SearchError(Exception):
    """Base of every error the search engine raises on purpose."""


class UnknownSearch(SearchError):
    def __init__(self, search_id: str, known: list[str]) -> None:
        self.search_id = search_id
        self.known = known
        hint = (
            f"recent searches: {', '.join(known)}"
            if known
            else "there are no searches yet; start one with start_search"
        )
        super().__init__(f"no search with id {search_id!r}; {hint} (list_searches shows all)")


class UnknownNode(SearchError):
    def __init__(self, search_id: str, node_id: int, node_count: int) -> None:
        self.search_id = search_id
        self.node_id = node_id
        self.node_count = node_count
        super().__init__(
            f"search {search_id!r} has no node {node_id}: its nodes are numbered 0 (the root) "
            f"to {node_count - 1}; get_tree lists them"
        )


class InvalidStep(SearchError):
    """A step that cannot be taken as asked (e.g. patching the root, which has no kernel)."""


class BudgetExhausted(SearchError):
    def __init__(self, search_id: str, reason: str, detail: str, *, in_flight: int = 0) -> None:
        self.search_id = search_id
        self.reason = reason
        self.in_flight = in_flight
        super().__init__(
            f"search {search_id!r}: the {reason} budget is spent ({detail}); best_kernel gives "
            "the result, or fork the search from a good node with a new budget"
            + (
                f"; {in_flight} selection(s) still hold budget and free it when they finish or "
                "their lease expires"
                if in_flight
                else ""
            )
        )


class NumberedLine(BaseModel):
    line: int = Field(description="1-based line number in the kernel the edit was applied to.")
    text: str


class EditFailure(BaseModel):
    """Why one edit of a patch could not be applied."""

    index: int = Field(description="0-based position of the edit in the patch.")
    reason: Literal["not_found", "ambiguous", "empty"]
    count: int = Field(description="How often old_str occurs (0 when not found).")
    closest: list[NumberedLine] = Field(
        default_factory=list,
        description="not_found: the most similar lines; ambiguous: the first line of each match.",
    )

    def describe(self) -> str:
        if self.reason == "not_found":
            head = f"edit {self.index}: old_str not found"
            if self.closest:
                lines = "\n".join(f"  {n.line:4d}| {n.text}" for n in self.closest)
                head += f"; the closest lines are:\n{lines}"
            return head
        if self.reason == "ambiguous":
            where = ", ".join(str(n.line) for n in self.closest)
            return (
                f"edit {self.index}: old_str found {self.count} times (at lines {where}); "
                "include more surrounding lines so it matches once"
            )
        return f"edit {self.index}: old_str is empty; quote the text to replace"


class PatchError(SearchError):
    """No edit was applied, no node was created and no evaluation was spent."""

    def __init__(self, failures: list[EditFailure], text: str | None = None) -> None:
        self.failures = failures
        super().__init__(
            text
            or "the patch was not applied (no node created, nothing evaluated):\n"
            + "\n".join(f.describe() for f in failures)
            + "\nEdits apply in order; each old_str must match the kernel exactly once "
            "(trailing whitespace is ignored). get_node shows the current code."
        )


class NoChange(PatchError):
    """Every edit applied, but together they leave the kernel as it was: a case of its own,
    because the fix is to change something, not to quote the kernel better."""

    def __init__(self) -> None:
        super().__init__(
            [],
            "the edits leave the kernel unchanged (no node created, nothing evaluated); "
            "change something, or take a large step with regenerate",
        )
