"""Settings of what works on top of the judge: the language model, the rule memory, the search,
the driver and the MCP server."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from adaexplore_mcp.config.judge import Ops, Precision


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
    lesson_margin: float = Field(
        default=0.1,
        ge=0,
        description="A step is a performance lesson when its speedup beats its parent's by this "
        "fraction (0.1: 10% faster), on the same device and policies.",
    )
    lesson_similarity: float = Field(
        default=0.3,
        gt=0,
        le=1,
        description="Operator overlap (Jaccard of the reference's torch operators) from which a "
        "task's performance lessons are shown for another task.",
    )
    max_lessons: int = Field(
        default=3, ge=0, le=50, description="Performance lessons select_node shows at most."
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
    ops: Ops = Field(
        default=Ops.TRITON,
        description="The operator policy every evaluation of the search is judged under: "
        "triton, or mixed (torch's library operators may stay beside Triton kernels).",
    )
    exploration_weight: float = Field(
        default=1.0,
        ge=0,
        description="C in UCT: score = Q + C * sqrt(ln(N_parent + 1) / N_child), Q the "
        "subtree's mean reward blended with its best (leader_weight). Rewards lie in [0, 1]; "
        "0 is pure exploitation.",
    )
    expansion_weight: float = Field(
        default=1.0,
        ge=0,
        description="Scales the exploration term of a node's expansion option (a new child of "
        "an inner node) against descending into its existing children; 0 never widens an "
        "inner node.",
    )
    leader_weight: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Weight of a subtree's best reward against its mean reward in UCT's "
        "exploitation term: above 0, a subtree holding the search's leader is not outranked "
        "because failed attempts around it lower its mean.",
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
        description="Reward a correct kernel approaches as it gets slower than the search's "
        "fastest; the fastest scores 1.",
    )
    reward_sharpness: float = Field(
        default=4.0,
        gt=0,
        description="k in a correct kernel's reward floor + (1 - floor) * (best_ms / ms) ** k: "
        "how steeply kernels slower than the search's fastest fall off (4: 10% slower scores "
        "0.76, 20% slower 0.64, 2x slower 0.34).",
    )
    speedup_baseline: Literal["eager", "compile"] = Field(
        default="eager",
        description="Which baseline the nodes' speedups are reported against (the reward "
        "compares runtimes within the search).",
    )
    # -- concurrency -------------------------------------------------------------------------
    virtual_loss: float = Field(
        default=1.0,
        ge=0,
        description="Visits of reward 0 each outstanding selection adds to its node and every "
        "ancestor, so concurrent workers are handed different nodes.",
    )
    lease_timeout_s: float = Field(
        default=300.0,
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


_RecordedVerdict = Literal["compile_error", "runtime_error", "incorrect", "timeout", "rejected"]


def _verdicts_recorded_by_default() -> list[_RecordedVerdict]:
    return ["compile_error", "runtime_error"]


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
    record_failures: list[_RecordedVerdict] = Field(
        default_factory=_verdicts_recorded_by_default,
        description="Verdicts of evaluate_kernel, apply_patch and regenerate that are recorded "
        "in the rule memory automatically (JSON list).",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="WARNING", description="Logging to standard error."
    )
    context_tokens: int = Field(
        default=4000,
        ge=500,
        le=200_000,
        description="select_node's answer budget in estimated tokens when the client sets "
        "none (the kernel to patch is always sent whole).",
    )
    max_rules: int = Field(
        default=8, ge=0, le=100, description="Most rules a select_node answer carries."
    )
    rule_relevance: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="A rule goes into select_node's answer only if its relevance to the node is "
        "at least this fraction of the most relevant rule's (and above zero).",
    )
    progress_interval_s: float = Field(
        default=4.0,
        gt=0,
        le=5.0,
        description="Longest silence between progress notifications of an evaluation.",
    )
