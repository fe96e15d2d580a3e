"""torch's ways into an operator's kernel past the dispatcher's front door, closed to the
candidate's code.

The dispatch mode and the profiler see an operator where torch's dispatcher records it. A
redispatch to a backend's key (``OpOverload.redispatch``, a handle's ``redispatch_boxed``, an
overload's ``_op_dk``) runs the kernel with neither: a kernel ran torch's softmax that way and
was judged correct. So do torch's TensorExpr compiler (a graph's softmax evaluated without the
dispatcher), the dispatch table's kernel called boxed, and a native library torch loads on the
kernel's behalf (``torch.ops.load_library``: its code may call anything). Before the candidate's
module is imported each entry point is replaced by one that refuses, as ``harness_tampering``,
while the candidate's code is anywhere on the stack (a helper of torch's redispatched for it)
and the call reaches one of torch's own operators; it still serves torch's own code otherwise
(the Python dispatcher redispatches on its own) and a custom operator's autograd.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import torch

from adaexplore_mcp.judge.candidate.audit import candidate_on_stack
from adaexplore_mcp.judge.candidate.gates import gate
from adaexplore_mcp.judge.candidate.sealing import sealed_entry
from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

PAST_THE_DISPATCHER = (
    "it runs an operator's kernel past torch's dispatcher, where no recorder sees it"
)
NATIVE_CODE = "a native library's code runs where no recorder sees it"
TENSOR_EXPRESSIONS = "torch's TensorExpr compiler computes where no recorder sees it"
# torch's own operators, whose kernels compute what a candidate must compute in Triton
TORCHS = ("aten::", "prims::")


def _handle_operator(args: tuple) -> str:
    return args[0].schema().name if args else ""


def _overload_operator(args: tuple) -> str:
    return getattr(args[0], "_name", "") if args else ""


def _named_operator(args: tuple) -> str:
    return str(args[0]) if args else ""


# (owner, attribute, why a kernel may not call it, the operator a call reaches: calls that reach
# an operator of the candidate's own, such as a custom op's autograd, are allowed)
_ENTRY_POINTS: tuple[tuple[str, str, str, Callable[[tuple], str] | None], ...] = (
    ("torch._ops.OpOverload", "redispatch", PAST_THE_DISPATCHER, _overload_operator),
    ("torch._C._DispatchOperatorHandle", "redispatch_boxed", PAST_THE_DISPATCHER, _handle_operator),
    (
        "torch._C",
        "_dispatch_get_computed_kernel_for_dispatch_key",
        PAST_THE_DISPATCHER,
        _named_operator,
    ),
    ("torch._C._te", "TensorExprKernel", PAST_THE_DISPATCHER, None),
    # the same compiler built up as a loop nest and run by its evaluator: a softmax and a GEMM
    # ran with no operator recorded at all
    ("torch._C._te", "construct_codegen", TENSOR_EXPRESSIONS, None),
    ("torch._C._te", "SimpleIREvaluator", TENSOR_EXPRESSIONS, None),
    ("torch._ops._Ops", "load_library", NATIVE_CODE, None),
    ("torch._classes._Classes", "load_library", NATIVE_CODE, None),
)


class DispatchGuards:
    """Each entry point refuses while the candidate's code is anywhere on the stack (torch's
    helpers redispatch on a caller's behalf: ``make_autograd_impl`` did for a kernel)."""

    def __init__(
        self, events: list[tuple[str, str]], kernel_path: str, installed: tuple[str, ...]
    ) -> None:
        self.events = events
        self.kernel_path = kernel_path
        self.installed = installed

    def install(self) -> None:
        for owner_path, name, why, operator in _ENTRY_POINTS:
            owner = _resolve(owner_path)
            original = getattr(owner, name, None) if owner is not None else None
            if original is not None:
                guarded = self._guarded(f"{owner_path}.{name}", original, why, operator)
                setattr(owner, name, guarded)
        get = torch._C._get_operation_overload
        torch._C._get_operation_overload = self._with_guarded_dk(get)
        for overload in _overloads():
            overload._op_dk = self._guarded(
                f"{overload}._op_dk", overload._op_dk, PAST_THE_DISPATCHER, _fixed(overload._name)
            )

    def _guarded(
        self,
        name: str,
        original: Callable[..., Any],
        why: str,
        operator: Callable[[tuple], str] | None,
    ) -> Callable[..., Any]:
        events, kernel_path, installed = self.events, self.kernel_path, self.installed

        def allowed(args: tuple) -> bool:
            if operator is not None and not operator(args).startswith(TORCHS):
                return True
            return not candidate_on_stack(sys._getframe(2), kernel_path, installed)

        def refuse() -> NoReturn:
            events.append(("harness_tampering", f"{name} is not allowed: {why}"))
            raise RuntimeError(f"{name} is not allowed in a kernel: {why}")

        return gate(original, allowed, refuse)

    def _with_guarded_dk(self, get: Callable[..., Any]) -> Callable[..., Any]:
        """``torch._C._get_operation_overload``, whose (op, op_dk, tags) has op_dk guarded:
        sealed (``sealing.sealed_entry``), the original a default of a default, as in a gate."""
        return sealed_entry(_found, get, self._guarded_dk)

    def _guarded_dk(self, name: str, overload: str, op_dk: Callable[..., Any]) -> Any:
        return self._guarded(f"{name}.{overload}._op_dk", op_dk, PAST_THE_DISPATCHER, _fixed(name))


def _found(args, kwargs, get, guarded_dk, /):
    entry = get(*args, **kwargs)
    if entry is None:
        return None
    op, op_dk, *rest = entry
    return (op, guarded_dk(*args, op_dk), *rest)


def _fixed(operator: str) -> Callable[[tuple], str]:
    return lambda args: operator


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
