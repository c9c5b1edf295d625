"""`no_progress` through the real engine and store (rooms/judge/no_progress.py,
rooms/pair/progress_judge.py) with a scripted judge: a reworded stall that changes the tree
cosmetically and names no finding ids is caught at the review of round 4 (the judge is asked from
round 3, and fires on its second "no" in a row); steady progress is left alone; a judge that
answers garbage, fails or times out never fires it; a group without a model has no judge."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rooms.base.model import GroupPolicy, Thresholds
from rooms.core.ledger import ledger_summary
from tests.fakes.engine_kit import engine_kit
from tests.fakes.progress_judge import JudgePool, ScriptedJudge, says
from tests.fakes.rulings import ruling_reply
from tests.fakes.runner import Reply, say
from tests.rooms.git_helpers import make_repo

POLICY = GroupPolicy(name="g", approvers=frozenset({"boss"}), swap_check=False)
TASK = "@tribunal make the client retry"
# The same objection in new words each round: no ids, nothing ≥ 0.9 similar.
REWORDED = [
    "CHANGES_REQUESTED\n- The retry loop never gives up on a dead server.",
    "CHANGES_REQUESTED\n- Requests are still repeated without any limit at all.",
    "CHANGES_REQUESTED\n- Nothing caps how often we dial the host again.",
    "CHANGES_REQUESTED\n- A broken upstream keeps us reconnecting forever, it seems.",
    "CHANGES_REQUESTED\n- There is no ceiling on redial attempts yet.",
    "CHANGES_REQUESTED\n- Unlimited reconnection remains: please bound it.",
    "CHANGES_REQUESTED\n- The client may hammer the host endlessly still.",
    "CHANGES_REQUESTED\n- Still no maximum for the number of tries.",
]


def owner_rounds(n: int) -> list[Reply]:
    """Each round touches the workspace cosmetically (a comment), in new words."""
    return [
        say(f"DONE\nreworded the retry comment, take {i}", files={"net.py": f"# retry v{i}\n"})
        for i in range(n)
    ]


def judge_questions(judge: ScriptedJudge) -> int:
    return len(judge.questions)


def with_repo(tmp_path: Path, policy: GroupPolicy = POLICY) -> GroupPolicy:
    """The task works in a worktree of a real repository, so each round's tree is hashed."""
    return replace(policy, workspace=str(make_repo(tmp_path / "repo", {"net.py": "# retry\n"})))


async def test_a_reworded_stall_is_caught_at_the_second_no(tmp_path: Path) -> None:
    judge = ScriptedJudge(default=says("no", "retry limit"))
    script = {
        "owner": owner_rounds(5),
        "reviewer": REWORDED[:5],
        "arbiter": [ruling_reply("ESCALATE", question="Stop?", options=["yes", "no"])],
    }
    policy = with_repo(tmp_path)
    async with engine_kit(tmp_path, script, policy=policy, references=JudgePool(judge)) as kit:
        await kit.say(TASK)
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer"] * 4 + ["arbiter"]
        firings = await kit.store.firings(1)
        assert [(f.firing.detector, f.acted) for f in firings] == [
            ("no_progress", False),  # round 3: the first "no"
            ("no_progress", True),  # round 4: the second in a row fires
        ]
        fired = firings[1].firing
        assert fired.reason.startswith("the progress judge answered “no” for rounds 3 and 4")
        assert "retry limit" in fired.reason
        assert fired.extra["cost_usd"] == 0.0005 and fired.extra["judge"] == "judge (tiny-judge-1)"
        assert judge_questions(judge) == 2
        question = judge.questions[1]
        assert "Open findings of round 3:" in question and "dial the host again" in question
        assert "A broken upstream" in question and "The workspace was changed" in question
        ledger = await ledger_summary(kit.store)
        assert (ledger.overall.judge_calls, ledger.overall.judge_cost_usd) == (2, 0.001)
        # The judge's calls count toward the task's budgets, beside its turns' and the
        # arbiter's reference opinions' (the same scripted model answers both here).
        task = await kit.store.task(1)
        assert task is not None
        turns = sum(c.reply.cost_usd for c in kit.runner.calls)
        panel = await kit.store.latest_panel(1)  # the arbiter's one fan-out (to the same fake)
        assert panel is not None
        opinions = sum(o.cost_usd for o in panel.opinions)
        assert task.cost_usd == pytest.approx(turns + opinions + 2 * judge.cost_usd)


async def test_steady_progress_over_eight_rounds_is_left_alone(tmp_path: Path) -> None:
    # A judge that now and then says "no", never twice in a row.
    judge = ScriptedJudge(answers=[says("yes"), says("no"), says("yes"), says("no"), says("yes")])
    script = {
        "owner": [*owner_rounds(9), say("DONE\nwrapped")],
        "reviewer": [*REWORDED, "APPROVED"],
    }
    policy = with_repo(tmp_path, replace(POLICY, thresholds=Thresholds(round_cap=20)))
    async with engine_kit(tmp_path, script, policy=policy, references=JudgePool(judge)) as kit:
        await kit.say(TASK)
        await kit.settle()
        assert "arbiter" not in kit.roles()
        assert (await kit.task()).status == "closed"
        firings = await kit.store.firings(1)
        # Judged after the reviews of rounds 3 to 8 (the 9th approves).
        assert [f.firing.extra["answer"] for f in firings] == [
            "yes",
            "no",
            "yes",
            "no",
            "yes",
            "yes",
        ]
        assert not any(f.acted for f in firings)


async def test_a_judge_that_answers_garbage_fails_or_times_out_never_fires(tmp_path: Path) -> None:
    judge = ScriptedJudge(
        answers=["no progress, I'd say", "TIMEOUT", "FAIL"],
        timeout_s=0.2,
    )
    script = {
        "owner": owner_rounds(6),
        "reviewer": REWORDED[:6],
        "arbiter": [ruling_reply("ESCALATE", question="Stop?", options=["yes", "no"])],
    }
    async with engine_kit(tmp_path, script, policy=POLICY, references=JudgePool(judge)) as kit:
        await kit.say(TASK)
        await kit.settle()
        # Only the round cap (6) catches this stall: every judgment (rounds 3 to 5; at 6 the
        # cap fires first) counted as "yes".
        assert kit.roles() == ["owner", "reviewer"] * 6 + ["arbiter"]
        firings = await kit.store.firings(1)
        judged = [f for f in firings if f.firing.detector == "no_progress"]
        assert [f.firing.extra["answer"] for f in judged] == ["yes"] * 3
        assert not any(f.acted or f.firing.extra["readable"] for f in judged)
        assert "timed out after 0.2 s" in judged[1].firing.reason
        assert "HTTP 503" in judged[2].firing.reason
        assert firings[-1].firing.detector == "round_cap" and firings[-1].acted


async def test_a_group_without_a_model_has_no_judge(tmp_path: Path) -> None:
    script = {
        "owner": owner_rounds(6),
        "reviewer": REWORDED[:6],
        "arbiter": [ruling_reply("ESCALATE", question="Stop?", options=["yes", "no"])],
    }
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say(TASK)
        await kit.settle()
        firings = await kit.store.firings(1)
        assert [f.firing.detector for f in firings] == ["round_cap"]
