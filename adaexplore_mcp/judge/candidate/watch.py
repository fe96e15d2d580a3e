"""What the judge's recorders call in torch and Triton, watched for replacement.

The profiler, the dispatch mode and the launch wrappers run on torch's and Triton's own
functions and classes, which a kernel reaches through their modules like any other code: a red
team replaced ``torch.profiler.profile`` with a class of its own, and, in another kernel,
``torch.autograd.profiler``'s ``_enable_profiler`` and ``_disable_profiler`` with functions that
recorded nothing, and in a third ``builtins.sorted`` with one that returned nothing for the
profiler's records; the judge's profiler then saw no operator and torch's softmax was judged
``correct``. Setting a module's attribute raises no audit event. So the judge notes, once its
own wrappers are in place and before the kernel is imported, every function, class and module
those modules and classes hold, and after each call, before its profiler stops, whether each
is still the same object (``Watch.replaced``). Data there (a flag torch sets while a mode
runs) is not watched, nor are names added later.

The judge's own classes are reached without ``sys.modules``: ``type.__subclasses__`` leads from
``object`` to every class, and a method's ``__globals__`` to its module, with no audit event.
A fifth red team replaced the judge's ``CallProfiler.report``, a function in its profiler's
module, pydantic's ``BaseModel.model_dump_json`` (to empty the signals as they were sent),
``socket.socket.recv_into`` (to meet the inputs before the recorders started) and contextlib's
context manager's ``__exit__``. So the judge's modules that run in the candidate's process,
every class of theirs (also a name added to one: a property shadows what an instance holds),
their data, dictionaries' items and builtins (a sixth round rebound the glue operators and
replaced the watch's own ``any``), and the standard library's and pydantic's classes on the
way from a call to its answer are watched too, and the server looks once more, as the last
thing before each answer is sent (``subject.server``), on a path that runs on nothing a kernel
can replace.
"""

from __future__ import annotations

import functools
import importlib
import sys
import types
from collections.abc import Callable
from operator import is_not
from typing import Any

from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

# where the profiler's, the dispatch mode's and the guards' functions live, and the profiler's
# own switches (``candidate.switches``)
WATCHED_MODULES = (
    "builtins",  # ``sorted`` that returned nothing for the profiler's records hid every operator
    "torch._C",
    "torch._C._autograd",
    "torch._C._profiler",
    "torch._ops",
    "torch.autograd",
    "torch.autograd.profiler",
    "torch.autograd.profiler_legacy",
    "torch.autograd.profiler_util",
    "torch.profiler",
    "torch.profiler.profiler",
    "torch.utils._python_dispatch",
    "triton.compiler",
    # on the way from a call to its answer: the channel's socket and pipes, the context
    # managers, the threads the monitor counts, pydantic's models
    "os",
    "select",
    "socket",
    "contextlib",
    "threading",
    "pydantic",
    "pydantic.main",
)
# the judge's own modules in the candidate's process, and every class defined in them
JUDGE_PACKAGES = (
    "adaexplore_mcp.judge.candidate",
    "adaexplore_mcp.judge.subject",
    "adaexplore_mcp.judge.wire",
    "adaexplore_mcp.judge.own_builtins",
)
# (module, class) whose methods the recorders call, and Triton's launchers, which the judge wraps
WATCHED_CLASSES = (
    ("torch.autograd.profiler", "profile"),
    ("torch.autograd.profiler", "record_function"),
    ("torch.autograd.profiler_util", "EventList"),
    ("torch.autograd.profiler_util", "FunctionEvent"),
    ("torch.profiler.profiler", "_KinetoProfile"),
    ("torch.profiler.profiler", "profile"),
    ("torch.utils._python_dispatch", "TorchDispatchMode"),
    ("torch._ops", "OpOverload"),
    ("torch._ops", "OpOverloadPacket"),
    ("triton.runtime.jit", "JITFunction"),
    ("triton.runtime.interpreter", "InterpretedFunction"),
    ("triton.runtime.autotuner", "Autotuner"),
    ("triton.runtime.autotuner", "Heuristics"),
    # the profiler's records as the judge reads them (``profiler.operator_records``): a method
    # replaced on the class renamed softmax's records ``profiler::``, which are left out
    ("torch._C._autograd", "_KinetoEvent"),
    ("torch._C._autograd", "_ProfilerResult"),
    # where ``record_function`` finds its operators: a spy put on the namespace read the
    # judge's range names as it opened them
    ("torch", "ops"),
    ("contextlib", "_GeneratorContextManager"),
    ("contextlib", "AbstractContextManager"),
    ("socket", "socket"),
    ("pydantic", "BaseModel"),
    ("pydantic", "TypeAdapter"),
)
# attributes of a module, each one object, and the operators ``record_function`` calls, made
# now so that a replacement is a change and not a name added later
PINNED = (("torch", "ops"), ("torch", "profiler"), ("torch", "autograd"))
PROFILER_OPS = (
    "_record_function_enter",
    "_record_function_enter_new",
    "_record_function_exit",
)


