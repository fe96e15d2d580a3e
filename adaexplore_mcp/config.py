"""Configuration: one pydantic-settings model, read from ``ADAEXPLORE_*`` variables.

Nested fields use ``__``: ``ADAEXPLORE_JUDGE__TIMEOUT_S=60`` sets ``Settings().judge.timeout_s``.
Every component takes the part of this model it needs in its constructor; nothing reads the
environment on its own.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Tolerance(BaseModel, frozen=True):
    """An element passes when ``|actual - expected| <= atol + rtol * |expected|``.

    With ``atol_scale="output_rms"`` the ``atol`` is a fraction of the expected output's root
    mean square, so a rounding error that scales with the output passes near its zeros too."""

    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)
    atol_scale: Literal["absolute", "output_rms"] = "absolute"


class Precision(StrEnum):
    """How float32 work is judged and timed (``docs/precision.md``).

    - ``strict``: the float32 tolerance against a float32 reference; baselines with TF32 off.
    - ``tf32``: the candidate may round like TF32: a tolerance derived from TF32's precision
      against the float32 reference; baselines timed with TF32 on, so speedups compare like
      with like.
    - ``legacy``: atol = rtol = 5e-2 with TF32-off baselines, to reproduce numbers published
      under that gate; its results are labelled ``legacy``.

    Float16 and bfloat16 outputs keep their own tolerances under every policy.
    """

    STRICT = "strict"
    TF32 = "tf32"
    LEGACY = "legacy"


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


class IntegritySettings(BaseModel):
    """The checks that stop a kernel from faking a speedup (``docs/integrity.md``)."""

    enabled: bool = Field(
        default=True,
        description="Run the runtime integrity checks. Turn off only to measure what they cost; "
        "the static source checks always run.",
    )
    audited_timed_calls: int = Field(
        default=3,
        ge=1,
        description="Timed calls, picked at random, whose outputs are checked afterwards against "
        "the reference on the very inputs they were given.",
    )
    speed_of_light_fraction: float = Field(
        default=0.7,
        gt=0,
        le=1,
        description="A kernel faster than this fraction of the time needed to read the task's "
        "inputs and parameters once at the GPU's measured bandwidth is rejected.",
    )
    hidden_work_us: float = Field(
        default=20.0,
        ge=0,
        description="GPU work still running this long after forward's stream finished (side "
        "streams) gets the kernel rejected, plus 10% of its own time.",
    )


class SandboxSettings(BaseModel):
    """Operating-system limits on each candidate's child process."""

    memory_limit_mb: int | None = Field(
        default=16384,
        ge=256,
        description="Private writable memory a child may map (RLIMIT_DATA); None for no limit.",
    )
    cpu_time_factor: float = Field(
        default=4.0,
        ge=1,
        description="CPU seconds a child may use, as a multiple of its wall-clock limit (threads "
        "add up).",
    )
    max_processes: int = Field(
        default=512,
        ge=16,
        description="Processes and threads the child may add to the user's count (RLIMIT_NPROC).",
    )
    isolate_network: bool = Field(
        default=True,
        description="Give each child an empty network namespace (needs unprivileged user "
        "namespaces; otherwise socket use is refused by an audit hook).",
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
    precision: Precision = Field(
        default=Precision.STRICT,
        description="The precision policy of evaluations that do not name one: strict, tf32 "
        "or legacy.",
    )
    timing: TimingSettings = Field(default_factory=TimingSettings)
    integrity: IntegritySettings = Field(default_factory=IntegritySettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)

    @field_validator("device")
    @classmethod
    def _check_device(cls, value: str) -> str:
        from adaexplore_mcp.judge.devices import parse_device_spec

        parse_device_spec(value)
        return value


class RemoteJudgeSettings(BaseModel):
    """A judge service (``adaexplore-mcp judge serve``) used instead of the local pool."""

    url: str | None = Field(
        default=None, description="Base URL, e.g. http://gpu-box:8765; None for the local pool."
    )
    token: str | None = Field(default=None, description="Bearer token the service requires.")
    connect_timeout_s: float = Field(default=10.0, gt=0)
    retries: int = Field(
        default=4, ge=0, description="Retries on connection errors and 503 (queue full)."
    )
    backoff_s: float = Field(default=1.0, gt=0, description="First retry delay; doubles.")


class ServiceSettings(BaseModel):
    """``adaexplore-mcp judge serve``."""

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    token: str | None = Field(default=None, description="Required as a bearer token when set.")
    max_body_mb: float = Field(default=4.0, gt=0)


class ModelPrice(BaseModel, frozen=True):
    """What a model costs, in US dollars per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class LLMSettings(BaseModel):
    """The language model used to distil rules and to drive searches (``adaexplore_mcp.llm``).

    API keys are read from the provider's usual variable (``ANTHROPIC_API_KEY``,
    ``OPENAI_API_KEY``, ``AZURE_OPENAI_API_KEY``), never from this model's dump.
    """

    provider: Literal["anthropic", "openai", "azure"] | None = Field(
        default=None,
        description="None: no model is configured (rules come from the agent). 'openai' also "
        "covers OpenAI-compatible servers (vLLM, a proxy) through base_url; 'azure' is Azure "
        "OpenAI, where model is the deployment's name.",
    )
    model: str | None = Field(default=None, description="The provider's model name.")
    base_url: str | None = Field(
        default=None,
        description="An OpenAI-compatible server (vLLM: http://host:8000/v1), a gateway, or "
        "the Azure resource's endpoint (https://NAME.openai.azure.com).",
    )
    api_version: str | None = Field(
        default=None, description="Azure OpenAI's api-version, e.g. 2024-10-21 (azure only)."
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Per attempt.")
    max_retries: int = Field(
        default=4, ge=0, description="On rate limits (429), 5xx, timeouts and lost connections."
    )
    backoff_s: float = Field(default=1.0, gt=0, description="First retry delay; doubles.")
    max_wait_s: float = Field(
        default=60.0,
        gt=0,
        description="Longest single wait between attempts, a server's Retry-After included.",
    )
    max_tokens: int = Field(default=4096, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Prices by model name, over the built-in table (adaexplore_mcp.llm.prices); "
        'e.g. {"my-model": {"input_per_mtok": 1.0, "output_per_mtok": 3.0}}.',
    )


class MemorySettings(BaseModel):
    """The skill memory: how failures become active "You cannot …" rules."""

    threshold: int = Field(
        default=3,
        ge=1,
        description="Distinct tasks whose failures must support a rule before it is active.",
    )
    merge_similarity: float = Field(
        default=0.75,
        gt=0,
        le=1,
        description="Word overlap (Jaccard, after normalisation) at which a new rule merges into "
        "an existing one without asking the model.",
    )
    judge_similarity: float = Field(
        default=0.25,
        gt=0,
        le=1,
        description="Word overlap from which the model (when one is configured) is asked whether "
        "two rules state the same prohibition.",
    )
    distill_with_llm: bool = Field(
        default=True,
        description="Distil rules from failures with the configured model when the agent gave "
        "no rule text.",
    )
    token_budget: int = Field(
        default=800, ge=16, description="Most tokens of rules get_rules returns for a prompt."
    )
    max_rules: int = Field(default=20, ge=1, le=500, description="get_rules' default limit.")
    starter: bool = Field(
        default=True, description="Load the starter memory shipped with the package."
    )


class SearchSettings(BaseModel):
    """The MCTS search engine (``adaexplore_mcp.search_engine``, ``docs/search.md``).

    A search keeps the settings it was started with, so changing them affects new searches only.
    """

    # -- selection ---------------------------------------------------------------------------
    precision: Precision = Field(
        default=Precision.STRICT,
        description="The precision policy every evaluation of the search is judged under.",
    )
    exploration_weight: float = Field(
        default=1.0,
        ge=0,
        description="C in UCT: score = mean reward + C * sqrt(ln(N_parent + 1) / N_child). "
        "Rewards lie in [0, 1]; 0 is pure exploitation.",
    )
    expansion_weight: float = Field(
        default=1.0,
        ge=0,
        description="Scales the exploration term of a node's expansion option (a new child of "
        "an inner node) against descending into its existing children; 0 never widens an "
        "inner node.",
    )
    small_quota: int = Field(
        default=3,
        ge=0,
        description="Small-step children a node may have; once reached, the node is expanded "
        "with large steps only.",
    )
    p_large: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description="Probability of a large step at a node below its small-step quota (the "
        "root always gets a large step).",
    )
    seed: int | None = Field(
        default=None,
        description="Seed of the action coin; None draws one per search (stored with it, so "
        "a search's choices are reproducible).",
    )
    # -- context -----------------------------------------------------------------------------
    working_memory_k: int = Field(
        default=5,
        ge=1,
        description="Kernels in a small step's working memory: the last K of the chain from "
        "the nearest large-step ancestor to the selected node.",
    )
    pool_size: int = Field(
        default=5, ge=1, description="Kernels in a large step's pool of diverse correct kernels."
    )
    similarity_threshold: float = Field(
        default=0.8,
        gt=0,
        le=1,
        description="Two kernels at least this similar (Jaccard on token 4-grams of the "
        "normalized code) do not both enter the pool.",
    )
    pool_scan: int = Field(
        default=200,
        ge=1,
        description="Best correct kernels considered for the pool (bounds the cost of a "
        "selection on large trees).",
    )
    # -- reward ------------------------------------------------------------------------------
    reward_compile_error: float = Field(
        default=0.0, ge=0, le=1, description="Reward of a kernel that did not compile or load."
    )
    reward_rejected: float = Field(
        default=0.0, ge=0, le=1, description="Reward of a kernel that failed an integrity check."
    )
    reward_runtime_error: float = Field(
        default=0.05, ge=0, le=1, description="Reward of a kernel that crashed while running."
    )
    reward_timeout: float = Field(
        default=0.05, ge=0, le=1, description="Reward of a kernel that ran out of time."
    )
    reward_incorrect: float = Field(
        default=0.1, ge=0, le=1, description="Reward of a kernel that ran but computed wrongly."
    )
    reward_correct_floor: float = Field(
        default=0.3,
        ge=0,
        lt=1,
        description="Reward of the slowest correct kernel; correct kernels lie in "
        "[floor, 1] by log-speedup.",
    )
    speedup_cap: float = Field(
        default=10.0,
        gt=1,
        description="Speedups at or above this get reward 1 and at or below its inverse get "
        "the floor.",
    )
    unmeasured_speedup: float = Field(
        default=1.0,
        gt=0,
        description="Speedup assumed for a correct kernel whose timing is not meaningful (the "
        "judge's CPU mode).",
    )
    speedup_baseline: Literal["eager", "compile"] = Field(
        default="eager", description="Which baseline the reward's speedup is measured against."
    )
    # -- concurrency -------------------------------------------------------------------------
    virtual_loss: float = Field(
        default=1.0,
        ge=0,
        description="Visits of reward 0 each outstanding selection adds to its node and every "
        "ancestor, so concurrent workers are handed different nodes.",
    )
    lease_timeout_s: float = Field(
        default=900.0,
        gt=0,
        description="A selection nobody acts on stops counting (virtual loss and reserved "
        "budget) after this long.",
    )
    # -- budgets and the best kernel ---------------------------------------------------------
    max_steps: int = Field(
        default=100, ge=1, description="Default step budget: evaluated nodes per search."
    )
    max_wall_s: float | None = Field(
        default=None, gt=0, description="Default wall-clock budget per search; None: none."
    )
    max_tokens: int | None = Field(
        default=None, ge=1, description="Default token budget per search; None: none."
    )
    remeasure_top_k: int = Field(
        default=3, ge=1, description="Best correct kernels re-measured to decide the best."
    )
    remeasure_count: int = Field(
        default=3, ge=1, description="Extra evaluations of each re-measured kernel."
    )

    def model_post_init(self, context: object, /) -> None:
        # a failure must never outscore a correct kernel, nor a worse failure a milder one
        rising = [self.reward_compile_error, self.reward_runtime_error, self.reward_incorrect]
        failures = [*rising, self.reward_rejected, self.reward_timeout]
        if rising != sorted(rising) or max(failures) >= self.reward_correct_floor:
            raise ValueError(
                "rewards must rise: reward_compile_error <= reward_runtime_error <= "
                "reward_incorrect, and every failure's reward must stay below "
                "reward_correct_floor"
            )


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


class McpSettings(BaseModel):
    """``adaexplore-mcp serve``: the MCP server's transport and what its tools record."""

    transport: Literal["stdio", "http"] = Field(
        default="stdio",
        description="stdio (the client starts the server) or http (streamable HTTP at /mcp).",
    )
    host: str = Field(default="127.0.0.1", description="Address the HTTP transport listens on.")
    port: int = Field(default=8766, ge=0, le=65535, description="HTTP port; 0 picks a free one.")
    token: str | None = Field(
        default=None,
        description="Bearer token every HTTP request must carry; required to listen beyond "
        "loopback.",
    )
    record_failures: list[
        Literal["compile_error", "runtime_error", "incorrect", "timeout", "rejected"]
    ] = Field(
        default_factory=lambda: ["compile_error", "runtime_error"],
        description="Verdicts of evaluate_kernel, apply_patch and regenerate that are recorded "
        "in the rule memory automatically (JSON list).",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="WARNING", description="Logging to standard error."
    )


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
    service: ServiceSettings = Field(default_factory=ServiceSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    driver: DriverSettings = Field(default_factory=DriverSettings)

    @property
    def database_path(self) -> Path:
        return database_path(self.home)
