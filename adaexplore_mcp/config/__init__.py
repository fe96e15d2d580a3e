"""Configuration: one pydantic-settings model, read from ``ADAEXPLORE_*`` variables.

Nested fields use ``__``: ``ADAEXPLORE_JUDGE__TIMEOUT_S=60`` sets ``Settings().judge.timeout_s``.
Every component takes the part of this model it needs in its constructor; nothing reads the
environment on its own.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from adaexplore_mcp.config.agents import (
    DriverSettings,
    LLMSettings,
    McpSettings,
    MemorySettings,
    ModelPrice,
    SearchSettings,
)
from adaexplore_mcp.config.judge import (
    IntegritySettings,
    JudgeSettings,
    Ops,
    Precision,
    ProfileSettings,
    RaySettings,
    RemoteJudgeSettings,
    SandboxSettings,
    ServiceSettings,
    TimingSettings,
    Tolerance,
    is_ray_address,
)

__all__ = [
    "DriverSettings",
    "IntegritySettings",
    "JudgeSettings",
    "LLMSettings",
    "McpSettings",
    "MemorySettings",
    "ModelPrice",
    "Ops",
    "Precision",
    "ProfileSettings",
    "RaySettings",
    "RemoteJudgeSettings",
    "SandboxSettings",
    "SearchSettings",
    "ServiceSettings",
    "Settings",
    "TimingSettings",
    "Tolerance",
    "database_path",
    "is_ray_address",
]


def database_path(home: Path) -> Path:
    """The SQLite database under a home directory."""
    return home / "adaexplore.sqlite3"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ADAEXPLORE_", env_nested_delimiter="__")

    home: Path = Field(
        default_factory=lambda: platformdirs.user_data_path("adaexplore-mcp"),
        description="Holds the database, runs and caches.",
    )
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    remote: RemoteJudgeSettings = Field(default_factory=RemoteJudgeSettings)
    ray: RaySettings = Field(default_factory=RaySettings)
    service: ServiceSettings = Field(default_factory=ServiceSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    driver: DriverSettings = Field(default_factory=DriverSettings)

    @property
    def database_path(self) -> Path:
        return database_path(self.home)
