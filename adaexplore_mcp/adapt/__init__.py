"""The Adapt stage: new training tasks synthesized from the bundled suite, validated and stored
in the task format, then a strategy run on them with the rule memory recording its failures,
and a report of the rules that run taught the memory (docs/report.md).

    result = await adapt(AdaptSpec(count=4, out_dir=tasks_dir), settings, llm)
    result.tasks, result.rules.new, result.rules.rules[0].examples
"""

from adaexplore_mcp.adapt.learned import (
    Example,
    LearnedRules,
    RuleChange,
    RuleState,
    Snapshot,
    learned,
    snapshot,
)
from adaexplore_mcp.adapt.pipeline import LOG_FILE, AdaptResult, AdaptSpec, adapt
from adaexplore_mcp.adapt.synthesis import (
    SYSTEM,
    KnownTasks,
    Rejected,
    SynthesisAttempt,
    parse_reply,
    prompt_for,
    source_hash,
    synthesize,
    validate,
)

__all__ = [
    "LOG_FILE",
    "SYSTEM",
    "AdaptResult",
    "AdaptSpec",
    "Example",
    "KnownTasks",
    "LearnedRules",
    "Rejected",
    "RuleChange",
    "RuleState",
    "Snapshot",
    "SynthesisAttempt",
    "adapt",
    "learned",
    "parse_reply",
    "prompt_for",
    "snapshot",
    "source_hash",
    "synthesize",
    "validate",
]
