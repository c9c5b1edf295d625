"""Answer buttons that keep working after a restart (discord.py `DynamicItem`).

The custom id carries what the button does and which escalation it answers
(`tribunal:approve:42`; a choice also the option's number, `tribunal:choose:42.2`), so one class
registered at start-up serves every card ever posted, by this process or an earlier one: no view
has to be kept in memory. A custom id that does not match the template is not ours and discord.py
ignores it; one that matches but names an escalation that is not open is answered as stale by the
engine.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import discord

from rooms.base.model import Action
from rooms.commands import unknown_action

PREFIX = "tribunal"
_OURS = r"(?:approve|reject):[0-9]{1,18}|choose:[0-9]{1,18}\.[0-9]{1,3}"
TEMPLATE = re.compile(
    rf"{PREFIX}:(?=(?:{_OURS})$)(?P<action>approve|reject|choose):(?P<value>[0-9.]+)"
)
# Every other custom id of ours (an older card's button, a forged one): answered, not ignored
# (Discord would show the clicker "This interaction failed" and nothing else).
UNKNOWN = re.compile(rf"{PREFIX}:(?!(?:{_OURS})$)(?P<action>[^:]*)(?::(?P<value>.*))?")
_STYLES = {
    "approve": discord.ButtonStyle.success,
    "reject": discord.ButtonStyle.danger,
    "choose": discord.ButtonStyle.primary,
}

# What a click becomes: the adapter's handler (set on the client), called with the interaction,
# the button's action and its value.
OnClick = Callable[[discord.Interaction[Any], str, str], Awaitable[None]]


def custom_id(action: str, value: str) -> str:
    return f"{PREFIX}:{action}:{value}"


class DecisionButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=TEMPLATE,
):
    def __init__(self, action: str, value: str, label: str | None = None) -> None:
        super().__init__(
            discord.ui.Button(
                label=(label or action.capitalize())[:80],
                style=_STYLES.get(action, discord.ButtonStyle.secondary),
                custom_id=custom_id(action, value),
            )
        )
        self.action = action
        self.value = value

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> DecisionButton:
        return cls(match["action"], match["value"], getattr(item, "label", None))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        on_click: OnClick | None = getattr(interaction.client, "on_click", None)
        if on_click is None:  # not our client: nothing can answer
            await interaction.response.defer()
            return
        await on_click(interaction, self.action, self.value)


class UnknownButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=UNKNOWN,
):
    """A button of ours that no card of this version carries: the clicker alone is told that
    nothing changed and how to answer instead."""

    def __init__(self, action: str) -> None:
        super().__init__(discord.ui.Button(label="?", custom_id=f"{PREFIX}:{action}"[:100]))
        self.action = action

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> UnknownButton:
        return cls(match["action"] or "")

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await interaction.response.send_message(
            unknown_action(self.action), ephemeral=True, allowed_mentions=_NO_PINGS
        )


_NO_PINGS = discord.AllowedMentions.none()


def decision_view(actions: tuple[Action, ...]) -> discord.ui.View | None:
    """The buttons of an escalation card (approve or one per option, and reject), or None when
    it has none."""
    buttons = [a for a in actions if TEMPLATE.fullmatch(custom_id(a.action, a.value))]
    if not buttons:
        return None
    view = discord.ui.View(timeout=None)
    for action in buttons:
        view.add_item(DecisionButton(action.action, action.value, action.label))
    return view
