"""Why a wrong result may be the weights: the trusted process compares what the task's process
says ``Model`` built with what the candidate's process says ``ModelNew`` built.

The judge builds both after the same seed and copies no weights, so a ``ModelNew`` that creates
its parameters in another order, shape or way computes with other weights. The candidate's
fingerprint is its own word: it only ever adds a hint to a verdict already ``incorrect``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from adaexplore_mcp.judge.wire.subject import TensorPrint, WeightPrint

_SHOWN = 4  # differences spelled out; the rest are counted

ADVICE = (
    " The judge builds ModelNew with Model's seed and copies no weights: create the same "
    "parameters and buffers in the same order, with the same shapes, dtypes and initialisation "
    "(simplest: build them as Model's __init__ does, e.g. keep its nn.LayerNorm and the random "
    "draws after it rather than nn.Parameter(torch.ones(n)))."
)


@dataclass(frozen=True)
class _Entry:
    print: TensorPrint
    rank: str  # "2nd": its place among the module's parameters (or buffers)

    @property
    def name(self) -> str:
        return self.print.name

    @property
    def leaf(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def numel(self) -> int:
        return math.prod(self.print.shape)

    @property
    def kind(self) -> str:
        return "buffer" if self.print.buffer else "parameter"

    def described(self) -> str:
        return f"its {self.rank} {self.kind}, shape {self.print.shape} {self.print.dtype}"


def hint(model: WeightPrint | None, new: WeightPrint | None) -> str:
    """A sentence for an incorrect verdict's message when ``ModelNew``'s tensors after
    construction are not ``Model``'s; empty when they are, or when either side said nothing."""
    if model is None or new is None or not model.tensors:
        return ""
    found = differences(_entries(model), _entries(new))
    if not found:
        return ""
    shown = "; ".join(found[:_SHOWN])
    more = f"; and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    partial = (
        f" (the first {len(model.tensors)} of Model's {model.count} compared)"
        if model.count > len(model.tensors)
        else ""
    )
    return (
        f" ModelNew's parameters differ from Model's after construction{partial}: "
        f"{shown}{more}.{ADVICE}"
    )


def differences(model: list[_Entry], new: list[_Entry]) -> list[str]:
    """Each ``Model`` tensor's counterpart: the ``ModelNew`` tensor of the same name, else of
    the same last name, else one holding the same values under another name, else the next
    one left of the same size. Names come first: two tensors swapped hold the same values."""
    pairs: dict[int, int] = {}
    for match in (
        lambda m, n: m.name == n.name,
        lambda m, n: m.leaf == n.leaf and _unique_leaf(m, model) and _unique_leaf(n, new),
        _same_values,
        lambda m, n: m.numel == n.numel,
    ):
        for i, m in enumerate(model):
            if i in pairs:
                continue
            free = [j for j in range(len(new)) if j not in pairs.values()]
            j = next((j for j in free if match(m, new[j])), None)
            if j is not None:
                pairs[i] = j
    found = []
    for i, m in enumerate(model):
        if i not in pairs:
            found.append(f"Model's `{m.name}` ({m.described()}) has no counterpart in ModelNew")
            continue
        n = new[pairs[i]]
        if not _same_values(m, n):
            found.append(_unlike(m, n, model))
    if found:  # an extra tensor drawn from the seed shifts every draw after it
        found += [
            f"ModelNew's `{n.name}` ({n.described()}) has none in Model"
            for j, n in enumerate(new)
            if j not in pairs.values()
        ]
    return found


def _unlike(m: _Entry, n: _Entry, model: list[_Entry]) -> str:
    if m.print.dtype != n.print.dtype:
        return (
            f"ModelNew's `{n.name}` is {n.print.dtype} where Model's `{m.name}` is {m.print.dtype}"
        )
    if m.numel != n.numel:
        return (
            f"ModelNew's `{n.name}` has shape {n.print.shape} where Model's `{m.name}` has "
            f"{m.print.shape}"
        )
    text = f"ModelNew's `{n.name}` has values unlike Model's `{m.name}`"
    if (m.rank, m.kind) != (n.rank, n.kind):
        text += f" (Model creates it {m.rank}, ModelNew {n.rank})"
    other = next((o for o in model if o is not m and _same_values(o, n)), None)
    if other is not None:
        text += f": it holds those of Model's `{other.name}`, which Model creates {other.rank}"
    return text


def _same_values(m: _Entry, n: _Entry) -> bool:
    """The same dtype, size and sums; the shape may differ (a weight kept transposed is fine).
    The sums are compared to within float64 rounding of a differently ordered sum."""
    a, b = m.print, n.print
    if a.dtype != b.dtype or m.numel != n.numel:
        return False
    if not (math.isfinite(a.sum) and math.isfinite(a.sum_sq)):
        return True  # Model's own values are not numbers (torch.empty, say): nothing to compare
    scale = math.sqrt(max(a.sum_sq, 0.0) * max(m.numel, 1))
    return math.isclose(a.sum_sq, b.sum_sq, rel_tol=1e-9) and abs(a.sum - b.sum) <= 1e-9 * scale


def _unique_leaf(entry: _Entry, side: list[_Entry]) -> bool:
    return sum(other.leaf == entry.leaf for other in side) == 1


def _entries(weights: WeightPrint) -> list[_Entry]:
    counts = {False: 0, True: 0}
    entries = []
    for tensor in weights.tensors:
        counts[tensor.buffer] += 1
        entries.append(_Entry(tensor, _ordinal(counts[tensor.buffer])))
    return entries


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
