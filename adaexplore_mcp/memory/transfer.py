"""Plain-text exchange of rules: one rule a line, ``rule`` or ``rule||support``.

``support`` is the number of distinct tasks whose failures support the rule. A line without it
is a curated rule, active whatever its support. Blank lines and lines starting with ``#`` are
ignored. Export writes every active and candidate rule that is not tied to one kernel; retired
rules stay where they were retired.

AdaExplore's released memory writes its figures as decimals (``rule||34.0``). A decimal support
is rounded to the nearest whole number, halves up (``2.5`` counts as 3 tasks), in decimal
arithmetic so that no binary rounding of the text decides it; export always writes whole numbers.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

from pydantic import BaseModel, Field

from adaexplore_mcp.memory.models import Provenance, RuleStatus
from adaexplore_mcp.memory.rule_text import RuleTextError, clean
from adaexplore_mcp.memory.skill_memory import SkillMemory

SEPARATOR = "||"


class RulesFileError(ValueError):
    """A rules file with lines that are not rules; nothing was imported."""


class ImportReport(BaseModel):
    added: list[int] = Field(default_factory=list, description="Ids of the new rules.")
    merged: list[int] = Field(
        default_factory=list, description="Ids of existing rules the file repeated."
    )
    tied_to_one_kernel: list[int] = Field(
        default_factory=list,
        description="Ids of the file's rules that name one kernel's lines or variables: kept, "
        "never activated, whatever their support.",
    )


def export_rules(memory: SkillMemory) -> str:
    lines = []
    for rule in memory.rules([RuleStatus.ACTIVE, RuleStatus.CANDIDATE]):
        if rule.kernel_specific:
            continue
        curated = rule.status is RuleStatus.ACTIVE and rule.support_tasks < memory.threshold
        lines.append(rule.text if curated else f"{rule.text}{SEPARATOR}{rule.support_tasks}")
    return "".join(f"{line}\n" for line in lines)


def parse_rules(text: str) -> list[tuple[str, int | None]]:
    """The (rule, support) pairs of a rules file; ``RulesFileError`` lists every bad line."""
    parsed: list[tuple[str, int | None]] = []
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        rule, support = line, None
        if SEPARATOR in line:
            rule, _, count = line.rpartition(SEPARATOR)
            try:
                support = parse_support(count)
            except ValueError as error:
                problems.append(f"line {number}: {error}")
                continue
        try:
            parsed.append((clean(rule), support))
        except RuleTextError as error:
            problems.append(f"line {number}: {error}")
    if problems:
        raise RulesFileError(
            "nothing was imported; fix these lines (one rule a line, 'You cannot …' or "
            "'You cannot …||N', N a count of tasks such as 3 or 3.0):\n  " + "\n  ".join(problems)
        )
    return parsed


_DECIMAL = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")


def parse_support(text: str) -> int:
    """A support figure as a whole number of tasks: ``3``, or a decimal such as ``34.0`` or
    ``2.5`` rounded to the nearest whole number, halves up. ``ValueError`` says what is wrong."""
    figure = text.strip()
    if not _DECIMAL.fullmatch(figure):
        raise ValueError(f"support {figure!r} is not a number (write a count of tasks: 3 or 3.0)")
    value = Decimal(figure)
    if value < 0:
        raise ValueError(f"support {figure!r} is negative; it counts tasks")
    return int(value.to_integral_value(rounding=ROUND_HALF_UP))


def import_rules(
    memory: SkillMemory, text: str, provenance: Provenance = Provenance.IMPORT
) -> ImportReport:
    """Adds the file's rules, merging each into the rule it repeats (support is raised to the
    file's figure, never lowered)."""
    report = ImportReport()
    for rule_text, support in parse_rules(text):
        rule, created = memory.add_rule(rule_text, provenance=provenance, support=support)
        (report.added if created else report.merged).append(rule.id)
        if rule.kernel_specific:
            report.tied_to_one_kernel.append(rule.id)
    return report
