"""torch's ways into an operator's kernel past the dispatcher's front door, closed to the
candidate's code.

The dispatch mode and the profiler see an operator where torch's dispatcher records it. A
redispatch to a backend's key (``OpOverload.redispatch``, a handle's ``redispatch_boxed``, an
overload's ``_op_dk``) runs the kernel with neither: a kernel ran torch's softmax that way and
was judged correct. So do torch's TensorExpr compiler (a graph's softmax evaluated without the
dispatcher) and a native library torch loads on the kernel's behalf (``torch.ops.load_library``:
its code may call anything). Before the candidate's module is imported each entry point is
replaced by one that refuses, as ``harness_tampering``, when the candidate's code calls it, and
still serves torch's own code (the Python dispatcher redispatches on its own).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import torch

from adaexplore_mcp.judge.candidate.audit import candidate_calls

_THIS_FILE = __file__
PAST_THE_DISPATCHER = (
    "it runs an operator's kernel past torch's dispatcher, where no recorder sees it"
)
NATIVE_CODE = "a native library's code runs where no recorder sees it"
# (owner, attribute, why a kernel may not call it)
_ENTRY_POINTS = (
    ("torch._ops.OpOverload", "redispatch", PAST_THE_DISPATCHER),
    ("torch._C._DispatchOperatorHandle", "redispatch_boxed", PAST_THE_DISPATCHER),
    ("torch._C._te", "TensorExprKernel", PAST_THE_DISPATCHER),
    ("torch._ops._Ops", "load_library", NATIVE_CODE),
    ("torch._classes._Classes", "load_library", NATIVE_CODE),
)


def gate(
    original: Callable[..., Any], allowed: Callable[[], bool], refuse: Callable[[], NoReturn]
) -> Callable[..., Any]:
    """``original`` behind a gate: called while ``allowed()`` holds, else ``refuse()`` raises.
    The original is a positional-only default of a function the gate's closure holds: whoever
    reaches it cannot call it without the original, and the audit hook refuses reading a
    function's defaults (a closure cell, which no audit event covers, once held the original
    itself and let a kernel call it)."""

    def check(args, kwargs, call=original, allowed=allowed, refuse=refuse, /):
        if allowed():
            return call(*args, **kwargs)
        refuse()

    def gated(*args: Any, **kwargs: Any) -> Any:
        return check(args, kwargs)

    return gated


class DispatchGuards:
    def __init__(
        self, events: list[tuple[str, str]], kernel_path: str, installed: tuple[str, ...]
    ) -> None:
        self.events = events
        self.kernel_path = kernel_path
        self.installed = installed

    def install(self) -> None:
        for owner_path, name, why in _ENTRY_POINTS:
            owner = _resolve(owner_path)
            original = getattr(owner, name, None) if owner is not None else None
            if original is not None:
                setattr(owner, name, self._guarded(f"{owner_path}.{name}", original, why))
        get = torch._C._get_operation_overload
        torch._C._get_operation_overload = self._with_guarded_dk(get)
        for overload in _overloads():
            overload._op_dk = self._guarded(
                f"{overload}._op_dk", overload._op_dk, PAST_THE_DISPATCHER
            )

    def _guarded(self, name: str, original: Callable[..., Any], why: str) -> Callable[..., Any]:
        events, kernel_path, installed = self.events, self.kernel_path, self.installed

        def allowed() -> bool:
            frame = sys._getframe(2)  # past allowed and the gate's check
            return not candidate_calls(frame, kernel_path, installed, skip=_THIS_FILE)

        def refuse() -> NoReturn:
            events.append(("harness_tampering", f"{name} is not allowed: {why}"))
            raise RuntimeError(f"{name} is not allowed in a kernel: {why}")

        return gate(original, allowed, refuse)

    def _with_guarded_dk(self, get: Callable[..., Any]) -> Callable[..., Any]:
        """``torch._C._get_operation_overload``, whose (op, op_dk, tags) has op_dk guarded."""
        guarded = self._guarded

        def found(name, overload, get=get, /):
            entry = get(name, overload)
            if entry is None:
                return None
            op, op_dk, *rest = entry
            return (op, guarded(f"{name}.{overload}._op_dk", op_dk, PAST_THE_DISPATCHER), *rest)

        def get_operation_overload(name: str, overload: str) -> Any:
            return found(name, overload)

        return get_operation_overload


def _resolve(path: str) -> Any:
    module, _, attribute = path.rpartition(".")
    try:
        owner = sys.modules.get(module) or __import__(module, fromlist=["_"])
        return getattr(owner, attribute, None)
    except ImportError:
        return None


def _overloads() -> Iterator[Any]:
    """The operator overloads torch made before the candidate's module was imported (each
    keeps its own ``_op_dk``); the later ones come through ``_get_operation_overload``."""
    for namespace in list(vars(torch.ops).values()):
        if not isinstance(namespace, torch._ops._OpNamespace):
            continue
        for packet in list(vars(namespace).values()):
            if not isinstance(packet, torch._ops.OpOverloadPacket):
                continue
            for overload in list(vars(packet).values()):
                if isinstance(overload, torch._ops.OpOverload):
                    yield overload
