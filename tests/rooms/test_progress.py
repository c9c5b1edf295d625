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


async def test_only_a_finished_pair_turn_has_its_progress_message_removed(tmp_path: Path) -> None:
    """One message per turn (item 15) where the turn's output is a post of its own (the pair's
    finished turns); a failed turn's message stays saying "failed", a deliberation's run's
    message stays saying "finished" (its phase's posts sum the runs up)."""
    from rooms.base.model import GroupPolicy
    from tests.rooms.debate import scripts as debate
    from tests.rooms.test_status import obj

    script: Script = {
        "owner": [
            Reply(error="crashed", error_code="crashed", progress=("reading",)),
            Reply(text="DONE\nbuilt", progress=("reading",)),
            "DONE\nwrapped",
        ],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal build it")
        await kit.settle()
        finals = [(m.text, m.remove) for m in kit.platform.attempts if m.final]
    assert finals == [
        ("owner failed (turn 1, 1 steps)", False),
        ("owner finished (turn 2, 1 steps)", True),
    ]

    policy = GroupPolicy(name="g", approvers=frozenset({"boss"}))
    (tmp_path / "d").mkdir()
    frame = Reply(text=obj(debate.frame()).text, progress=("framing",))
    async with engine_kit(
        tmp_path / "d", {"advocate": [frame], "challenger": [frame]}, policy=policy
    ) as kit:
        await kit.say("@tribunal debate Move billing to the new queue")
        await kit.runner.wait_calls(2)
        await kit.platform.wait_for(lambda: sum(1 for m in kit.platform.attempts if m.final) >= 2)
        finals = [(m.text.split(" (")[0], m.remove) for m in kit.platform.attempts if m.final]
    assert sorted(finals) == [("advocate finished", False), ("challenger finished", False)]
