"""Task lint: could a kernel pass without computing the answer? Run by the trusted process; the
task's process only builds inputs and runs the reference.

For every shape variant the reference runs on two independent input sets A and B. A task is
flagged when an all-zeros output, a constant output (the mean of the expected output) or B's
output would pass the judge's own comparison as the answer for A, and when the reference is not
deterministic, produces NaN/Inf or modifies its inputs.
"""

from __future__ import annotations

import random
import secrets
from typing import Any

import torch

from adaexplore_mcp.judge.result import LintFinding, LintReport, Phase, SkippedVariant
from adaexplore_mcp.judge.trusted.common import ask_task, task_failure
from adaexplore_mcp.judge.trusted.compare import Comparison, first_modified
from adaexplore_mcp.judge.trusted.link import Link
from adaexplore_mcp.judge.trusted.report import Reporter, TaskFailed
from adaexplore_mcp.judge.wire.jobs import ChildJob
from adaexplore_mcp.judge.wire.subject import (
    BuildAnswer,
    BuildRequest,
    InputsRequest,
    ReferenceRequest,
    ValuesAnswer,
)
from adaexplore_mcp.tasks import ShapeVariant, Task, VariantRole


class _Lint:
    def __init__(self, job: ChildJob, task_link: Link) -> None:
        assert job.task is not None
        self.job, self.task, self.link = job, job.task, task_link
        self.rng = random.Random(secrets.randbits(64))
        self.keys = iter(range(1, 1 << 30))

    def ask(self, request: Any, expect: type) -> tuple[Any, bytes]:
        return ask_task(self.link, self.task, request, expect)

    def inputs(self, variant: ShapeVariant, seed: int) -> tuple[int, list[Any]]:
        key = next(self.keys)
        request = InputsRequest(
            variant=variant.name, overrides=dict(variant.overrides), seed=seed, key=key
        )
        answer, payload = self.ask(request, ValuesAnswer)
        return key, self.link.take(answer.values, payload)

    def reference(self, key: int) -> tuple[list[Any], list[Any]]:
        answer, payload = self.ask(ReferenceRequest(key=key, inputs_after=True), ValuesAnswer)
        return self.link.take(answer.values, payload), self.link.take(
            answer.inputs_after or [], payload
        )

    def variant(self, variant: ShapeVariant) -> list[LintFinding]:
        name = variant.describe()
        findings: list[LintFinding] = []

        def flag(check: str, detail: str, index: int | None = None) -> None:
            findings.append(
                LintFinding(variant=name, output_index=index, check=check, detail=detail)
            )

        build = BuildRequest(
            variant=variant.name, overrides=dict(variant.overrides), seed=self.rng.getrandbits(62)
        )
        self.ask(build, BuildAnswer)
        key_a, pristine = self.inputs(variant, self.rng.getrandbits(62))
        out_a, after = self.reference(key_a)
        modified = first_modified(pristine, after)
        if modified is not None:
            flag("mutates_inputs", f"the reference modifies input {modified}", modified)
        out_again, _ = self.reference(key_a)  # the same inputs, the torch generator moved on
        key_b, _ = self.inputs(variant, self.rng.getrandbits(62))
        out_b, _ = self.reference(key_b)

        for index, expected in enumerate(out_a):
            if not isinstance(expected, torch.Tensor):
                flag("not_a_tensor", f"output is a {type(expected).__name__}", index)
                continue
            if expected.is_floating_point() and not bool(torch.isfinite(expected).all()):
                flag("nonfinite", "the reference output contains NaN or Inf", index)
                continue

            def passes(candidate: torch.Tensor, expected: torch.Tensor = expected) -> bool:
                comparison = Comparison(self.job.tolerances, self.task.tolerance)
                return comparison.compare(candidate, expected, variant=name, trial=0) is None

            if index >= len(out_again) or not passes(out_again[index]):
                flag("nondeterministic", "two runs on the same inputs disagree", index)
            if passes(torch.zeros_like(expected)):
                flag("zeros", "an all-zeros output passes the tolerance", index)
            if passes(torch.full_like(expected, _typical_value(expected))):
                flag("constant", "a constant output passes the tolerance", index)
            other = out_b[index] if index < len(out_b) else None
            if isinstance(other, torch.Tensor) and other.shape == expected.shape and passes(other):
                flag(
                    "input_independent",
                    "the output for other random inputs passes: it barely depends on the inputs",
                    index,
                )
        return findings


def run_lint(job: ChildJob, task_link: Link, reporter: Reporter) -> LintReport:
    assert job.task is not None
    task: Task = job.task
    reporter.phase(Phase.CHECKING)
    # a lint runs the task's code alone: a time limit reached in it is the task's
    with reporter.task_running():
        return _lint(job, task, task_link)


def _lint(job: ChildJob, task: Task, task_link: Link) -> LintReport:
    ready = task_link.ready()
    lint = _Lint(job, task_link)
    if ready.error is not None:
        raise task_failure(task, ready.error)
    findings: list[LintFinding] = []
    linted: list[str] = []
    skipped: list[SkippedVariant] = []
    for variant in task.variants_for("cpu" if job.device == "cpu" else "cuda"):
        derived = variant.role is VariantRole.DERIVED
        try:
            found = lint.variant(variant)
        except TaskFailed as failure:
            if not derived:
                raise
            # a shape the judge made up, not one the task promised: evaluations skip it too
            skipped.append(SkippedVariant(variant=variant.describe(), reason=str(failure)))
            continue
        if derived and any(finding.check == "nonfinite" for finding in found):
            reason = "the reference's output holds NaN or Inf"
            skipped.append(SkippedVariant(variant=variant.describe(), reason=reason))
            continue
        findings += found
        linted.append(variant.describe())
    return LintReport(
        task=task.name, task_hash=task.hash, variants=linted, skipped=skipped, findings=findings
    )


def _typical_value(tensor: torch.Tensor) -> float | int | bool:
    if tensor.numel() == 0:
        return 0
    if tensor.is_floating_point():
        return float(tensor.double().mean())
    return tensor.flatten().mode().values.item()
