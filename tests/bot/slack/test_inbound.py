"""Slack events and clicks → Inbound: which room, who, what text, which event id."""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack.inbound import action_inbound, message_inbound
from rooms.base.model import RoomRef


def event(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "type": "message",
        "user": "U1",
        "text": "hi",
        "ts": "5.0",
        "channel": "C1",
    }
    return {**base, **fields}


def test_a_top_level_mention_names_its_own_thread() -> None:
    inbound = message_inbound(
        event(text="<@UBOT> fix it", type="app_mention"), "UBOT", mention=True
    )
    assert inbound is not None
    assert inbound.room == RoomRef("slack", "C1", "5.0")
    assert (inbound.user, inbound.text, inbound.mentions_bot) == ("U1", "fix it", True)
    assert inbound.event_id == "slack:C1:5.0" and not inbound.from_bot


def test_a_reply_belongs_to_its_thread() -> None:
    inbound = message_inbound(event(ts="6.0", thread_ts="5.0"), "UBOT")
    assert inbound is not None and inbound.room == RoomRef("slack", "C1", "5.0")
    assert not inbound.mentions_bot


def test_the_mention_and_its_message_event_are_one_event() -> None:
    mention = message_inbound(event(text="<@UBOT> go", type="app_mention"), "UBOT", mention=True)
    message = message_inbound(event(text="<@UBOT> go"), "UBOT")
    assert mention == message


@pytest.mark.parametrize(
    "subtype",
    [
        "message_changed",
        "message_deleted",
        "channel_join",
        "channel_leave",
        "bot_message",
        "channel_topic",
        "pinned_item",
        "message_replied",
    ],
)
def test_edits_joins_and_other_subtypes_are_not_messages(subtype: str) -> None:
    assert message_inbound(event(subtype=subtype), "UBOT") is None


@pytest.mark.parametrize("subtype", ["thread_broadcast", "file_share"])
def test_broadcasts_and_file_shares_are_messages(subtype: str) -> None:
    assert message_inbound(event(subtype=subtype), "UBOT") is not None


@pytest.mark.parametrize(
    "fields",
    [{"bot_id": "BOTHER"}, {"user": "UBOT"}, {"user": None, "bot_id": "B2"}, {"user": ""}],
)
def test_bots_and_our_own_messages_are_marked_from_a_bot(fields: dict[str, Any]) -> None:
    inbound = message_inbound(event(**fields), "UBOT")
    assert inbound is not None and inbound.from_bot


@pytest.mark.parametrize(
    "fields", [{"channel": None}, {"ts": None}, {"channel": ""}, {"ts": 5}, {"channel": ["C1"]}]
)
def test_an_event_without_a_room_is_dropped(fields: dict[str, Any]) -> None:
    assert message_inbound(event(**fields), "UBOT") is None


def click(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": "U2"},
        "channel": {"id": "C1"},
        "container": {"type": "message", "message_ts": "7.0", "channel_id": "C1"},
        "message": {"ts": "7.0", "thread_ts": "5.0"},
        "actions": [{"action_id": "tribunal_approve", "value": "3", "action_ts": "8.1"}],
    }
    return {**body, **fields}


def test_a_click_is_an_action_in_the_thread_of_the_card() -> None:
    inbound = action_inbound(click())
    assert inbound is not None
    assert inbound.room == RoomRef("slack", "C1", "5.0")
    assert (inbound.user, inbound.action, inbound.action_value) == ("U2", "approve", "3")
    assert inbound.event_id == "slack:action:C1:U2:8.1"


@pytest.mark.parametrize(
    "fields",
    [
        {"actions": []},
        {"actions": [{"action_id": "someone_elses", "value": "3"}]},
        {"user": {}},
        {"channel": {}, "container": {}},
        {"message": {}, "container": {"channel_id": "C1"}},
    ],
)
def test_clicks_that_are_not_on_our_buttons_are_dropped(fields: dict[str, Any]) -> None:
    assert action_inbound(click(**fields)) is None


def test_a_value_that_is_not_text_arrives_empty_and_the_engine_calls_it_stale() -> None:
    inbound = action_inbound(click(actions=[{"action_id": "tribunal_reject", "value": {"x": 1}}]))
    assert inbound is not None and (inbound.action, inbound.action_value) == ("reject", "")
