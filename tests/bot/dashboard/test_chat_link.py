"""`@tribunal dashboard` in chat: an approver of the group gets a one-time link, to them alone
(a Slack ephemeral message); anyone else a refusal and no link. The link signs in as that
platform identity."""

from __future__ import annotations

import re
from pathlib import Path

from rooms.base.model import RoomRef
from tests.bot.dashboard.kit import BOSS, NOBODY, dashboard_kit

LINK = re.compile(r"http://127\.0\.0\.1:[0-9]+/signin/link\?s=[A-Za-z0-9_-]+")


async def test_an_approver_gets_a_private_link_that_signs_them_in(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path) as kit:
        await kit.slack.mention("dashboard", user=BOSS)
        await kit.slack.settle()
        [private] = kit.slack.fake.ephemerals
        assert private["user"] == BOSS
        link = LINK.search(private["text"])
        assert link, private
        # Nothing public carries it.
        assert not any(LINK.search(m.shown()) for m in kit.slack.fake.messages.values())
        client = kit.client()
        async with client.post(
            kit.url("/signin/link"), data={"s": link.group(0).split("?s=")[1]}
        ) as response:
            assert response.status == 200
            assert f"slack:{BOSS}" in await response.text()


async def test_anyone_else_is_refused_and_gets_no_link(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path) as kit:
        await kit.slack.mention("dashboard", user=NOBODY)
        await kit.slack.settle()
        [private] = kit.slack.fake.ephemerals
        assert private["user"] == NOBODY
        assert "Only an approver" in private["text"] and not LINK.search(private["text"])
        rows = await kit.app.store._rows("SELECT COUNT(*) FROM dashboard_links")
        assert rows[0][0] == 0


async def test_dashboard_with_more_words_is_a_task_not_the_command(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, {"owner": ["DONE"], "reviewer": ["APPROVED"]}) as kit:
        await kit.slack.mention("dashboard totals are wrong on Mondays", user=NOBODY)
        await kit.slack.settle()
        assert not kit.slack.fake.ephemerals
        task = await kit.app.store.task(1)
        assert task is not None and task.text == "dashboard totals are wrong on Mondays"


async def test_no_link_is_made_where_a_reply_would_be_public(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path) as kit:
        links = kit.running.dashboard.links
        # Discord answers a message in the channel for all to see: no link for it.
        assert await links.link_for(RoomRef("discord", "42", "43"), "1234", frozenset()) is None
        rows = await kit.app.store._rows("SELECT COUNT(*) FROM dashboard_links")
        assert rows[0][0] == 0
        console = await links.link_for(RoomRef("console", "local", "1"), "me", frozenset())
        assert console is not None and LINK.match(console)
