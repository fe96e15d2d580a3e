"""Ranking active rules by relevance to a query or a kernel: BM25 over the rules' words.

The index lives as long as the ``SkillMemory`` that owns it and follows the store
incrementally: each rule change raises the memory's generation and stamps the rule with it, so a
refresh reads only the rules changed since the last one. Postings are flat numpy arrays (slot,
term, count); a query scores every rule sharing a word with it in a few vector operations,
which keeps a query over 10,000 rules to a few milliseconds even when the query is a whole
kernel.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING

from adaexplore_mcp.memory.context import ANY, MemoryContext
from adaexplore_mcp.memory.models import RuleHit
from adaexplore_mcp.memory.rule_text import STOPWORDS, stem, words

if TYPE_CHECKING:
    # numpy is imported by the first query, not with the memory: the MCP server answers
    # initialize and tools/list without it
    import numpy as np

# Words every kernel is full of: they say nothing about which rule applies.
_CODE_NOISE = frozenset(
    """tl triton torch self def return import class nn module model new jit forward ptr
    x y i j k n m pid block size grid none true false float int give gives get gets""".split()
)
# One spelling per dtype, so "fp32" in a query finds "float32" in a rule.
_CANONICAL = {
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp64": "float64",
    "half": "float16",
    "single": "float32",
    "double": "float64",
}
_K1 = 1.2
_B = 0.75
# A rule observed on the task being worked on gets this much on top of its text relevance.
TASK_BONUS = 1.0


def estimate_tokens(text: str) -> int:
    """A provider-independent estimate (about four characters a token, plus the bullet)."""
    return math.ceil(len(text) / 4) + 2


@dataclass(slots=True)
class IndexedRule:
    id: int
    text: str
    support_tasks: int
    last_seen: float
    tasks: frozenset[str]
    term_ids: list[int]
    context: MemoryContext = ANY


class RuleIndex:
    """The active rules and their postings; ``upsert`` and ``remove`` keep it current."""

    def __init__(self) -> None:
        self._vocabulary: dict[str, int] = {}
        self._term_of_word: dict[str, str | None] = {}
        self._slot_of: dict[int, int] = {}
        self._entries: list[IndexedRule | None] = []
        self._alive: list[bool] = []
        self._length: list[float] = []
        self._document_frequency: list[int] = []
        # Postings (slot, term, count), appended to as rules arrive and turned into arrays when
        # the next query needs them; a replaced rule's slot is marked dead, not rewritten.
        self._pending: list[tuple[int, int, int]] = []
        self._arrays: dict[str, np.ndarray] | None = None
        # the postings turned into arrays so far: "slot", "term", "count" (none before a query)
        self._posted: dict[str, np.ndarray] = {}
        self._default_order: list[int] | None = None

    def __len__(self) -> int:
        return len(self._slot_of)

    # -- keeping it current ----------------------------------------------------------------

    def terms(self, text: str) -> list[str]:
        out = []
        for word in words(text):
            term = self._term_of_word.get(word, "")
            if term == "":
                keep = word not in STOPWORDS and word not in _CODE_NOISE and len(word) > 1
                term = self._term_of_word[word] = (
                    _CANONICAL.get(word) or stem(word) if keep else None
                )
            if term is not None:
                out.append(term)
        return out

    def upsert(
        self,
        rule_id: int,
        text: str,
        support_tasks: int,
        last_seen: float,
        tasks: Iterable[str],
        context: MemoryContext = ANY,
    ) -> None:
        self.remove(rule_id)
        counts = Counter(self.terms(text))
        term_ids = [self._term_id(term) for term in counts]
        slot = len(self._entries)
        self._entries.append(
            IndexedRule(
                rule_id, text, support_tasks, last_seen, frozenset(tasks), term_ids, context
            )
        )
        self._slot_of[rule_id] = slot
        self._alive.append(True)
        self._length.append(float(max(1, sum(counts.values()))))
        for term_id, count in zip(term_ids, counts.values(), strict=True):
            self._document_frequency[term_id] += 1
            self._pending.append((slot, term_id, count))
        self._changed()

    def remove(self, rule_id: int) -> None:
        slot = self._slot_of.pop(rule_id, None)
        if slot is None:
            return
        entry = self._entries[slot]
        assert entry is not None
        for term_id in entry.term_ids:
            self._document_frequency[term_id] -= 1
        self._entries[slot] = None
        self._alive[slot] = False
        self._changed()
        if len(self._entries) > 64 and len(self._slot_of) < len(self._entries) // 2:
            self._compact()

    def _changed(self) -> None:
        self._arrays = None
        self._default_order = None

    def _term_id(self, term: str) -> int:
        term_id = self._vocabulary.get(term)
        if term_id is None:
            term_id = self._vocabulary[term] = len(self._vocabulary)
            self._document_frequency.append(0)
        return term_id

    def _compact(self) -> None:
        live = [entry for entry in self._entries if entry is not None]
        RuleIndex.__init__(self)  # the vocabulary and word cache are rebuilt too; both are cheap
        for entry in live:
            self.upsert(
                entry.id,
                entry.text,
                entry.support_tasks,
                entry.last_seen,
                entry.tasks,
                entry.context,
            )

    def _current_arrays(self) -> dict[str, np.ndarray]:
        if self._arrays is None:
            import numpy as np

            columns = zip(*self._pending, strict=True) if self._pending else ((), (), ())
            for name, dtype, column in zip(
                ("slot", "term", "count"), (np.int32, np.int32, np.float64), columns, strict=True
            ):
                fresh = np.array(column, dtype)
                earlier = self._posted.get(name)
                self._posted[name] = fresh if earlier is None else np.concatenate([earlier, fresh])
            self._pending.clear()
            self._arrays = {
                "alive": np.array(self._alive, bool),
                "length": np.array(self._length, np.float64),
                "df": np.array(self._document_frequency, np.float64),
            }
        return self._arrays

    # -- querying ------------------------------------------------------------------------------

    def search(
        self, query: str | None, task: str | None, context: MemoryContext | None = None
    ) -> Iterator[tuple[float, IndexedRule]]:
        """Every active rule, best first: relevant ones by score, then the rest by support.
        Rules learned under a policy or GPU that ``context`` contradicts are left out."""
        for score, entry in self._ranked(query, task):
            if not entry.context.contradicts(context):
                yield score, entry

    def _ranked(self, query: str | None, task: str | None) -> Iterator[tuple[float, IndexedRule]]:
        import numpy as np

        scores = np.zeros(len(self._entries), np.float64)
        if query:
            self._score(query, scores)
        if task:
            for slot in self._slot_of.values():
                entry = self._entries[slot]
                if entry is not None and task in entry.tasks:
                    scores[slot] += TASK_BONUS
        scored = np.flatnonzero(scores > 0)
        if scored.size:
            support = np.array([self._entries[s].support_tasks for s in scored])  # type: ignore[union-attr]
            seen = np.array([self._entries[s].last_seen for s in scored])  # type: ignore[union-attr]
            order = scored[np.lexsort((-seen, -support, -scores[scored]))]
            for slot in order:
                yield float(scores[slot]), self._entries[slot]
        for slot in self._defaults():
            if scores[slot] <= 0:
                yield 0.0, self._entries[slot]  # type: ignore[misc]

    def _score(self, query: str, scores: np.ndarray) -> None:
        counts = Counter(term for term in self.terms(query) if term in self._vocabulary)
        if not counts or not self._slot_of:
            return
        import numpy as np

        arrays = self._current_arrays()
        query_weight = np.zeros(len(self._vocabulary), np.float64)
        for term, count in counts.items():
            # Repeated words in a long kernel should not drown out the rarer ones.
            query_weight[self._vocabulary[term]] = 1 + math.log(count)
        posted = self._posted
        hit = (query_weight[posted["term"]] > 0) & arrays["alive"][posted["slot"]]
        slots = posted["slot"][hit]
        terms = posted["term"][hit]
        tf = posted["count"][hit]
        df = arrays["df"][terms]
        idf = np.log1p((len(self._slot_of) - df + 0.5) / (df + 0.5))
        lengths = arrays["length"]
        average = float(lengths[arrays["alive"]].mean())
        norm = tf + _K1 * (1 - _B + _B * lengths[slots] / average)
        contribution = idf * query_weight[terms] * tf * (_K1 + 1) / norm
        scores += np.bincount(slots, weights=contribution, minlength=len(scores))

    def _defaults(self) -> list[int]:
        # Rules ranked for a query that says nothing: broadest support first, newest next.
        if self._default_order is None:
            live = [(slot, e) for slot, e in enumerate(self._entries) if e is not None]
            live.sort(key=lambda item: (-item[1].support_tasks, -item[1].last_seen))
            self._default_order = [slot for slot, _ in live]
        return self._default_order


def within_budget(
    ranked: Iterable[tuple[float, IndexedRule]], *, limit: int, token_budget: int
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
