"""Structural similarity of kernels, and the diverse pool a large step is shown.

Code is normalized before it is compared: comments, docstrings and string contents go, numbers
become one token, and local names become one token too, so two kernels that differ only in naming,
tuning constants or comments count as the same structure. Attribute names (``tl.dot``,
``tl.program_id``) and keywords stay, because they are what distinguishes one algorithm from
another. Similarity is the Jaccard index of the token 4-grams.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable

_SHINGLE = 4
_LEXER = re.compile(
    r"""
    (?P<string>[rbuRBUfF]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
    | (?P<comment>\#[^\n]*)
    | (?P<name>[A-Za-z_]\w*)
    | (?P<number>\d[\w.]*)
    | (?P<op>\*\*|//|<<|>>|<=|>=|==|!=|->|[^\s\w])
    """,
    re.VERBOSE,
)
_KEPT_NAMES = frozenset(keyword.kwlist) | {"range", "min", "max", "len", "int", "float"}


def normalized_tokens(code: str) -> list[str]:
    tokens: list[str] = []
    after_dot = False
    for match in _LEXER.finditer(code):
        kind = match.lastgroup
        text = match.group()
        if kind == "comment":
            continue
        if kind == "string":
            tokens.append("STR")
        elif kind == "number":
            tokens.append("NUM")
        elif kind == "name":
            tokens.append(text if after_dot or text in _KEPT_NAMES else "ID")
        else:
            tokens.append(text)
        after_dot = text == "."
    return tokens


def shingles(code: str) -> frozenset[tuple[str, ...]]:
    tokens = normalized_tokens(code)
    if len(tokens) < _SHINGLE:
        return frozenset([tuple(tokens)])
    return frozenset(tuple(tokens[i : i + _SHINGLE]) for i in range(len(tokens) - _SHINGLE + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)


def similarity(code_a: str, code_b: str) -> float:
    return jaccard(shingles(code_a), shingles(code_b))


def diverse_pick(
    ranked: Iterable[int],
    similar: Callable[[int, int], float],
    *,
    size: int,
    threshold: float,
) -> list[tuple[int, float]]:
    """Greedy: walk ``ranked`` (best first) and keep an item unless it is at least ``threshold``
    similar to one already kept. Returns (item, its highest similarity to a kept item)."""
    kept: list[tuple[int, float]] = []
    for item in ranked:
        if len(kept) >= size:
            break
        closest = max((similar(item, other) for other, _ in kept), default=0.0)
        if closest < threshold:
            kept.append((item, closest))
    return kept
