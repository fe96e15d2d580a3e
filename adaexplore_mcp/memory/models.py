"""The skill memory's types: what goes in (a failure report), what is stored, what comes back."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.memory.context import ANY, MemoryContext


class UnknownRule(LookupError):
    """No rule has the id asked for (defined here, not beside the memory that raises it, so that
    who only catches it does not import the memory)."""


class RuleStatus(StrEnum):
    CANDIDATE = "candidate"  # not yet supported by failures on enough distinct tasks
    ACTIVE = "active"  # injected into prompts
    RETIRED = "retired"  # kept with its evidence, never injected again


class Provenance(StrEnum):
    LLM = "llm"  # distilled by the configured model
    AGENT = "agent"  # the calling agent supplied the text with a failure
    MANUAL = "manual"  # `rules add` or an MCP client adding a rule directly
    IMPORT = "import"  # read from a rules file
    STARTER = "starter"  # shipped with the package, backed by recorded evidence


class FailureReport(BaseModel):
    """A failed kernel as an agent or the search engine reports it."""

    task: str = Field(min_length=1, max_length=300, description="The task's name.")
    code: str = Field(max_length=1_000_000, description="The kernel that failed.")
    error: str = Field(
        min_length=1, max_length=200_000, description="The error message or the judge's verdict."
    )
    error_type: str | None = Field(
        default=None, max_length=200, description="The exception type, when known."
    )
    verdict: str | None = Field(
        default=None, description="compile_error, runtime_error, incorrect, … when known."
    )
    torch: str | None = None
    triton: str | None = None
    gpu_arch: str | None = Field(
        default=None, description="e.g. 'sm_90' or 'interpreter' for Triton's CPU interpreter."
    )
    precision: Precision | None = Field(
        default=None, description="The precision policy it was judged under, when known."
    )
    ops: Ops | None = Field(
        default=None, description="The operator policy it was judged under, when known."
    )
    origin: str = Field(default="agent", max_length=100, description="Who reported it.")


class Failure(BaseModel):
    id: int
    task: str
    code_hash: str
    signature: str
    error_type: str
    error: str
    torch: str | None
    triton: str | None
    gpu_arch: str | None
    verdict: str | None = None
    precision: Precision | None = None
    ops: Ops | None = None
    origin: str
    created_at: float
    rule_ids: list[int] = Field(default_factory=list)


class Rule(BaseModel):
    id: int
    text: str
    status: RuleStatus
    support_tasks: int = Field(
        description="Distinct tasks whose failures support the rule (plus support imported)."
    )
    support_failures: int = Field(description="Failures linked to the rule.")
    kernel_specific: bool = Field(
        description="Tied to one kernel (a name, a line): never activated."
    )
    provenance: Provenance
    first_seen: float
    last_seen: float
    tasks: list[str] = Field(default_factory=list, description="Tasks of the linked failures.")
    environments: list[str] = Field(
        default_factory=list, description="torch/triton/GPU of the linked failures."
    )
    context: MemoryContext = Field(
        default=ANY,
        description="The policies and GPU it holds for; retrieval leaves it out of searches "
        "under another.",
    )


class RuleHit(BaseModel):
    id: int
    text: str
    support_tasks: int
    score: float = Field(description="Relevance to the query; 0 when none was given.")


class RulesAnswer(BaseModel):
    rules: list[RuleHit]
    active_total: int = Field(description="Active rules in the memory.")
    omitted_for_budget: int = Field(
        default=0, description="Relevant rules left out to stay within the token budget."
    )

    def as_prompt(self) -> str:
        """The rules as the bullet list prompts inject (empty when there are none)."""
        return "\n".join(f"- {hit.text}" for hit in self.rules)


# What ``add_failure`` did with a failure:
# new_rule       the rule text was new: a rule was created and the failure filed under it;
# merged         the rule text restates an existing rule in other words: the failure supports
#                that rule, whose text stays as it was;
# existing_rule  the rule text is an existing rule's, word for word: the failure supports it;
# clustered      no text was given: the failure joined the rule its signature's earlier
#                failures support;
# no_rule        the failure is recorded under no rule (the message says why: no text and no
#                model, the model found none, or a slip, which never makes a rule);
# duplicate      the same kernel had failed this way on this task, and is already filed under
#                the rule this call would file it under, if any: nothing changed.
Outcome = Literal["new_rule", "merged", "existing_rule", "clustered", "no_rule", "duplicate"]


class AddFailureResult(BaseModel):
    failure_id: int
    signature: str
    duplicate: bool = Field(
        description="The same kernel had already failed this way on this task, so the failure "
        "was not stored again; a rule given for it now still files it under that rule."
    )
    outcome: Outcome = Field(
        description="new_rule, merged (a rewording of an existing rule), existing_rule (its "
        "very words), clustered (by signature), no_rule, or duplicate (nothing changed)."
    )
    rule: Rule | None = None
    activated: bool = Field(default=False, description="This failure made the rule active.")
    slip: str | None = Field(
        default=None,
        description="Why the failure is a slip of this kernel (a typo, a name it never defines, "
        "a module that does not exist) rather than a lesson: it is recorded, but makes and "
        "supports no rule.",
    )
    message: str = Field(description="What happened, in one sentence.")
