"""The search engine's settings (``Settings().search``): selection, context, rewards,
concurrency and budgets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from adaexplore_mcp.judge.policy import Ops, Precision


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
