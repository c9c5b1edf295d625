"""What lands in a thread: long outputs split at 2,000 characters on line and fence
boundaries, very long ones as an opening part plus the whole text as a file, progress edited
in place and coalesced, commands by mention, and what is not for us (our own posts, other
bots, other channels, chatter without a mention) left alone.
Real discord.py against the fake Discord; real engine and store; scripted runner."""

from __future__ import annotations

import asyncio

from bot.settings import Settings
from rooms.base.model import Outbound, RoomRef
from tests.bot.discord.kit import served, text_of
from tests.fakes.discord import (
    ALICE,
    BOB,
    BOT_ID,
    CHANNEL_ID,
    OTHER_BOT,
    OTHER_CHANNEL_ID,
    FakeDiscord,
)
from tests.fakes.runner import ScriptedRunner, hang


def numbered(lines: int, width: int = 49) -> str:
    return "\n".join(f"{n:04d} " + "x" * (width - 5) for n in range(lines))


async def _owner_says(settings: Settings, fake: FakeDiscord, output: str) -> list[dict]:  # type: ignore[type-arg]
    runner = ScriptedRunner({"owner": [output, "DONE\nwrapped up"], "reviewer": ["APPROVED\nfine"]})
    async with served(settings, fake, runner) as s:
        mention = await fake.say(ALICE, "write it all out", mention=True)
        await s.until(lambda: s.app.store.task(1))
        await s.settle()
        assert (await s.task()).status == "closed"
    posts = fake.in_channel(str(mention["id"]))
    return [m for m in posts if m["author"]["username"] == "Tribunal · owner"]


async def test_a_5000_character_output_is_split_at_2000_on_line_boundaries(
    settings: Settings, fake: FakeDiscord
) -> None:
    output = "DONE\n" + numbered(100)  # 5,004 characters
    assert len(output) > 5000
    owner = await _owner_says(settings, fake, output)
    pieces = [m["content"] for m in owner[:-1]]  # the last one is the wrap-up turn
    assert len(pieces) == 3 and all(len(p) <= 2000 for p in pieces)
    assert "".join(pieces) == output
    assert all(p.endswith("\n") for p in pieces[:-1]), "cut after a line, never inside one"
    assert not any(m["attachments"] for m in owner)


async def test_a_split_inside_a_code_fence_closes_and_reopens_it(
    settings: Settings, fake: FakeDiscord
) -> None:
    output = "DONE\n```python\n" + numbered(80) + "\n```\nthat is all"
    owner = await _owner_says(settings, fake, output)
    pieces = [m["content"] for m in owner[:-1]]
    assert len(pieces) >= 2
    for piece in pieces:
        assert piece.count("```") % 2 == 0, piece[-40:]
    assert pieces[1].startswith("```\n")  # reopened (split_text reopens with the bare fence)


async def test_a_50000_character_output_is_an_opening_part_and_the_whole_text_as_a_file(
    settings: Settings, fake: FakeDiscord
) -> None:
    output = "DONE\n" + numbered(1000)  # 50,004 characters
    owner = await _owner_says(settings, fake, output)
    first = owner[0]
    assert len(first["content"]) <= 2000 and first["content"].startswith("DONE\n0000 ")
    assert "characters in all: the whole text is in the attached file" in first["content"]
    call = next(c for c in fake.calls if c.message_id == first["id"])
    ((name, text),) = call.files
    assert name.startswith("owner-") and name.endswith(".md")
    # The engine posts at most 30,000 characters of one output (rooms/pair/outcomes.py) and
    # keeps the rest in the store; the file carries all that was posted.
    assert text.startswith(output[:29_000]) and "the full output is stored" in text
    assert len(owner) == 2, "one message for the long output, one for the wrap-up"


