"""Socket Mode: the real AsyncSocketModeHandler connects to the fake Slack's websocket (found
through apps.connections.open with the app token), acks each envelope, and the task runs."""

from __future__ import annotations

from pathlib import Path

from tests.bot.slack.kit import CHANNEL, slack_kit
from tests.bot.slack.test_http_e2e import ruling
from tests.fakes.runner import Script
from tests.fakes.slack_api import BOT_USER, click_body, event_body


async def test_a_task_through_socket_mode(tmp_path: Path) -> None:
    script: Script = {
        "owner": ["BLOCKED: I need the staging key.", "DONE\nused it", "DONE\nwrapped"],
        "arbiter": [
            ruling("ESCALATE", question="May the owner use the key?", options=["yes", "no"])
        ],
        "reviewer": ["APPROVED"],
    }
    async with slack_kit(tmp_path, script, mode="socket") as kit:
        fake = kit.fake
        assert [c.method for c in fake.calls][:2] == ["auth.test", "apps.connections.open"]
        ts = "1690000100.000200"
        mention = {
            "type": "app_mention",
            "user": "alice",
            "text": f"<@{BOT_USER}> add integration tests",
            "ts": ts,
            "channel": CHANNEL,
        }
        envelope = await fake.push(event_body(mention, event_id="EvS1"))
        await fake.wait_for(lambda: any(a.get("envelope_id") == envelope for a in fake.acks))
        await fake.wait_for(lambda: any(m.buttons() for m in kit.thread(ts)))
        await kit.settle()
        [card] = [m for m in kit.thread(ts) if m.buttons()]
        payload = click_body(
            user="boss",
            action="tribunal_choose",
            value=card.buttons()[0]["value"],
            channel=CHANNEL,
            message_ts=card.ts,
            thread_ts=ts,
            n=1,
        )
        click = await fake.push(payload, kind="interactive")
        await fake.wait_for(lambda: any(a.get("envelope_id") == click for a in fake.acks))
        await fake.wait_for(lambda: any("boss chose an option" in m.text for m in kit.thread(ts)))
        await kit.settle()
        task = await kit.store.latest_task_in(kit.room(ts))
        assert task is not None and task.status == "closed"
        assert [c.role for c in kit.runner.calls] == [
            "owner",
            "arbiter",
            "owner",
            "reviewer",
            "owner",
        ]
