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


def test_a_copy_for_the_reference_keeps_each_inputs_layout_and_its_containers():
    """``clone`` made an expanded input dense (its storage as large as its elements) and a
    namedtuple of inputs could not be rebuilt (it raised in the task's process)."""
    from collections import namedtuple

    from adaexplore_mcp.judge.reference.harness import _copied

    base = torch.arange(8.0)
    expanded = base.expand(4, 8)
    strided = torch.arange(24.0).view(4, 6)[1:, ::2]
    pair = namedtuple("Pair", "a b")(expanded, 3)
    copies = _copied([expanded, strided, pair, (base,)])
    for original, copy in ((expanded, copies[0]), (strided, copies[1])):
        assert torch.equal(copy, original) and copy.stride() == original.stride()
        assert copy.storage_offset() == original.storage_offset()
        assert copy.untyped_storage().nbytes() == original.untyped_storage().nbytes()
        assert copy.untyped_storage().data_ptr() != original.untyped_storage().data_ptr()
    assert type(copies[2]).__name__ == "Pair" and copies[2].b == 3
    assert torch.equal(copies[2].a, expanded) and isinstance(copies[3], tuple)
