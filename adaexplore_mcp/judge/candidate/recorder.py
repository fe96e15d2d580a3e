"""Which torch operators a forward runs outside its Triton launches, in the candidate's process.

Two recorders, both first signals: a ``TorchDispatchMode`` on every call (cheap, but blind to
other threads and to code that leaves the mode), and the profiler's operator records on one call
per shape (``top_level_ops``), which see every thread and every dispatch path.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import types
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from adaexplore_mcp.judge.candidate.launchers import TRITON_DIR
from adaexplore_mcp.judge.candidate.sealing import sealed
from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

# Torch operators a forward may call besides its Triton kernels: allocation, views, reshapes,
# copies and conversions. Anything else (a matmul, a reduction, an activation) is the
# computation itself and belongs in a kernel. Documented in docs/integrity.md.
GLUE_OPS = frozenset(
    {
        # allocation
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "fill",
        "fill_",
        "zero_",
        "arange",
        "scalar_tensor",
        "lift_fresh",
        "lift_fresh_copy",
        "resize_",
        # views and layout
        "view",
        "_unsafe_view",
        "_reshape_alias",
        "reshape",
        "as_strided",
        "expand",
        "permute",
        "transpose",
        "t",
        "squeeze",
        "unsqueeze",
        "flatten",
        "unflatten",
        "slice",
        "select",
        "narrow",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "alias",
        "detach",
        "detach_",
        "resolve_conj",
        "resolve_neg",
        "view_as_real",
        "view_as_complex",
        "set_",  # a tensor onto another's storage: Triton's interpreter does it in every launch
        # torch's composites of the above, which the profiler names as the candidate called them
        "view_as",
        "reshape_as",
        "expand_as",
        "movedim",
        "moveaxis",
        # copies and conversions
        "clone",
        "contiguous",
        "copy_",
        "_to_copy",
        "to",
        "cat",
        "stack",
        "constant_pad_nd",
        "pad",
        "type_as",
        "_local_scalar_dense",
        "item",
        "record_stream",
        # size and stride queries
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
        "is_contiguous",
        "is_same_size",
    }
)


def is_glue(name: str) -> bool:
    """``name`` as the dispatcher or the profiler spells it (``aten::copy_``, ``copy_``)."""
    return name.removeprefix("aten::").split(".")[0] in GLUE_OPS


Spans = Sequence[tuple[int, float, float]]  # thread, start, end in the profiler's microseconds


def top_level_ops(
    events,
    launch_spans: Spans,
    callback_spans: Spans = (),
    bench_spans: Spans = (),
    *,
    inside_glue: bool = False,
) -> dict[str, int]:
    """Profiler operator events (``torch.profiler``) that are not glue, counted: only the
    outermost ``aten::`` call of each stack (what the candidate's code called), inside Triton's
    launches too (no more than glue runs there for honest code, and the candidate's code runs
    there when Triton calls it: a grid's length, an argument's address, a kernel's body in the
    interpreter), but for Triton's own benchmarking of an autotuner's configs (``bench_spans``)
    outside the launches it times and the candidate's callbacks (``callback_spans``: a hook).
    ``inside_glue``: also the outermost operator that is not glue within a glue operator.
    torch's glue calls only glue beneath it, so one there ran in a kernel the candidate
    registered for a glue operator (``torch.library``: a clone that computes a softmax)."""
    counts: dict[str, int] = {}
    timed = [span for span in launch_spans if _span_within(span, bench_spans)]
    outermost = [
        event
        for event in _outermost(_operators(events))
        if not _within(event, bench_spans)
        or _within(event, timed)
        or _within(event, callback_spans)
    ]
    found = [event for event in outermost if not is_glue(event.name)]
    if inside_glue:
        found += _compute_inside(events, [event for event in outermost if is_glue(event.name)])
    for event in found:
        name = event.name.removeprefix("aten::")
        counts[name] = counts.get(name, 0) + 1
    # TorchScript's functions: a fusion group it compiled runs under a name of its own, no
    # aten:: operator (a softmax fused at import ran as ``fused_mul_softmax``)
    for event in events:
        if getattr(event, "scope", None) == _TORCHSCRIPT_FUNCTION:
            label = f"TorchScript function {event.name[:100]}"
            counts[label] = counts.get(label, 0) + 1
    return counts


_TORCHSCRIPT_FUNCTION = 2  # torch's RecordScope.TORCHSCRIPT_FUNCTION


def _span_within(span: tuple[int, float, float], spans: Spans) -> bool:
    thread, start, end = span
    return any(t == thread and s <= start and end <= e for t, s, e in spans)


def _compute_inside(events, glue: list) -> list:
    """The outermost operators that are not glue nested within the ``glue`` events."""
    spans = [(event.thread, event.time_range.start, event.time_range.end) for event in glue]
    return _outermost(
        event for event in _operators(events) if not is_glue(event.name) and _within(event, spans)
    )


def torch_time_us(events, launch_spans: Spans, callback_spans: Spans = ()) -> float:
    """Host microseconds in torch's outermost operators outside Triton's launches, glue
    included: on the CPU, the library's share of a call (on a GPU its kernels tell it)."""
    kept = _outermost_outside(events, launch_spans, callback_spans)
    return sum(e.time_range.elapsed_us() for e in kept)


def _outermost_outside(events, launch_spans: Spans, callback_spans: Spans = ()) -> list:
    return [
        event
        for event in _outermost(_operators(events))
        if not _within(event, launch_spans) or _within(event, callback_spans)
    ]


# an operator's name as the profiler records it: ``namespace::name`` (``aten::softmax``,
# ``mkldnn::_linear_pointwise``); a GPU kernel's (``void at::native::...``) has a space
_OPERATOR_NAME = re.compile(r"[A-Za-z_]\w*::[A-Za-z_][\w.]*")


def _operators(events) -> Iterator:
    """Operator records of every namespace but the profiler's own (``profiler::``, its ranges'
    bookkeeping): torch's other namespaces have kernels of their own (``mkldnn::`` computes a
    convolution or a GELU'd linear outright, no ``aten::`` operator beneath but glue), which
    only ``aten::`` records once let through. Not ranges the candidate named like one
    (``record_function``)."""
    return (
        e
        for e in events
        if _OPERATOR_NAME.fullmatch(e.name)
        and not e.name.startswith("profiler::")
        and not getattr(e, "is_user_annotation", False)
    )


def _outermost(ops: Iterable) -> list:
    """The operators of ``ops`` that no other of them encloses on their thread."""
    kept = []
    open_end: dict[int, float] = {}
    for event in sorted(ops, key=lambda e: (e.thread, e.time_range.start, -e.time_range.end)):
        start, end = event.time_range.start, event.time_range.end
        if start < open_end.get(event.thread, float("-inf")):
            continue  # nested inside an operator already kept (or left out)
        open_end[event.thread] = end
        kept.append(event)
    return kept


def _within(event, spans: Spans) -> bool:
    return _span_within((event.thread, event.time_range.start, event.time_range.end), spans)


def glue_overloads() -> frozenset[tuple[str, str]]:
    """(operator, overload) of every ``aten`` glue operator as torch ships it: taken before the
    candidate's module is imported, so an overload it defines under a glue operator's name
    (``aten::copy_.anything``, through ``torch.library``) is not glue."""
    return frozenset(
        (name, overload)
        for name in GLUE_OPS
        if hasattr(torch.ops.aten, name)
        for overload in getattr(torch.ops.aten, name).overloads()
    )


# the dispatch keys whose kernels run a glue operator on the devices the judge runs on
_BACKEND_KEYS = ("CPU", "CUDA", "AutogradCPU", "AutogradCUDA")


def glue_tables() -> dict[str, str]:
    """Where each glue overload's kernels for the judge's devices were registered, as torch's
    dispatcher tells it, taken before the candidate's module is imported (``changed_glue``)."""
    return {
        name: _backend_kernels(name)
        for name in (
            f"aten::{op}" + ("" if overload == "default" else f".{overload}")
            for op, overload in glue_overloads()
        )
    }


def changed_glue(tables: dict[str, str]) -> str | None:
    """The first glue overload whose kernels are no longer those of ``tables``: one the
    candidate registered (``torch.library``) runs beneath the dispatch mode, which sees glue."""
    return next(
        (name for name, kernels in tables.items() if _backend_kernels(name) != kernels), None
    )


def _backend_kernels(qualified: str) -> str:
    rows = torch._C._dispatch_dump_table(qualified).splitlines()
    return "\n".join(row for row in rows if row.split(":")[0] in _BACKEND_KEYS)


def _record(self, func, types, args=(), kwargs=None, *, _judge_by_triton, _judge_plain):
    """``OpRecorder.__torch_dispatch__``, sealed (``candidate.sealing``): the mode sits on
    torch's stack, where a kernel reaches it and, once, this module's globals through it."""
    if not (self.in_launch[0] and _judge_by_triton()):
        name = func.overloadpacket.__name__
        if func.namespace != "aten" or (name, func._overloadname) not in self.glue:
            self.counts[name] = self.counts.get(name, 0) + 1
        for kind in types:
            # one with a __torch_dispatch__ of its own; dispatch also names torch.Tensor itself
            # (and Parameter, which inherits its) among the types on a GPU
            if getattr(kind, "__torch_dispatch__", None) is not _judge_plain:
                label = f"{getattr(kind, '__name__', 'a')[:100]} (a tensor subclass)"
                self.counts[label] = self.counts.get(label, 0) + 1
    return func(*args, **(kwargs or {}))


def _init(self, counts, in_launch, glue, *, _judge_base):
    _judge_base(self)
    self.counts = counts
    self.in_launch = in_launch
    self.glue = glue


def _package_dir(module: Any) -> str:
    return os.path.dirname(os.path.realpath(module.__file__)) + os.sep


@functools.cache
def package_dirs() -> tuple[tuple[str, ...], str]:
    """Where code that launches lies (Triton's package, and this one, which wraps its launches),
    and what lies between an operator and the code that called it (torch's package)."""
    # this module's own file, not ``sys.modules``: the judge's modules are gone from there once
    # the kernel is imported (``sealing.forget_judge_modules``)
    here = os.path.dirname(os.path.realpath(__file__)) + os.sep
    return (TRITON_DIR, here), _package_dir(torch)


def _called_by_triton() -> bool:
    """Whether the code that called into torch here is Triton's (or this package's, around a
    launch): the innermost frame outside torch lies in one of those packages."""
    launchers, between = package_dirs()
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(launchers):
            return True
        if not path.startswith(between):
            return False
        frame = frame.f_back
    return False


class OpRecorder(TorchDispatchMode):
    """Counts every operator but glue into ``counts`` (``OpRecorder(counts, in_launch,
    glue)``). While ``in_launch[0]`` is set (a Triton launch is under way) an operator that
    Triton's own code called is Triton's and not counted; one the candidate's code called there
    (a grid, a hook, an argument's method, its own ``do_bench``) is. A tensor subclass with a
    ``__torch_dispatch__`` of its own runs Python under every operator on it, out of this mode's
    sight: it is counted too."""

    __init__ = sealed(_init, kwdefaults={"_judge_base": TorchDispatchMode.__init__})
    # torch calls it with four positional arguments; the keyword-only two are its defaults
    __torch_dispatch__ = sealed(  # type: ignore[assignment]
        _record,
        kwdefaults={
            "_judge_by_triton": _called_by_triton,
            "_judge_plain": torch._C._disabled_torch_dispatch_impl,
        },
    )
