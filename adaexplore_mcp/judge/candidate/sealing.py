"""What the judge leaves where a kernel can reach it, built so that it leads nowhere else.

The judge puts functions of its own into Triton and torch (a launcher's ``run``, the
profiler's switches, the dispatcher's entry points) and a dispatch mode on torch's stack. A
kernel reaches each of them without an audited step, and from a function, again without one,
its closure's cells (``__closure__``) and its module's globals (``__globals__``): from one
wrapper a red team read the secret name of the judge's benchmarking range, and through a
module's globals replaced the profiler's operator filter, which then let torch's softmax
through. So a *sealed* function has no closure and no globals but the builtins (the judge's
copy of them, ``judge.own_builtins``): whatever it
needs is a default of its own, and reading a function's defaults is refused by the audit hook
(``candidate.audit``). The judge's modules are also taken out of ``sys.modules`` before the
kernel is imported (``forget_judge_modules``): what is left of them is reachable only from the
judge's own frames.
"""

from __future__ import annotations

import builtins
import dis
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from adaexplore_mcp.judge.own_builtins import own_builtins

F = TypeVar("F", bound=Callable[..., Any])

_BUILTINS = frozenset(vars(builtins))
_OWN_BUILTINS = own_builtins()  # a sealed function's builtins: ``judge.own_builtins``
PACKAGE = "adaexplore_mcp"


def sealed(
    function: F,
    *,
    defaults: tuple[Any, ...] | None = None,
    kwdefaults: dict[str, Any] | None = None,
) -> F:
    """``function`` rebuilt with no globals but the builtins, and with ``defaults`` and
    ``kwdefaults`` in place of its own where given. It may keep no closure and name no global
    but a builtin (in nested code too: a function made inside it gets the same globals)."""
    if not isinstance(function, types.FunctionType):
        raise TypeError(f"only a plain function can be sealed, not {type(function).__name__}")
    if function.__closure__:
        names = ", ".join(function.__code__.co_freevars)
        raise ValueError(
            f"{function.__qualname__} keeps {names} in a closure: pass it as a default"
        )
    unknown = sorted(set(_globals_named(function.__code__)) - _BUILTINS)
    if unknown:
        raise ValueError(
            f"{function.__qualname__} names {', '.join(unknown)} from its module's globals: "
            "pass them as defaults"
        )
    rebuilt = types.FunctionType(
        function.__code__,
        {"__builtins__": _OWN_BUILTINS},
        function.__name__,
        function.__defaults__ if defaults is None else defaults,
    )
    rebuilt.__kwdefaults__ = function.__kwdefaults__ if kwdefaults is None else kwdefaults
    rebuilt.__qualname__ = function.__qualname__
    rebuilt.__doc__ = function.__doc__
    rebuilt.__module__ = function.__module__
    return rebuilt  # type: ignore[return-value]


def sealed_entry(body: Callable[..., Any], *defaults: Any) -> Callable[..., Any]:
    """A sealed function that calls ``body(args, kwargs, *defaults)`` with its own arguments.
    ``body`` is sealed with ``defaults`` positional-only after its first two parameters, and is
    itself the entry's one keyword default: a caller that passes ``_judge_body`` replaces the
    whole body with code of its own, and no caller can hand the judge's body other defaults (a
    kernel once called a launcher's wrapper with a function of its own in place of Triton's
    launch, and had a launch counted around numpy)."""
    inner = sealed(body, defaults=defaults)
    return sealed(_entry, kwdefaults={"_judge_body": inner})


def _entry(*args: Any, _judge_body: Callable[..., Any], **kwargs: Any) -> Any:
    return _judge_body(args, kwargs)


def _globals_named(code: types.CodeType) -> Iterator[str]:
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME"):
            yield instruction.argval
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _globals_named(constant)


def forget_judge_modules() -> None:
    """Take the judge's modules out of ``sys.modules``, and the process's main module where it
    is one of them (a worker started with ``-m``, which this process was forked from): the
    judge keeps running on what it already imported, and a kernel that imports one of them
    gets a copy of its own, which nothing of the judge's reads."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and str(spec.name).startswith(PACKAGE):
        sys.modules["__main__"] = types.ModuleType("__main__")
    for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
        del sys.modules[name]
