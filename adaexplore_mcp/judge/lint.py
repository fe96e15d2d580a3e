"""Task lint, inside a sandboxed child: could a kernel pass without computing the answer?

For every shape variant the reference runs on two independent input sets A and B. A task is
flagged when an all-zeros output, a constant output (the mean of the expected output) or B's
output would pass the judge's own comparison as the answer for A, and when the reference is not
deterministic, produces NaN/Inf or modifies its inputs.
"""

from __future__ import annotations

import random

import torch

from adaexplore_mcp.judge.compare import Comparison, as_outputs, first_modified
from adaexplore_mcp.judge.harness import Channel, TaskRuntime, clone_args, device_of
from adaexplore_mcp.judge.protocol import ChildJob
from adaexplore_mcp.judge.result import LintFinding, LintReport, Phase
from adaexplore_mcp.tasks import ShapeVariant


def run_lint(job: ChildJob, channel: Channel) -> LintReport:
    assert job.task is not None
    task = job.task
    device = device_of(job)
    rng = random.Random(job.seed)
    channel.phase(Phase.CHECKING)
    runtime = TaskRuntime(task, device)
    variants = task.variants_for("cpu" if device.type == "cpu" else "cuda")
    findings: list[LintFinding] = []
    for variant in variants:
        findings += _lint_variant(job, runtime, variant, rng)
    return LintReport(
        task=task.name,
        task_hash=task.hash,
        variants=[v.describe() for v in variants],
        findings=findings,
    )


def _lint_variant(
    job: ChildJob, runtime: TaskRuntime, variant: ShapeVariant, rng: random.Random
) -> list[LintFinding]:
    name = variant.describe()
    findings: list[LintFinding] = []

    def flag(check: str, detail: str, index: int | None = None) -> None:
        findings.append(LintFinding(variant=name, output_index=index, check=check, detail=detail))

    model = runtime.build_reference(runtime.init_inputs(variant), rng.getrandbits(62))
    inputs_a = runtime.inputs(variant, rng.getrandbits(62))
    inputs_b = runtime.inputs(variant, rng.getrandbits(62))
    pristine = clone_args(inputs_a)
    out_a = as_outputs(runtime.run_reference(model, inputs_a))
    modified = first_modified(pristine, inputs_a)
    if modified is not None:
        flag("mutates_inputs", f"the reference modifies input {modified}", modified)
    out_again = as_outputs(runtime.run_reference(model, clone_args(pristine)))
    out_b = as_outputs(runtime.run_reference(model, inputs_b))

    for index, expected in enumerate(out_a):
        if not isinstance(expected, torch.Tensor):
            flag("not_a_tensor", f"output is a {type(expected).__name__}", index)
            continue
        if expected.is_floating_point() and not bool(torch.isfinite(expected).all()):
            flag("nonfinite", "the reference output contains NaN or Inf", index)
            continue

        def passes(candidate: torch.Tensor, expected: torch.Tensor = expected) -> bool:
            verdict = Comparison(job.tolerances, runtime.task.tolerance).compare(
                candidate, expected, variant=name, trial=0
            )
            return verdict is None

        if not passes(out_again[index]):
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


def _typical_value(tensor: torch.Tensor) -> float | int | bool:
    if tensor.numel() == 0:
        return 0
    if tensor.is_floating_point():
        return float(tensor.double().mean())
    return tensor.flatten().mode().values.item()
