"""Telling a Ray cluster that went away from actors lost in a cluster still there: the head's
address as the judge joined it, and whether it still answers (no Ray needed)."""

from __future__ import annotations

import asyncio
import socket
from types import SimpleNamespace

from adaexplore_mcp.judge import JudgeUnavailable
from adaexplore_mcp.judge.cluster.head import Head, cluster_gone, head_of, parse_head


def test_the_head_is_the_client_server_named_or_the_gcs_joined():
    joined = SimpleNamespace(
        get_runtime_context=lambda: SimpleNamespace(gcs_address="10.0.0.5:6379")
    )
    assert head_of("ray://head.example:10001", joined) == Head("head.example", 10001)
    assert head_of("ray", joined) == Head("10.0.0.5", 6379)
    assert parse_head("[fd00::1]:6379") == Head("fd00::1", 6379)
    assert parse_head("no-port") is None and parse_head("host:port") is None

    def no_context():
        raise RuntimeError("Ray is not initialized")

    assert head_of("ray", SimpleNamespace(get_runtime_context=no_context)) is None


def test_a_head_answers_while_its_port_listens_and_not_after():
    listener = socket.create_server(("127.0.0.1", 0))
    head = Head("127.0.0.1", listener.getsockname()[1])
    assert asyncio.run(head.answers())
    listener.close()
    assert not asyncio.run(head.answers(timeout_s=1))


def test_a_cluster_gone_says_to_start_it_again_and_resume():
    error = cluster_gone(Head("10.0.0.5", 6379), "the evaluation of gelu")
    assert isinstance(error, JudgeUnavailable)
    message = str(error)
    assert "head at 10.0.0.5:6379 does not answer" in message
    assert "with the evaluation of gelu in flight. No verdict was recorded" in message
    assert "Start the cluster again" in message and "--resume" in message
