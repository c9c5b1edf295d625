"""What one `Outbound` looks like in Discord: personas, text pieces, embeds for cards.

Pure functions from the engine's message to discord.py objects; the poster only sends them.
Limits are Discord's own: 2,000 characters of message content, embed title 256, description
4,096, author name 256, footer 2,048; webhook usernames 80.

Which messages are cards is decided by who speaks, never by what the text says: an escalation
is a message with answer buttons (only the engine adds those), a ruling is a post of the arbiter
persona (only the arbiter's turn posts under it). An owner whose output starts with "⚖️ Ruling"
is still drawn as the owner's plain text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import discord

from bot.discord.links import unmask
from bot.render import escalation_id, file_note, long_text_parts
from rooms.base.model import Outbound
from rooms.base.words import ARBITER, OWNER, REVIEWER

CONTENT_LIMIT = 2000  # characters of content per Discord message
MAX_PARTS = 4  # a longer text: its opening part, then the whole text as a file
TITLE_LIMIT = 256
DESCRIPTION_LIMIT = 4096
FOOTER_LIMIT = 2048
_DEFAULT_AVATAR = "https://cdn.discordapp.com/embed/avatars/{}.png"  # Discord's built-in ones


@dataclass(frozen=True)
class Persona:
    name: str  # the webhook username, or the embed's author line
    colour: int
    icon: str
    avatar_url: str


PERSONAS: dict[str, Persona] = {
    OWNER: Persona("Tribunal · owner", 0x2ECC71, "🛠️", _DEFAULT_AVATAR.format(2)),
    REVIEWER: Persona("Tribunal · reviewer", 0x3498DB, "🔍", _DEFAULT_AVATAR.format(0)),
    ARBITER: Persona("Tribunal · arbiter", 0xE67E22, "⚖️", _DEFAULT_AVATAR.format(4)),
    "tribunal": Persona("Tribunal", 0x95A5A6, "🏛️", _DEFAULT_AVATAR.format(1)),
}
ESCALATION_COLOUR = 0xF1C40F
DECIDED_COLOURS = {"approve": 0x2ECC71, "reject": 0xE74C3C}


def persona(name: str) -> Persona:
    """The persona of a role; an unknown one is labelled with its name in Tribunal's colours."""
    known = PERSONAS.get(name)
    if known is not None:
        return known
    base = PERSONAS["tribunal"]
    return Persona(f"Tribunal · {name}"[:80], base.colour, base.icon, base.avatar_url)


def parts(text: str) -> tuple[list[str], bool]:
    """The message pieces of a text, and whether the whole text follows as a file."""
    return long_text_parts(text, CONTENT_LIMIT, MAX_PARTS, note=_attached)


def _attached(total_chars: int) -> str:
    return file_note(total_chars, "in the attached file")  # a Discord post carries its file


def is_card(message: Outbound) -> bool:
    return message.card is not None or bool(message.actions) or message.persona == ARBITER


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def labelled(message: Outbound, piece: str) -> discord.Embed:
    """A role's text as an embed labelled with its name and colour (no webhook to speak with)."""
    who = persona(message.persona)
    embed = discord.Embed(description=clip(piece, DESCRIPTION_LIMIT), colour=who.colour)
    embed.set_author(name=f"{who.icon} {who.name}")
    return embed


def card_embed(
    message: Outbound, name_of: Callable[[str], str] = str
) -> tuple[discord.Embed, bool]:
    """A ruling, an escalation or another card as one embed; True when the text did not fit in
    it (the poster then attaches the whole text as a file). `name_of` turns a Discord id into a
    name, in the parts of a card the engine writes (a decided card's title, every footer: who
    decided, who may answer), where Discord shows no mentions."""
    who = persona(message.persona)
    colour = ESCALATION_COLOUR if escalation_id(message.actions) else who.colour
    card = message.card
    if card is not None:
        title = card.title or card.kind
        body = "\n\n".join(f"**{heading}**\n{text}" for heading, text in card.sections)
        if card.kind == "decided":
            colour = DECIDED_COLOURS.get(_verb_of(title), who.colour)
            decided = _DECIDED_BY.match(title)
            if decided is not None:  # titles show no mentions: the name if known, and a line
                name = name_of(decided["id"])
                title = decided["verb"] if name == decided["id"] else f"{decided['verb']} by {name}"
                body = f"{decided['verb']} by <@{decided['id']}>\n\n{body}"
        footer = _BARE_ID.sub(lambda m: name_of(m.group()), card.footer)
    else:
        title, _, body = message.text.partition("\n")
        footer = ""
    body = unmask(body)  # a card quotes agents: their links show their real targets
    embed = discord.Embed(
        title=clip(title.strip() or who.name, TITLE_LIMIT),
        description=clip(body.strip(), DESCRIPTION_LIMIT) or None,
        colour=colour,
    )
    embed.set_author(name=f"{who.icon} {who.name}")
    if card is not None and card.record_path:
        footer = f"{footer}\nDecision record: {card.record_path}".strip()
    if footer:
        embed.set_footer(text=clip(footer, FOOTER_LIMIT))
    too_long = len(title.strip()) > TITLE_LIMIT or len(body.strip()) > DESCRIPTION_LIMIT
    return embed, too_long


_DECIDED = {"approve": "✅ Approved", "reject": "❌ Rejected"}


_DECIDED_BY = re.compile(r"^(?P<verb>.+?) by (?P<id>[0-9]{17,20})$")


def _verb_of(title: str) -> str:
    return next((kind for kind, verb in _DECIDED.items() if title.startswith(verb)), "")


_BARE_ID = re.compile(r"(?<![<@&#0-9])[0-9]{17,20}(?![0-9>])")


def named(text: str, role_ids: frozenset[str]) -> str:
    """Tribunal's own replies with the Discord ids they name (who opened, who approved, who was
    refused) as mentions, which Discord shows as names (mentions never ping here). Only for the
    engine's own short replies, whose long numbers are such ids; never for cards or agents'
    output, which quote what agents wrote."""

    def mention(match: re.Match[str]) -> str:
        found = match.group()
        return f"<@&{found}>" if found in role_ids else f"<@{found}>"

    return _BARE_ID.sub(mention, text)
