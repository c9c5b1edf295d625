"""The fake model APIs answer like real servers: no Nagle delay between headers and body."""

from __future__ import annotations

import gc
import http.client
import socket

import pytest

from tests.fakes.chat_api import FakeChatAPI
from tests.fakes.messages_api import FakeMessagesAPI
from tests.fakes.responses_api import FakeResponsesAPI


def _server_side(client: socket.socket) -> socket.socket:
    """The fake's end of the client's connection (the handler keeps it open for keep-alive)."""
    peer = client.getsockname()
    for obj in gc.get_objects():
        if isinstance(obj, socket.socket) and obj.fileno() >= 0 and obj is not client:
            try:
                if obj.getpeername() == peer:
                    return obj
            except OSError:
                continue
    raise AssertionError("the fake's end of the connection was not found")


@pytest.mark.parametrize("fake_type", [FakeMessagesAPI, FakeResponsesAPI, FakeChatAPI])
def test_fake_sends_without_nagle(fake_type: type[FakeMessagesAPI]) -> None:
    # Headers and body go out in two writes: with Nagle on, the body waits for the client's
    # delayed ACK (~40 ms), and every benchmark through the fakes measured that wait.
    with fake_type() as fake:
        connection = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
        connection.request("GET", "/nothing-here")
        response = connection.getresponse()
        response.read()
        assert response.status == 404
        assert connection.sock is not None
        server_end = _server_side(connection.sock)
        assert server_end.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        connection.close()
