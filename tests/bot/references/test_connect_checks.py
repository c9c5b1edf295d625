"""The connect-time address check through the real anthropic and openai SDKs: a reference whose
host name resolves to a private address is refused when the request is made, with a clear error
in the panel, and the API behind that address never hears of it; a redirect to a private place
is refused the same way; a rebinding DNS answer cannot move a connection; TLS still verifies the
certificate for the host name. No DNS: the names are answered by tests/fakes/network.py, and
every connection the check lets through reaches the fake API on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.references.clients import SDKReference, make_reference
from bot.references.network import CheckedNetwork
from rooms.references.panel import consult
from tests.bot.references.test_clients import settings
from tests.fakes import chat_api
from tests.fakes.chat_api import FakeChatAPI
from tests.fakes.messages_api import FakeMessagesAPI
from tests.fakes.messages_api import text as message_text
from tests.fakes.network import PUBLIC, FakeDNS, LoopbackWire
from tests.fakes.responses_api import FakeResponsesAPI
from tests.fakes.responses_api import text as response_text
from tests.fakes.tls import fake_ca

APIS = ("anthropic", "openai-chat", "openai-responses")
ENV = {"KEY": "sk-fake-key"}
NAME = "api.reference.test"
ANSWER = "VERDICT: REVISE\nthe test of the empty input is missing"


@contextmanager
def _fake(api: str) -> Iterator[Any]:
    if api == "anthropic":
        fake: Any = FakeMessagesAPI(default=message_text(ANSWER))
    elif api == "openai-chat":
        fake = FakeChatAPI(default=chat_api.text(ANSWER))
    else:
        fake = FakeResponsesAPI(default=response_text(ANSWER))
    with fake:
        yield fake


def _reference(
    api: str, root: str, dns: FakeDNS, wire: LoopbackWire | None, **extra: object
) -> SDKReference:
    url = root if api == "anthropic" else f"{root}/v1"
    network = CheckedNetwork(dns.resolve, wire)  # no wire: the real network (loopback here)
    return make_reference(settings("ref", api, url, "KEY", **extra), ENV, network=network)


async def _ask(ref: SDKReference) -> str | None:
    """The panel's error for the one reference (None: it answered ANSWER)."""
    try:
        panel = await consult([ref], "the arbiter's context", seed=1, deadline_s=20)
    finally:
        await ref.close()
    [opinion] = panel.opinions
    if opinion.error is None:
        assert opinion.text == ANSWER
    return opinion.error


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "a loopback address"),
        ("169.254.169.254", "a link-local address"),
        ("::1", "a loopback address"),
        ("10.0.0.7", "a private address"),
        ("::ffff:10.0.0.7", "a private address"),
    ],
)
async def test_a_name_resolving_to_a_private_address_is_refused_and_never_reached(
    api: str, address: str, why: str
) -> None:
    dns, wire = FakeDNS({"innocent.example": [address]}), LoopbackWire()
    with _fake(api) as fake:
        port = fake.port
        error = await _ask(_reference(api, f"http://innocent.example:{port}", dns, wire))
    assert error is not None and error.startswith(f"refused: innocent.example resolves to {why}"), (
        error
    )
    assert f"({address})" in error and "allow_private_urls = true" in error
    assert fake.requests == [] and wire.asked == []


async def test_refused_on_the_real_network_with_the_sdk_retrying() -> None:
    # The fake listens on 127.0.0.1, where the name points: without the check, the connection
    # would reach it. The SDK retries a connection error (max_retries): refused again.
    dns = FakeDNS({"innocent.example": ["127.0.0.1"]})
    with _fake("openai-chat") as fake:
        port = fake.port
        ref = _reference("openai-chat", f"http://innocent.example:{port}", dns, None)
        ref.settings = ref.settings.model_copy(update={"max_retries": 1})
        error = await _ask(ref)
    assert error is not None and error.startswith("refused: innocent.example resolves to a loop")
    assert fake.requests == [] and dns.lookups == ["innocent.example"] * 2


@pytest.mark.parametrize("api", APIS)
async def test_a_name_resolving_to_a_public_address_is_connected_to_at_that_address(
    api: str,
) -> None:
    dns, wire = FakeDNS({NAME: [PUBLIC]}), LoopbackWire()
    with _fake(api) as fake:
        port = fake.port
        assert await _ask(_reference(api, f"http://{NAME}:{port}", dns, wire)) is None
        [call] = fake.calls
    assert wire.asked == [(PUBLIC, port)] and dns.lookups == [NAME]
    assert call.headers["host"] == f"{NAME}:{port}"  # the name, not the address


