"""A fake Discord on loopback: REST under `/api/v10` and the Gateway websocket at `/`, on one
port, for discord.py's real `client.start()` (grown from the shared notes'
examples/discord_gateway/fake_discord.py; the payload fields it sends are the ones discord.py
2.7 needs, see probe_results.txt there).

    fake = await FakeDiscord().start()
    settings: DISCORD_API_URL=fake.api_url (REST; the Gateway is what GET /gateway/bot returns)
    msg = await fake.say(ALICE, "please build a parser", mention=True)
    rec = await fake.wait_for(lambda r: r.path.endswith("/threads"))
    await fake.click(card_id, "tribunal:approve:1", ALICE)

What it does as Discord does: a message posted by the bot or a webhook comes back as
MESSAGE_CREATE (the adapter must ignore its own); a thread started from a message has the
message's id; the Gateway keeps a session's events, so a client that RESUMEs after the socket
was closed (`drop_gateway`) gets the ones it missed (and, with `replay_overlap`, some it had
already, as a real resume may); a 429 carries `Via` (without it discord.py takes it for a
Cloudflare ban). Knobs: `webhooks_allowed` (the bot's Manage Webhooks), `app_flags` (the
message-content intent), `rate_limit(...)` (the next matching REST call gets a 429).
Every REST call is recorded (`calls`), and messages are kept (`messages`) with their edits.
"""

from tests.fakes.discord.payloads import *  # noqa: F403  (the ids and object builders)
from tests.fakes.discord.payloads import Call
from tests.fakes.discord.server import FakeDiscord

__all__ = ["Call", "FakeDiscord"]
