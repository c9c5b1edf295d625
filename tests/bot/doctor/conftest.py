from __future__ import annotations

from pathlib import Path

import pytest

from tests.bot.doctor.kit import healthy_settings


@pytest.fixture
def healthy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return healthy_settings(monkeypatch, tmp_path)
