"""What a Discord deployment lives through: the bot restarted with a question open (its button
still works), rate limits (a short 429 waited out by discord.py, a long one left to the
outbox), and a Gateway reconnect (resumed, nothing lost, nothing handled twice).
Real discord.py against the fake Discord; real engine and store; scripted runner."""

from __future__ import annotations

import time

from bot.settings import Settings
from tests.bot.discord.kit import (
    assert_one_decision_card,
    ephemeral_followups,
    open_escalation,
    served,
    text_of,
)
from tests.bot.discord.test_flow import pair_with_escalation
from tests.fakes.discord import ALICE, FakeDiscord
from tests.fakes.runner import ScriptedRunner


def posts_to_threads(method: str, path: str) -> bool:
    return method == "POST" and path.endswith("/messages") and "/webhooks/" not in path


async def test_after_a_restart_the_open_questions_button_still_works(
    settings: Settings, fake: FakeDiscord
) -> None:
    runner = pair_with_escalation()
    async with served(settings, fake, runner) as s:
        thread, card = await open_escalation(s)
    assert sum(op == "identify" for op, _ in fake.gateway_ops) == 1
    # A new process: a new adapter and engine on the same store; no view is kept anywhere.
    async with served(settings, fake, runner) as s:
        assert sum(op == "identify" for op, _ in fake.gateway_ops) == 2
        await fake.click(card, "tribunal:choose:1.1", ALICE)
        await s.until(lambda: fake.messages[card]["components"] == [])
        await s.settle()
        assert (await s.task()).status == "closed"
        assert f"Chosen by <@{ALICE}>" in text_of(fake.messages[card])
        # This process never saw the card posted: the engine's record of it is what it edits.
        assert_one_decision_card(fake, thread, card, f"Chosen by <@{ALICE}>")
        assert ephemeral_followups(fake) == []
        assert [c.role for c in runner.calls] == ["owner", "arbiter", "owner", "reviewer", "owner"]


def _done_pair() -> ScriptedRunner:
    return ScriptedRunner(
        {"owner": ["DONE\nadded it", "DONE\nwrapped up"], "reviewer": ["APPROVED\nfine"]}
    )


async def test_a_short_429_is_waited_out_by_discord_py(
    settings: Settings, fake: FakeDiscord
) -> None:
    fake.rate_limit(posts_to_threads, retry_after=0.05)
    async with served(settings, fake, _done_pair()) as s:
        mention = await fake.say(ALICE, "add a flag", mention=True)
        await s.until(lambda: s.app.store.task(1))
        await s.settle()
        assert (await s.task()).status == "closed"
        thread = str(mention["id"])
        acks = [c for c in fake.calls if posts_to_threads(c.method, c.path) and c.channel == thread]
        assert "rate_limited" in acks[0].body and acks[1].message_id is not None
        (row,) = [r for r in await s.app.store.outbox() if r.key.startswith("event:")]
        assert row.status == "sent" and row.attempts == 1, "retried inside discord.py"
        opened = [m for m in fake.in_channel(thread) if "Task opened" in text_of(m)]
        assert len(opened) == 1


async def test_a_429_longer_than_the_bound_is_retried_by_the_outbox(
    settings: Settings, fake: FakeDiscord
) -> None:
    fake.rate_limit(posts_to_threads, retry_after=600.0)  # beyond max_ratelimit_timeout (30 s)
    async with served(settings, fake, _done_pair()) as s:
        started = time.monotonic()
        mention = await fake.say(ALICE, "add a flag", mention=True)
        await s.until(lambda: s.app.store.task(1))
        await s.settle()
        assert time.monotonic() - started < 10, "nobody waited the 600 s out"
        assert (await s.task()).status == "closed"
        (row,) = [r for r in await s.app.store.outbox() if r.key.startswith("event:")]
        assert row.status == "sent" and row.attempts == 2, "the first attempt raised RateLimited"
        opened = [m for m in fake.in_channel(str(mention["id"])) if "Task opened" in text_of(m)]
        assert len(opened) == 1


async def test_a_gateway_reconnect_resumes_loses_nothing_and_handles_nothing_twice(
    settings: Settings, fake: FakeDiscord
) -> None:
    fake.replay_overlap = 1000  # the resume sends every earlier event again, as duplicates
    runner = pair_with_escalation()
    async with served(settings, fake, runner) as s:
        thread, card = await open_escalation(s)
        await fake.drop_gateway(code=4000)
        # Written while the bot is disconnected: kept by the Gateway for the resume.
        await fake.say(ALICE, "use the test password from the vault", channel=thread)
        await s.until(lambda: any(op == "resume" for op, _ in fake.gateway_ops))
        await s.until(lambda: s.app.store.task(1))
        await s.until(lambda: fake.messages[card]["components"] == [])
        await s.settle()
        assert (await s.task()).status == "closed"
        assert sum(op == "identify" for op, _ in fake.gateway_ops) == 1, (
            "resumed, not a new session"
        )
        assert await s.app.store.task(2) is None, "the replayed mention opened nothing"
        threads = [c for c in fake.calls if c.path.endswith("/threads")]
        assert len(threads) == 1
        answers = [m for m in await s.app.store.messages(1) if m.kind == "answer"]
        assert [a.text for a in answers] == ["use the test password from the vault"]
        assert [c.role for c in runner.calls] == ["owner", "arbiter", "owner", "reviewer", "owner"]


async def test_after_a_restart_a_reply_in_an_archived_thread_still_answers(
    settings: Settings, fake: FakeDiscord
) -> None:
    runner = pair_with_escalation()
    async with served(settings, fake, runner) as s:
        thread, card = await open_escalation(s)
    # Discord lists only active threads at connect: the new process has never seen this one.
    fake.channels[thread]["thread_metadata"]["archived"] = True
    async with served(settings, fake, runner) as s:
        await fake.say(ALICE, "use the test password from the vault", channel=thread)
        await s.until(lambda: s.app.store.task(1))
        await s.settle()
        assert (await s.task()).status == "closed"
        assert any(c.path.endswith(f"/channels/{thread}") and c.method == "GET" for c in fake.calls)
        # This process did not post the card: the outbox's record of it is found and edited.
        assert fake.messages[card]["components"] == []
        assert f"Answered by <@{ALICE}>" in text_of(fake.messages[card])
        assert_one_decision_card(fake, thread, card, f"Answered by <@{ALICE}>")


async def test_without_create_threads_the_person_is_told_and_nothing_opens(
    settings: Settings, fake: FakeDiscord
) -> None:
    fake.threads_allowed = False
    async with served(settings, fake, ScriptedRunner()) as s:
        mention = await fake.say(ALICE, "add a flag", mention=True)
        await s.until(lambda: len(fake.in_channel(str(mention["channel_id"]))) > 1)
        await s.settle()
        reply = fake.in_channel(str(mention["channel_id"]))[-1]
        assert "I need Create Public Threads" in reply["content"]
        assert await s.app.store.task(1) is None
