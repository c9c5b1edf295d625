"""What the reviewer approved is what the engine commits (DESIGN §3, §6).

When the reviewer approves, the engine takes the git tree of the task's worktree
(rooms/work/snapshots.py) and stores it with the task in the same change that moves it to
`finalize`. A worktree that holds something the engine will not commit (a nested repository,
a file over `commit_max_file_mb`) is not approved work: the people are asked instead, with the
reason in the room.

After the wrap-up the tree is taken again. The work goes back to review when it differs from
the approved one, when it cannot be taken (refused, or git failed: when in doubt, not
approved), or when no approved tree was recorded; otherwise the approved tree object itself is
committed. A task that works in place (no worktree) commits nothing, and only the workspace
hash decides (rooms/pair/rounds.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from rooms.base.model import Turn
from rooms.base.records import Change
from rooms.base.words import CEILING
from rooms.core.escalations import ask
from rooms.core.outputs import post
from rooms.core.protocol import Step
from rooms.pair.states import TABLE
from rooms.work import worktrees
from rooms.work.gitsafe import GitError
from rooms.work.snapshots import Refused, snapshot, unreadable


@dataclass(frozen=True)
class Recheck:
    """The worktree after the wrap-up, against the approved tree."""

    changed: bool
    why: str = ""  # why it counts as changed, for the room ("" when it simply differs)
    tree: str | None = None  # the approved tree to commit (None: nothing to commit)


async def record_approval(step: Step, turn: Turn, change: Change) -> None:
    """On an APPROVED review: store the approved tree with the task, or ask the people when
    the work cannot be committed as it is."""
    tree = worktrees.of(step.policy)
    if tree is None:
        return
    try:
        change.approved_tree = await snapshot(tree, step.policy.max_commit_file_bytes)
        return
    except Refused as exc:
        reason = f"the approved work cannot be committed: {exc}"
    except (GitError, OSError) as exc:  # OSError: TimeoutError included
        reason = f"the approved work could not be read: {unreadable(exc)}"
    change.event = CEILING
    change.escalation = ask(
        step.task,
        step.room,
        step.policy,
        table=TABLE,
        kind="commit",
        question=(
            f"the reviewer approved, but {reason}. Send it back to the owner to take it out, "
            "or close?"
        ),
        reason=reason,
        show_reason=False,
    )
    note = f"⚠️ The reviewer approved, but {reason}."
    change.outbox.append(post(step.room, turn, note, key="refused", persona="tribunal"))


async def recheck(step: Step) -> Recheck:
    """The worktree after the wrap-up, compared with the tree the reviewer approved."""
    tree = worktrees.of(step.policy)
    if tree is None:
        return Recheck(changed=False)
    approved = step.task.approved_tree
    try:
        now = await snapshot(tree, step.policy.max_commit_file_bytes)
    except Refused as exc:
        return Recheck(changed=True, why=f"the work cannot be committed: {exc}")
    except (GitError, OSError) as exc:
        return Recheck(changed=True, why=f"the work could not be read: {unreadable(exc)}")
    if approved is None:
        return Recheck(changed=True, why="no approved tree was recorded for it")
    if now != approved:
        return Recheck(changed=True)
    return Recheck(changed=False, tree=approved)
