"""The autonomous driver's settings (``Settings().driver``).

Defined here rather than in ``adaexplore_mcp.driver``: the root ``Settings`` holds them, and
``adaexplore-mcp serve`` answers ``initialize`` without importing the ``driver`` package
(``tests/mcp_server/test_startup_imports.py``), which importing any module of it would."""

from __future__ import annotations

from pydantic import BaseModel, Field


class DriverSettings(BaseModel):
    """``adaexplore-mcp drive``: how the autonomous driver talks to its model (``docs/driver.md``).
    The strategy, memory mode, steps and workers of a run are the command's options."""

    stream: bool = Field(
        default=False,
        description="Ask the model through the provider's streaming API (same answers; a long "
        "reply is not cut by a proxy's idle timeout).",
    )
    repair_patch: bool = Field(
        default=True,
        description="When a small step's edits do not apply, show the model the error once and "
        "apply its corrected edits (the step counts once either way).",
    )
    max_llm_errors: int = Field(
        default=5,
        ge=1,
        description="Consecutive steps whose model call failed (after its retries) before the "
        "run stops.",
    )
    reviser_max_tokens: int = Field(
        default=1024, ge=64, description="Answer length of a small step's reviser call."
    )
    selection_tokens: int = Field(
        default=24_000,
        ge=500,
        le=200_000,
        description="select_node's answer budget for the driver's prompts (an MCP agent's "
        "default is McpSettings.context_tokens): room for the whole pool of a large step.",
    )
    lessons: int = Field(
        default=3, ge=1, le=20, description="Lessons of similar tasks in prompts (reasoning-bank)."
    )
    metr_unmeasured_weight: float = Field(
        default=1.0,
        gt=0,
        description="metr: the weight of a correct kernel without a meaningful speedup (the CPU "
        "interpreter); a measured kernel weighs its speedup.",
    )
    queue_full_retries: int = Field(
        default=5, ge=0, description="Retries of a step the judge refused with a full queue."
    )
