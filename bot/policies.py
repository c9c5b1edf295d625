"""Settings → the engine's view of a group (rooms.base.model.GroupPolicy), looked up by room.

A room belongs to the group whose platform and channel it lives in; the console room
(`RoomRef("console", "local", n)`) belongs to the console group. Any other room is not ours.
"""

from __future__ import annotations

from bot.settings import Settings
from bot.settings_sections import CONSOLE_GROUP, AgentSettings, GroupBase
from rooms.base.model import AgentConfig, GroupPolicy, RoomRef
from rooms.base.open_caps import OpenCaps


def group_policy(name: str, group: GroupBase) -> GroupPolicy:
    return GroupPolicy(
        name=name,
        # Absolute: a container backend bind-mounts it, and relative paths would depend on the
        # working directory of whoever runs the turn.
        workspace=str(group.workspace.resolve()) if group.workspace is not None else None,
        owner=AgentConfig(agent=group.owner.agent, model=group.owner.model),
        reviewer=AgentConfig(agent=group.reviewer.agent, model=group.reviewer.model),
        arbiter=AgentConfig(agent=group.arbiter.agent, model=group.arbiter.model),
        deliberation=_agent(group.deliberation),
        approvers=frozenset(group.approvers),
        open_caps=OpenCaps(group.max_open_tasks, group.max_open_tasks_per_person),
        thresholds=group.thresholds.to_thresholds(),
        prompt_overrides={role: str(path.resolve()) for role, path in group.prompts.items()},
        idle_timeout_s=group.timeouts.idle_s,
        hard_timeout_s=group.timeouts.hard_s,
        max_agent_turns=group.budgets.max_agent_turns,
        max_commit_file_bytes=group.commit_max_file_mb * 1024 * 1024,
        recent_turns=group.recent_turns,
        session_turns=group.session_turns,
        session_chars=group.session_chars,
        recent_chars=group.recent_chars,
        reference_deadline_s=group.reference_deadline_s,
        swap_check=group.arbiter.swap_check,
        allow_same_model=group.arbiter.allow_same_model,
        # In the console room everything typed is for Tribunal: nothing to mention.
        address="type" if name == CONSOLE_GROUP else GroupPolicy.address,
        protocol_limits=group.protocol_limits(),
    )


def _agent(role: AgentSettings | None) -> AgentConfig | None:
    """None stays None: the engine then uses the arbiter's
    (rooms.base.model.GroupPolicy.agent_for)."""
    return None if role is None else AgentConfig(agent=role.agent, model=role.model)


class SettingsPolicies:
    """rooms.base.ports.Policies from Settings: built once, looked up per inbound event."""

    def __init__(self, settings: Settings) -> None:
        self._by_channel: dict[tuple[str, str], GroupPolicy] = {
            (platform, channel): group_policy(name, group)
            for name, platform, channel, group in settings.all_groups()
        }

    def for_room(self, room: RoomRef) -> GroupPolicy | None:
        return self._by_channel.get((room.platform, room.channel))

    def groups(self) -> list[GroupPolicy]:
        return list(self._by_channel.values())

    def groups_on(self, platform: str) -> list[GroupPolicy]:
        """The groups whose channel is on `platform` (a person of that platform may approve
        only there: ids of one platform mean nothing on another)."""
        return [p for (where, _), p in self._by_channel.items() if where == platform]
