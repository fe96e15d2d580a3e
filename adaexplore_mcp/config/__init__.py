"""Configuration: one pydantic-settings model, read from ``ADAEXPLORE_*`` variables.

Nested fields use ``__``: ``ADAEXPLORE_JUDGE__TIMEOUT_S=60`` sets ``Settings().judge.timeout_s``.
Every component takes the part of this model it needs in its constructor; nothing reads the
environment on its own. Each part is defined next to the code it configures (``judge/settings.py``,
``memory/settings.py``, ``search_engine/settings.py``, ``mcp_server/settings.py``) and imported
from there, not from here; the model's and the driver's are in ``config/llm.py`` and
``config/driver.py``, because ``serve`` must not import those packages to build ``Settings``.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from adaexplore_mcp.config.driver import DriverSettings
from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.judge.settings import (
    JudgeSettings,
    RaySettings,
    RemoteJudgeSettings,
    ServiceSettings,
)
from adaexplore_mcp.mcp_server.settings import McpSettings
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.search_engine.settings import SearchSettings

__all__ = ["Settings", "database_path"]


def database_path(home: Path) -> Path:
    """The SQLite database under a home directory."""
    return home / "adaexplore.sqlite3"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="ADAEXPLORE_", env_nested_delimiter="__", env_parse_none_str="null"
    )

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
