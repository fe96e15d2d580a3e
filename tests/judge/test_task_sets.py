"""The task's process draws the timed sets (on a GPU) and computes their references: what it
sends is what it drew, whatever the reference does to its inputs."""

from __future__ import annotations

import textwrap

import torch

from adaexplore_mcp.judge.reference.harness import Reference
from adaexplore_mcp.judge.reference.task_module import TaskModule
from adaexplore_mcp.judge.wire.jobs import ChildJob
from adaexplore_mcp.judge.wire.subject import InputsRequest, SetsRequest
from adaexplore_mcp.judge.wire.values import PayloadDecoder
from adaexplore_mcp.tasks import parse_task

IN_PLACE = textwrap.dedent(
    """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, x):
            x.mul_(2)
            return x


    def get_inputs():
        return [torch.randn(64)]


    def get_init_inputs():
        return []
    """
)


def test_the_sets_are_sent_as_drawn_whatever_the_reference_does_to_them(tmp_path, monkeypatch):
    """An in-place reference ran before its set was sent: the candidate was timed on inputs
    already doubled, so an honest kernel failed its timed calls and one that returned its
    input passed them (a red team)."""
    monkeypatch.chdir(tmp_path)
    task = parse_task(IN_PLACE, name="in_place")
    reference = Reference(ChildJob(kind="eval", task=task, code="", device="cpu"), channel=None)
    reference.task = TaskModule(task.source, torch.device("cpu"))
    variant = task.main_variant("cuda").name
    reference.models[variant] = reference.task.build([], 1)

    answer, payload = reference.sets(SetsRequest(variant=variant, seeds=[7], keys=[1]), b"")
    sent = PayloadDecoder(payload).decode_all(answer.sets[0])[0]
    drawn = reference.task.inputs(variant, {}, 7)[0]
    assert torch.equal(sent, drawn)
    assert torch.equal(reference.kept[1][2], 2 * drawn)

    request = InputsRequest(variant=variant, seed=7, key=2, reference=True)
    answer, payload = reference.inputs(request, b"")
    assert torch.equal(PayloadDecoder(payload).decode_all(answer.values)[0], drawn)
