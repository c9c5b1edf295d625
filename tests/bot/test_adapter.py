"""The router hands each outbound message to the adapter of its room's platform."""

from __future__ import annotations

import pytest

from bot.adapter import Router, UnservedPlatform
from rooms.base.model import Outbound, RoomRef
from rooms.engine import Engine


class Recording:
    def __init__(self, platform: str) -> None:
        self._platform = platform
        self.delivered: list[Outbound] = []

    @property
    def platform(self) -> str:
        return self._platform

    async def start(self, engine: Engine) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def deliver(self, message: Outbound) -> str | None:
        self.delivered.append(message)
        return f"{self._platform}-{len(self.delivered)}"


async def test_each_message_goes_to_its_platforms_adapter() -> None:
    slack, console = Recording("slack"), Recording("console")
    router = Router([slack, console])
    assert router.platforms == {"slack", "console"}
    assert await router.deliver(Outbound(RoomRef("slack", "C1", "1.0"), "hi")) == "slack-1"
    assert await router.deliver(Outbound(RoomRef("console", "local", "1"), "yo")) == "console-1"
    assert [m.text for m in slack.delivered] == ["hi"]
    assert [m.text for m in console.delivered] == ["yo"]


async def test_a_message_for_an_unserved_platform_raises_so_the_outbox_keeps_it() -> None:
    router = Router([Recording("console")])
    with pytest.raises(UnservedPlatform, match="discord"):
        await router.deliver(Outbound(RoomRef("discord", "1", "2"), "hi"))


def test_two_adapters_for_one_platform_are_refused() -> None:
    with pytest.raises(ValueError, match="two adapters"):
        Router([Recording("slack"), Recording("slack")])
