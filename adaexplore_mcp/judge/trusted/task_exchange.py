"""What an evaluation asks of the task's process: builds of ``Model``, fresh inputs from seeds
drawn here, and the references computed on the task's own copy of them.

Every seed comes from this process's generator, drawn after the fork: the task's process uses
one to build inputs, the candidate's never sees any. Each input set has a key by which the task's
process keeps it (and its reference) until told to forget it.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import secrets
from collections.abc import Callable
from typing import Any

import torch

from adaexplore_mcp.judge.result import SkippedVariant
from adaexplore_mcp.judge.trusted.common import ask_task, task_failure
from adaexplore_mcp.judge.trusted.compare import first_modified
from adaexplore_mcp.judge.trusted.link import Link
from adaexplore_mcp.judge.trusted.shapes import probe_reference
from adaexplore_mcp.judge.wire.subject import (
    BuildAnswer,
    BuildRequest,
    ExpectedRequest,
    ForgetRequest,
    InputsRequest,
    OkAnswer,
    ReferenceRequest,
    SetsAnswer,
    SetsRequest,
    SubjectError,
    ValuesAnswer,
)
from adaexplore_mcp.judge.wire.values import Opaque
from adaexplore_mcp.tasks import ShapeVariant, Task


class TaskExchange:
    def __init__(
        self,
        link: Link,
        task: Task,
        waiting: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        self.link = link
        self.task = task
        self.waiting = waiting  # around each wait on the task's own code
        self.rng = random.Random(secrets.randbits(64))
        # one seed for every variant's get_init_inputs(): the candidate's weights match the
        # reference's on each shape
        self.init_seed = self.rng.getrandbits(62)
        self._keys = itertools.count(1)

    def ask(self, request: Any, expect: type) -> tuple[Any, bytes]:
        with self.waiting():
            return ask_task(self.link, self.task, request, expect)

    def build_request(self, variant: ShapeVariant) -> BuildRequest:
        return BuildRequest(
            variant=variant.name, overrides=dict(variant.overrides), seed=self.init_seed
        )

    def probe(
        self, variant: ShapeVariant
    ) -> tuple[tuple[BuildAnswer, bytes] | None, SkippedVariant | None]:
        """The task's build of a derived shape when its reference runs it, or why not."""
        request, seed = self.build_request(variant), self.rng.getrandbits(62)
        return probe_reference(self.link, variant, request, seed, next(self._keys))

    def build(self, variant: ShapeVariant) -> tuple[BuildAnswer, bytes]:
        return self.ask(self.build_request(variant), BuildAnswer)

    def inputs(
        self, variant: ShapeVariant, *, reference: bool = False, scale: float | None = None
    ) -> tuple[int, list[Any]]:
        """A fresh input set, copied into this process, and the key the task's process keeps
        it under."""
        key = next(self._keys)
        request = InputsRequest(
            variant=variant.name,
            overrides=dict(variant.overrides),
            seed=self.rng.getrandbits(62),
            key=key,
            reference=reference,
            scale=scale,
        )
        answer, payload = self.ask(request, ValuesAnswer)
        values = self.link.take(answer.values, payload, set())
        sendable(self.task, values, "get_inputs()")
        return key, values

    def sets(
        self, variant: ShapeVariant, count: int, *, scales: dict[int, float] | None = None
    ) -> list[tuple[int, list[Any]]]:
        """``count`` fresh input sets, their references computed and kept by the task's
        process, in one exchange; ``scales``: by a set's index, its float32 inputs' factor."""
        keys = [next(self._keys) for _ in range(count)]
        request = SetsRequest(
            variant=variant.name,
            overrides=dict(variant.overrides),
            seeds=[self.rng.getrandbits(62) for _ in keys],
            keys=keys,
            scales=scales or {},
        )
        answer, payload = self.ask(request, SetsAnswer)
        sets = self.link.take_sets(answer.sets, payload)
        for values in sets:
            sendable(self.task, values, "get_inputs()")
        return list(zip(keys, sets, strict=True))

    def expected(self, keys: list[int]) -> list[list[Any]]:
        """The references the task's process kept for ``keys``."""
        answer, payload = self.ask(ExpectedRequest(keys=keys), SetsAnswer)
        return self.link.take_sets(answer.sets, payload)

    def reference(
        self, key: int, *, fresh: bool = True, count_flops: bool = False
    ) -> tuple[list[Any], ValuesAnswer]:
        """The reference's outputs on the set ``key``, which is then forgotten."""
        request = ReferenceRequest(key=key, fresh=fresh, count_flops=count_flops)
        answer, payload = self.ask(request, ValuesAnswer)
        expected = self.link.take(answer.values, payload, set())
        self.forget(key)
        for value in expected:
            if type(value) is int and not _INT64.start <= value < _INT64.stop:
                raise task_failure(
                    self.task,
                    SubjectError(
                        type="UncomparableOutput",
                        message=f"Model.forward returned the integer {value}, outside int64's "
                        "range: no tensor holds it for a comparison",
                    ),
                )
            if not isinstance(value, torch.Tensor | bool | int | float):
                raise task_failure(
                    self.task,
                    SubjectError(
                        type="UncomparableOutput",
                        message=f"Model.forward returned a {type(value).__name__}, which cannot "
                        "be compared: a task's forward returns tensors (or a tuple of them)",
                    ),
                )
        return expected, answer

    def reference_modifies(self, key: int, pristine: list[Any], index: int) -> bool:
        """Whether the reference, run on the set ``key`` (then forgotten), writes to its input
        ``index`` (``pristine``: the set as it was made): an honest kernel that does what such
        a reference does is failed for it, and the message then says the task must change."""
        answer, payload = self.ask(ReferenceRequest(key=key, inputs_after=True), ValuesAnswer)
        after = self.link.take(answer.inputs_after or [], payload, set())
        self.forget(key)
        if index >= len(after):
            return False
        return first_modified([pristine[index]], [after[index]]) is not None

    def forget(self, key: int) -> None:
        self.ask(ForgetRequest(keys=[key]), OkAnswer)


_INT64 = range(-(2**63), 2**63)


def sendable(task: Task, values: list[Any], source: str) -> None:
    """The task's values reached this process as themselves: a value the wire cannot carry (a
    dict, a dtype, a string over 10,000 characters, nesting past its depth) arrives as an
    ``Opaque`` stand-in, which the reference ran on and a candidate would be blamed for."""
    for index, value in enumerate(values):
        found = _opaque(value)
        if found is not None:
            raise task_failure(
                task,
                SubjectError(
                    type="UnsendableInput",
                    message=f"{source} item {index} holds a {found.type_name}, which the judge "
                    "cannot hand to a candidate: a task's inputs are tensors, numbers, strings "
                    "(up to 10,000 characters), None, and lists or tuples of them (up to 4 deep)",
                ),
            )


def _opaque(value: Any) -> Opaque | None:
    if isinstance(value, Opaque):
        return value
    if isinstance(value, list | tuple):
        return next((found for item in value if (found := _opaque(item)) is not None), None)
    return None
