"""Configuration: one pydantic-settings model, read from ``ADAEXPLORE_*`` variables.

Nested fields use ``__``: ``ADAEXPLORE_JUDGE__TIMEOUT_S=60`` sets ``Settings().judge.timeout_s``.
Every component takes the part of this model it needs in its constructor; nothing reads the
environment on its own.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Tolerance(BaseModel, frozen=True):
    """An element passes when ``|actual - expected| <= atol + rtol * |expected|``."""

    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)


def _default_tolerances() -> dict[str, Tolerance]:
    return {
        "float32": Tolerance(atol=1e-4, rtol=1e-4),
        "float16": Tolerance(atol=1e-2, rtol=1e-2),
        "bfloat16": Tolerance(atol=1e-2, rtol=1e-2),
        "float64": Tolerance(atol=1e-7, rtol=1e-7),
    }


class TimingSettings(BaseModel):
    """How a kernel is timed on a GPU (ignored on the CPU, where timing is not meaningful)."""

    warmup_ms: float = Field(default=100.0, gt=0, description="Warm-up time before measuring.")
    target_ms: float = Field(
        default=200.0, gt=0, description="Kernel time to accumulate over the measured runs."
    )
    min_runs: int = Field(default=30, ge=5)
    max_runs: int = Field(default=400, ge=5)
    l2_flush_factor: float = Field(
        default=2.0, ge=1.0, description="The L2 flush buffer is this many times the L2 size."
    )
    launch_allowance_us: float = Field(
        default=100.0,
        ge=0,
        description="The GPU spins this long before each timed call while the host enqueues "
        "it, so the host's launch latency and its jitter are not timed.",
    )


class JudgeSettings(BaseModel):
    """The local judge: where kernels run, how hard they are checked, how long they may take."""

    device: str = Field(
        default="auto",
        description="'auto' (every visible GPU, else the CPU interpreter), 'cpu', 'cuda' or "
        "'cuda:0,2' (a list of GPU indices).",
    )
    workers_per_device: int | None = Field(
        default=None,
        ge=1,
        description="Warm worker processes per device; default 4 per GPU, 2 on the CPU.",
    )
    timeout_s: float = Field(default=180.0, gt=0, description="Wall-clock limit per evaluation.")
    baseline_timeout_s: float = Field(
        default=900.0, gt=0, description="Wall-clock limit for timing a task's baselines."
    )
    trials: int = Field(
        default=3, ge=1, description="Fresh random input sets on the main shape per evaluation."
    )
    odd_trials: int = Field(default=1, ge=1, description="Input sets per odd-sized shape variant.")
    tolerances: dict[str, Tolerance] = Field(default_factory=_default_tolerances)
    output_limit_mb: int = Field(
        default=16, ge=1, description="Largest file (stdout/stderr included) a candidate may write."
    )
    max_queue: int = Field(default=256, ge=1, description="Evaluations waiting per device.")
    reuse_workers: bool = Field(
        default=True,
        description="Keep warm workers between evaluations. False starts a fresh Python process "
        "per evaluation, as the common reference harnesses do (used to benchmark the pool).",
    )
    timing: TimingSettings = Field(default_factory=TimingSettings)

    @field_validator("device")
    @classmethod
    def _check_device(cls, value: str) -> str:
        from adaexplore_mcp.judge.devices import parse_device_spec

        parse_device_spec(value)
        return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ADAEXPLORE_", env_nested_delimiter="__")

    home: Path = Field(
        default_factory=lambda: platformdirs.user_data_path("adaexplore-mcp"),
        description="Holds the database, runs and caches.",
    )
    judge: JudgeSettings = Field(default_factory=JudgeSettings)

    @property
    def database_path(self) -> Path:
        return self.home / "adaexplore.sqlite3"
