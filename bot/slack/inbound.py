"""Slack events and button clicks → `rooms.base.model.Inbound`.

A room is a thread: a top-level message's own `ts` names the thread that will hold its task, a
reply's `thread_ts` the thread it is in. The event id is the message's channel and `ts`, not
Slack's `event_id`: a mention arrives twice (as `app_mention` and as `message`), and Slack
retries an event it thinks was not acknowledged, and the store must see all of those as one.

Only plain human messages (no subtype, a thread broadcast, a file share) are messages; edits,
deletions, joins and every other subtype are not. A message with a `bot_id` (our own, another
bot's, a workflow's) is marked `from_bot`, and the engine never lets a bot open or steer a task.
"""

from __future__ import annotations

from typing import Any

from bot.slack.blocks import ACTION_PREFIX, ACTION_SUFFIX
from bot.slack.text import mentions_of, to_plain
from rooms.base.model import Inbound, RoomRef

PLATFORM = "slack"
HUMAN_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})


def message_inbound(
    event: dict[str, Any], bot_user_id: str | None, *, mention: bool = False
) -> Inbound | None:
    """An `app_mention` (`mention=True`) or `message` event as an Inbound; None when it is not a
    message a person wrote (an edit, a join, a deletion, …) or lacks what names its room."""
    if event.get("subtype") not in HUMAN_SUBTYPES:
        return None
    channel, ts = event.get("channel"), event.get("ts")
    if not isinstance(channel, str) or not isinstance(ts, str) or not channel or not ts:
        return None
    thread = event.get("thread_ts")
    user = event.get("user")
    bot_id = event.get("bot_id")
    from_bot = bool(bot_id) or not isinstance(user, str) or not user or user == bot_user_id
    raw = event.get("text")
    raw = raw if isinstance(raw, str) else ""
    return Inbound(
        room=RoomRef(PLATFORM, channel, thread if isinstance(thread, str) and thread else ts),
        user=user if isinstance(user, str) and user else f"bot:{bot_id}",
        text=to_plain(raw, bot_user_id),
        event_id=f"slack:{channel}:{ts}",
        mentions_bot=mention or mentions_of(raw, bot_user_id),
        from_bot=from_bot,
    )


def action_inbound(body: dict[str, Any]) -> Inbound | None:
    """A click on one of our buttons (`block_actions`) as an Inbound; None for anything else."""
    actions = body.get("actions") or []
    user = (body.get("user") or {}).get("id")
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = (body.get("channel") or {}).get("id") or container.get("channel_id")
    if not actions or not isinstance(user, str) or not isinstance(channel, str):
        return None
    action = actions[0]
    action_id = action.get("action_id")
    if not isinstance(action_id, str) or not action_id.startswith(ACTION_PREFIX):
        return None
    thread = message.get("thread_ts") or message.get("ts") or container.get("message_ts")
    if not isinstance(thread, str) or not thread:
        return None
    value = action.get("value")
    clicked = action.get("action_ts") or body.get("trigger_id") or ""
    return Inbound(
        room=RoomRef(PLATFORM, channel, thread),
        user=user,
        event_id=f"slack:action:{channel}:{user}:{clicked}",
        action=action_id.removeprefix(ACTION_PREFIX).partition(ACTION_SUFFIX)[0],
        action_value=value if isinstance(value, str) else "",
    )
