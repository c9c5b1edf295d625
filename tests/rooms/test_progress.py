"""Every progress message ends in a final state (issue 27, item 11): its id is kept on the turn
until the edit that says how the turn ended went through; what is still kept is edited when the
engine starts (its first scan) or takes the task over."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Reply, Script


async def test_a_refused_final_edit_is_made_when_the_engine_next_looks(tmp_path: Path) -> None:
    script: Script = {
        "owner": [Reply(text="DONE\nbuilt", progress=("reading",)), "DONE\nwrapped"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        # The platform refuses the owner's closing edit once (a 5xx, a rate limit given up).
        refused: list[str] = []

        def once(message: object) -> bool:
            final = getattr(message, "final", False) and "owner" in getattr(message, "text", "")
            if final and not refused:
                refused.append(getattr(message, "text", ""))
                return True
            return False

        kit.platform.fail_when = once
        await kit.say("@tribunal build it")
        await kit.settle()
        assert refused == ["owner finished (turn 1, 1 steps)"]
        [owner_progress] = [p for p in kit.platform.progress() if p.message.persona == "owner"][:1]
        assert owner_progress.text.startswith("⏳ owner is working")  # the lie, for now
        assert await kit.engine.close_progress() == 1
        assert owner_progress.text == "owner finished (turn 1)"
        assert await kit.engine.close_progress() == 0  # closed once, then forgotten
        assert all(not p.text.startswith("⏳") for p in kit.platform.progress())
