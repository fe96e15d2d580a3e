from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from adaexplore_mcp.config.llm import ModelPrice
from adaexplore_mcp.llm import PRICES, price_of
from adaexplore_mcp.llm.base import retry_after_s
from adaexplore_mcp.llm.prices import cost_usd


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("claude-sonnet-5-5", "claude-sonnet-5-5"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-5.4-nano", "gpt-5.4-nano"),
    ],
)
def test_known_models_and_their_snapshots(model, family):
    assert price_of(model) == PRICES[family]


@pytest.mark.parametrize("model", ["gpt-4o-audio-preview", "claude-sonnet-5-5-turbo", "llama-3"])
def test_names_are_never_matched_by_resemblance(model):
    assert price_of(model) is None


def test_overrides_win_and_add_models():
    mine = ModelPrice(input_per_mtok=0.1, output_per_mtok=0.2)
    assert price_of("gpt-4o-2024-08-06", {"gpt-4o": mine}) == mine
    assert price_of("house-model", {"house-model": mine}) == mine


def test_cost():
    price = ModelPrice(input_per_mtok=3.0, output_per_mtok=15.0)
    assert cost_usd(price, 1_000_000, 100_000) == pytest.approx(4.5)
    assert cost_usd(None, 10, 10) is None


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, 0.0),
    ],
)
def test_retry_after(headers, expected):
    assert retry_after_s(headers) == expected


def test_retry_after_as_a_date():
    waited = retry_after_s({"retry-after": formatdate(time.time() + 30, usegmt=True)})
    assert waited is not None and 25 <= waited <= 31
