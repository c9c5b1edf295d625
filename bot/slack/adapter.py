"""The Slack adapter (DESIGN §7): slack-bolt's AsyncApp in, slack_sdk's Web API out.

In: `app_mention` and `message` events and clicks on our buttons become `Inbound` events for
`Engine.handle`. Each is acknowledged at once and queued for a few workers (one event per room at
a time), so Slack gets its answer well within 3 s whatever the engine does. Who may do what is
the engine's business, never ours: a click is passed on as it came, and a refusal comes back as
an outbound message. A mention or click in a channel that is no group's (the engine drops those)
is answered here, to that person alone: the channel is not set up, and what an operator does.

Out: `deliver` posts each `Outbound` in its room's thread under the role's persona
(`chat:write.customize`), as text pieces or a Block Kit card with buttons; `private_to` goes as an
ephemeral message; `edit_of` becomes `chat.update`, paced by `EditPacer`; a "decided" card
updates its escalation's card in place (who, what, when; no buttons). Rate limits (429 with
Retry-After) and server errors are retried by slack_sdk's retry handlers; what still fails raises,
and the outbox tries again later. A message handed again is not posted again (bot/slack/posting.py:
the outbox id is in each post's metadata and read back after a restart).

Socket Mode (an app token) is the default; HTTP mode serves `/slack/events` with bolt's
signature check (bad or stale signatures get 401 and are not handled).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import aiohttp
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapter import click_failed, task_of
from bot.edit_pacer import EditPacer, PacingClock
from bot.room_locks import RoomLocks
from bot.settings_sections import SettingsError
from bot.slack.blocks import ACTION_PREFIX, content_args, decided_blocks, pieces
from bot.slack.inbound import PLATFORM, action_inbound, message_inbound
from bot.slack.people import People
from bot.slack.posting import Poster
from bot.slack.refusals import APP_TOKEN, BOT_TOKEN, TokenRefused, refusal_code
from bot.slack.text import escape
from rooms.base.model import Inbound, Outbound, RoomRef

if TYPE_CHECKING:
    from rooms.engine import Engine

log = logging.getLogger(__name__)
EVENTS_PATH = "/slack/events"
DEFAULT_API_URL = "https://slack.com/api/"
Mode = Literal["socket", "http"]
_TOLD_KEPT = 1000
NOT_SET_UP = (
    "Tribunal is not set up in this channel, so nothing happened. An operator adds it as a group "
    'in tribunal.toml (`[groups.<name>]` with `platform = "slack"` and '
    '`channel = "{channel}"`) and restarts the bot; then mention me here to start a task.'
)


def make_client(
    token: str,
    api_url: str | None = None,
    *,
    rate_limit_retries: int = 3,
    server_error_retries: int = 2,
    backoff_s: float = 0.5,
) -> AsyncWebClient:
    """The Web API client: every call to `api_url` (SLACK_API_URL), rate limits (429, after
    Retry-After) and server errors (500, 503, with backoff) retried before a call fails."""
    base = (api_url or DEFAULT_API_URL).rstrip("/") + "/"
    interval = BackoffRetryIntervalCalculator(backoff_factor=backoff_s)
    handlers: list[AsyncRetryHandler] = [
        AsyncConnectionErrorRetryHandler(interval_calculator=interval),
        AsyncRateLimitErrorRetryHandler(max_retry_count=rate_limit_retries),
        AsyncServerErrorRetryHandler(
            max_retry_count=server_error_retries, interval_calculator=interval
        ),
    ]
    return AsyncWebClient(token=token, base_url=base, retry_handlers=handlers)


class SlackUnavailable(SettingsError):
    """The Web API could not be reached when the adapter started."""


HTTP_HOST = "0.0.0.0"  # HTTP mode: Slack must reach the listener, on every address


@dataclass
class SlackAdapter:
    client: AsyncWebClient
    mode: Mode = "socket"
    app_token: str | None = None
    signing_secret: str | None = None
    http_port: int = 3000
    http_host: str = HTTP_HOST
    clock: PacingClock | None = None
    workers: int = 8  # events handled at once (each one's store writes; turns run elsewhere)
    app: AsyncApp = field(init=False)
    bound_port: int | None = field(init=False, default=None)
    # Others' routes on the HTTP listener (the dashboard beside /slack/events): each is called
    # with the aiohttp application before it starts (bot.adapter.HttpHost).
    mounts: list[Callable[[web.Application], None]] = field(init=False, default_factory=list)
    # The workspace's address, as auth.test gives it ("https://acme.slack.com/"): thread links.
    workspace_url: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.mode == "socket" and not self.app_token:
            raise ValueError("Socket Mode needs an app token (SLACK_APP_TOKEN)")
        if self.mode == "http" and not self.signing_secret:
            raise ValueError("HTTP mode needs the signing secret (SLACK_SIGNING_SECRET)")
        quiet_unused_token_warning()
        self.app = AsyncApp(
            client=self.client,
            signing_secret=self.signing_secret or "",
            request_verification_enabled=self.mode == "http",
            # Our listeners only hand the event to a task of ours, so running them before the
            # ack costs nothing and keeps the order of events as Slack sent them.
            process_before_response=True,
        )
        self.app.event("app_mention")(self._on_mention)
        self.app.event("message")(self._on_message)
        self.app.action(re.compile("^" + re.escape(ACTION_PREFIX)))(self._on_action)
        self.pacer = EditPacer(self._update, self.clock)
        self.poster = Poster(self.client, self.pacer.posted)
        self.people = People(self.client)
        self._engine: Engine | None = None
        self._socket: AsyncSocketModeHandler | None = None
        self._http: web.AppRunner | None = None
        # Events wait here for a few workers: the acks stay fast under a burst, because the
        # backlog is a queue, not hundreds of tasks all competing with bolt for the loop.
        self._queue: asyncio.Queue[tuple[Engine, Inbound]] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._unhandled = 0
        self._told: OrderedDict[str, None] = OrderedDict()  # events answered "not set up here"
        self._rooms = RoomLocks()  # one event per room at a time
        # Set when Slack refuses a token while we run: `finished` raises it and serve ends.
        self._refused: asyncio.Future[TokenRefused | None] | None = None
        self._stopping = False

    @property
    def platform(self) -> str:
        return PLATFORM

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self, engine: Engine) -> None:
        """Check the tokens (auth.test with the bot token, apps.connections.open with the app
        token: a clear error now rather than a silent bot), then connect: Socket Mode, or the
        HTTP listener."""
        self._stopping = False
        self._refused = asyncio.get_running_loop().create_future()
        me = await self._checked(BOT_TOKEN, "auth.test", self.client.auth_test())
        if self.mode == "socket":
            # The socket client would retry a refused app token every 10 s for ever, deaf.
            opened = self.client.apps_connections_open(app_token=self.app_token or "")
            await self._checked(APP_TOKEN, "apps.connections.open", opened)
        url = me.get("url")
        self.workspace_url = url if isinstance(url, str) and url.startswith("https://") else None
        self.poster.own = frozenset(
            str(v) for v in (me.get("user_id"), me.get("bot_id")) if isinstance(v, str) and v
        )
        self._engine = engine
        self._workers = [
            asyncio.create_task(self._work(), name=f"slack-inbound-{n}")
            for n in range(self.workers)
        ]
        if self.mode == "socket":
            self._socket = AsyncSocketModeHandler(self.app, app_token=self.app_token)
            await self._socket.connect_async()  # type: ignore[no-untyped-call]
            return
        web_app = self.app.web_app(path=EVENTS_PATH, port=self.http_port)
        for attach in self.mounts:
            attach(web_app)
        self._http = web.AppRunner(web_app)
        await self._http.setup()
        site = web.TCPSite(self._http, self.http_host, self.http_port)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        self.bound_port = sockets[0].getsockname()[1] if sockets else self.http_port
        log.info("slack: HTTP mode, events at %s on port %s", EVENTS_PATH, self.bound_port)

    def thread_link(self, room: RoomRef) -> str | None:
        """Slack's permalink form for the thread's first message (the room's thread ts)."""
        if self.workspace_url is None or not re.fullmatch(r"[0-9]+\.[0-9]+", room.thread):
            return None
        message = room.thread.replace(".", "")
        return f"{self.workspace_url.rstrip('/')}/archives/{room.channel}/p{message}"

    def serves_http(self, port: int) -> bool:
        """True when this adapter's HTTP listener is on `port` (HTTP mode)."""
        return self.mode == "http" and self.http_port == port

    def mount(self, attach: Callable[[web.Application], None]) -> None:
        """Have `attach` add its routes to the HTTP listener's application before it starts."""
        self.mounts.append(attach)

    def alive(self) -> bool:
        """Connected (the socket or the HTTP listener up) and the token not refused since."""
        refused = self._refused
        connected = self._socket is not None or self._http is not None
        return connected and refused is not None and not refused.done() and not self._stopping

    async def _checked(self, variable: str, method: str, call: Awaitable[Any]) -> Any:
        try:
            return await call
        except (SlackApiError, SlackClientError, aiohttp.ClientError, OSError) as exc:
            code = refusal_code(exc)
            if code is not None:
                raise TokenRefused(variable, code) from None
            error = exc.response.get("error") if isinstance(exc, SlackApiError) else exc
            raise SlackUnavailable(
                [f"slack: the Web API at {self.client.base_url} failed {method}: {error}"]
            ) from None

    async def finished(self) -> None:
        """Returns when the adapter was stopped; raises `TokenRefused` when Slack refused the
        bot token while we ran (revoked, disabled app), so `serve` ends (exit 78) instead of
        running turns whose posts nobody will see. The outbox keeps what was not posted."""
        refused = self._refused
        if refused is None:
            return
        error = await refused
        if error is not None and not self._stopping:
            raise error

    def _watch(self, exc: BaseException) -> None:
        """Note a refused bot token seen by any call (posts, edits, look-ups)."""
        code = refusal_code(exc)
        if code is None or self._refused is None or self._refused.done():
            return
        log.error("slack: Slack refused SLACK_BOT_TOKEN (%s); stopping", code)
        self._refused.set_result(TokenRefused(BOT_TOKEN, code, running=True))

    async def stop(self) -> None:
        self._stopping = True
        if self._refused is not None and not self._refused.done():
            self._refused.set_result(None)  # `finished` returns
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]
            self._socket = None
        if self._http is not None:
            await self._http.cleanup()
            self._http = None
        await self.drain()
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        await self.pacer.close()
        self._engine = None

    async def drain(self) -> None:
        """Wait until every event received so far has been handled by the engine."""
        if self._workers:
            await self._queue.join()

    @property
    def busy(self) -> bool:
        """Events received and not yet handled."""
        return self._unhandled > 0

    # -- inbound ---------------------------------------------------------------------------------

    async def _on_mention(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        self._hand_over(message_inbound(event, context.bot_user_id, mention=True))

    async def _on_message(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        self._hand_over(message_inbound(event, context.bot_user_id))

    async def _on_action(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        self._hand_over(action_inbound(body))

    def _hand_over(self, inbound: Inbound | None) -> None:
        engine = self._engine
        if inbound is None or engine is None:
            return
        if inbound.from_bot:
            return  # the engine would drop it too; no need to look at the store for it
        self._unhandled += 1
        self._queue.put_nowait((engine, inbound))

    async def _handle(self, engine: Engine, inbound: Inbound) -> None:
        """Hand the event to the engine, one event per room at a time (in the order Slack sent
        them). What it decides comes back through the outbox, the decided card included."""
        async with self._rooms.hold(inbound.room.key):
            if not engine.has_group(inbound.room):
                await self._not_set_up(inbound)
                return
            await engine.handle(inbound)

    async def _not_set_up(self, inbound: Inbound) -> None:
        """A mention or a click in a channel that is no group's: the engine ignores it, so say
        so to that person alone (once: a mention comes as two events) and what to do."""
        if not (inbound.mentions_bot or inbound.action is not None):
            return  # chatter in a channel we were invited to: not for us
        if inbound.event_id in self._told:
            return
        self._told[inbound.event_id] = None
        while len(self._told) > _TOLD_KEPT:
            self._told.popitem(last=False)
        room = inbound.room
        top_level = inbound.event_id == f"slack:{room.channel}:{room.thread}"
        try:
            await self.client.chat_postEphemeral(
                channel=room.channel,
                user=inbound.user,
                text=NOT_SET_UP.format(channel=room.channel),
                thread_ts=None if top_level else room.thread,
            )
        except SlackApiError as exc:
            self._watch(exc)
            log.info("slack: could not tell %s that %s is no group's: %s", inbound.user, room, exc)

    async def _work(self) -> None:
        while True:
            engine, inbound = await self._queue.get()
            try:
                await self._handle(engine, inbound)
            except Exception:  # one bad event must not stop the worker
                await self._failed(engine, inbound)
            finally:
                self._unhandled -= 1
                self._queue.task_done()

    async def _failed(self, engine: Engine, inbound: Inbound) -> None:
        """Log what failed with its task; a click's author is told it may not have counted."""
        where = await task_of(engine, inbound.room)
        log.exception(
            "slack: handling %s in %s, %s, failed", inbound.event_id, inbound.room.key, where
        )
        if inbound.action is None:
            return
        try:
            await self.client.chat_postEphemeral(
                channel=inbound.room.channel,
                user=inbound.user,
                thread_ts=inbound.room.thread,
                text=click_failed(inbound.event_id),
            )
        except SlackApiError as exc:
            self._watch(exc)
            log.info("slack: could not tell %s their click failed: %s", inbound.user, exc)

    # -- outbound --------------------------------------------------------------------------------

    async def deliver(self, message: Outbound) -> str | None:
        try:
            return await self._deliver(message)
        except SlackApiError as exc:
            self._watch(exc)
            raise

    async def _deliver(self, message: Outbound) -> str | None:
        known, delivered = self.poster.known(message.outbox_id)
        if known:
            return delivered  # handed again: already in Slack
        message = await self.people.of(message)
        if message.card is not None and message.card.kind == "decided":
            await self._show_decided(message)
            message = replace(message, card=None)  # the reply itself is posted as text
        if message.edit_of is not None:
            await self.pacer.edit(message)
            delivered = message.edit_of
        elif message.private_to is not None:
            delivered = await self.poster.ephemeral(message, message.private_to)
        else:
            delivered = await self.poster.post(message)
        self.poster.remember(message.outbox_id, delivered)
        return delivered

    async def _show_decided(self, message: Outbound) -> None:
        """Update the decided escalation's card in place (who decided what and when, no
        buttons): the card posted here, else the one the outbox recorded as sent (the engine
        knows it by its outbox key), else the one found in the thread. Idempotent, so a row
        handed again only draws the same card again. A card nowhere to be found is left."""
        assert message.card is not None
        ref = message.card.ref
        escalation = int(ref) if ref is not None and ref.isdigit() else None
        if escalation is None:
            return
        room = message.room
        ts = self.poster.cards.get(escalation) or await self._engine_card(str(escalation))
        if ts is None:  # its row not marked sent (rooms deliver in order: not expected): look
            ts = await self.poster.card_of(room.channel, room.thread, escalation)
        if ts is None:
            log.info("slack: card of escalation %s not found; left as it is", escalation)
            return
        await self.client.chat_update(
            channel=room.channel,
            ts=ts,
            text=escape(message.card.title),
            blocks=decided_blocks(message.card),
        )

    async def _engine_card(self, escalation: str) -> str | None:
        engine = self._engine
        return await engine.question_message(escalation) if engine is not None else None

    async def _update(self, message: Outbound) -> None:
        assert message.edit_of is not None
        if message.remove:  # a progress message whose turn's output follows on its own
            try:
                await self.client.chat_delete(channel=message.room.channel, ts=message.edit_of)
            except SlackApiError as exc:
                self._watch(exc)
                if exc.response.get("error") != "message_not_found":
                    raise
            return
        args = content_args(message, pieces(message.text)[0])
        args.setdefault("blocks", [])  # an update without blocks removes the old ones (buttons)
        try:
            await self.client.chat_update(channel=message.room.channel, ts=message.edit_of, **args)
        except SlackApiError as exc:  # a paced progress edit fails away from `deliver`
            self._watch(exc)
            raise


class _UnusedTokenFilter(logging.Filter):
    """Drops bolt's "As you gave `client` as well, `token` will be unused." (issue 27 #6): the
    adapter hands bolt its own client, made from SLACK_BOT_TOKEN, and bolt reads that variable
    again by itself and then warns, on every start, that what it read goes unused. Nothing for an
    operator to act on; every other bolt message passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


_UNUSED_TOKEN_FILTER = _UnusedTokenFilter()


def quiet_unused_token_warning() -> None:
    logging.getLogger("slack_bolt.AsyncApp").addFilter(_UNUSED_TOKEN_FILTER)  # idempotent
