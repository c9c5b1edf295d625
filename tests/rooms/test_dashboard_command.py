"""`dashboard` in chat (rooms/commands.py `sign_in_reply`): a one-time link through the
SignInLinks port, for an approver of the group only, in a reply to them alone; never a link
where the port cannot hand one privately, and a plain answer when the dashboard is off."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rooms.base.model import RoomRef
from tests.fakes.engine_kit import engine_kit

LINK = "http://127.0.0.1:8080/signin/link?s=secret"


@dataclass
class Links:
    """The port, answering `link` (None: it cannot hand one to that person alone)."""

    link: str | None
    asked: list[tuple[str, str, frozenset[str]]] = field(default_factory=list)

    async def link_for(self, room: RoomRef, user: str, roles: frozenset[str]) -> str | None:
        self.asked.append((room.key, user, roles))
        return self.link


@pytest.mark.parametrize(
    ("links", "user", "said", "link_given"),
    [
        (None, "boss", "not switched on", False),
        (Links(LINK), "mallory", "Only an approver of this group", False),
        (Links(None), "boss", "cannot send a sign-in link to you alone", False),
        (Links(LINK), "boss", "Your sign-in link to the dashboard", True),
    ],
)
async def test_dashboard_in_chat(
    tmp_path: Path, links: Links | None, user: str, said: str, link_given: bool
) -> None:
    async with engine_kit(tmp_path) as kit:
        kit.engine.offer_sign_in(links)
        await kit.say("dashboard", user=user)
        await kit.settle()
        [reply] = kit.platform.posts
        assert said in reply.message.text
        assert reply.message.private_to == user  # for their eyes only
        assert (LINK in reply.message.text) is link_given
        assert await kit.store.open_task_in(kit.room) is None  # no task was opened
        if links is not None:
            asked = [(kit.room.key, "boss", frozenset())] if user == "boss" else []
            assert links.asked == asked  # a non-approver never causes a link to be made
