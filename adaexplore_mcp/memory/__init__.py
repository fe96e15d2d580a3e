"""The skill memory: compile and runtime failures distilled into "You cannot …" rules that are
merged when they repeat, activated when failures on several tasks support them, and injected
into every prompt."""

from typing import TYPE_CHECKING

from adaexplore_mcp.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from adaexplore_mcp.memory.context import MemoryContext
    from adaexplore_mcp.memory.distiller import Distiller, FailureExample, LLMDistiller, parse_rule
    from adaexplore_mcp.memory.models import (
        AddFailureResult,
        Failure,
        FailureReport,
        Provenance,
        Rule,
        RuleHit,
        RulesAnswer,
        RuleStatus,
        UnknownRule,
    )
    from adaexplore_mcp.memory.performance import Measured, PerformanceLesson, PerformanceMemory
    from adaexplore_mcp.memory.reasoning_bank import Lesson, ReasoningBank, TaskOutcome
    from adaexplore_mcp.memory.rule_text import RuleTextError
    from adaexplore_mcp.memory.rule_text import kernel_specific as kernel_specific_reason
    from adaexplore_mcp.memory.signature import Signature, signature
    from adaexplore_mcp.memory.skill_memory import SkillMemory, failure_signature
    from adaexplore_mcp.memory.starter import install_starter
    from adaexplore_mcp.memory.transfer import (
        ImportReport,
        RulesFileError,
        export_rules,
        import_rules,
        parse_rules,
        parse_support,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AddFailureResult": "models",
        "Distiller": "distiller",
        "Failure": "models",
        "FailureExample": "distiller",
        "FailureReport": "models",
        "ImportReport": "transfer",
        "LLMDistiller": "distiller",
        "Lesson": "reasoning_bank",
        "Measured": "performance",
        "MemoryContext": "context",
        "PerformanceLesson": "performance",
        "PerformanceMemory": "performance",
        "Provenance": "models",
        "ReasoningBank": "reasoning_bank",
        "Rule": "models",
        "RuleHit": "models",
        "RuleStatus": "models",
        "RuleTextError": "rule_text",
        "RulesAnswer": "models",
        "RulesFileError": "transfer",
        "Signature": "signature",
        "SkillMemory": "skill_memory",
        "TaskOutcome": "reasoning_bank",
        "UnknownRule": "models",
        "export_rules": "transfer",
        "failure_signature": "skill_memory",
        "import_rules": "transfer",
        "install_starter": "starter",
        "kernel_specific_reason": "rule_text:kernel_specific",
        "parse_rule": "distiller",
        "parse_rules": "transfer",
        "parse_support": "transfer",
        "signature": "signature",
    },
)

__all__ = [
    "AddFailureResult",
    "Distiller",
    "Failure",
    "FailureExample",
    "FailureReport",
    "ImportReport",
    "LLMDistiller",
    "Lesson",
    "Measured",
    "MemoryContext",
    "PerformanceLesson",
    "PerformanceMemory",
    "Provenance",
    "ReasoningBank",
    "Rule",
    "RuleHit",
    "RuleStatus",
    "RuleTextError",
    "RulesAnswer",
    "RulesFileError",
    "Signature",
    "SkillMemory",
    "TaskOutcome",
    "UnknownRule",
    "export_rules",
    "failure_signature",
    "import_rules",
    "install_starter",
    "kernel_specific_reason",
    "parse_rule",
    "parse_rules",
    "parse_support",
    "signature",
]