async def test_progress_is_one_message_edited_in_place_and_coalesced(
    settings: Settings, fake: FakeDiscord
) -> None:
    runner = ScriptedRunner({"owner": [], "reviewer": []})
    async with served(settings, fake, runner) as s:
        s.adapter.pacer._interval = 0.3
        room = RoomRef("discord", str(CHANNEL_ID), "0")
        mention = await fake.say(ALICE, "hello", mention=True)
        await s.settle()
        room = RoomRef("discord", str(CHANNEL_ID), str(mention["id"]))
        first = await s.adapter.deliver(Outbound(room, "⏳ step 0", persona="owner"))
        assert first is not None and first.startswith("w:")
        for step in range(1, 40):
            await s.adapter.deliver(
                Outbound(room, f"⏳ step {step}", persona="owner", edit_of=first)
            )
        await s.adapter.drain()
        message_id = first.rpartition(":")[2]
        edits = [c for c in fake.calls if c.method == "PATCH" and c.message_id == message_id]
        assert 1 <= len(edits) <= 3, len(edits)
        assert fake.messages[message_id]["content"] == "⏳ step 39", "the latest text wins"


async def test_commands_by_mention_go_through_the_shared_parser(
    settings: Settings, fake: FakeDiscord
) -> None:
    runner = ScriptedRunner({"owner": [hang()]})
    async with served(settings, fake, runner) as s:
        help_mention = await fake.say(ALICE, "help", mention=True)
        await s.settle()
        assert any(
            "Mention me with a task" in text_of(m) for m in fake.in_channel(str(help_mention["id"]))
        )
        assert await s.app.store.task(1) is None, "help opens no task"

        mention = await fake.say(ALICE, "port the parser to rust", mention=True)
        thread = str(mention["id"])
        await runner.wait_calls(1)
        await fake.say(BOB, "status", mention=True, channel=thread)
        await s.until(lambda: any("Task #1: " in text_of(m) for m in fake.in_channel(thread)))
        await fake.say(ALICE, "stop", mention=True, channel=thread)  # the opener
        await s.until(
            lambda: any("⏹ Task #1 stopped by" in text_of(m) for m in fake.in_channel(thread))
        )
        await s.settle()
        assert (await s.task()).status == "closed"
        assert runner.calls[0].cancelled


async def test_what_is_not_for_us_is_left_alone(settings: Settings, fake: FakeDiscord) -> None:
    runner = ScriptedRunner()
    async with served(settings, fake, runner) as s:
        await fake.say(ALICE, "build a thing", mention=True, channel=OTHER_CHANNEL_ID)
        await fake.say(ALICE, "just chatting about builds")  # registered channel, no mention
        await fake.say(OTHER_BOT, "build a thing", mention=True)  # bots never open tasks
        real = await fake.say(ALICE, "build a thing", mention=True)
        await asyncio.sleep(0)
        await s.settle()
        assert await s.app.store.task(1) is not None  # the one real mention
        assert await s.app.store.task(2) is None
        threads = [c for c in fake.calls if c.path.endswith("/threads")]
        assert [c.message_id for c in threads] == [real["id"]]
        # Every post of ours came back through the Gateway (as on Discord) and opened nothing.
        echoed = [m for m in fake.messages.values() if m["author"].get("bot")]
        assert echoed


async def test_the_task_text_is_what_a_person_reads(settings: Settings, fake: FakeDiscord) -> None:
    runner = ScriptedRunner({"owner": [hang()]})
    async with served(settings, fake, runner) as s:
        await fake.say(
            ALICE,
            f"ask <@{BOB}> about the parser in <#{CHANNEL_ID}>, <@{BOT_ID}> thanks",
            mention=True,
            mentions=(BOB,),
        )
        await s.until(lambda: s.app.store.task(1))
        task = await s.task()
        assert task.text == "ask @bob about the parser in #tribunal, thanks"
        await runner.wait_calls(1)
        assert "<@" not in runner.calls[0].prompt


async def test_a_masked_link_is_posted_with_its_real_target(
    settings: Settings, fake: FakeDiscord
) -> None:
    """Issue 24, item 17: a trusted URL as the label of another target."""
    spoof = "DONE\nsee [https://github.com/acme/app/pull/7](https://evil.example/x)"
    owner = await _owner_says(settings, fake, spoof)
    assert owner[0]["content"] == (
        "DONE\nsee https://github.com/acme/app/pull/7 (<https://evil.example/x>)"
    )
