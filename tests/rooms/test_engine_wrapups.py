"""The wrap-up ↔ review cycle is bounded (rooms/pair/wrapups.py): an owner that changes the work
in every wrap-up is stopped by the ceilings or after 2 such wrap-ups, and the people decide."""

from __future__ import annotations

from pathlib import Path

from rooms.base.model import GroupPolicy, Thresholds
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Script, say


def fidgety_owner(rounds: int) -> list[object]:
    """A first DONE, then wrap-ups that each touch a.py again."""
    return [say("DONE\nv0", files={"a.py": "v = 0\n"})] + [
        say(f"DONE\ntidied once more ({i})", files={"a.py": f"v = {i}\n"})
        for i in range(1, rounds + 1)
    ]


def policy(tmp_path: Path, **limits: object) -> GroupPolicy:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return GroupPolicy(
        name="g",
        workspace=str(workspace),
        approvers=frozenset({"boss"}),
        thresholds=Thresholds(**limits),  # type: ignore[arg-type]
    )


async def test_the_second_wrap_up_that_changes_the_work_asks_the_people(tmp_path: Path) -> None:
    script: Script = {"owner": fidgety_owner(10), "reviewer": ["APPROVED"] * 10}
    async with engine_kit(tmp_path, script, policy=policy(tmp_path)) as kit:
        await kit.say("@tribunal tidy a.py")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "owner", "reviewer", "owner"]
        assert (await kit.task()).status == "waiting_human"
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "wrapups"
        assert "changed the work in 2 wrap-ups" in esc.question
        # A person's answer starts the count afresh: the work goes on, bounded again.
        await kit.click("approve", str(esc.id))
        await kit.settle()
        assert (await kit.task()).status == "waiting_human"
        assert len(kit.roles()) == 5 + 5


async def test_a_wrap_up_past_a_ceiling_asks_the_people(tmp_path: Path) -> None:
    script: Script = {"owner": fidgety_owner(10), "reviewer": ["APPROVED"] * 10}
    async with engine_kit(tmp_path, script, policy=policy(tmp_path, max_turns=3)) as kit:
        await kit.say("@tribunal tidy a.py")
        await kit.settle()
        # The approval at turn 2 still gets its wrap-up; the wrap-up changed the work at the
        # turn ceiling, so it does not go back to review.
        assert kit.roles() == ["owner", "reviewer", "owner"]
        assert (await kit.task()).status == "waiting_human"
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "ceiling"
        assert "3 turns, the limit is 3" in esc.reason


async def test_a_wrap_up_that_changes_nothing_closes_even_at_a_ceiling(tmp_path: Path) -> None:
    script: Script = {
        "owner": [say("DONE\nv0", files={"a.py": "v = 0\n"}), "DONE\nall good"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy(tmp_path, max_turns=2)) as kit:
        await kit.say("@tribunal tidy a.py")
        await kit.settle()
        assert (await kit.task()).status == "closed"
