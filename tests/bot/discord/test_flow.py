"""The whole loop in Discord, as a team sees it: a mention opens a thread, the roles speak
under their personas, the arbiter's ruling and the question come as cards with buttons, an
approver's click decides, the card shows who decided, the task resumes and closes.

discord.py's real `start()` against the fake REST API and Gateway on loopback
(tests/fakes/discord_api.py), the adapter built by the registered factory as `serve` builds
it, the real engine and store, a scripted runner."""

from __future__ import annotations

from bot.settings import Settings
from tests.bot.discord.kit import ESCALATE, said_chose, served, text_of
from tests.fakes.discord import ALICE, BOT_ID, CHANNEL_ID, FakeDiscord
from tests.fakes.runner import Reply, ScriptedRunner


def pair_with_escalation() -> ScriptedRunner:
    return ScriptedRunner(
        {
            "owner": [
                Reply("BLOCKED\nI need the staging password", progress=("reading the tests",)),
                "DONE\nused the test password, added the fixture",
                "DONE\nwrapped up",
            ],
            "arbiter": [ESCALATE],
            "reviewer": ["APPROVED\nlooks right"],
        }
    )


async def test_mention_thread_personas_ruling_escalation_click_resumes_and_closes(
    settings: Settings, fake: FakeDiscord
) -> None:
    runner = pair_with_escalation()
    async with served(settings, fake, runner) as s:
        mention = await fake.say(ALICE, "fix the flaky login test", mention=True)
        thread = mention["id"]  # a thread started from a message has its id
        await s.until(lambda: s.app.store.task(1))
        await fake.wait_for(lambda c: c.path.endswith(f"/messages/{thread}/threads"))
        await s.until(lambda: s.app.store.open_escalation(1))
        await s.settle()

        posts = fake.in_channel(thread)
        owner = [m for m in posts if m["author"]["username"] == "Tribunal · owner"]
        assert owner and "BLOCKED" in owner[-1]["content"]
        assert all(m.get("webhook_id") for m in owner), "roles speak through the webhook"
        ruling = next(m for m in posts if m["author"]["username"] == "Tribunal · arbiter")
        assert ruling["embeds"][0]["title"].startswith("⚖️")
        card = next(m for m in posts if m["components"])
        assert card["author"]["id"] == str(BOT_ID)
        buttons = card["components"][0]["components"]
        # One button per option and Reject: the question offers options (no Approve).
        assert [b["custom_id"] for b in buttons] == [
            "tribunal:choose:1.1",
            "tribunal:choose:1.2",
            "tribunal:reject:1",
        ]
        assert "May it use the test one?" in text_of(card)

        click = await fake.click(card["id"], "tribunal:choose:1.1", ALICE)
        deferred = await fake.wait_for(
            lambda c: c.query.get("interaction_id") == click and "callback" in c.path
        )
        assert deferred.body["type"] == 6  # deferred update, at once
        # The engine's decided card, delivered by the outbox, is drawn over the question's card.
        edit = await fake.wait_for(lambda c: c.method == "PATCH" and c.message_id == card["id"])
        assert edit.path == f"/api/v10/channels/{thread}/messages/{card['id']}"
        await s.until(lambda: s.app.store.task(1), timeout=5)
        await s.settle()
        assert (await s.task()).status == "closed"

        decided = fake.messages[card["id"]]
        assert decided["components"] == [], "the decided card has no buttons"
        assert f"Chosen by <@{ALICE}>" in text_of(decided)
        assert [c.role for c in runner.calls] == ["owner", "arbiter", "owner", "reviewer", "owner"]
        everything = "\n".join(text_of(m) for m in fake.in_channel(thread))
        notices = [m for m in fake.in_channel(thread) if m["id"] != card["id"]]
        assert sum(said_chose(m, ALICE) for m in notices) == 1
        assert f"Task opened by <@{ALICE}>" in everything
        assert "used the test password" in everything
        assert not fake.unhandled()
        # Nothing we post can ping: agents' text may say @everyone or <@id>.
        posts_made = [
            c
            for c in fake.calls
            if c.method in ("POST", "PATCH")
            and c.message_id
            and isinstance(c.body, dict)
            and "content" in c.body
        ]
        assert posts_made and all(
            c.body.get("allowed_mentions") == {"parse": []} for c in posts_made
        )
        assert str(CHANNEL_ID) in {c.channel for c in fake.calls if c.channel}
