"""The best speedup over steps, as SVG geometry: a step line of the best so far, a dot per
correct kernel, and the baseline at 1×. Without meaningful timings it charts the number of
correct kernels found instead, and says so."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

WIDTH = 640.0
HEIGHT = 240.0
LEFT, RIGHT, TOP, BOTTOM = 52.0, 14.0, 14.0, 34.0


class Tick(BaseModel):
    position: float
    label: str


class Dot(BaseModel):
    x: float
    y: float
    title: str


class Chart(BaseModel):
    kind: str  # speedup | correct
    width: float = WIDTH
    height: float = HEIGHT
    line: str = ""  # SVG polyline points
    dots: list[Dot] = []
    x_ticks: list[Tick] = []
    y_ticks: list[Tick] = []
    baseline_y: float | None = None
    y_label: str
    steps: int
    final: float | None
    plot: tuple[float, float, float, float] = (LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM)


def chart(outcomes: Sequence[tuple[bool, float | None]], baseline: str = "eager") -> Chart:
    """``outcomes``: per step in order, (correct, speedup or None)."""
    steps = len(outcomes)
    speedups = [s for ok, s in outcomes if ok and s is not None]
    if speedups:
        values, kind = _best_so_far(outcomes), "speedup"
        label = f"best speedup over {baseline} (×)"
    else:
        values, kind = _correct_so_far(outcomes), "correct"
        label = "correct kernels found (no meaningful timing)"
    top = max([v for v in values if v is not None] + [1.0])
    y_ticks_values = nice_ticks(top)
    y_max = y_ticks_values[-1]
    x0, y0, x1, y1 = LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM

    def x_of(step: int) -> float:
        return x0 + (x1 - x0) * ((step - 1) / max(steps - 1, 1) if steps > 1 else 0.5)

    def y_of(value: float) -> float:
        return y1 - (y1 - y0) * value / y_max

    points = []
    previous: float | None = None
    for step, value in enumerate(values, start=1):
        if value is None:
            continue
        if previous is not None and value != previous:
            points.append(f"{x_of(step):.1f},{y_of(previous):.1f}")
        points.append(f"{x_of(step):.1f},{y_of(value):.1f}")
        previous = value
    dots = []
    if kind == "speedup":
        for step, (ok, speedup) in enumerate(outcomes, start=1):
            if ok and speedup is not None:
                dots.append(
                    Dot(x=x_of(step), y=y_of(speedup), title=f"step {step}: {speedup:.3g}×")
                )
    return Chart(
        kind=kind,
        line=" ".join(points),
        dots=dots,
        x_ticks=[Tick(position=x_of(s), label=str(s)) for s in _step_ticks(steps)],
        y_ticks=[Tick(position=y_of(v), label=f"{v:g}") for v in y_ticks_values],
        baseline_y=y_of(1.0) if kind == "speedup" else None,
        y_label=label,
        steps=steps,
        final=next((v for v in reversed(values) if v is not None), None),
    )


def nice_ticks(top: float, count: int = 4) -> list[float]:
    """0 up to a round number at or above ``top``, in about ``count`` round steps."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    ticks = [0.0]
    while ticks[-1] < top - 1e-12:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _best_so_far(outcomes: Sequence[tuple[bool, float | None]]) -> list[float | None]:
    best: float | None = None
    values = []
    for ok, speedup in outcomes:
        if ok and speedup is not None:
            best = speedup if best is None else max(best, speedup)
        values.append(best)
    return values


def _correct_so_far(outcomes: Sequence[tuple[bool, float | None]]) -> list[float | None]:
    count = 0
    values: list[float | None] = []
    for ok, _ in outcomes:
        count += ok
        values.append(float(count))
    return values


def _step_ticks(steps: int) -> list[int]:
    if steps <= 0:
        return []
    if steps <= 10:
        return list(range(1, steps + 1))
    every = max(1, round(steps / 8))
    ticks = list(range(1, steps + 1, every))
    if ticks[-1] != steps:
        if steps - ticks[-1] < every / 2:
            ticks.pop()  # too close to the last step's own tick
        ticks.append(steps)
    return ticks
