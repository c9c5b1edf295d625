"""Who may approve, as each platform names people: an approver id that no inbound event can ever
carry matches nobody, and a group whose approvers all match nobody has silently lost its
deciders (rooms/core/escalations.py `may_answer` compares ids exactly: no case folding, no "@", no
wildcard). Checked when the settings load, so the bot refuses to start (exit 78) and
`tribunal doctor` names the id instead of the first escalation going unanswered.

- Slack: the `user` of an event is a user id, `U…` (or `W…` on Enterprise Grid): upper-case
  letters and digits. Not a display name, not `@alice`, not an e-mail address.
- Discord: a user id or a role id (bot/discord/inbound.py hands on the author's roles), both
  snowflakes: 17 to 20 digits (the same shape bot/discord/look.py recognises as an id).
- Console: one person types there, `console.user`; any other name can never answer.
"""

from __future__ import annotations

import re

from bot.adapter import platform_specs


def approver_problems(platform: str, approvers: list[str]) -> list[str]:
    """What is wrong with a chat group's approvers (empty: nothing), by the shape of an id its
    platform declares (bot/adapter.py PlatformSpec.approver)."""
    declared = next((s.approver for s in platform_specs() if s.name == platform), None)
    if declared is None:
        return []
    pattern, wanted = declared
    shape = re.compile(pattern)
    return [
        f"approvers: {approver!r} can match nobody: use {wanted}"
        for approver in approvers
        if not shape.fullmatch(approver)
    ]


def console_approver_problems(user: str, approvers: list[str]) -> list[str]:
    """The console room has one person, `user`: an approver list without them matches nobody."""
    if user in approvers:
        return []
    listed = ", ".join(repr(a) for a in approvers)
    return [
        f"approvers: none of {listed} is the console user {user!r} (console.user), so nobody "
        "in the console room could answer; list the console user or leave approvers unset"
    ]
