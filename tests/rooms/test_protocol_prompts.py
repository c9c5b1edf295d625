"""Every protocol actor has its prompt file, loaded like the pair's, and overridable."""

from __future__ import annotations

from pathlib import Path

import pytest

import rooms  # noqa: F401  (registers the protocols)
from prompts import PromptError, load_prompt
from rooms.core.registry import prompt_roles


@pytest.mark.parametrize("role", prompt_roles())
def test_each_protocol_prompt_loads(role: str) -> None:
    text = load_prompt(role)
    assert text.startswith("# You ") and len(text) > 300


def test_a_protocol_prompt_can_be_overridden(tmp_path: Path) -> None:
    mine = tmp_path / "referee.md"
    mine.write_text("# My referee\n", encoding="utf-8")
    assert load_prompt("debate-referee", {"debate-referee": str(mine)}) == "# My referee\n"
    with pytest.raises(PromptError, match="no prompt"):
        load_prompt("debate-jester")