@pytest.mark.parametrize(
    ("location", "refused"),
    [
        ("http://evil.example:{port}/v1/chat/completions", "evil.example resolves to a link-local"),
        ("http://127.0.0.1:{port}/v1/chat/completions", "127.0.0.1 is a loopback address"),
        ("http://localhost:{port}/v1/chat/completions", "localhost is a local or metadata host"),
        ("http://[::ffff:a9fe:a9fe]:{port}/latest/meta-data", "::ffff:a9fe:a9fe is a link-local"),
    ],
)
async def test_a_redirect_to_a_private_place_is_refused(location: str, refused: str) -> None:
    dns = FakeDNS({NAME: [PUBLIC], "evil.example": ["169.254.169.254"]})
    wire = LoopbackWire()
    with _fake("openai-chat") as fake:
        port = fake.port
        fake.script(chat_api.any_request(), [chat_api.redirect(location.format(port=port))])
        error = await _ask(_reference("openai-chat", f"http://{NAME}:{port}", dns, wire))
        assert len(fake.requests) == 1  # the first request only: the redirect went nowhere
    assert error is not None and error.startswith(f"refused: {refused}"), error
    assert wire.asked == [(PUBLIC, port)]


async def test_a_redirect_to_a_public_place_is_followed_through_the_check() -> None:
    # Why redirects matter: the SDKs follow them, and a 307 sends the POST and its body again
    # (httpx drops the Authorization header for another origin: the fake then answers 401).
    dns = FakeDNS({NAME: [PUBLIC], "mirror.reference.test": ["2606:4700::1111"]})
    wire = LoopbackWire()
    with _fake("openai-chat") as fake:
        port = fake.port
        moved = f"http://mirror.reference.test:{port}/v1/chat/completions"
        fake.script(chat_api.any_request(), [chat_api.redirect(moved)])
        error = await _ask(_reference("openai-chat", f"http://{NAME}:{port}", dns, wire))
        first, second = fake.requests
    assert error == "HTTP 401: no Authorization: Bearer"
    assert first.body == second.body and "the arbiter's context" in str(second.body)
    assert second.headers["host"] == f"mirror.reference.test:{port}"
    assert "authorization" not in second.headers
    assert wire.asked == [(PUBLIC, port), ("2606:4700::1111", port)]


async def test_dns_rebinding_cannot_move_a_connection_to_a_private_address() -> None:
    # Public at the first lookup, loopback at every later one: the address checked is the one
    # connected to (one lookup per connection); a kept-alive connection stays where it was
    # checked; a new connection looks up again and is refused.
    dns, wire = FakeDNS({NAME: [[PUBLIC], ["127.0.0.1"]]}), LoopbackWire()
    with _fake("anthropic") as fake:
        port = fake.port
        ref = _reference("anthropic", f"http://{NAME}:{port}", dns, wire)
        first = await ref.ask("one", timeout=10)
        second = await ref.ask("two", timeout=10)
        assert first.text == second.text == ANSWER
        assert dns.lookups == [NAME] and wire.asked == [(PUBLIC, port)]
        await ref.close()  # its connections with it: the next call opens a new one
        error = await _ask(ref)
        assert len(fake.requests) == 2
    assert error is not None and error.startswith(f"refused: {NAME} resolves to a loopback")
    assert dns.lookups == [NAME, NAME] and wire.asked == [(PUBLIC, port)]


async def test_tls_verifies_the_certificate_for_the_name_not_the_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = fake_ca(tmp_path, NAME)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca_file))  # read by the client, as the SDKs do
    dns = FakeDNS({NAME: [PUBLIC], "other.reference.test": [PUBLIC]})
    wire = LoopbackWire()
    fake = FakeChatAPI(default=chat_api.text(ANSWER))
    fake.tls = ca.server
    with fake:
        port = fake.port
        assert await _ask(_reference("openai-chat", f"https://{NAME}:{port}", dns, wire)) is None
        # The same address under another name: the certificate is not for it.
        other = _reference("openai-chat", f"https://other.reference.test:{port}", dns, wire)
        error = await _ask(other)
        assert len(fake.requests) == 1
    assert ca.sni == [NAME, "other.reference.test"]
    assert error == "cannot connect: APIConnectionError"
    assert wire.asked == [(PUBLIC, port)] * 2


async def test_a_checked_reference_does_not_go_through_a_proxy_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A proxy would resolve the name itself, past the check: the variables are not used.
    dns, wire = FakeDNS({NAME: [PUBLIC]}), LoopbackWire()
    with _fake("openai-chat") as fake, FakeChatAPI() as proxy:
        for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
            monkeypatch.setenv(variable, proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        port = fake.port
        assert await _ask(_reference("openai-chat", f"http://{NAME}:{port}", dns, wire)) is None
        assert len(fake.requests) == 1 and proxy.requests == []
    assert wire.asked == [(PUBLIC, port)]