def _matters(value: Any) -> bool:
    return callable(value) or isinstance(value, types.ModuleType)


class Watch:
    """The functions, classes and modules of ``WATCHED_MODULES`` and ``WATCHED_CLASSES`` as
    they are now; ``replaced()`` names the first that is no longer the same object."""

    def __init__(self) -> None:
        self._kept: list[tuple[str, Any, dict[str, Any]]] = []
        # the judge's classes: every attribute, and no attribute added
        self._classes: list[tuple[str, Any, dict[str, Any]]] = []
        for name in WATCHED_MODULES:
            self._keep(name, _imported(name))
        for module, name in WATCHED_CLASSES:
            owner = getattr(_imported(module), name, None)
            self._keep(f"{module}.{name}", owner)
        self._keep("torch.ops.profiler", _profiler_ops())
        for module_name, judges in judge_modules():
            # every global, data too (a frozenset of glue operators rebound, a pattern that
            # matches nothing, an audited-event set emptied), a dictionary's items, and the
            # module's own builtins (``any`` made to find nothing blinded this watch)
            values = dict(vars(judges))
            self._kept.append((module_name, judges, values))
            for name, value in values.items():
                if isinstance(value, dict):
                    self._kept.append((f"{module_name}.{name}", _Items(value), dict(value)))
            own = values.get("__builtins__")
            if isinstance(own, types.ModuleType):  # a dict there is the builtins, watched
                self._keep(f"{module_name}.__builtins__", own)
            for owner in vars(judges).values():
                if isinstance(owner, type) and owner.__module__ == module_name:
                    label = f"{module_name}.{owner.__qualname__}"
                    self._classes.append((label, owner, dict(vars(owner))))
        self._pinned = [
            (module, name, owner, getattr(owner, name, None))
            for module, name in PINNED
            if (owner := _imported(module)) is not None
        ]
        # ``replaced()``: the first watched name whose object changed, or None. It calls only
        # what is bound here, before the kernel is imported: the builtins this module looks up
        # are a module a kernel reaches (``any`` made to find nothing blinded every look), and
        # a method looks up its module's globals as it runs
        self.replaced: Callable[[], str | None] = functools.partial(
            _look, self, own=vars, any=any, map=map, is_not=is_not, len=len
        )

    def _keep(self, label: str, owner: Any) -> None:
        if owner is None:
            return
        values = {name: value for name, value in vars(owner).items() if _matters(value)}
        self._kept.append((label, owner, values))


def _look(watch: Any, *, own: Any, any: Any, map: Any, is_not: Any, len: Any) -> str | None:
    """``Watch.replaced``: its own state read from the instance's dictionary (a property put on
    the class would shadow it), compared in C (``map`` over ``operator.is_not``)."""
    state = own(watch)
    for module, name, owner, value in state["_pinned"]:
        if own(owner).get(name) is not value:
            return f"{module}.{name}"
    for label, owner, values in state["_kept"]:
        now = own(owner)
        if any(map(is_not, map(now.get, values), values.values())):
            return f"{label}.{_first_changed(now, values)}"
    for label, owner, values in state["_classes"]:
        now = own(owner)
        if len(now) != len(values):
            return f"{label}.{next((n for n in now if n not in values), '?')}"
        if any(map(is_not, map(now.get, values), values.values())):
            return f"{label}.{_first_changed(now, values)}"
    return None


class _Items:
    """A dictionary watched as a module is: ``vars`` of this gives the dictionary itself."""

    def __init__(self, items: dict[Any, Any]) -> None:
        self.__dict__ = items


def _first_changed(now: Any, values: dict[str, Any]) -> str:
    return next((name for name, value in values.items() if now.get(name) is not value), "?")


def judge_modules() -> list[tuple[str, types.ModuleType]]:
    """The judge's modules that run in the candidate's process, as ``sys.modules`` holds them
    before the kernel is imported (``sealing.forget_judge_modules`` takes them out after)."""
    return [
        (name, module)
        for name, module in list(sys.modules.items())
        if isinstance(module, types.ModuleType)
        and any(name == package or name.startswith(package + ".") for package in JUDGE_PACKAGES)
    ]


def _imported(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _profiler_ops() -> Any:
    namespace = getattr(_imported("torch"), "ops", None)
    profiler = getattr(namespace, "profiler", None)
    for name in PROFILER_OPS:
        getattr(profiler, name, None)
    return profiler
