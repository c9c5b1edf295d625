"""Quiet refusals get a short private answer (issue 27, item 16), through the real bolt app:

- a mention in a channel that is no group's was ignored without a word; now the person gets
  an ephemeral message naming the channel and what an operator adds to tribunal.toml (once,
  though Slack sends a mention as two events), and nothing else happens;
- a click on a button Tribunal does not know got a public "Unknown action" in the thread; now
  the clicker alone reads that nothing changed and how to answer instead.
"""

from __future__ import annotations

from pathlib import Path

from tests.bot.slack.kit import CHANNEL, slack_kit
from tests.bot.slack.test_http_e2e import ruling
from tests.fakes.runner import Script
from tests.fakes.slack_api import BOT_USER

ELSEWHERE = "C0NOTAGROUP"


async def test_a_mention_in_a_channel_that_is_no_groups_is_answered_privately(
    tmp_path: Path,
) -> None:
    async with slack_kit(tmp_path, {}) as kit:
        event = kit.message_event(f"<@{BOT_USER}> fix the build", channel=ELSEWHERE)
        assert await kit.send_event({**event, "type": "app_mention"}) == 200
        assert await kit.send_event(event) == 200  # the same mention as a `message` event
        chatter = kit.message_event("lunch?", channel=ELSEWHERE)
        assert await kit.send_event(chatter) == 200
        await kit.settle()
        [told] = kit.fake.ephemerals
        assert (told["channel"], told["user"]) == (ELSEWHERE, "alice")
        assert told["text"].startswith("Tribunal is not set up in this channel")
        assert f'channel = "{ELSEWHERE}"' in told["text"] and "tribunal.toml" in told["text"]
        assert not told.get("thread_ts")  # a top-level mention: answered in the channel
        assert not kit.fake.called("chat.postMessage")
        assert kit.runner.calls == []


async def test_a_click_on_an_unknown_button_is_answered_to_the_clicker_alone(
    tmp_path: Path,
) -> None:
    script: Script = {
        "owner": ["BLOCKED: I need the staging key."],
        "arbiter": [ruling("ESCALATE", question="May the owner use it?", options=["yes", "no"])],
    }
    async with slack_kit(tmp_path, script) as kit:
        ts = await kit.mention("add integration tests")
        await kit.settle()
        [card] = [m for m in kit.thread(ts) if m.buttons()]
        before = [m.text for m in kit.thread(ts)]
        status = await kit.click(card, "tribunal_frobnicate", user="mallory", value="1")
        assert status == 200
        await kit.settle()
        assert [m.text for m in kit.thread(ts)] == before  # nothing public
        [told] = kit.fake.ephemerals
        assert (told["channel"], told["user"]) == (CHANNEL, "mallory")
        assert told["text"].startswith("That button (“frobnicate”) is not one I know")
        assert "nothing was changed" in told["text"] and "`approve`" in told["text"]
