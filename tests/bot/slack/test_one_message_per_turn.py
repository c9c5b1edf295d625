"""One message per turn (issue 27, item 15): each turn showed a progress message that ended as
"owner finished (turn 1, 2 steps)" and then its output as a second post: 27 posts for 10 turns.
Now the progress message is removed once the turn's output is posted (an interrupted turn's
stays, saying so: test_progress_crash.py), so the thread holds each turn once."""

from __future__ import annotations

from pathlib import Path

from tests.bot.slack.kit import slack_kit
from tests.fakes.runner import Reply, Script


async def test_a_task_of_five_turns_leaves_five_role_posts(tmp_path: Path) -> None:
    script: Script = {
        "owner": [
            Reply(text="DONE\nfirst try", progress=("reading", "editing")),
            Reply(text="DONE\nsecond try", progress=("editing",)),
            Reply(text="DONE\nwrapped up", progress=("committing",)),
        ],
        "reviewer": [
            Reply(text="CHANGES_REQUESTED\n- add a test", progress=("running the tests",)),
            Reply(text="APPROVED", progress=("running the tests",)),
        ],
    }
    async with slack_kit(tmp_path, script) as kit:
        ts = await kit.mention("fix the parser")
        await kit.settle()
        task = await kit.store.latest_task_in(kit.room(ts))
        assert task is not None and task.status == "closed"
        roles = [
            m for m in kit.thread(ts) if m.username in ("Tribunal · owner", "Tribunal · reviewer")
        ]
        shown_progress = len([m for m in kit.fake.deleted if m.text.startswith("⏳")])
    assert [m.text.splitlines()[-1] for m in roles] == [
        "first try",
        "• add a test",  # Slack mrkdwn shows the list item as a bullet
        "second try",
        "APPROVED",
        "wrapped up",
    ], [m.text for m in roles]
    assert shown_progress == 5  # each turn showed its progress while it ran
