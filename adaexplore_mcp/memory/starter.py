"""The starter memory shipped in the package: curated rules, each linked to the failures the
team recorded while writing and probing the bundled kernels (``starter/evidence.jsonl``).

It is installed into a store once per version of those files; a user's retired starter rule
stays retired, and installing twice adds nothing.
"""

from __future__ import annotations

import hashlib
import logging
from importlib import resources

from pydantic import BaseModel, Field

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.memory import repository as repo
from adaexplore_mcp.memory.context import MemoryContext
from adaexplore_mcp.memory.models import FailureReport, Provenance
from adaexplore_mcp.memory.skill_memory import SkillMemory, failure_signature
from adaexplore_mcp.store import Store

log = logging.getLogger(__name__)

_META_KEY = "starter"


class EvidenceEnvironment(BaseModel):
    interpreter: bool
    device_name: str | None = None
    capability: str | None = None
    torch: str | None = None
    triton: str | None = None


class Evidence(BaseModel):
    """One recorded run of a kernel with a mistake (or, for a GPU-only mistake, its passing
    interpreter run)."""

    id: str
    task: str
    origin: str = Field(description="'writing' (while writing a bundled kernel) or 'probe'.")
    environment: EvidenceEnvironment
    status: str
    error_type: str | None = None
    error: str
    cause: str
    code: str

    @property
    def is_failure(self) -> bool:
        return self.status != "correct"

    def report(self) -> FailureReport:
        env = self.environment
        arch = (
            "interpreter"
            if env.interpreter
            else (f"sm_{env.capability.replace('.', '')}" if env.capability else env.device_name)
        )
        return FailureReport(
            task=self.task,
            code=self.code,
            error=self.error,
            error_type=self.error_type,
            verdict=self.status,
            torch=env.torch,
            triton=env.triton,
            gpu_arch=arch,
            # every starter record was judged under the judge's defaults
            precision=Precision.STRICT,
            ops=Ops.TRITON,
            origin=f"starter:{self.id}",
        )


class StarterRule(BaseModel):
    text: str
    evidence: list[str] = Field(min_length=1)
    needs_gpu_evidence: bool = False
    precision: Precision | None = Field(
        default=None, description="The one precision policy the rule holds under; None: any."
    )
    ops: Ops | None = None
    gpu_arch: str | None = None

    @property
    def context(self) -> MemoryContext:
        return MemoryContext(precision=self.precision, ops=self.ops, gpu_arch=self.gpu_arch)


def _read(name: str) -> str:
    return (resources.files("adaexplore_mcp.memory") / "starter" / name).read_text()


def load_starter() -> tuple[list[StarterRule], dict[str, list[Evidence]]]:
    """The starter rules and their evidence, by evidence id (one id may have a record per
    environment)."""
    rules = [
        StarterRule.model_validate_json(line)
        for line in _read("rules.jsonl").splitlines()
        if line.strip()
    ]
    evidence: dict[str, list[Evidence]] = {}
    for line in _read("evidence.jsonl").splitlines():
        if line.strip():
            record = Evidence.model_validate_json(line)
            evidence.setdefault(record.id, []).append(record)
    return rules, evidence


def starter_version() -> str:
    return hashlib.sha256((_read("rules.jsonl") + _read("evidence.jsonl")).encode()).hexdigest()[
        :16
    ]


def install_starter(memory: SkillMemory, store: Store) -> bool:
    """Adds the starter rules and their evidence unless this version is already installed."""
    version = starter_version()
    with store.connect() as conn:
        if repo.get_meta(conn, _META_KEY) == version:
            return False
    rules, evidence = load_starter()
    for starter in rules:
        rule, _ = memory.add_rule(
            starter.text, provenance=Provenance.STARTER, context=starter.context
        )
        records = [r for eid in starter.evidence for r in evidence.get(eid, []) if r.is_failure]
        with store.connect() as conn:
            failure_ids = []
            for record in records:
                report = record.report()
                sig = failure_signature(report)
                failure_id, _ = repo.insert_failure(
                    conn,
                    report,
                    code_hash=hashlib.sha256(report.code.encode()).hexdigest()[:16],
                    signature=sig.key,
                    error_type=sig.error_type,
                )
                failure_ids.append(failure_id)
            repo.link(conn, rule.id, failure_ids)
            repo.touch(conn, [rule.id])
    with store.connect() as conn:
        repo.set_meta(conn, _META_KEY, version)
    log.info("installed the starter memory (%d rules, version %s)", len(rules), version)
    return True
