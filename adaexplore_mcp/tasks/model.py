"""The task model: a KernelBench-format reference plus the shape variants the judge runs."""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from adaexplore_mcp.judge.policy import Tolerance

ShapeValue = int | float | bool | str


class VariantRole(StrEnum):
    BENCHMARK = "benchmark"  # the module's own globals: realistic GPU sizes, timed on a GPU
    SMALL = "small"  # SMALL_SHAPES: replaces the benchmark shape on the CPU interpreter
    ODD = "odd"  # ODD_SHAPES: correctness-only, non-power-of-two sizes, every device
    # without ODD_SHAPES: correctness-only, the module's integer sizes changed (tasks/derived.py);
    # skipped where the reference itself cannot run them
    DERIVED = "derived"


class ShapeVariant(BaseModel, frozen=True):
    name: str
    role: VariantRole
    overrides: dict[str, ShapeValue] = Field(
        default_factory=dict, description="Module globals assigned before the task is called."
    )

    def describe(self) -> str:
        if not self.overrides:
            return self.name
        sizes = ", ".join(f"{key}={value}" for key, value in self.overrides.items())
        return f"{self.name} ({sizes})"


class Task(BaseModel, frozen=True):
    """A reference task. ``source`` is the whole task file; the judge runs it in a sandbox."""

    name: str
    level: int | None = None
    summary: str = ""
    description: str = ""
    source: str
    path: Path | None = Field(default=None, description="Where the task was loaded from.")
    variants: tuple[ShapeVariant, ...]
    tolerance: Tolerance | None = Field(
        default=None, description="Overrides the per-dtype default tolerance for every output."
    )
    globals: dict[str, ShapeValue] = Field(
        default_factory=dict, description="The module's literal globals (the benchmark shape)."
    )
    read_fraction: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="The least fraction of its inputs' and parameters' bytes a correct kernel "
        "must read (READ_FRACTION): below 1 for a task whose inputs hold padding a good kernel "
        "skips. The judge's speed-of-light check counts only that much.",
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def hash(self) -> str:
        """Content hash: the cache key of everything measured on this task."""
        content = {
            "source": self.source.replace("\r\n", "\n"),
            "variants": [v.model_dump(mode="json") for v in self.variants],
            "tolerance": self.tolerance.model_dump() if self.tolerance else None,
        }
        blob = json.dumps(content, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def variants_for(self, device_kind: Literal["cpu", "cuda"]) -> list[ShapeVariant]:
        """The variants checked for correctness on a device; the first one is the main shape."""
        main = self.main_variant(device_kind)
        extra = (VariantRole.ODD, VariantRole.DERIVED)
        return [main, *(v for v in self.variants if v.role in extra)]

    def main_variant(self, device_kind: Literal["cpu", "cuda"]) -> ShapeVariant:
        by_role = {v.role: v for v in self.variants}
        if device_kind == "cpu" and VariantRole.SMALL in by_role:
            return by_role[VariantRole.SMALL]
        return by_role[VariantRole.BENCHMARK]
