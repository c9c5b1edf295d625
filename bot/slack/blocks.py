"""What one `Outbound` looks like in Slack: persona, text pieces, Block Kit card and buttons.

Pure functions from the engine's message to the keyword arguments of `chat.postMessage` /
`chat.update`; the adapter only sends them. Limits are Slack's own (Block Kit reference):
header text 150 characters, section text 3,000, button text 75, button value 2,000, 50 blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.render import file_note, long_text_parts, split_text
from bot.slack.text import escape, to_mrkdwn
from rooms.base.model import Action, Card, Outbound
from rooms.base.words import ARBITER, CHOOSE, OWNER, REVIEWER

ACTION_PREFIX = "tribunal_"  # action_id of our buttons: tribunal_approve, tribunal_reject, …
# Slack wants each action_id unique in its block: the second and later buttons of one action
# (one per option) get `.n` after it, which bot/slack/inbound.py drops; the value says which.
ACTION_SUFFIX = "."
PIECE_LIMIT = 3000  # characters of plain text per posted message (one section's worth)
MAX_PIECES = 4  # a longer text is posted as its opening piece plus the whole text as a file
SECTION_LIMIT = 3000
HEADER_LIMIT = 150
BUTTON_TEXT_LIMIT = 75
BUTTON_VALUE_LIMIT = 2000
FALLBACK_LIMIT = 3000  # the notification text of a card message


@dataclass(frozen=True)
class Persona:
    username: str
    icon_emoji: str


# Posted with chat:write.customize: each role speaks under its own name and icon.
PERSONAS: dict[str, Persona] = {
    OWNER: Persona("Tribunal · owner", ":hammer_and_wrench:"),
    REVIEWER: Persona("Tribunal · reviewer", ":mag:"),
    ARBITER: Persona("Tribunal · arbiter", ":scales:"),
    "tribunal": Persona("Tribunal", ":classical_building:"),
}


def persona(name: str) -> Persona:
    """The persona of a role; an unknown one speaks as Tribunal, labelled with its name."""
    known = PERSONAS.get(name)
    if known is not None:
        return known
    return Persona(f"Tribunal · {name}"[:80], PERSONAS["tribunal"].icon_emoji)


def pieces(text: str) -> list[str]:
    """The text in pieces that each fit one message (bot/render.split_text: line and fence
    boundaries)."""
    return split_text(text or "(empty)", PIECE_LIMIT)


def text_parts(text: str) -> tuple[list[str], bool]:
    """The pieces to post, or the opening piece with the file note, and True when the whole
    text goes as a file below it (bot/render.long_text_parts, the rule every platform keeps)."""
    return long_text_parts(text, PIECE_LIMIT, MAX_PIECES, note=_italic_file_note)


def _italic_file_note(total_chars: int) -> str:
    return f"_{file_note(total_chars)}_"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def section(mrkdwn: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(mrkdwn, SECTION_LIMIT)}}


def buttons(actions: tuple[Action, ...]) -> list[dict[str, Any]]:
    """An actions block with one button per action, or nothing."""
    if not actions:
        return []
    elements = []
    seen: dict[str, int] = {}
    for action in actions[:25]:
        n = seen[action.action] = seen.get(action.action, 0) + 1
        suffix = f"{ACTION_SUFFIX}{n}" if n > 1 else ""
        button: dict[str, Any] = {
            "type": "button",
            "action_id": ACTION_PREFIX + action.action + suffix,
            "text": {"type": "plain_text", "text": _clip(action.label, BUTTON_TEXT_LIMIT)},
            "value": action.value[:BUTTON_VALUE_LIMIT],
        }
        if action.style != "default":
            button["style"] = action.style
        elements.append(button)
    blocks: list[dict[str, Any]] = [
        {"type": "actions", "block_id": "tribunal_actions", "elements": elements}
    ]
    if any(a.action in ("approve", CHOOSE) for a in actions):
        blocks.append(context("…or reply in this thread."))
    return blocks


def context(mrkdwn: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(mrkdwn, 3000)}]}


def card_blocks(card: Card, actions: tuple[Action, ...] = ()) -> list[dict[str, Any]]:
    """A ruling, escalation or decision as Block Kit: title, one section per part, the record,
    the footer, and the buttons (none on a decided card)."""
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": _clip(card.title or card.kind, HEADER_LIMIT)},
        }
    ]
    for heading, body in card.sections:
        blocks.append(section(f"*{escape(heading)}*\n{to_mrkdwn(body)}"))
    if card.record_path:
        blocks.append(context(f"📄 Decision record: `{escape(card.record_path)}`"))
    if card.footer:
        blocks.append(context(to_mrkdwn(card.footer)))
    blocks = blocks[: 50 - 2]  # room for the buttons and their hint
    return blocks + buttons(actions)


def post_args(message: Outbound, piece: str, *, last: bool) -> dict[str, Any]:
    """chat.postMessage arguments for one piece of `message` (the buttons go on the last)."""
    who = persona(message.persona)
    args: dict[str, Any] = {
        "channel": message.room.channel,
        "thread_ts": message.room.thread,
        "username": who.username,
        "icon_emoji": who.icon_emoji,
        "unfurl_links": False,
        "unfurl_media": False,
    }
    args.update(content_args(message, piece, last=last))
    return args


def content_args(message: Outbound, piece: str, *, last: bool = True) -> dict[str, Any]:
    """text and blocks of a post or an update. A card draws the card; otherwise the piece is
    the text, and a piece with buttons is drawn as a section above them."""
    if message.card is not None:
        return {
            "text": _clip(escape(message.card.title or message.text), FALLBACK_LIMIT),
            "blocks": card_blocks(message.card, message.actions),
        }
    text = to_mrkdwn(piece)
    if last and message.actions:
        blocks = [section(text), *buttons(message.actions)]
        return {"text": _clip(text, FALLBACK_LIMIT), "blocks": blocks}
    return {"text": text}


def decided_blocks(card: Card) -> list[dict[str, Any]]:
    """A decided escalation's card (rooms/escalations.decided_card): the card, no buttons."""
    return card_blocks(card)
