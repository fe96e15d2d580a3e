import socket

import pytest

from adaexplore_mcp.listening import bind, check_bind, is_loopback, url_of


def test_a_bound_socket_accepts_connections_before_any_server_runs():
    """serve prints the URL before uvicorn starts: a client connecting then must wait in the
    backlog, not be refused."""
    sock = bind("127.0.0.1", 0)
    try:
        with socket.create_connection(sock.getsockname()[:2], timeout=5):
            pass
        assert url_of(sock).startswith("http://127.0.0.1:")
    finally:
        sock.close()


def test_binding_a_taken_port_says_which():
    first = bind("127.0.0.1", 0)
    try:
        port = first.getsockname()[1]
        with pytest.raises(ValueError, match=f"cannot listen on 127.0.0.1:{port}"):
            bind("127.0.0.1", port)
    finally:
        first.close()


def test_only_loopback_may_listen_without_a_token():
    assert is_loopback("127.0.0.1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    check_bind("127.0.0.1", None, token_variable="X")
    check_bind("0.0.0.0", "secret", token_variable="X")
    with pytest.raises(ValueError, match="set X"):
        check_bind("0.0.0.0", None, token_variable="X")
