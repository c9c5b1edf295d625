"""The references on the real anthropic and openai SDKs, against fake APIs on loopback: three
references where one times out and one answers HTTP 500; the fan-out lasts about the slowest.
The fakes are on 127.0.0.1, so these references are of a group with allow_private_urls (the
connect-time check is tested in test_connect_checks.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.references.clients import SettingsReferences, make_reference
from bot.settings_references import ReferenceSettings
from rooms.references.panel import consult
from rooms.references.section import arbiter_section
from tests.fakes import chat_api, messages_api, responses_api
from tests.fakes.chat_api import FakeChatAPI
from tests.fakes.messages_api import FakeMessagesAPI
from tests.fakes.responses_api import FakeResponsesAPI

ENV = {"KEY_A": "sk-ant-fake-a", "KEY_C": "sk-fake-c", "KEY_R": "sk-fake-r"}


@pytest.fixture
def fakes() -> Iterator[tuple[FakeMessagesAPI, FakeChatAPI, FakeResponsesAPI]]:
    with FakeMessagesAPI() as m, FakeChatAPI() as c, FakeResponsesAPI() as r:
        yield m, c, r


def settings(name: str, api: str, url: str, key: str, **extra: object) -> ReferenceSettings:
    return ReferenceSettings.model_validate(
        {
            "name": name,
            "api": api,
            "base_url": url,
            "model": f"{name}-model-7",
            "key_env": key,
            "max_retries": 0,
            "timeout_s": 5,
            **extra,
        }
    )


def three(
    m: FakeMessagesAPI,
    c: FakeChatAPI,
    r: FakeResponsesAPI,
    *,
    timeouts: dict[str, float] | None = None,
) -> list[ReferenceSettings]:
    timeouts = timeouts or {}
    return [
        settings("anthro", "anthropic", m.url, "KEY_A", timeout_s=timeouts.get("a", 30)),
        settings("chatty", "openai-chat", f"{c.url}/v1", "KEY_C", timeout_s=timeouts.get("c", 30)),
        settings(
            "respo", "openai-responses", f"{r.url}/v1", "KEY_R", timeout_s=timeouts.get("r", 30)
        ),
    ]


async def test_one_times_out_one_fails_the_ruling_gets_the_third(
    fakes: tuple[FakeMessagesAPI, FakeChatAPI, FakeResponsesAPI],
) -> None:
    m, c, r = fakes
    warm = "VERDICT: PROCEED\nwarm"
    m.script(
        messages_api.any_request(),
        [
            messages_api.text(warm),
            messages_api.text(
                "VERDICT: REVISE\nthe empty-input test is missing",
                usage=messages_api.Usage(900, 40),
            ),
        ],
    )
    c.script(
        chat_api.any_request(),
        [chat_api.text(warm), chat_api.api_error(500, "the model is overloaded")],
    )
    r.script(
        responses_api.any_request(),
        [
            responses_api.text(warm),
            responses_api.delayed(responses_api.text("VERDICT: PROCEED"), 10),
        ],
    )
    refs = [make_reference(s, ENV, allow_private=True) for s in three(m, c, r)]
    try:
        # Warm clients, as in a running bot: a first call pays for the TLS context and the
        # SDK's lazy model building (seconds on a busy host), which is not what is tested here.
        warm_up = await consult(refs, "warm-up", seed=4, deadline_s=60)
        assert len(warm_up.answered) == 3
        responses = refs[2]
        responses.settings = responses.settings.model_copy(update={"timeout_s": 2.0})
        panel = await consult(refs, "the arbiter's context", seed=4, deadline_s=20)
    finally:
        for ref in refs:
            await ref.close()
    by_name = {o.name: o for o in panel.opinions}
    assert [o.name for o in panel.answered] == ["anthro"]
    ok = by_name["anthro"]
    assert (ok.label, ok.verdict, ok.input_tokens, ok.output_tokens) == ("R1", "REVISE", 900, 40)
    assert by_name["chatty"].error == "HTTP 500: the model is overloaded"
    assert by_name["respo"].error == "timed out after 2 s"
    assert panel.wall_s < 9  # the 10 s reference was dropped, not waited for
    # What each API was sent: the model, the limit, the key, the context.
    sent = m.calls[1]
    assert sent.body["model"] == "anthro-model-7" and sent.body["max_tokens"] == 1500
    assert "sk-ant-fake-a" in (
        sent.headers.get("authorization", "") + sent.headers.get("x-api-key", "")
    )
    assert c.calls[1].body["messages"] == [{"role": "user", "content": "the arbiter's context"}]
    assert c.calls[1].headers["authorization"] == "Bearer sk-fake-c"
    assert r.calls[1].body["input"] == "the arbiter's context"
    assert r.calls[1].body["max_output_tokens"] == 1500
    section = arbiter_section(panel)
    assert "### R1" in section and "R2" not in section
    for name in ("anthro", "chatty", "respo", "model-7"):
        assert name not in section


async def test_the_fanout_lasts_about_the_slowest_not_the_sum(
    fakes: tuple[FakeMessagesAPI, FakeChatAPI, FakeResponsesAPI],
) -> None:
    m, c, r = fakes
    delay = 0.4
    m.script(
        messages_api.any_request(),
        [messages_api.slow(messages_api.text("VERDICT: REVISE\na"), delay)],
        repeat_last=True,
    )
    c.script(
        chat_api.any_request(),
        [chat_api.slow(chat_api.text("VERDICT: REVISE\nb"), delay)],
        repeat_last=True,
    )
    r.script(
        responses_api.any_request(),
        [responses_api.delayed(responses_api.text("VERDICT: REVISE\nc"), delay)],
        repeat_last=True,
    )
    pool = SettingsReferences({"core": three(m, c, r)}, private_ok={"core"})
    for ref in pool.for_group("core"):
        ref.environ = ENV  # type: ignore[attr-defined]
    try:
        # The first call of a client pays for its TLS context and the SDK's lazy model
        # building, which is CPU work and so not parallel: warm them as a running bot is.
        await consult(pool.for_group("core"), "warm-up", seed=9, deadline_s=30)
        panel = await consult(pool.for_group("core"), "ctx", seed=9, deadline_s=10)
    finally:
        await pool.close()
    assert len(panel.answered) == 3 and panel.tally.unanimous == "REVISE"
    latencies = [o.latency_s for o in panel.opinions]
    assert min(latencies) >= delay
    # Parallel: well under the sum of the calls (1.2 s), at least the slowest (0.4 s).
    assert max(latencies) <= panel.wall_s < 0.75 * sum(latencies)
    assert pool.for_group("other") == []


async def test_a_missing_key_and_a_refused_connection_are_recorded_without_the_key() -> None:
    with FakeChatAPI() as c:
        url = f"{c.url}/v1"
    # The fake has stopped: nothing listens on its port any more.
    refs = [
        make_reference(settings("nokey", "openai-chat", "https://api.example.com/v1", "UNSET"), {}),
        make_reference(
            settings("down", "openai-chat", url, "KEY_C", timeout_s=2), ENV, allow_private=True
        ),
    ]
    panel = await consult(refs, "ctx", seed=1, deadline_s=5)
    errors = {o.name: o.error for o in panel.opinions}
    assert errors["nokey"] == "its key variable UNSET is not set"
    assert errors["down"] == "cannot connect: APIConnectionError"
    assert "sk-fake-c" not in repr(panel)


async def test_cost_is_counted_from_the_prices(
    fakes: tuple[FakeMessagesAPI, FakeChatAPI, FakeResponsesAPI],
) -> None:
    m, _, _ = fakes
    m.script(
        messages_api.any_request(),
        [messages_api.text("VERDICT: PROCEED\nok", usage=messages_api.Usage(1_000_000, 100_000))],
    )
    ref = make_reference(
        settings("a", "anthropic", m.url, "KEY_A", usd_per_mtok_in=3.0, usd_per_mtok_out=15.0),
        ENV,
        allow_private=True,
    )
    answer = await ref.ask("x", timeout=5)
    await ref.close()
    assert answer.cost_usd == pytest.approx(3.0 + 1.5)
