"""People by name in Tribunal's own Slack posts: "Task opened by Rita", not "U0REQUESTER".

The engine names people by their platform id (approvers are configured by id). In the engine's
own posts (persona "tribunal": who opened, approved, stopped, was refused) and in a card's title
and footer, every Slack user id is replaced by the person's display name, looked up once with
`users.info` (scope `users:read`) and kept. Plain text, never `<@U…>`: a name shown in a thread
does not notify anyone. Agents' outputs are left as they wrote them. A user Slack does not know,
or a token without the scope, keeps the id (and is not asked about again).
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from rooms.base.model import Outbound

log = logging.getLogger(__name__)
# A Slack user id standing alone (not inside a mention, a URL or a longer word).
USER_ID = re.compile(r"(?<![<@/A-Za-z0-9_])[UW][A-Z0-9]{8,12}(?![A-Za-z0-9_>])")
_KEPT = 5000  # names remembered
_FINAL = frozenset({"user_not_found", "missing_scope", "not_allowed_token_type"})


class People:
    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client
        self._names: dict[str, str | None] = {}  # id → display name (None: keep the id)
        self._no_scope = False
        self.lookups = 0

    async def name(self, user: str) -> str | None:
        if user in self._names:
            return self._names[user]
        if self._no_scope:
            return None
        self.lookups += 1
        try:
            response = await self.client.users_info(user=user)
        except SlackApiError as exc:
            error = exc.response.get("error") if exc.response is not None else None
            if error == "missing_scope":
                self._no_scope = True
                log.warning("slack: no users:read scope: people are shown by id (reinstall)")
            if error in _FINAL:
                self._remember(user, None)
            else:
                raise  # a refused token or a server error: the caller decides
            return None
        found = display_name(response.get("user") or {})
        self._remember(user, found)
        return found

    def _remember(self, user: str, name: str | None) -> None:
        if len(self._names) >= _KEPT:
            self._names.pop(next(iter(self._names)))
        self._names[user] = name

    async def named(self, text: str) -> str:
        """`text` with every Slack user id in it as its person's name."""
        ids = dict.fromkeys(USER_ID.findall(text))
        if not ids:
            return text
        names = {}
        for user in ids:
            try:
                found = await self.name(user)
            except SlackApiError as exc:  # shown by id this time; asked again next time
                log.info("slack: users.info for %s failed: %s", user, exc)
                found = None
            if found:
                names[user] = found
        return USER_ID.sub(lambda m: names.get(m.group(), m.group()), text) if names else text

    async def of(self, message: Outbound) -> Outbound:
        """`message` with people named in Tribunal's own words (its text when it speaks, a
        card's title and footer); an agent's words, and a card's sections that quote them, as
        they are."""
        if message.card is not None:
            card = message.card
            title, footer = await self.named(card.title), await self.named(card.footer)
            message = replace(message, card=replace(card, title=title, footer=footer))
        if message.persona == "tribunal":  # a decided card's text is posted as the reply
            message = replace(message, text=await self.named(message.text))
        return message


def display_name(user: dict[str, Any]) -> str | None:
    profile = user.get("profile") or {}
    for value in (
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
    ):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
