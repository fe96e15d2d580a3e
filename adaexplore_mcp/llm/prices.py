"""What models cost: a table of list prices for common models, overridable by settings.

Prices are US dollars per million tokens for standard (not batch, not cached) input and output,
as the providers listed them by mid-2026. They are a convenience for reporting what a run cost,
not a bill: put your own in ``ADAEXPLORE_LLM__PRICES`` when they differ (discounts, Azure, a newer
model). A model not found here has no cost (None) and its tokens are still counted: names are
matched exactly (less a snapshot date), never by resemblance, so a new model is left unpriced
rather than priced as its neighbour.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from adaexplore_mcp.config.llm import ModelPrice


def _p(input_per_mtok: float, output_per_mtok: float) -> ModelPrice:
    return ModelPrice(input_per_mtok=input_per_mtok, output_per_mtok=output_per_mtok)


PRICES: Mapping[str, ModelPrice] = {
    # Anthropic
    "claude-fable-5-1": _p(10.0, 50.0),
    "claude-fable-5": _p(10.0, 50.0),
    "claude-opus-5-5": _p(4.0, 20.0),
    "claude-opus-5": _p(5.0, 25.0),
    "claude-sonnet-5-5": _p(2.0, 10.0),
    "claude-sonnet-5": _p(2.0, 10.0),
    "claude-opus-4-8": _p(5.0, 25.0),
    "claude-opus-4-7": _p(5.0, 25.0),
    "claude-opus-4-6": _p(5.0, 25.0),
    "claude-opus-4-5": _p(5.0, 25.0),
    "claude-opus-4-1": _p(15.0, 75.0),
    "claude-opus-4-0": _p(15.0, 75.0),
    "claude-opus-4": _p(15.0, 75.0),
    "claude-sonnet-4-6": _p(3.0, 15.0),
    "claude-sonnet-4-5": _p(3.0, 15.0),
    "claude-sonnet-4-0": _p(3.0, 15.0),
    "claude-sonnet-4": _p(3.0, 15.0),
    "claude-3-7-sonnet": _p(3.0, 15.0),
    "claude-haiku-4-5": _p(1.0, 5.0),
    "claude-3-5-haiku": _p(0.8, 4.0),
    # OpenAI
    "gpt-5.5": _p(5.0, 30.0),
    "gpt-5.5-pro": _p(30.0, 180.0),
    "gpt-5.4": _p(2.5, 15.0),
    "gpt-5.4-mini": _p(0.75, 4.5),
    "gpt-5.4-nano": _p(0.2, 1.25),
    "gpt-5": _p(1.25, 10.0),
    "gpt-5-mini": _p(0.25, 2.0),
    "gpt-5-nano": _p(0.05, 0.4),
    "gpt-4.1": _p(2.0, 8.0),
    "gpt-4.1-mini": _p(0.4, 1.6),
    "gpt-4.1-nano": _p(0.1, 0.4),
    "gpt-4o": _p(2.5, 10.0),
    "gpt-4o-mini": _p(0.15, 0.6),
    "o3": _p(2.0, 8.0),
    "o4-mini": _p(1.1, 4.4),
}

# A snapshot's name is its family's plus a date (claude-sonnet-4-20250514, gpt-4o-2024-08-06)
# or -latest; both are priced as the family.
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def price_of(model: str, overrides: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``model``: an override first, then the built-in table; None if unknown."""
    tables = (overrides or {}, PRICES)
    for name in (model, _SNAPSHOT.sub("", model)):
        for table in tables:
            if name in table:
                return table[name]
    return None


def cost_usd(price: ModelPrice | None, input_tokens: int, output_tokens: int) -> float | None:
    if price is None:
        return None
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6
