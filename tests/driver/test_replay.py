"""The demo's replayed transcript and the LLM that replays it (no judge, no server)."""

from __future__ import annotations

import asyncio

import pytest

from adaexplore_mcp.driver import ReplayLLM, demo_transcripts, load_transcript
from adaexplore_mcp.driver.prompts import SYSTEM, purpose_of
from adaexplore_mcp.driver.replies import kernel_from_reply, patch_from_reply, plan_from_reply
from adaexplore_mcp.llm import LLMUnavailable, Message


def ask(llm: ReplayLLM, role: str, *turns: str) -> str:
    messages = [
        Message(role="user" if i % 2 == 0 else "assistant", content=t) for i, t in enumerate(turns)
    ]
    completion = asyncio.run(llm.complete(system=SYSTEM[role], messages=messages))
    return completion.text


def test_the_shipped_transcript_parses_as_the_driver_reads_it():
    assert demo_transcripts() == ["softmax"]
    transcript = load_transcript("softmax")
    assert transcript.task == "softmax" and transcript.steps == 6 and transcript.seed is not None
    for reply in transcript.replies:
        if reply.purpose == "writer":
            assert "class ModelNew" in kernel_from_reply(reply.text)
        elif reply.purpose == "reviser":
            assert plan_from_reply(reply.text)
        else:
            assert patch_from_reply(reply.text).edits
        assert reply.note and reply.input_tokens > 0 and reply.output_tokens > 0


def test_replies_are_chosen_by_the_calls_role_and_the_prompt():
    llm = ReplayLLM(load_transcript("softmax"))
    assert (llm.provider, llm.replay) == ("replay", True)
    first = ask(llm, "writer", "... No correct kernel exists yet in this search ...")
    assert "CHUNK: tl.constexpr" in first
    # a reply whose prompt marker is absent is passed over for one that fits
    node2 = ask(llm, "reviser", "## The current kernel (node 2)\n...")
    assert "power of two" in node2
    repair = ask(llm, "tuner", "the tuner prompt", "edits", "edit 0: old_str found 3 times")
    assert "# pass 1: the maximum of the row" in repair
    totals = llm.totals
    assert totals.calls == 3 and totals.cost_usd == 0 and totals.input_tokens > 0


def test_a_spent_transcript_is_an_unavailable_model():
    llm = ReplayLLM(load_transcript("softmax"))
    ask(llm, "writer", "x")
    ask(llm, "writer", "y")
    with pytest.raises(LLMUnavailable, match="no reply left for a writer call"):
        ask(llm, "writer", "z")
    assert llm.totals.failed_calls == 1


def test_the_purpose_of_a_call():
    user = [Message(role="user", content="p")]
    assert purpose_of(SYSTEM["writer"], user) == "writer"
    assert purpose_of(SYSTEM["reviser"], user) == "reviser"
    assert purpose_of(SYSTEM["tuner"], user) == "tuner"
    three = [*user, Message(role="assistant", content="a"), Message(role="user", content="e")]
    assert purpose_of(SYSTEM["tuner"], three) == "repair"
    assert purpose_of("You write short, general lessons", user) == "other"


def test_an_unknown_transcript_names_the_shipped_ones():
    with pytest.raises(FileNotFoundError, match="the demo has: softmax"):
        load_transcript("gelu")
