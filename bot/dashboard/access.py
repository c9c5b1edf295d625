"""What a signed-in person may see and do on the dashboard: the groups' own approver rules
(rooms/core/escalations.py `may_answer`, rooms/commands.py `may_stop`), applied to the platform
identity they signed in as. Ids of one platform mean nothing on another, so a person of Slack is
an approver of Slack groups only. The operator (token) sees and stops everything and answers
nothing: an answer to the tribunal is a person's, made as themselves."""

from __future__ import annotations

from bot.dashboard.sessions import Session
from bot.policies import SettingsPolicies
from rooms.base.model import GroupPolicy, Task
from rooms.commands import may_stop
from rooms.core.escalations import may_answer


def visible_groups(session: Session, policies: SettingsPolicies) -> frozenset[str] | None:
    """The groups whose tasks this person may see (None: all of them, the operator)."""
    if session.operator:
        return None
    return frozenset(
        p.name
        for p in policies.groups_on(session.platform)
        if may_answer(p, session.user, session.roles)
    )


def platform_of(room_key: str) -> str:
    return room_key.partition(":")[0]  # RoomRef.key is "platform:channel:thread"


def may_see(session: Session, policies: SettingsPolicies, task: Task) -> bool:
    groups = visible_groups(session, policies)
    return groups is None or (task.group in groups and platform_of(task.room) == session.platform)


def may_answer_on(session: Session, policy: GroupPolicy | None, task: Task) -> bool:
    if session.operator or policy is None or platform_of(task.room) != session.platform:
        return False
    return may_answer(policy, session.user, session.roles)


def may_stop_on(session: Session, policy: GroupPolicy | None, task: Task) -> bool:
    if session.operator:
        return True
    if policy is None or platform_of(task.room) != session.platform:
        return False
    return may_stop(policy, task, session.user, session.roles)


def may_arbitrate_on(session: Session, policy: GroupPolicy | None, task: Task) -> bool:
    """In chat anyone in the room may call the arbiter; here, whoever may see the task."""
    if session.operator:
        return True
    return policy is not None and may_answer_on(session, policy, task)
