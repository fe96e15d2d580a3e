"""Ranking active rules by relevance to a query or a kernel (BM25 over the rules' words).

The index is built once per memory generation and kept by the ``SkillMemory`` that owns it, so a
query costs one small read (has the memory changed?) plus the scoring of the rules that share a
word with the query.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from itertools import islice

from adaexplore_mcp.memory.models import Rule, RuleHit
from adaexplore_mcp.memory.rule_text import STOPWORDS, _stem, words

# Words every kernel is full of: they say nothing about which rule applies.
_CODE_NOISE = frozenset(
    """tl triton torch self def return import class nn module model new jit forward ptr
    x y i j k n m pid block size grid none true false float int""".split()
)
_K1 = 1.2
_B = 0.75
# A rule observed on the task being worked on gets this much on top of its text relevance.
TASK_BONUS = 1.0


def terms(text: str) -> list[str]:
    return [
        _stem(w) for w in words(text) if w not in STOPWORDS and w not in _CODE_NOISE and len(w) > 1
    ]


def estimate_tokens(text: str) -> int:
    """A provider-independent estimate (about four characters a token, plus the bullet)."""
    return math.ceil(len(text) / 4) + 2


class RuleIndex:
    """Active rules with their postings; immutable once built."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self._lengths: list[int] = []
        self._postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self._by_task: dict[str, list[int]] = defaultdict(list)
        for position, rule in enumerate(rules):
            counts = Counter(terms(rule.text))
            self._lengths.append(sum(counts.values()) or 1)
            for term, count in counts.items():
                self._postings[term].append((position, count))
            for task in rule.tasks:
                self._by_task[task].append(position)
        self._average_length = sum(self._lengths) / len(self._lengths) if rules else 1.0
        # Rules ranked for a query that says nothing: broadest support first, newest next.
        self._default_order = sorted(
            range(len(rules)), key=lambda p: (-rules[p].support_tasks, -rules[p].last_seen)
        )

    def search(self, query: str | None, task: str | None) -> Iterator[tuple[float, Rule]]:
        """Every active rule, best first: relevant ones by score, then the rest by support."""
        scores: dict[int, float] = defaultdict(float)
        if query:
            n = len(self.rules)
            for term, query_count in Counter(terms(query)).items():
                postings = self._postings.get(term)
                if not postings:
                    continue
                idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
                # Repeated words in a long kernel should not drown out the rarer ones.
                weight = idf * (1 + math.log(query_count))
                for position, count in postings:
                    length = self._lengths[position] / self._average_length
                    scores[position] += (
                        weight * count * (_K1 + 1) / (count + _K1 * (1 - _B + _B * length))
                    )
        if task:
            for position in self._by_task.get(task, ()):
                scores[position] += TASK_BONUS
        ranked = sorted(
            scores,
            key=lambda p: (-scores[p], -self.rules[p].support_tasks, -self.rules[p].last_seen),
        )
        for position in ranked:
            yield scores[position], self.rules[position]
        for position in self._default_order:
            if position not in scores:
                yield 0.0, self.rules[position]


def within_budget(
    ranked: Iterable[tuple[float, Rule]], *, limit: int, token_budget: int
) -> tuple[list[RuleHit], int]:
    """Of the ``limit`` best rules, those that fit in ``token_budget`` tokens in rank order, and
    how many of them did not fit."""
    hits: list[RuleHit] = []
    used = omitted = 0
    for score, rule in islice(ranked, limit):
        cost = estimate_tokens(rule.text)
        if used + cost > token_budget:
            omitted += 1
            continue
        used += cost
        hits.append(
            RuleHit(
                id=rule.id, text=rule.text, support_tasks=rule.support_tasks, score=round(score, 4)
            )
        )
    return hits, omitted
