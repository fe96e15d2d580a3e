"""Small steps: exact ``old_str``/``new_str`` edits, all or nothing.

An edit applies only where its ``old_str`` occurs exactly once, so a patch can never land in the
wrong place. Trailing whitespace is ignored when the exact text is not found, because models
often drop or add it. When any edit fails, nothing is applied and every failure is reported with
what the agent needs to fix it: where an ambiguous text occurs, or the lines closest to a text that
does not occur.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

from adaexplore_mcp.search_engine.errors import EditFailure, NoChange, NumberedLine, PatchError
from adaexplore_mcp.search_engine.models import Edit

_TRAILING = " \t\r"
_MAX_REPORTED_MATCHES = 10
_CLOSEST_WINDOW = 6  # lines of old_str compared against the kernel when it is not found


def apply_edits(code: str, edits: Sequence[Edit]) -> str:
    """The kernel with every edit applied in order; ``PatchError`` naming each failed edit, or
    ``NoChange`` when the edits apply but change nothing."""
    failures: list[EditFailure] = []
    text = code
    for index, edit in enumerate(edits):
        if not edit.old_str:
            failures.append(EditFailure(index=index, reason="empty", count=0))
            continue
        span, failure = _locate(text, edit.old_str, index)
        if failure is not None:
            failures.append(failure)
            continue
        assert span is not None
        start, end = span
        text = text[:start] + edit.new_str + text[end:]
    if failures:
        raise PatchError(failures)
    if text == code:
        raise NoChange()
    return text


def _locate(text: str, old: str, index: int) -> tuple[tuple[int, int] | None, EditFailure | None]:
    starts = _occurrences(text, old)
    if len(starts) == 1:
        return (starts[0], starts[0] + len(old)), None
    if len(starts) > 1:
        return None, _ambiguous(text, starts, index)

    loose_text, positions = _without_trailing_whitespace(text)
    loose_old, _ = _without_trailing_whitespace(old)
    starts = _occurrences(loose_text, loose_old) if loose_old else []
    if len(starts) == 1:
        start = starts[0]
        end = start + len(loose_old)
        return (positions[start], positions[end - 1] + 1), None
    if len(starts) > 1:
        return None, _ambiguous(text, [positions[s] for s in starts], index)
    return None, EditFailure(
        index=index, reason="not_found", count=0, closest=closest_lines(text, old)
    )


def _occurrences(text: str, needle: str) -> list[int]:
    """Every start of ``needle``, overlapping ones included (they make a match ambiguous too)."""
    found = []
    start = text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


def _ambiguous(text: str, starts: list[int], index: int) -> EditFailure:
    lines = text.splitlines()
    numbered = []
    for start in starts[:_MAX_REPORTED_MATCHES]:
        number = text.count("\n", 0, start) + 1
        numbered.append(NumberedLine(line=number, text=lines[number - 1]))
    return EditFailure(index=index, reason="ambiguous", count=len(starts), closest=numbered)


def _without_trailing_whitespace(text: str) -> tuple[str, list[int]]:
    """``text`` with each line's trailing spaces, tabs and CRs removed, and for every character
    kept, its index in ``text``."""
    kept: list[str] = []
    positions: list[int] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        content = body.rstrip(_TRAILING)
        kept.append(content)
        positions.extend(range(offset, offset + len(content)))
        if len(body) < len(line):  # the newline itself is kept
            kept.append("\n")
            positions.append(offset + len(body))
        offset += len(line)
    return "".join(kept), positions


def closest_lines(text: str, old: str) -> list[NumberedLine]:
    """The window of the kernel's lines most similar to the start of ``old``, with numbers."""
    lines = text.splitlines()
    wanted = [line.strip() for line in old.splitlines() if line.strip()][:_CLOSEST_WINDOW]
    if not lines or not wanted:
        return []
    target = "\n".join(wanted)
    # compare against windows of non-blank lines, as the wanted lines have no blanks either
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    size = min(len(wanted), len(numbered))
    best_score, best_at = -1.0, 0
    for at in range(len(numbered) - size + 1):
        window = "\n".join(line.strip() for _, line in numbered[at : at + size])
        matcher = SequenceMatcher(None, target, window, autojunk=False)
        if matcher.real_quick_ratio() <= best_score or matcher.quick_ratio() <= best_score:
            continue
        score = matcher.ratio()
        if score > best_score:
            best_score, best_at = score, at
    return [NumberedLine(line=n, text=line) for n, line in numbered[best_at : best_at + size]]
