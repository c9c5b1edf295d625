from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.settings import Settings
from tests.bot.discord.kit import write_settings
from tests.fakes.discord import FakeDiscord


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = await FakeDiscord().start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def settings(
    clean_settings_env: Path, tmp_path: Path, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    return write_settings(clean_settings_env, tmp_path / "data", fake, monkeypatch)
