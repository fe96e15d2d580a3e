"""``SkillMemory``: failures in, "You cannot …" rules out.

A failure is stored with its signature; a slip of the kernel's own text (``slips``) stops
there. Its rule comes from, in order: the text the agent supplied; the rule its signature's
earlier failures already support (repeats cluster without a model); the configured model. A new
rule text merges into an existing rule that states the same prohibition (same words, a close
lexical match, a near match to the rule its own error stands under, or one the model confirms),
which raises that rule's support; a rule is active once failures on ``threshold`` distinct tasks
support it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections.abc import Collection

from adaexplore_mcp.memory import outcomes
from adaexplore_mcp.memory import repository as repo
from adaexplore_mcp.memory.context import ANY, MemoryContext, failure_context
from adaexplore_mcp.memory.distiller import Distiller, FailureExample
from adaexplore_mcp.memory.models import (
    AddFailureResult,
    Failure,
    FailureReport,
    Outcome,
    Provenance,
    Rule,
    RulesAnswer,
    RuleStatus,
    UnknownRule,
)
from adaexplore_mcp.memory.retrieval import RuleIndex, within_budget
from adaexplore_mcp.memory.rule_text import (
    RuleTerms,
    clean,
    kernel_specific,
    normalized,
    rule_similarity,
    rule_terms,
)
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.memory.signature import Signature, first_exception_type, signature
from adaexplore_mcp.store import Store

log = logging.getLogger(__name__)

# Rules the model is asked to compare a new rule with, best lexical matches first.
_JUDGED_CANDIDATES = 3
_NO_MODEL = "no model distils rules here; pass rule='You cannot …' to file it under one"


class SkillMemory:
    def __init__(
        self,
        store: Store,
        settings: MemorySettings | None = None,
        distiller: Distiller | None = None,
    ) -> None:
        self._store = store
        self.settings = settings or MemorySettings()
        self._distiller = distiller if self.settings.distill_with_llm else None
        self._index = RuleIndex()
        self._index_generation = -1
        self._terms: dict[str, RuleTerms] = {}

    @property
    def threshold(self) -> int:
        return self.settings.threshold

    # -- failures ------------------------------------------------------------------------------

    async def add_failure(self, report: FailureReport, rule: str | None = None) -> AddFailureResult:
        """Records a failure and files it under a rule (see the module's docstring); the
        result's outcome says what this call changed.

        ``rule``, when given, must be one sentence starting "You cannot" (``RuleTextError``
        otherwise, and nothing is stored)."""
        supplied = clean(rule) if rule is not None else None
        sig = failure_signature(report)
        with self._store.connect() as conn:
            failure_id, duplicate = repo.insert_failure(
                conn,
                report,
                code_hash=_hash(report.code),
                signature=sig.key,
                error_type=sig.error_type,
            )
            clustered_rule = repo.rule_of_signature(conn, sig.key) if sig.distinctive else None
            linked = repo.rules_of_failure(conn, failure_id) if duplicate else []
            # A slip never makes or supports a rule, whatever text comes with it.
            if duplicate and (supplied is None or sig.slip is not None):
                current = repo.get_rule(conn, linked[0]) if linked else None
                return outcomes.already_filed(failure_id, sig, current, restated=False)
            if sig.slip is not None:
                return outcomes.slipped(failure_id, sig, rule_given=supplied is not None)
            examples = repo.cluster(conn, sig.key) if supplied is None else []
        # Rules this very error already stands under: a given text that shares their words
        # restates one of them.
        known = set(linked) | ({clustered_rule} if clustered_rule is not None else set())

        if supplied is None and clustered_rule is not None:
            return self._file(failure_id, sig, clustered_rule, "clustered", duplicate=duplicate)

        text, provenance, why_none = supplied, Provenance.AGENT, _NO_MODEL
        if text is None and self._distiller is not None:
            text, why_none = await self._distil(examples)
            provenance = Provenance.LLM
        if text is None:
            return outcomes.unfiled(failure_id, sig, duplicate=duplicate, why=why_none)
        specific = kernel_specific(text, report.code)
        target = await self._merge_target(text, known)
        # a new rule holds for what this failure was learned under; later support widens it
        learned_under = failure_context(
            report.verdict, report.precision, report.ops, report.gpu_arch
        )
        with self._store.connect() as conn:
            rule_id, placed = self._place(
                conn, text, provenance, specific, target, context=learned_under
            )
        return self._file(failure_id, sig, rule_id, placed, duplicate=duplicate)

    def _file(
        self, failure_id: int, sig: Signature, rule_id: int, outcome: Outcome, *, duplicate: bool
    ) -> AddFailureResult:
        """Links the failure, and its signature's unfiled repeats, to a rule; promotes it."""
        with self._store.connect() as conn:
            # Only a duplicate can already be linked: then this call changed nothing.
            already = rule_id in repo.rules_of_failure(conn, failure_id)
            failure_ids = {failure_id}
            if sig.distinctive:
                failure_ids |= set(repo.unlinked_failures(conn, sig.key))
            added = repo.link(conn, rule_id, sorted(failure_ids))
            activated = repo.promote_if_supported(conn, rule_id, self.threshold)
            if added or activated:
                repo.touch(conn, [rule_id])
            rule = repo.get_rule(conn, rule_id)
        assert rule is not None
        if already:
            return outcomes.already_filed(failure_id, sig, rule, restated=outcome != "clustered")
        return outcomes.filed(
            failure_id,
            sig,
            rule,
            outcome=outcome,
            duplicate=duplicate,
            activated=activated,
            threshold=self.threshold,
        )

    async def _distil(self, rows: list[sqlite3.Row]) -> tuple[str | None, str]:
        """The model's rule for these failures, or None and why there is none."""
        assert self._distiller is not None
        examples = [
            FailureExample(
                task=row["task"],
                error_type=row["error_type"],
                error=row["error"],
                code=row["code"],
                environment=" ".join(
                    filter(None, [row["triton"] and f"triton {row['triton']}", row["gpu_arch"]])
                )
                or None,
            )
            for row in rows
        ]
        try:
            text = await self._distiller.extract_rule(examples)
        except Exception as error:  # the model is optional: a failure must still be recorded
            log.warning("rule distillation failed, failure kept without a rule: %s", error)
            return None, (
                f"the model could not be asked ({type(error).__name__}: {error}); "
                "pass rule='You cannot …' to file it under one"
            )
        return text, "the model found no prohibited action in it"

    # -- rules ---------------------------------------------------------------------------------

    def add_rule(
        self,
        text: str,
        *,
        provenance: Provenance = Provenance.MANUAL,
        support: int | None = None,
        context: MemoryContext | None = None,
    ) -> tuple[Rule, bool]:
        """Adds a rule or merges it into the one it repeats; returns it and whether it is new.

        ``support`` None: a curated rule, active at once. A number: that many distinct tasks
        support it elsewhere (an import); active once that reaches the threshold.
        ``context``: the policies and GPU the rule holds for, stated by its curator (it replaces
        the context of the rule merged into); None leaves a new rule general."""
        text = clean(text)
        specific = kernel_specific(text)
        with self._store.connect() as conn:
            target = self._lexical_match(conn, text)
            rule_id, placed = self._place(conn, text, provenance, specific, target)
            if context is not None:
                repo.set_context(conn, rule_id, context)
            if support is not None:
                repo.raise_support(conn, rule_id, support)
                repo.promote_if_supported(conn, rule_id, self.threshold)
            elif not specific and self._status(conn, rule_id) is RuleStatus.CANDIDATE:
                repo.set_status(conn, rule_id, RuleStatus.ACTIVE)
            repo.touch(conn, [rule_id])
            rule = repo.get_rule(conn, rule_id)
        assert rule is not None
        return rule, placed == "new_rule"

    def rule(self, rule_id: int) -> Rule:
        with self._store.connect() as conn:
            rule = repo.get_rule(conn, rule_id)
        if rule is None:
            raise UnknownRule(
                f"no rule with id {rule_id}; `adaexplore-mcp rules list --all` shows every rule"
            )
        return rule

    def rules(self, statuses: list[RuleStatus] | None = None) -> list[Rule]:
        with self._store.connect() as conn:
            return repo.list_rules(conn, statuses)

    def set_status(self, rule_id: int, status: RuleStatus) -> Rule:
        self.rule(rule_id)
        with self._store.connect() as conn:
            repo.set_status(conn, rule_id, status)
            repo.touch(conn, [rule_id])
        return self.rule(rule_id)

    def retire(self, rule_id: int) -> Rule:
        return self.set_status(rule_id, RuleStatus.RETIRED)

    def failures(self, rule_id: int | None = None, limit: int | None = None) -> list[Failure]:
        if rule_id is not None:
            self.rule(rule_id)
        with self._store.connect() as conn:
            return repo.list_failures(conn, rule_id=rule_id, limit=limit)

    def failure_code(self, failure_id: int) -> str | None:
        with self._store.connect() as conn:
            return repo.failure_code(conn, failure_id)

    # -- retrieval -----------------------------------------------------------------------------

    def get_rules(
        self,
        query: str | None = None,
        task: str | None = None,
        limit: int | None = None,
        token_budget: int | None = None,
        context: MemoryContext | None = None,
    ) -> RulesAnswer:
        """Active rules, the most relevant to ``query`` (text or a kernel) and ``task`` first,
        at most ``limit`` of them and within ``token_budget`` tokens. With ``context`` (the
        search's policies and GPU), rules learned under a contradicting one are left out."""
        index = self._current_index()
        hits, omitted = within_budget(
            index.search(query, task, context),
            limit=limit or self.settings.max_rules,
            token_budget=token_budget or self.settings.token_budget,
        )
        return RulesAnswer(rules=hits, active_total=len(index), omitted_for_budget=omitted)

    def _current_index(self) -> RuleIndex:
        """The index, brought up to date with the rules changed since it was last read."""
        with self._store.connect() as conn:
            generation = repo.generation(conn)
            if generation != self._index_generation:
                for row in repo.changed_rules(conn, self._index_generation):
                    rule_id, text, status, specific, support, seen, tasks = row[:7]
                    if status == RuleStatus.ACTIVE and not specific:
                        precision, ops, gpu_arch = row[7:]
                        context = MemoryContext(precision=precision, ops=ops, gpu_arch=gpu_arch)
                        self._index.upsert(rule_id, text, support, seen, json.loads(tasks), context)
                    else:
                        self._index.remove(rule_id)
                self._index_generation = generation
        return self._index

    # -- placing a rule ------------------------------------------------------------------------

    async def _merge_target(self, text: str, known: Collection[int] = ()) -> int | None:
        """The existing rule ``text`` repeats: an exact or close lexical match; else a near
        match among ``known``, the rules the failure's own error already stands under; else
        one of the near matches the model calls the same prohibition."""
        with self._store.connect() as conn:
            rows = repo.rule_texts(conn)
        ranked = self._ranked_matches(text, rows)
        if ranked and ranked[0][0] >= self.settings.merge_similarity:
            return ranked[0][1]
        # Earlier failures of this very error are filed under a known rule: that evidence is
        # what the model would be asked for, so shared words are enough.
        for score, rule_id, _existing in ranked:
            if rule_id in known and score >= self.settings.judge_similarity:
                return rule_id
        if self._distiller is None:
            return None
        for score, rule_id, existing in ranked[:_JUDGED_CANDIDATES]:
            if score < self.settings.judge_similarity:
                break
            try:
                if await self._distiller.same_prohibition(text, existing):
                    return rule_id
            except Exception as error:
                log.warning("could not ask the model whether two rules match: %s", error)
                return None
        return None

    def _lexical_match(self, conn: sqlite3.Connection, text: str) -> int | None:
        ranked = self._ranked_matches(text, repo.rule_texts(conn))
        if ranked and ranked[0][0] >= self.settings.merge_similarity:
            return ranked[0][1]
        return None

    def _ranked_matches(
        self, text: str, rows: list[tuple[int, str, str]]
    ) -> list[tuple[float, int, str]]:
        exact = normalized(text)
        terms = self._rule_terms(text)
        ranked = []
        for rule_id, existing, _status in rows:
            score = (
                1.0
                if normalized(existing) == exact
                else rule_similarity(terms, self._rule_terms(existing))
            )
            if score > 0:
                ranked.append((score, rule_id, existing))
        ranked.sort(key=lambda item: (-item[0], item[1]))
        return ranked

    def _rule_terms(self, text: str) -> RuleTerms:
        terms = self._terms.get(text)
        if terms is None:
            terms = self._terms[text] = rule_terms(text)
        return terms

    def _place(
        self,
        conn: sqlite3.Connection,
        text: str,
        provenance: Provenance,
        specific: str | None,
        target: int | None,
        *,
        context: MemoryContext | None = None,
    ) -> tuple[int, Outcome]:
        """Inside one transaction: the rule to file under, and how it was found: a rule with
        the same words (``existing_rule``), ``target`` or a close match another process added
        meanwhile (``merged``), else one created for ``text`` (``new_rule``)."""
        same = repo.rule_by_normalized(conn, normalized(text))
        if same is not None:
            return same, "existing_rule"
        # Another writer may have added a close match since the prefilter ran.
        chosen = target if target is not None else self._lexical_match(conn, text)
        if chosen is not None and repo.get_rule(conn, chosen) is not None:
            return chosen, "merged"
        if specific:
            log.info("rule kept as a candidate because %s: %s", specific, text)
        rule_id = repo.insert_rule(
            conn,
            text=text,
            normalized=normalized(text),
            status=RuleStatus.CANDIDATE,
            provenance=provenance,
            kernel_specific=bool(specific),
            context=context or ANY,
        )
        return rule_id, "new_rule"

    @staticmethod
    def _status(conn: sqlite3.Connection, rule_id: int) -> RuleStatus:
        rule = repo.get_rule(conn, rule_id)
        assert rule is not None
        return rule.status


def failure_signature(report: FailureReport) -> Signature:
    error_type = report.error_type
    if not error_type:
        error_type = first_exception_type(report.error) or report.verdict or "Error"
    return signature(error_type, report.error, code=report.code, kind=report.verdict)


def _hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()[:16]
