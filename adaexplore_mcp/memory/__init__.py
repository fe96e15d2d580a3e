"""The skill memory: compile and runtime failures distilled into "You cannot …" rules that are
merged when they repeat, activated when failures on several tasks support them, and injected
into every prompt."""

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
)
from adaexplore_mcp.memory.performance import Measured, PerformanceLesson, PerformanceMemory
from adaexplore_mcp.memory.reasoning_bank import Lesson, ReasoningBank, TaskOutcome
from adaexplore_mcp.memory.rule_text import RuleTextError
from adaexplore_mcp.memory.rule_text import kernel_specific as kernel_specific_reason
from adaexplore_mcp.memory.signature import Signature, signature
from adaexplore_mcp.memory.skill_memory import (
    SkillMemory,
    UnknownRule,
    failure_signature,
    open_memory,
)
from adaexplore_mcp.memory.transfer import (
    ImportReport,
    RulesFileError,
    export_rules,
    import_rules,
    parse_rules,
    parse_support,
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
    "kernel_specific_reason",
    "open_memory",
    "parse_rule",
    "parse_rules",
    "parse_support",
    "signature",
]
